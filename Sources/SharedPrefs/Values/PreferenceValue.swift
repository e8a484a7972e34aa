import FoundationEssentials
import SharedPrefsLocking

/// A type that a suite can store.
///
/// The property-list types conform already: `String`, every integer width, `Double`, `Float`,
/// `Bool`, `Date`, `Data`, `URL` (stored as its absolute string), `UUID` (its string), arrays,
/// sets (as arrays), ranges (as `[lower, upper]`) and dictionaries (keyed by `UUID` or any
/// `LosslessStringConvertible` or `CodingKeyRepresentable` type, stored as strings) of conforming
/// types, `Optional` (where `nil` removes the key) and ``PlistValue``.
///
/// Your own types conform by declaration alone:
/// - a `RawRepresentable` type stores its raw value,
/// - a `Codable` type stores a nested property list (readable by `plistlib` or `plutil`),
/// - a type that is both stores its raw value.
///
/// ```swift
/// enum Theme: String, PreferenceValue { case system, light, dark }
/// struct Window: Codable, PreferenceValue { var width = 800, height = 600 }
/// ```
public protocol PreferenceValue {
    /// The stored form; `nil` for `Optional.none` (which removes the key) and for a value that
    /// cannot be encoded (which a suite does not store, and reports).
    var plistValue: PlistValue? { get }
    /// Decodes a stored value; `nil` when it has another type or is out of range.
    init?(plistValue: PlistValue)
}

extension PlistValue: PreferenceValue {
    public var plistValue: PlistValue? { self }
    public init?(plistValue: PlistValue) { self = plistValue }
}

extension String: PreferenceValue {
    public var plistValue: PlistValue? { .string(self) }
    public init?(plistValue: PlistValue) {
        guard case .string(let v) = plistValue else { return nil }
        self = v
    }
}

extension Bool: PreferenceValue {
    public var plistValue: PlistValue? { .bool(self) }
    public init?(plistValue: PlistValue) {
        guard case .bool(let v) = plistValue else { return nil }
        self = v
    }
}

extension Double: PreferenceValue {
    public var plistValue: PlistValue? { .real(self) }
    public init?(plistValue: PlistValue) {
        switch plistValue {
        case .real(let v): self = v
        case .integer(let v): self = Double(v)
        case .unsignedInteger(let v): self = Double(v)
        default: return nil
        }
    }
}

extension Float: PreferenceValue {
    public var plistValue: PlistValue? { .real(Double(self)) }
    public init?(plistValue: PlistValue) {
        guard let v = Double(plistValue: plistValue) else { return nil }
        self = Float(v)
    }
}

extension Date: PreferenceValue {
    public var plistValue: PlistValue? { .date(self) }
    public init?(plistValue: PlistValue) {
        guard case .date(let v) = plistValue else { return nil }
        self = v
    }
}

extension Data: PreferenceValue {
    public var plistValue: PlistValue? { .data(self) }
    public init?(plistValue: PlistValue) {
        guard case .data(let v) = plistValue else { return nil }
        self = v
    }
}

extension URL: PreferenceValue {
    public var plistValue: PlistValue? { .string(absoluteString) }
    public init?(plistValue: PlistValue) {
        guard case .string(let v) = plistValue, let url = URL(string: v) else { return nil }
        self = url
    }
}

/// Integers are stored as property-list integers; unsigned values above `Int64.max` as
/// ``PlistValue/unsignedInteger(_:)`` (a 128-bit integer in the file). A decimal string is read
/// too, as earlier versions stored such values.
/// (Refining `Codable` makes these defaults win over the `Codable` ones below.)
public protocol PreferenceInteger: FixedWidthInteger, Codable, PreferenceValue {}

