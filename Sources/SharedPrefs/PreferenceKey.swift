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
public struct PreferenceKey<Value: PreferenceValue> {
    /// The key in the suite. Keys may contain dots (`window.width`); prefixes are plain string prefixes.
    public let name: String
    /// The value read when neither a stored nor a registered value of the right type exists.
    public let defaultValue: Value

    /// Creates a key with a declared default.
    /// - Parameters:
    ///   - name: The key in the suite.
    ///   - defaultValue: Returned when nothing usable is stored or registered.
    public init(_ name: String, default defaultValue: Value) {
        self.name = name
        self.defaultValue = defaultValue
    }
}

extension PreferenceKey where Value: ExpressibleByNilLiteral {
    /// Creates a key for an optional value whose default is `nil`.
    public init(_ name: String) {
        self.init(name, default: nil)
    }
}

extension PreferenceKey: Sendable where Value: Sendable {}
