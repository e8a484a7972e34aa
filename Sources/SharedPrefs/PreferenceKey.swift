/// A typed key with a declared default, in the style of sindresorhus/Defaults.
///
/// ```swift
/// enum Theme: String, PreferenceValue { case system, light, dark }
///
/// extension PreferenceKey where Value == Theme {
///     static let theme = PreferenceKey("theme", default: .system)
/// }
///
/// suite[.theme] = .dark
/// print(suite[.theme])       // .dark, in this process at once and in others within a millisecond
/// suite.reset(.theme)        // removes the key; reads fall back to registered, then declared default
/// ```
///
/// Reads look up the stored value, then the value given to ``PreferenceSuite/register(defaults:)``,
/// then `defaultValue`. A stored value of another type is reported once in the log and reads as the
/// default; it is never a crash.
///
/// A key with a fixed default registers it when it is made, in the suite given to its `init`
/// (``PreferenceSuite/standard`` unless told otherwise), and in any other suite when first used
/// with it (unless one was registered there already), so untyped reads (`string(forKey:)`,
/// `dictionaryRepresentation()`) see it too, as sindresorhus/Defaults registers its keys' defaults.
/// Keys compare by name and suite.
public struct PreferenceKey<Value: PreferenceValue> {
    /// The key in the suite. Keys may contain dots (`window.width`); prefixes are plain string prefixes.
    public let name: String
    /// The suite given when the key was made (its default is registered there), where
    /// `@ObservableDefault` reads and writes it; `nil` is ``PreferenceSuite/standard``. A key is
    /// not tied to it: `anySuite[key]` works with any suite.
    public let suite: PreferenceSuite?
    fileprivate let makeDefault: Default

    fileprivate enum Default {
        case fixed(Value)
        case dynamic(@Sendable () -> Value)
    }

    /// The value read when neither a stored nor a registered value of the right type exists.
    public var defaultValue: Value {
        switch makeDefault {
        case .fixed(let value): value
        case .dynamic(let make): make()
        }
    }

    /// The fixed default, if it is one: the value to register.
    var fixedDefault: Value? {
        if case .fixed(let value) = makeDefault { return value }
        return nil
    }

    /// Creates a key with a declared default, and registers the default in `suite` (as
    /// ``PreferenceSuite/register(defaults:)`` would), so that untyped reads there see it at once,
    /// as sindresorhus/Defaults' keys do.
    /// - Parameters:
    ///   - name: The key in the suite.
    ///   - defaultValue: Returned when nothing usable is stored or registered.
    ///   - suite: Where the default is registered now; `nil` is ``PreferenceSuite/standard``, which
    ///     this does not open (it registers the default when it is opened). A key is not tied to a
    ///     suite: any other suite registers the default when the key is first used with it.
    public init(_ name: String, default defaultValue: Value, suite: PreferenceSuite? = nil) {
        self.name = name
        self.suite = suite
        self.makeDefault = .fixed(defaultValue)
        guard let stored = defaultValue.plistValue else { return }
        if let suite {
            suite.store.register([name: stored])
        } else {
            StandardSuiteDefaults.register(name, stored)
        }
    }

    /// Creates a key whose default is computed at each read that needs it (a date, say). Such a
    /// default is never registered.
    ///
    /// ```swift
    /// let lastSeen = PreferenceKey<Date>("lastSeen", suite: shared) { Date() }
    /// ```
    public init(_ name: String, suite: PreferenceSuite? = nil, default makeDefault: @escaping @Sendable () -> Value) {
        self.name = name
        self.suite = suite
        self.makeDefault = .dynamic(makeDefault)
    }
}

/// Keys are equal when they have the same name and were made with the same suite (or none), as
/// Defaults' keys are equal with the same name and suite.
extension PreferenceKey: Equatable, Hashable {
    public static func == (lhs: PreferenceKey, rhs: PreferenceKey) -> Bool { lhs.name.isExactly(rhs.name) && lhs.suite === rhs.suite }
    public func hash(into hasher: inout Hasher) { hasher.combine(PlistKey(name)) }
}

extension PreferenceKey {
    /// Whether the key reads as its default in its suite (the one it was made with, else
    /// ``PreferenceSuite/standard``): Defaults' `key.isDefaultValue`.
    public var isDefaultValue: Bool { (suite ?? .standard).isDefaultValue(self) }

    /// Removes the key's value from its suite (the one it was made with, else
    /// ``PreferenceSuite/standard``), so that it reads as its default: Defaults' `key.reset()`.
    public func reset() { (suite ?? .standard).reset(self) }
}

extension PreferenceKey where Value: ExpressibleByNilLiteral {
    /// Creates a key for an optional value whose default is `nil`.
    public init(_ name: String, suite: PreferenceSuite? = nil) {
        self.init(name, default: nil, suite: suite)
    }
}

/// Sendable whatever the value type, as `Defaults.Key` is, so that keys can be `static let`s in
/// extensions under Swift 6 for any value (a class, a custom collection). A key's name is a
/// string and its default is only ever copied out; a default of a mutable reference type is
/// shared by every read, as with Defaults: give such a key a `default: { … }` closure instead.
extension PreferenceKey: @unchecked Sendable {}

extension PreferenceKey: CustomStringConvertible {
    /// `PreferenceKey<Int>("volume")`, and the suite's name when the key has one: for logs and the
    /// debugger (SwiftDefaults' `Value<Int>(key: "volume")`).
    public var description: String {
        "PreferenceKey<\(Value.self)>(\"\(name)\"" + (suite.map { ", suite: \($0.name)" } ?? "") + ")"
    }
}
