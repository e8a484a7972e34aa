import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@ObservablePrefs` and `@ObservableDefaults`: the class-level macro.
///
/// - member: the observation registrar with `access`/`withMutation` (as `@Observable`), the suite
///   binding `_$prefs`, `prefsSequence` (the suite's number), `_$prefsDidChange` mapping a changed key to its property's mutation,
///   `startObservingPrefs(…)`, and (with `autoInit`) an `init` labelled as the spelling used (see `initializer`).
/// - member attributes: `@_PrefsProperty("key")` on persisted properties, `@ObservableOnly` on
///   observe-first ones.
/// - extension: `Observable` conformance.
/// All diagnostics are reported once, by the member expansion.
public struct ObservablePrefsMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(Diagnostic(.notAClass, at: node, "@\(node.attributeName.trimmedDescription) applies to classes: their instances are shared by reference, as the suite is."))
            return []
        }
        let options = ClassOptions(node)
        var diagnostics = options.diagnostics
        var persisted: [(name: String, key: String, didSet: (parameter: String, body: String)?)] = []
        var seenKeys: [String: String] = [:]
        for member in declaration.memberBlock.members {
            let analysis = PropertyAnalysis(member.decl, options: options)
            diagnostics += analysis.diagnostics
            guard case .persisted(let key) = analysis.role else { continue }
            if let other = seenKeys[key] {
                diagnostics.append(Diagnostic(
                    .duplicateKey, at: analysis.keyNode ?? Syntax(member.decl),
                    "'\(analysis.name)' uses the key \"\(options.prefix)\(key)\", which '\(other)' uses already; give one of them another @PrefsKey."))
                continue
            }
            seenKeys[key] = analysis.name
            let didSet = options.didSetRunsOnExternalChanges ? member.decl.as(VariableDeclSyntax.self)?.bindings.first?.observers["didSet"] : nil
            persisted.append((analysis.name, key, didSet))
        }
        for diagnostic in diagnostics { context.diagnose(diagnostic) }

        let type = classDecl.name.trimmed
        let onMain = declaration.isMainActorIsolated || options.defaultIsolationIsMainActor
        let names = persisted.map { "\"\($0.key)\"" }.joined(separator: ", ")
        // A change that leaves what the property reads as unchanged (a stored default, say), or of
        // a property the instance was told to ignore, mutates nothing.
        // With `didSetRunsOnExternalChanges`, a property's didSet runs after the mutation, its
        // parameter the value the property read as before the change.
        let cases = persisted.map {
            let didSet = $0.didSet.map { applying($0, to: "oldValue") } ?? ""
            let oldValue = $0.didSet == nil ? "" : "\nlet oldValue = _$prefs.oldValue(change, default: _\($0.name), _PrefsStorage.codec(_\($0.name)))"
            return """
            case "\($0.key)":
                if _$prefs.changesValue(change, default: _\($0.name), _PrefsStorage.codec(_\($0.name))) {\(oldValue)
                    withMutation(keyPath: \\.\($0.name)) {}\(didSet)
                }
            """
        }.joined(separator: "\n")
        let notify = onMain
            ? "{ object, name, change in MainActor.assumeIsolated { object._$prefsDidChange(name, change) } }"
            : "{ object, name, change in object._$prefsDidChange(name, change) }"
        var members: [DeclSyntax] = [
            "private let _$observationRegistrar = Observation.ObservationRegistrar()",
            """
            internal nonisolated func access<Member>(keyPath: KeyPath<\(type), Member>) {
                _$observationRegistrar.access(self, keyPath: keyPath)
            }
            """,
            """
            internal nonisolated func withMutation<Member, MutationResult>(
                keyPath: KeyPath<\(type), Member>, _ mutation: () throws -> MutationResult
            ) rethrows -> MutationResult {
                try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
            }
            """,
            """
            private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: \(raw: options.suiteName), prefix: \(literal: options.prefix), ignoreExternalChanges: \(raw: options.ignoreExternalChanges)\(raw: options.inMemory ? ", inMemory: true" : ""))
            """,
            """
            /// The number of the last write of the suite that the properties read
            /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
            var prefsSequence: UInt64 {
                _$prefs.sequence
            }
            """,
            """
            private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                switch name {
                \(raw: cases)
                default: break
                }
            }
            """,
            """
            /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
            /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
            /// when other processes change their keys.
            func startObservingPrefs(
                suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                ignoredKeyPathsForExternalUpdates: [PartialKeyPath<\(type)>] = []
            ) {
                let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                    switch keyPath {
                    \(raw: persisted.map { "case \\\(type).\($0.name): \"\($0.key)\"" }.joined(separator: "\n"))
                    default: nil
                    }
                })
                _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                _$prefs.observe(self, names: Set([\(raw: names)]).subtracting(ignored), onMain: \(raw: onMain)) \(raw: notify)
            }
            """,
        ]
        let spelling = node.attributeName.trimmedDescription.split(separator: ".").last.map(String.init) ?? ""
        if spelling == "ObservableDefaults" {
            members.append(
                """
                /// ObservableDefaults' name for `startObservingPrefs()`: call it from your own `init` when `autoInit` is `false`.
                func observerStarter() {
                    startObservingPrefs()
                }
                """)
        }
        if spelling == "ObservableCloud" {
            members.append(
                """
                /// ObservableDefaults' `@ObservableCloud` members for an `init` of your own (`autoInit: false`),
                /// written as its README writes it: `if !_developmentMode_ { _cloudObserver = CloudObservation(host: self, prefix: _prefix) }`.
                var _developmentMode_: Bool { \(raw: options.inMemory) }
                var _prefix: String { \(literal: options.prefix) }
                var _cloudObserver: SharedPrefsObservation.CloudObservation? {
                    get { nil }
                    set { if newValue != nil { startObservingPrefs() } }
                }
                """)
        }
        if options.autoInit {
            members.append(initializer(spelledAs: spelling, type: type, options: options))
        }
        return members
    }

    /// The generated initializer, with the labels of the spelling used: ObservableDefaults'
    /// `init(userDefaults:ignoreExternalChanges:prefix:ignoredKeyPathsForExternalUpdates:)`, its
    /// `@ObservableCloud` `init(prefix:syncImmediately:developmentMode:)` (after a `suite:` for an
    /// etcd suite), or this package's `init(suite:prefix:ignoreExternalChanges:ignoredKeyPathsForExternalUpdates:)`.
    /// Every argument has a default; `nil` keeps the value given to the macro, and
    /// `syncImmediately`'s default is the macro's.
    static func initializer(spelledAs spelling: String, type: TokenSyntax, options: ClassOptions) -> DeclSyntax {
        let ignored = "ignoredKeyPathsForExternalUpdates: [PartialKeyPath<\(type)>] = []"
        switch spelling {
        case "ObservableDefaults":
            return """
                /// Creates an instance backed by `userDefaults` (a `PreferenceSuite`) under `prefix` (each `nil` is
                /// the value given to the macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    userDefaults: SharedPrefs.PreferenceSuite? = nil, ignoreExternalChanges: Bool? = nil, prefix: String? = nil,
                    \(raw: ignored)
                ) {
                    startObservingPrefs(suite: userDefaults, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
                """
        case "ObservableCloud":
            return """
                /// Creates an instance backed by `suite` (an etcd suite shares it across machines; `nil` is the
                /// standard suite, or memory with `developmentMode`) under `prefix` (`nil` is the macro's).
                /// `syncImmediately` has no effect: every change is written at once.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, syncImmediately: Bool = \(raw: options.syncImmediately), developmentMode: Bool = false,
                    \(raw: ignored)
                ) {
                    startObservingPrefs(
                        suite: suite ?? (developmentMode ? .inMemory(name: "development") : nil), prefix: prefix,
                        ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
                """
        default:
            return """
                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    \(raw: ignored)
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
                """
        }
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard declaration.is(ClassDeclSyntax.self) else { return [] }
        switch PropertyAnalysis(member, options: ClassOptions(node)).role {
        case .persisted(let key): return ["@_PrefsProperty(\(literal: key))"]
        case .addObservableOnly: return ["@ObservableOnly"]
        case .untouched, .invalid: return []
        }
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self), !protocols.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): Observation.Observable {}")]
    }
}
