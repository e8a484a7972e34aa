/// The view of a suite inside ``PreferenceSuite/update(_:)``: the freshest values, read under the
/// suite's file lock, so a read-modify-write cannot race with any other process.
///
/// ```swift
/// try suite.update { transaction in
///     transaction[.launchCount] += 1
///     transaction["recent"] = .array(Array(recent.prefix(10)))
/// }
/// ```
public struct PreferenceTransaction {
    /// The stored values, with this transaction's changes applied.
    public private(set) var values: PlistDictionary
    private let registered: PlistDictionary
    private(set) var operations: Operations = [:]

    init(values: PlistDictionary, registered: PlistDictionary) {
        self.values = values
        self.registered = registered
    }

    /// The stored value of a key; setting `nil` removes it.
    public subscript(key: String) -> PlistValue? {
        get { values[key] }
        set {
            values[key] = newValue
            operations[PlistKey(key)] = newValue.map { .set($0) } ?? .remove
        }
    }

    /// A typed value: stored → registered → declared default, as ``PreferenceSuite`` reads it.
    public subscript<Value: PreferenceValue>(key: PreferenceKey<Value>) -> Value {
        get {
            for candidate in [values[key.name], registered[key.name]] {
                if let candidate, let value = Value(plistValue: candidate) { return value }
            }
            return key.defaultValue
        }
        set { self[key.name] = newValue.plistValue }
    }

    /// Removes a key.
    public mutating func removeObject(forKey key: String) {
        self[key] = nil
    }
}
