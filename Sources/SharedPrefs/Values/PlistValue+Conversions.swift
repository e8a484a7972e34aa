import FoundationEssentials

// The conversions that need the rest of the library; PlistValue.swift and the codecs need
// nothing else (the fuzzer in Fuzz/ compiles them alone).

extension PlistValue {
    /// Converts Foundation property-list objects (as `UserDefaults.set(_:forKey:)` accepts them)
    /// and any ``PreferenceValue``; returns `nil` for anything a property list cannot hold.
    public init?(foundationValue value: Any) {
        switch value {
        case let v as PlistValue: self = v
        case let v as any PreferenceValue:
            guard let plist = v.plistValue else { return nil }
            self = plist
        case let v as [Any]:
            var items: [PlistValue] = []
            items.reserveCapacity(v.count)
            for item in v {
                guard let converted = PlistValue(foundationValue: item) else { return nil }
                items.append(converted)
            }
            self = .array(items)
        case let v as [String: Any]:
            var items = PlistDictionary()
            items.storage.reserveCapacity(v.count)
            for (key, item) in v {
                guard let converted = PlistValue(foundationValue: item) else { return nil }
                items[key] = converted
            }
            self = .dictionary(items)
        case let v as Double:
            // Only what bridges to a Double gets here: Foundation's NSNumber (JSONSerialization's numbers).
            self = .real(v)
        default:
            return nil
        }
    }
}

extension PlistValue {
    /// The value as a property-list document, for export or for other tools.
    /// - Parameter format: `.xml` (default) or `.binary`. A value with a string XML cannot carry
    ///   (a control character other than tab, line feed and carriage return, U+FFFE, U+FFFF) is
    ///   always encoded as a binary property list.
    public func propertyListData(format: PropertyListFormat = .xml) -> Data {
        Data(format.encode(self))
    }

    /// Decodes a property-list document in either format, whatever its root.
    /// - Throws: ``PreferenceError`` with code ``PreferenceError/Code/corruptFile`` when the data
    ///   is not a property list.
    public init(propertyListData data: Data) throws(PreferenceError) {
        do {
            self = try PropertyListFormat.decode(Array(data))
        } catch {
            throw PreferenceError(code: .corruptFile, message: "Not a property list: \(error).")
        }
    }
}

extension PlistValue {
    /// The stored form of a typed value (what `set(_:forKey:)` would store). With ``get(_:)`` and
    /// ``set(_:)``, this is sindresorhus/Defaults' `AnySerializable`: a key of type `PlistValue`
    /// holds a value of any storable type.
    ///
    /// ```swift
    /// enum Mime: String, PreferenceValue { case json = "application/json", stream = "application/octet-stream" }
    /// let any = PreferenceKey<PlistValue>("anyKey", default: [PlistValue(Mime.json)])
    /// suite[any].set(Mime.stream)
    /// let mime: Mime? = suite[any].get()     // .stream
    /// ```
    ///
    /// A value with no stored form (`nil`, or a conformance whose `plistValue` is `nil`) becomes
    /// an empty dictionary, which reads back as no value of its type.
    public init<Value: PreferenceValue>(_ value: Value) {
        self = value.plistValue ?? .dictionary([:])
    }

    /// The value as `type`, if it reads as one (`PlistValue.integer(3).get(Int.self)` is 3); the
    /// type may be left to the context: `let mime: Mime? = value.get()`.
    public func get<Value: PreferenceValue>(_ type: Value.Type = Value.self) -> Value? {
        Value(plistValue: self)
    }

    /// Replaces the value with the stored form of `value` (unchanged for `Optional.none`).
    public mutating func set<Value: PreferenceValue>(_ value: Value) {
        if let stored = value.plistValue { self = stored }
    }

    /// ``set(_:)`` with the type named, for a literal: `value.set(12.5, type: Float.self)`.
    public mutating func set<Value: PreferenceValue>(_ value: Value, type: Value.Type) {
        set(value)
    }

    /// ``set(_:)``, labelled.
    public mutating func set<Value: PreferenceValue>(value: Value) {
        set(value)
    }
}

extension PlistValue {
    // The one rule for reading a value as another type, as `UserDefaults` reads it: the suite's
    // `string(forKey:)`, `integer(forKey:)`, `double(forKey:)` and `bool(forKey:)` (where `nil`
    // reads as `0` or `false`), and the configuration provider (where it is a type mismatch).

    /// A string, or a number's decimal text.
    package var userDefaultsString: String? {
        switch self {
        case .string(let v): v
        case .integer(let v): String(v)
        case .unsignedInteger(let v): String(v)
        case .real(let v): String(v)
        default: nil
        }
    }

    /// An integer: reals truncated, booleans as 1 and 0, and numeric strings.
    package var userDefaultsInteger: Int? {
        switch self {
        case .integer(let v): Int(exactly: v)
        case .unsignedInteger(let v): Int(exactly: v)
        case .real(let v): Int(exactly: v.rounded(.towardZero))
        case .bool(let v): v ? 1 : 0
        case .string(let v): Int(v) ?? Double(v).flatMap { Int(exactly: $0.rounded(.towardZero)) }
        default: nil
        }
    }

    /// A double: integers, booleans as 1 and 0, and numeric strings.
    package var userDefaultsDouble: Double? {
        switch self {
        case .real(let v): v
        case .integer(let v): Double(v)
        case .unsignedInteger(let v): Double(v)
        case .bool(let v): v ? 1 : 0
        case .string(let v): Double(v)
        default: nil
        }
    }

    /// A boolean: numbers (non-zero is `true`), the strings `YES`, `true`, `NO` and `false` in any
    /// case, and integers as strings.
    package var userDefaultsBool: Bool? {
        switch self {
        case .bool(let v): v
        case .integer(let v): v != 0
        case .unsignedInteger(let v): v != 0
        case .real(let v): v != 0
        case .string(let v) where ["yes", "true"].contains(v.lowercased()): true
        case .string(let v) where ["no", "false"].contains(v.lowercased()): false
        case .string(let v): Int(v).map { $0 != 0 }
        default: nil
        }
    }
}
