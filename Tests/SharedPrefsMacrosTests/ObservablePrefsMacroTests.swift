import SharedPrefsMacros
import SwiftParser
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosTestSupport
import XCTest

/// Every macro, under the names SharedPrefs declares it with.
let macroSpecs: [String: MacroSpec] = [
    "ObservablePrefs": MacroSpec(type: ObservablePrefsMacro.self, conformances: ["Observable"]),
    "ObservableDefaults": MacroSpec(type: ObservablePrefsMacro.self, conformances: ["Observable"]),
    "_PrefsProperty": MacroSpec(type: PrefsPropertyMacro.self),
    "ObservableOnly": MacroSpec(type: ObservableOnlyMacro.self),
    "PrefsKey": MacroSpec(type: MarkerMacro.self),
    "PrefsBacked": MacroSpec(type: MarkerMacro.self),
    "Ignore": MacroSpec(type: MarkerMacro.self),
    "DefaultsKey": MacroSpec(type: MarkerMacro.self),
    "DefaultsBacked": MacroSpec(type: MarkerMacro.self),
]

// Expansion snapshots. Each was read and checked by hand when it was recorded, and the runtime
// tests (ObservablePrefsTests) compile and exercise the same shapes; a change to the generated
// code must be reviewed the same way.
final class ObservablePrefsMacroTests: XCTestCase {
    /// ObservableDefaults' test (2026-03-03) that `@ObservableCloud(syncImmediately: true)` keeps
    /// its value as the generated initializer's default, ported: the initializer's parameter
    /// defaults to the macro's argument, `false` without one.
    func testObservableCloudKeepsTheSyncImmediatelyItWasGiven() {
        var specs = macroSpecs
        specs["ObservableCloud"] = MacroSpec(type: ObservablePrefsMacro.self, conformances: ["Observable"])
        for (arguments, expected) in [("", "false"), ("(syncImmediately: true)", "true"), ("(prefix: \"p.\", syncImmediately: false)", "false")] {
            let source = Parser.parse(source: "@ObservableCloud\(arguments)\nfinal class Settings {\n    var volume = 1\n}\n")
            let expanded = source.expand(macroSpecs: specs, contextGenerator: { _ in BasicMacroExpansionContext() }).description
            XCTAssert(expanded.contains("syncImmediately: Bool = \(expected),"), "@ObservableCloud\(arguments):\n\(expanded)")
        }
    }

    /// Persisted, custom-key, observable-only (with didSet) and ignored properties.
    func testPersistedObservableOnlyAndIgnoredProperties() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs(prefix: "app.")
            final class Settings {
                var volume = 5
                @PrefsKey("user_name") var name: String? = nil
                @ObservableOnly var edits = 0 {
                    didSet { print(edits) }
                }
                @Ignore var cache: [String] = []
            }
            """#,
            expandedSource: #"""
            final class Settings {
                var volume {
                    get {
                        access(keyPath: \.volume)
                        return _$prefs.value("volume", default: _volume, _PrefsStorage.codec(_volume))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_volume)
                        guard _$prefs.willChange("volume", to: newValue, default: _volume, codec) else {
                            return
                        }
                        withMutation(keyPath: \.volume) {
                            _$prefs.set(newValue, "volume", codec)
                        }
                    }
                }