extension PreferenceInteger {
    public var plistValue: PlistValue? {
        if let v = Int64(exactly: self) { return .integer(v) }
        return UInt64(exactly: self).map(PlistValue.unsignedInteger)
    }
    public init?(plistValue: PlistValue) {
        switch plistValue {
        case .integer(let v):
            guard let exact = Self(exactly: v) else { return nil }
            self = exact
        case .unsignedInteger(let v):
            guard let exact = Self(exactly: v) else { return nil }
            self = exact
        case .string(let v) where !Self.isSigned:
            guard let exact = Self(v) else { return nil }
            self = exact
        default: return nil
        }
    }
}

extension Int: PreferenceInteger {}
extension Int8: PreferenceInteger {}
extension Int16: PreferenceInteger {}
extension Int32: PreferenceInteger {}
extension Int64: PreferenceInteger {}
extension UInt: PreferenceInteger {}
extension UInt8: PreferenceInteger {}
extension UInt16: PreferenceInteger {}
extension UInt32: PreferenceInteger {}
extension UInt64: PreferenceInteger {}

extension Array: PreferenceValue where Element: PreferenceValue {
    public var plistValue: PlistValue? { .array(compactMap(\.plistValue)) }
    public init?(plistValue: PlistValue) {
        guard case .array(let items) = plistValue else { return nil }
        var result: [Element] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let element = Element(plistValue: item) else { return nil }
            result.append(element)
        }
        self = result
    }
}

/// A dictionary is stored as a property-list dictionary, as sindresorhus/Defaults stores it.
/// Its keys are stored as strings:
/// - a `LosslessStringConvertible` key (`String`, `Int`, …) by its `description`, a `UUID` by its
///   `uuidString`;
/// - a `CodingKeyRepresentable` key (an enum with `String` or `Int` raw values that declares it,
///   a `RawRepresentable` struct over `String` or `Int`) by its coding key's string.
///
/// A dictionary whose key type is none of these has no stored form: a suite does not store it,
/// and reports it (``PreferenceError/Code/unsupportedValue``). A stored dictionary with a key that
/// does not convert back does not decode, so its key reads its default.
extension Dictionary: PreferenceValue where Value: PreferenceValue {
    public var plistValue: PlistValue? {
        var items = PlistDictionary()
        for (key, value) in self {
            guard let name = DictionaryKeyForm.string(for: key) else { return nil }
            if let stored = value.plistValue { items[name] = stored }
        }
        return .dictionary(items)
    }
    public init?(plistValue: PlistValue) {
        guard case .dictionary(let items) = plistValue else { return nil }
        var result: [Key: Value] = [:]
        result.reserveCapacity(items.count)
        for (name, item) in items {
            guard let key = DictionaryKeyForm.key(Key.self, from: name), let value = Value(plistValue: item) else { return nil }
            result[key] = value
        }
        self = result
    }
}

/// How a dictionary key is stored: the string of a `LosslessStringConvertible` key or a `UUID`,
/// else of a `CodingKeyRepresentable` key's coding key.
private enum DictionaryKeyForm {
    struct StringKey: CodingKey {
        let stringValue: String
        let intValue: Int?
        init(stringValue: String) { (self.stringValue, intValue) = (stringValue, Int(stringValue)) }
        init(intValue: Int) { (stringValue, self.intValue) = (String(intValue), intValue) }
    }

    static func string<Key>(for key: Key) -> String? {
        if let key = key as? String { return key }
        if let key = key as? UUID { return key.uuidString }
        if let key = key as? any LosslessStringConvertible { return key.description }
        if let key = key as? any CodingKeyRepresentable { return key.codingKey.stringValue }
        return nil
    }

    static func key<Key>(_ type: Key.Type, from name: String) -> Key? {
        if Key.self == String.self { return name as? Key }
        if Key.self == UUID.self { return UUID(uuidString: name) as? Key }
        if let type = Key.self as? any LosslessStringConvertible.Type { return type.init(name) as? Key }
        if let type = Key.self as? any CodingKeyRepresentable.Type { return type.init(codingKey: StringKey(stringValue: name)) as? Key }
        return nil
    }
}

/// A set is stored as an array (in no particular order).
extension Set: PreferenceValue where Element: PreferenceValue {
    public var plistValue: PlistValue? { Array(self).plistValue }
    public init?(plistValue: PlistValue) {
        guard let items = [Element](plistValue: plistValue) else { return nil }
        self.init(items)
    }
}

