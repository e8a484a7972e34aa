extension PreferenceSuite {
    /// A typed value: the stored value, else the registered default, else the key's declared
    /// default. A stored value of another type reads as the default and is reported once (log and
    /// ``failures()``). Setting `nil` to an optional key removes it.
    ///
    /// ```swift
    /// extension PreferenceKey where Value == Int { static let volume = PreferenceKey("volume", default: 5) }
    /// suite[.volume] += 1
    /// ```
    @inlinable
    public subscript<Value: PreferenceValue>(key: PreferenceKey<Value>) -> Value {
        get {
            // Inlinable so that the caller specializes the decoding: the common case, a stored value
            // of the right type, is then one lock, one lookup and one pattern match.
            if let stored = _storedValue(forKey: key.name), let value = Value(plistValue: stored) { return value }
            return _resolve(key)
        }
        set {
            _registerDefault(of: key)
            set(newValue, forKey: key.name)
        }
    }

    /// Registers the key's fixed default under its name, unless something is registered there.
    @usableFromInline
    func _registerDefault<Value: PreferenceValue>(of key: PreferenceKey<Value>) {
        guard let value = key.fixedDefault else { return }
        store.registerIfAbsent(key.name) { value.plistValue }
    }

    /// Whether the key reads as its declared default (compared as stored: no `Equatable` needed).
    public func isDefaultValue<Value: PreferenceValue>(_ key: PreferenceKey<Value>) -> Bool {
        self[key].plistValue == key.defaultValue.plistValue
    }

    @usableFromInline
    func _storedValue(forKey key: String) -> PlistValue? {
        store.storedValue(forKey: key)
    }

    /// The slow path of the subscript: no stored value, or one of the wrong type.
    @usableFromInline
    func _resolve<Value: PreferenceValue>(_ key: PreferenceKey<Value>) -> Value {
        _registerDefault(of: key)
        return typedValue(key, stored: store.storedValue(forKey: key.name))
    }

    /// Removes the key, so reads return the registered or declared default.
    public func reset<Value: PreferenceValue>(_ key: PreferenceKey<Value>) {
        removeObject(forKey: key.name)
    }

    /// Removes several keys at once, of any value types.
    public func reset(_ keys: any AnyPreferenceKey...) {
        for key in keys { removeObject(forKey: key.name) }
    }

    /// Resolves stored → registered → declared default, reporting a stored value of the wrong type.
    package func typedValue<Value: PreferenceValue>(_ key: PreferenceKey<Value>, stored: PlistValue?) -> Value {
        typedValue(forKey: key.name, default: key.defaultValue, stored: stored, decode: Value.init(plistValue:))
    }

    /// ``typedValue(_:stored:)`` for any type, with the decoding given.
    package func typedValue<Value>(forKey key: String, default defaultValue: Value, stored: PlistValue?, decode: (PlistValue) -> Value?) -> Value {
        if let stored {
            if let value = decode(stored) { return value }
            store.reportMismatch(key: key, stored: stored, expected: Value.self)
        }
        if let registered = store.registeredValue(forKey: key), let value = decode(registered) {
            return value
        }
        return defaultValue
    }
}