                private let _volume = 5
                var name: String? {
                    get {
                        access(keyPath: \.name)
                        return _$prefs.value("user_name", default: _name, _PrefsStorage.codec(_name))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_name)
                        guard _$prefs.willChange("user_name", to: newValue, default: _name, codec) else {
                            return
                        }
                        withMutation(keyPath: \.name) {
                            _$prefs.set(newValue, "user_name", codec)
                        }
                    }
                }

                private let _name: String? = nil
                var edits {
                    didSet { print(edits) }
                    get {
                        access(keyPath: \.edits)
                        return _edits
                    }

                    set {
                        guard _PrefsStorage.shouldNotify(_edits, newValue) else {
                            _edits = newValue
                            return
                        }
                        withMutation(keyPath: \.edits) {
                            _edits = newValue
                        }
                    }
                }

                private var _edits = 0 {
                        didSet {
                            print(edits)
                        }
                    }
                var cache: [String] = []

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<Settings, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<Settings, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "app.", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "volume":
                    if _$prefs.changesValue(change, default: _volume, _PrefsStorage.codec(_volume)) {
                        withMutation(keyPath: \.volume) {
                        }
                    }
                    case "user_name":
                        if _$prefs.changesValue(change, default: _name, _PrefsStorage.codec(_name)) {
                            withMutation(keyPath: \.name) {
                        }
                        }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Settings>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \Settings.volume:
                                    "volume"
                                case \Settings.name:
                                    "user_name"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["volume", "user_name"]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Settings>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension Settings: Observation.Observable {
            }
            """#,
            macroSpecs: macroSpecs
        )
    }

    /// A @MainActor class hears external changes on the main queue, through MainActor.assumeIsolated.
    func testMainActorClassGetsChangesOnTheMainQueue() {
        assertMacroExpansion(
            #"""
            @MainActor
            @ObservablePrefs(suiteName: "group.com.example.app", prefix: "ui.")
            final class UI {
                var count = 0
            }
            """#,
            expandedSource: #"""
            @MainActor
            final class UI {
                var count {
                    get {
                        access(keyPath: \.count)
                        return _$prefs.value("count", default: _count, _PrefsStorage.codec(_count))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_count)
                        guard _$prefs.willChange("count", to: newValue, default: _count, codec) else {
                            return
                        }
                        withMutation(keyPath: \.count) {
                            _$prefs.set(newValue, "count", codec)
                        }
                    }
                }

                private let _count = 0

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<UI, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<UI, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: "group.com.example.app", prefix: "ui.", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "count":
                    if _$prefs.changesValue(change, default: _count, _PrefsStorage.codec(_count)) {
                        withMutation(keyPath: \.count) {
                        }
                    }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<UI>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \UI.count:
                                    "count"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["count"]).subtracting(ignored), onMain: true) { object, name, change in
                        MainActor.assumeIsolated {
                            object._$prefsDidChange(name, change)
                        }
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<UI>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension UI: Observation.Observable {
            }
            """#,
            macroSpecs: macroSpecs
        )
    }

    /// ObservableDefaults spellings port unchanged; autoInit: false generates no init.
    func testObservableDefaultsSpellingsAndNoAutoInit() {
        assertMacroExpansion(
            #"""
            @ObservableDefaults(autoInit: false, suiteName: "group.x", prefix: "p.", limitToInstance: false)
            final class Ported {
                @DefaultsKey(userDefaultsKey: "custom") var a = 1
                @DefaultsBacked(userDefaultsKey: "other") var b = "x"
            }
            """#,
            expandedSource: #"""
            final class Ported {
                var a {
                    get {
                        access(keyPath: \.a)
                        return _$prefs.value("custom", default: _a, _PrefsStorage.codec(_a))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_a)
                        guard _$prefs.willChange("custom", to: newValue, default: _a, codec) else {
                            return
                        }
                        withMutation(keyPath: \.a) {
                            _$prefs.set(newValue, "custom", codec)
                        }
                    }
                }

                private let _a = 1
                var b {
                    get {
                        access(keyPath: \.b)
                        return _$prefs.value("other", default: _b, _PrefsStorage.codec(_b))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_b)
                        guard _$prefs.willChange("other", to: newValue, default: _b, codec) else {
                            return
                        }
                        withMutation(keyPath: \.b) {
                            _$prefs.set(newValue, "other", codec)
                        }
                    }
                }

                private let _b = "x"

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<Ported, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<Ported, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: "group.x", prefix: "p.", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "custom":
                    if _$prefs.changesValue(change, default: _a, _PrefsStorage.codec(_a)) {
                        withMutation(keyPath: \.a) {
                        }
                    }
                    case "other":
                        if _$prefs.changesValue(change, default: _b, _PrefsStorage.codec(_b)) {
                            withMutation(keyPath: \.b) {
                        }
                        }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Ported>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \Ported.a:
                                    "custom"
                                case \Ported.b:
                                    "other"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["custom", "other"]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// ObservableDefaults' name for `startObservingPrefs()`: call it from your own `init` when `autoInit` is `false`.
                func observerStarter() {
                    startObservingPrefs()
                }
            }

            extension Ported: Observation.Observable {
            }
            """#,
            macroSpecs: macroSpecs
        )
    }

    /// observeFirst: plain properties become @ObservableOnly, only @PrefsBacked ones persist, lets stay constants.
    func testObserveFirstPersistsOnlyBackedProperties() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs(observeFirst: true)
            final class First {
                var transient = 1
                @PrefsBacked var kept = 2
                let constant = 3
            }
            """#,
            expandedSource: #"""
            final class First {
                var transient {
                    get {
                        access(keyPath: \.transient)
                        return _transient
                    }
                    set {
                        guard _PrefsStorage.shouldNotify(_transient, newValue) else {
                            _transient = newValue
                            return
                        }
                        withMutation(keyPath: \.transient) {
                            _transient = newValue
                        }
                    }
                }

                private var _transient = 1
                var kept {
                    get {
                        access(keyPath: \.kept)
                        return _$prefs.value("kept", default: _kept, _PrefsStorage.codec(_kept))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_kept)
                        guard _$prefs.willChange("kept", to: newValue, default: _kept, codec) else {
                            return
                        }
                        withMutation(keyPath: \.kept) {
                            _$prefs.set(newValue, "kept", codec)
                        }
                    }
                }

                private let _kept = 2
                let constant = 3

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<First, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<First, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "kept":
                    if _$prefs.changesValue(change, default: _kept, _PrefsStorage.codec(_kept)) {
                        withMutation(keyPath: \.kept) {
                        }
                    }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<First>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \First.kept:
                                    "kept"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["kept"]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<First>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension First: Observation.Observable {
            }
            """#,
            macroSpecs: macroSpecs
        )
    }

    /// A persisted let, a missing default, a computed @PrefsBacked, a duplicate key and a non-literal key.
    func testEveryPropertyDiagnostic() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs
            final class Bad {
                let fixed = 1
                var noDefault: String
                @PrefsBacked var computed: Int { 1 }
                var a = 1
                @PrefsKey("a") var b = 2
                @PrefsKey(key) var c = 3
            }
            """#,
            expandedSource: #"""
            final class Bad {
                let fixed = 1
                var noDefault: String
                var computed: Int { 1 }
                var a {
                    get {
                        access(keyPath: \.a)
                        return _$prefs.value("a", default: _a, _PrefsStorage.codec(_a))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_a)
                        guard _$prefs.willChange("a", to: newValue, default: _a, codec) else {
                            return
                        }
                        withMutation(keyPath: \.a) {
                            _$prefs.set(newValue, "a", codec)
                        }
                    }
                }

                private let _a = 1
                var b {
                    get {
                        access(keyPath: \.b)
                        return _$prefs.value("a", default: _b, _PrefsStorage.codec(_b))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_b)
                        guard _$prefs.willChange("a", to: newValue, default: _b, codec) else {
                            return
                        }
                        withMutation(keyPath: \.b) {
                            _$prefs.set(newValue, "a", codec)
                        }
                    }
                }

                private let _b = 2
                var c = 3

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<Bad, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<Bad, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "a":
                    if _$prefs.changesValue(change, default: _a, _PrefsStorage.codec(_a)) {
                        withMutation(keyPath: \.a) {
                        }
                    }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Bad>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \Bad.a:
                                    "a"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["a"]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Bad>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension Bad: Observation.Observable {
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "'fixed' is a let constant and cannot be persisted; make it a var, or mark it @Ignore.", line: 3, column: 5, fixIts: [FixItSpec(message: "Make it a var")]),
                DiagnosticSpec(message: "'noDefault' needs a default value: it is what reads return when the suite has no value for the key.", line: 4, column: 9),
                DiagnosticSpec(message: "'computed' is a computed property; only stored properties can be persisted.", line: 5, column: 5, fixIts: [FixItSpec(message: "Remove @PrefsBacked")]),
                DiagnosticSpec(message: "'b' uses the key \"a\", which 'a' uses already; give one of them another @PrefsKey.", line: 7, column: 15),
                DiagnosticSpec(message: "The key of 'c' must be a non-empty string literal.", line: 8, column: 15),
            ],
            macroSpecs: macroSpecs
        )
    }

    /// A prefix with characters that do not belong in a key.
    func testInvalidPrefix() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs(prefix: "bad prefix!")
            final class BadPrefix {
                var a = 1
            }
            """#,
            expandedSource: #"""
            final class BadPrefix {
                var a {
                    get {
                        access(keyPath: \.a)
                        return _$prefs.value("a", default: _a, _PrefsStorage.codec(_a))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_a)
                        guard _$prefs.willChange("a", to: newValue, default: _a, codec) else {
                            return
                        }
                        withMutation(keyPath: \.a) {
                            _$prefs.set(newValue, "a", codec)
                        }
                    }
                }

                private let _a = 1

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<BadPrefix, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<BadPrefix, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "bad prefix!", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "a":
                    if _$prefs.changesValue(change, default: _a, _PrefsStorage.codec(_a)) {
                        withMutation(keyPath: \.a) {
                        }
                    }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<BadPrefix>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \BadPrefix.a:
                                    "a"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["a"]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<BadPrefix>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension BadPrefix: Observation.Observable {
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "The prefix \"bad prefix!\" contains characters that do not belong in a key; use letters, digits, '.', '-' and '_'.", line: 1, column: 26),
            ],
            macroSpecs: macroSpecs
        )
    }

    /// Structs (and enums, actors) are refused.
    func testOnlyClasses() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs
            struct NotAClass {
                var a = 1
            }
            """#,
            expandedSource: #"""

            struct NotAClass {
                var a = 1
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "@ObservablePrefs applies to classes: their instances are shared by reference, as the suite is.", line: 1, column: 1),
            ],
            macroSpecs: macroSpecs
        )
    }

    /// Fix-it: a persisted let becomes a var.
    func testFixItMakesALetAVar() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs
            final class A {
                let a = 1
            }
            """#,
            expandedSource: #"""
            final class A {
                let a = 1

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<A, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<A, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {

                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<A>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {

                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set([]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<A>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension A: Observation.Observable {
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "'a' is a let constant and cannot be persisted; make it a var, or mark it @Ignore.", line: 3, column: 5, fixIts: [FixItSpec(message: "Make it a var")]),
            ],
            macroSpecs: macroSpecs,
            applyFixIts: ["Make it a var"],
            fixedSource: #"""
            @ObservablePrefs
            final class A {
                var a = 1
            }
            """#
        )
    }

    /// An optional without initializer is persisted with the default nil, as Swift gives a var.
    func testAnOptionalWithoutInitializerDefaultsToNil() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs
            final class A {
                var a: Int?
            }
            """#,
            expandedSource: #"""
            final class A {
                var a: Int? {
                    get {
                        access(keyPath: \.a)
                        return _$prefs.value("a", default: _a, _PrefsStorage.codec(_a))
                    }
                    set {
                        let codec = _PrefsStorage.codec(_a)
                        guard _$prefs.willChange("a", to: newValue, default: _a, codec) else {
                            return
                        }
                        withMutation(keyPath: \.a) {
                            _$prefs.set(newValue, "a", codec)
                        }
                    }
                }

                private let _a: Int? = nil

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<A, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<A, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {
                    case "a":
                    if _$prefs.changesValue(change, default: _a, _PrefsStorage.codec(_a)) {
                        withMutation(keyPath: \.a) {
                        }
                    }
                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<A>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {
                        case \A.a:
                                    "a"
                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set(["a"]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<A>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension A: Observation.Observable {
            }
            """#,
            macroSpecs: macroSpecs
        )
    }

    /// Fix-it: @PrefsBacked is removed from a computed property.
    func testFixItRemovesPrefsBackedFromAComputedProperty() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs
            final class A {
                @PrefsBacked var a: Int { 1 }
            }
            """#,
            expandedSource: #"""
            final class A {
                var a: Int { 1 }

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<A, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<A, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {

                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<A>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {

                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set([]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<A>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension A: Observation.Observable {
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "'a' is a computed property; only stored properties can be persisted.", line: 3, column: 5, fixIts: [FixItSpec(message: "Remove @PrefsBacked")]),
            ],
            macroSpecs: macroSpecs,
            applyFixIts: ["Remove @PrefsBacked"],
            fixedSource: #"""
            @ObservablePrefs
            final class A {
                var a: Int { 1 }
            }
            """#
        )
    }

    /// Several properties in one declaration are refused (each needs its own key and default).
    func testOnePropertyPerDeclaration() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs
            final class Pair {
                var a = 1, b = 2
            }
            """#,
            expandedSource: #"""
            final class Pair {
                var a = 1, b = 2

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<Pair, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<Pair, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {

                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Pair>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {

                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set([]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Pair>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension Pair: Observation.Observable {
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "Declare one property per line in an @ObservablePrefs class.", line: 3, column: 5),
            ],
            macroSpecs: macroSpecs
        )
    }

    /// autoInit and observeFirst must be written out: they decide what is generated.
    func testFlagsMustBeLiterals() {
        assertMacroExpansion(
            #"""
            @ObservablePrefs(autoInit: flag)
            final class Flag {
            }

            """#,
            expandedSource: #"""
            final class Flag {

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<Member>(keyPath: KeyPath<Flag, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: KeyPath<Flag, Member>, _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                private let _$prefs = SharedPrefsObservation._PrefsStorage(suiteName: nil, prefix: "", ignoreExternalChanges: false)

                /// The number of the last write of the suite that the properties read
                /// (`PreferenceSuite.sequence`): save it, and resume from it with the suite's `changes(since:)`.
                var prefsSequence: UInt64 {
                    _$prefs.sequence
                }

                private func _$prefsDidChange(_ name: String, _ change: SharedPrefs.PreferenceChange) {
                    switch name {

                    default:
                        break
                    }
                }

                /// Points this instance at a suite (each `nil` keeps the value given to the macro) and
                /// starts updating its properties, but those of `ignoredKeyPathsForExternalUpdates`,
                /// when other processes change their keys.
                func startObservingPrefs(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Flag>] = []
                ) {
                    let ignored: Set<String> = Set(ignoredKeyPathsForExternalUpdates.compactMap { keyPath in
                        switch keyPath {

                        default:
                                    nil
                        }
                    })
                    _$prefs.configure(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges)
                    _$prefs.observe(self, names: Set([]).subtracting(ignored), onMain: false) { object, name, change in
                        object._$prefsDidChange(name, change)
                    }
                }

                /// Creates an instance backed by `suite` under `prefix` (each `nil` is the value given to the
                /// macro), which does not hear other processes' changes of `ignoredKeyPathsForExternalUpdates`.
                init(
                    suite: SharedPrefs.PreferenceSuite? = nil, prefix: String? = nil, ignoreExternalChanges: Bool? = nil,
                    ignoredKeyPathsForExternalUpdates: [PartialKeyPath<Flag>] = []
                ) {
                    startObservingPrefs(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges, ignoredKeyPathsForExternalUpdates: ignoredKeyPathsForExternalUpdates)
                }
            }

            extension Flag: Observation.Observable {
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "autoInit must be true or false written out: it decides what the macro generates.", line: 1, column: 28),
            ],
            macroSpecs: macroSpecs
        )
    }
}