/// A range is stored as the array `[lowerBound, upperBound]`, as sindresorhus/Defaults stores it.
extension Range: PreferenceValue where Bound: PreferenceValue {
    public var plistValue: PlistValue? { [lowerBound, upperBound].plistValue }
    public init?(plistValue: PlistValue) {
        guard let bounds = [Bound](plistValue: plistValue), bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
        self = bounds[0]..<bounds[1]
    }
}

/// A closed range is stored as the array `[lowerBound, upperBound]`.
extension ClosedRange: PreferenceValue where Bound: PreferenceValue {
    public var plistValue: PlistValue? { [lowerBound, upperBound].plistValue }
    public init?(plistValue: PlistValue) {
        guard let bounds = [Bound](plistValue: plistValue), bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
        self = bounds[0]...bounds[1]
    }
}

/// A UUID is stored as its string (`E621E1F8-C36C-495A-93FC-0C247A3E6E5F`).
extension UUID: PreferenceValue {
    public var plistValue: PlistValue? { .string(uuidString) }
    public init?(plistValue: PlistValue) {
        guard case .string(let text) = plistValue, let uuid = UUID(uuidString: text) else { return nil }
        self = uuid
    }
}

extension Optional: PreferenceValue where Wrapped: PreferenceValue {
    public var plistValue: PlistValue? { self?.plistValue }
    public init?(plistValue: PlistValue) {
        guard let value = Wrapped(plistValue: plistValue) else { return nil }
        self = .some(value)
    }
}

/// An optional, whose `nil` (at any depth) removes a key rather than being a value that failed
/// to encode.
protocol OptionalPreferenceValue {
    var isNone: Bool { get }
}

extension Optional: OptionalPreferenceValue where Wrapped: PreferenceValue {
    var isNone: Bool {
        guard let self else { return true }
        return (self as? any OptionalPreferenceValue)?.isNone ?? false
    }
}

extension PreferenceValue {
    /// What storing this value does: set its stored form, or remove the key for `Optional.none`;
    /// `nil` when it has no stored form (a suite refuses it, ``noStoredForm`` says why).
    var storing: PendingOperation? {
        if let stored = plistValue { return .set(stored) }
        return (self as? any OptionalPreferenceValue)?.isNone == true ? .remove : nil
    }
}

/// Why a typed value was not stored, and what to do: the end of its error message.
let noStoredForm = "which has no stored form (a Codable value that failed to encode, or a dictionary whose key type is not UUID, LosslessStringConvertible or CodingKeyRepresentable). Make it encodable, or conform the key type to LosslessStringConvertible or CodingKeyRepresentable"

// MARK: RawRepresentable and Codable

extension PreferenceValue where Self: RawRepresentable, RawValue: PreferenceValue {
    public var plistValue: PlistValue? { rawValue.plistValue }
    public init?(plistValue: PlistValue) {
        guard let raw = RawValue(plistValue: plistValue) else { return nil }
        self.init(rawValue: raw)
    }
}

extension PreferenceValue where Self: Codable {
    public var plistValue: PlistValue? { try? PlistCoding.encode(self) }
    public init?(plistValue: PlistValue) {
        guard let value = try? PlistCoding.decode(Self.self, from: plistValue) else { return nil }
        self = value
    }
}

/// A type that is both `RawRepresentable` and `Codable` (a `String` enum, say) stores its raw value.
extension PreferenceValue where Self: RawRepresentable & Codable, RawValue: PreferenceValue {
    public var plistValue: PlistValue? { rawValue.plistValue }
    public init?(plistValue: PlistValue) {
        guard let raw = RawValue(plistValue: plistValue) else { return nil }
        self.init(rawValue: raw)
    }
}

