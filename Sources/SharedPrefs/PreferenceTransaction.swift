/// The view of a suite inside ``PreferenceSuite/update(_:)-30e7n``: the freshest values, read under the
/// suite's file lock, so a read-modify-write cannot race with any other process.
///
/// ```swift
/// try suite.update { transaction in
///     transaction[.launchCount] += 1
///     transaction["recent"] = .array(Array(recent.prefix(10)))
/// }
/// ```
public struct PreferenceTransaction {
    /// The stored values, with this transaction's changes applied: a copy of the suite made at
    /// each access, so read single keys through the subscript.
    public var values: PlistDictionary {
        readLog.all = true
        var values = base.dictionary
        for (key, value) in overrides { values.storage[key] = value }
        values.apply(operations)
        return values
    }

    /// The suite's values, and where the file holds others (keys with local changes not yet
    /// written), those: no copy of the suite is made for a transaction.
    private let base: SuiteSnapshot
    private let overrides: [PlistKey: PlistValue?]
    private let registered: PlistDictionary
    private let layers: SystemLayers?
    private(set) var operations: Operations = [:]
    /// Typed values set with no stored form, by key (their type): the update fails with them.
    private(set) var unencodable: [String: String] = [:]
    /// The keys read, for a backend that compares them when it writes (etcd).
    private let readLog = ReadLog()

    /// What a transaction read: some keys, or all of them.
    final class ReadLog {
        var keys: Set<PlistKey> = []
        var all = false
    }

    init(base: SuiteSnapshot, overrides: [PlistKey: PlistValue?] = [:], registered: PlistDictionary, layers: SystemLayers? = nil) {
        self.base = base
        self.overrides = overrides
        self.registered = registered
        self.layers = layers
    }

    /// The keys this transaction read (its own writes aside); `nil` when it read the whole suite
    /// (``values``).
    var reads: Set<PlistKey>? {
        guard !readLog.all else { return nil }
        return readLog.keys
    }

    /// The stored value of a key; setting `nil` removes it.
    public subscript(key: String) -> PlistValue? {
        get {
            let key = PlistKey(key)
            if let operation = operations[key] { return operation.value }
            readLog.keys.insert(key)
            if let override = overrides[key] { return override }
            return base[key]
        }
        set { operations[PlistKey(key)] = newValue.map { .set($0) } ?? .remove }
    }

    /// A typed value, as ``PreferenceSuite`` reads it: through every layer (<doc:Layers>) by the
    /// same rule, this transaction's changes and the freshest stored values in the suite's
    /// place, then the registered and the declared default. Setting `Optional.none` removes the
    /// key; setting a value with no stored form makes the update throw
    /// ``PreferenceError/Code/unsupportedValue``, setting a locked key
    /// ``PreferenceError/Code/keyLocked``, writing nothing.
    public subscript<Value: PreferenceValue>(key: PreferenceKey<Value>) -> Value {
        get {
            let read = layers.map { $0.value(of: PlistKey(key.name)) { self[$0.string] } } ?? self[key.name]
            for candidate in [read, registered[key.name]] {
                if let candidate, let value = Value(plistValue: candidate) { return value }
            }
            return key.defaultValue
        }
        set {
            guard let operation = newValue.storing else { return unencodable[key.name] = "\(Value.self)" }
            operations[PlistKey(key.name)] = operation
        }
    }

    /// Removes a key.
    public mutating func removeObject(forKey key: String) {
        self[key] = nil
    }
}
