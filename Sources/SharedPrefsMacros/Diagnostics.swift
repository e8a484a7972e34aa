import SwiftDiagnostics
import SwiftSyntax

/// The compile-time errors of `@ObservablePrefs`, each saying what to do.
enum PrefsDiagnostic: String, DiagnosticMessage {
    case notAClass
    case persistedLet
    case missingDefault
    case computedBacked
    case invalidPrefix
    case duplicateKey
    case keyNotLiteral
    case multipleBindings
    case flagNotLiteral
    case observableDefaultShape

    var severity: DiagnosticSeverity { .error }
    var diagnosticID: MessageID { MessageID(domain: "SharedPrefsMacros", id: rawValue) }
    var message: String { "" }
}

struct PrefsMessage: DiagnosticMessage {
    let kind: PrefsDiagnostic
    let message: String
    var severity: DiagnosticSeverity { .error }
    var diagnosticID: MessageID { kind.diagnosticID }
}

struct PrefsFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "SharedPrefsMacros", id: message) }
}

extension Diagnostic {
    init(_ kind: PrefsDiagnostic, at node: some SyntaxProtocol, _ message: String, fixIt: FixIt? = nil) {
        self.init(node: Syntax(node), message: PrefsMessage(kind: kind, message: message), fixIts: fixIt.map { [$0] } ?? [])
    }
}
