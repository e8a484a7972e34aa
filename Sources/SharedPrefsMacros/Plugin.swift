import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct SharedPrefsMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        ObservablePrefsMacro.self, PrefsPropertyMacro.self, ObservableOnlyMacro.self, MarkerMacro.self,
        ObservableDefaultMacro.self,
    ]
}