/// Bridges `Codable` through Foundation's property-list coders, boxed in a one-key dictionary
/// because those coders refuse top-level scalars.
package enum PlistCoding {
    private struct Box<T: Codable>: Codable { var v: T }

    package static func encode<T: Codable>(_ value: T) throws -> PlistValue? {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let bytes = try encoder.encode(Box(v: value))
        guard case .dictionary(let box) = try BinaryPropertyList.decode(Array(bytes)) else { return nil }
        return box["v"]
    }

    /// Values decoded lately, by type and stored value: a `Codable` value is decoded once, and
    /// read again at the cost of comparing what is stored, until the stored value changes (a
    /// struct of three fields: about 36 µs to decode, debug build). Instances of classes are not
    /// kept, so that no two readers share one.
    private static let decoded = Lock<[Decoded: Kept]>([:])

    private struct Decoded: Hashable, Sendable {
        let type: ObjectIdentifier
        let value: PlistValue
    }

    /// A decoded value: a copy of a value type, handed out as copies.
    private struct Kept: @unchecked Sendable {
        let value: Any
    }

    /// How many decoded values ``decoded`` keeps (it is emptied when full).
    static let decodedLimit = 256

    /// Decodes the nested property list this library writes, or (read only, for suites other
    /// libraries wrote) JSON text as sindresorhus/Defaults stores `Codable` values, or JSON data
    /// as fatbobman/ObservableDefaults stores them.
    package static func decode<T: Codable>(_ type: T.Type, from value: PlistValue) throws -> T {
        if T.self is AnyClass { return try decodeAnew(type, from: value) }
        let key = Decoded(type: ObjectIdentifier(T.self), value: value)
        if let cached = decoded.withLock({ $0[key] })?.value as? T { return cached }
        let new = try decodeAnew(type, from: value)
        // What is evicted is let go once the lock is (a value may hold an object whose deinit
        // is the app's code).
        let evicted = decoded.withLock { cache -> [Decoded: Kept] in
            var evicted: [Decoded: Kept] = [:]
            if cache.count >= decodedLimit { swap(&cache, &evicted) }
            if cache[key] == nil { cache[key] = Kept(value: new) }
            return evicted
        }
        _ = evicted
        return new
    }

    private static func decodeAnew<T: Codable>(_ type: T.Type, from value: PlistValue) throws -> T {
        let bytes = BinaryPropertyList.encode(.dictionary(["v": value]))
        do {
            return try PropertyListDecoder().decode(Box<T>.self, from: Data(bytes)).v
        } catch {
            let json: Data
            switch value {
            case .string(let text): json = Data(text.utf8)
            case .data(let data): json = data
            default: throw error
            }
            guard let decoded = try? JSONDecoder().decode(T.self, from: json) else { throw error }
            return decoded
        }
    }
}

/// A collection of your own, stored as an array of its elements (as sindresorhus/Defaults'
/// `CollectionSerializable`): declare the conformance and `init(_:)`, and the rest is given.
///
/// ```swift
/// struct Bag<Element: PreferenceValue>: PreferenceCollection { … init(_ elements: [Element]) { … } }
/// ```
public protocol PreferenceCollection: Collection, PreferenceValue where Element: PreferenceValue {
    /// Makes the collection from its elements, in the stored order.
    init(_ elements: [Element])
}

extension PreferenceCollection {
    public var plistValue: PlistValue? { Array(self).plistValue }
    public init?(plistValue: PlistValue) {
        guard let elements = [Element](plistValue: plistValue) else { return nil }
        self.init(elements)
    }
}

/// A set type of your own, stored as an array of its elements (as sindresorhus/Defaults'
/// `SetAlgebraSerializable`): declare the conformance and `toArray()`.
public protocol PreferenceSetAlgebra: SetAlgebra, PreferenceValue where Element: PreferenceValue {
    /// The elements, in any order.
    func toArray() -> [Element]
}

extension PreferenceSetAlgebra {
    public var plistValue: PlistValue? { toArray().plistValue }
    public init?(plistValue: PlistValue) {
        guard let elements = [Element](plistValue: plistValue) else { return nil }
        self.init(elements)
    }
}
