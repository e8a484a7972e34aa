#if canImport(Glibc)
import Glibc
#endif

/// A key compared by its exact Unicode scalars (its UTF-8 bytes).
///
/// Swift's `String` equality is canonical equivalence: `"caf\u{E9}" == "cafe\u{301}"`. Property
/// lists, like every reader of them (Apple's, `plistlib`), keep those two keys apart, so every
/// map of keys in SharedPrefs is keyed by this instead.
package struct PlistKey: Hashable, Sendable {
    package let string: String

    package init(_ string: String) { self.string = string }

    package static func == (lhs: PlistKey, rhs: PlistKey) -> Bool {
        let (a, b) = (lhs.string.utf8, rhs.string.utf8)
        guard a.count == b.count else { return false }
        // Native strings are contiguous UTF-8: compare the bytes in place.
        let same = a.withContiguousStorageIfAvailable { a in
            b.withContiguousStorageIfAvailable { b in a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
        return (same ?? nil) ?? a.elementsEqual(b)
    }

    package func hash(into hasher: inout Hasher) {
        let utf8 = string.utf8
        if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            Array(utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}

extension String {
    /// Whether the two strings are the same Unicode scalars, not only canonically equivalent.
    package func isExactly(_ other: String) -> Bool { PlistKey(self) == PlistKey(other) }
}

/// Values by string key, the keys compared by their exact Unicode scalars: what a property-list
/// `<dict>` holds, and what a suite is at its root.
///
/// It reads like `[String: PlistValue]`, with one difference: `"caf\u{E9}"` (é as one scalar)
/// and `"cafe\u{301}"` (e and a combining accent) are two keys, as they are in every property
/// list, though Swift's `String` calls them equal. A `[String: PlistValue]` would keep only one.
///
/// ```swift
/// let window: PlistDictionary = ["width": 800, "height": 600]
/// suite.set(.dictionary(window), forKey: "window")
/// for (key, value) in suite.storedValues { print(key, value) }
/// ```
public struct PlistDictionary: Sendable, Hashable {
    package var storage: [PlistKey: PlistValue]

    /// An empty dictionary.
    public init() { storage = [:] }

    /// The entries of a Swift dictionary (whose keys are already distinct to Swift).
    public init(_ dictionary: [String: PlistValue]) {
        storage = Dictionary(uniqueKeysWithValues: dictionary.map { (PlistKey($0.key), $0.value) })
    }

    /// The entries of a sequence of pairs; of pairs with the same exact key, the last wins.
    public init<S: Sequence>(_ pairs: S) where S.Element == (String, PlistValue) {
        storage = Dictionary(pairs.lazy.map { (PlistKey($0.0), $0.1) }, uniquingKeysWith: { _, last in last })
    }

    init(storage: [PlistKey: PlistValue]) { self.storage = storage }

    /// The value of the key spelled exactly `key`; setting `nil` removes it.
    public subscript(key: String) -> PlistValue? {
        get { storage[PlistKey(key)] }
        set { storage[PlistKey(key)] = newValue }
    }

    /// How many keys it holds.
    public var count: Int { storage.count }

    /// Whether it holds no key.
    public var isEmpty: Bool { storage.isEmpty }

    /// The keys, in no particular order.
    public var keys: some Collection<String> { storage.keys.lazy.map(\.string) }

    /// The values, in no particular order.
    public var values: some Collection<PlistValue> { storage.values }

    /// The entries in code point order of their keys: a stable order for output, which (unlike
    /// `String`'s `<`) never ties two different keys.
    public var sortedByKey: [(key: String, value: PlistValue)] {
        storage.sorted { $0.key.string.utf8.lexicographicallyPrecedes($1.key.string.utf8) }.map { ($0.key.string, $0.value) }
    }

    /// Sets `value` for `key`; returns the value it replaced.
    @discardableResult
    public mutating func updateValue(_ value: PlistValue, forKey key: String) -> PlistValue? {
        storage.updateValue(value, forKey: PlistKey(key))
    }

    /// Removes `key`; returns its value.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> PlistValue? {
        storage.removeValue(forKey: PlistKey(key))
    }

    /// The same keys with transformed values.
    public func mapValues(_ transform: (PlistValue) throws -> PlistValue) rethrows -> PlistDictionary {
        PlistDictionary(storage: try storage.mapValues(transform))
    }

    /// The entries that pass `isIncluded`.
    public func filter(_ isIncluded: ((key: String, value: PlistValue)) throws -> Bool) rethrows -> PlistDictionary {
        PlistDictionary(storage: try storage.filter { try isIncluded(($0.key.string, $0.value)) })
    }

    /// Adds the entries of `other`; for a key in both, `combine` picks the value.
    public mutating func merge(_ other: PlistDictionary, uniquingKeysWith combine: (PlistValue, PlistValue) throws -> PlistValue) rethrows {
        try storage.merge(other.storage, uniquingKeysWith: combine)
    }

    /// ``merge(_:uniquingKeysWith:)`` on a copy.
    public func merging(_ other: PlistDictionary, uniquingKeysWith combine: (PlistValue, PlistValue) throws -> PlistValue) rethrows -> PlistDictionary {
        PlistDictionary(storage: try storage.merging(other.storage, uniquingKeysWith: combine))
    }

    /// A Swift dictionary of the same entries. Keys that Swift calls equal (the same text in
    /// different Unicode normalization) become one, holding one of their values.
    public var swiftDictionary: [String: PlistValue] {
        Dictionary(storage.map { ($0.key.string, $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}

extension PlistDictionary: Sequence {
    /// Iterates `(key, value)` pairs in no particular order.
    public struct Iterator: IteratorProtocol {
        var base: Dictionary<PlistKey, PlistValue>.Iterator
        public mutating func next() -> (key: String, value: PlistValue)? {
            base.next().map { ($0.key.string, $0.value) }
        }
    }

    public func makeIterator() -> Iterator { Iterator(base: storage.makeIterator()) }
    public var underestimatedCount: Int { storage.count }
}

extension PlistDictionary: ExpressibleByDictionaryLiteral {
    /// A literal; of entries with the same exact key, the last wins.
    public init(dictionaryLiteral elements: (String, PlistValue)...) { self.init(elements) }
}

extension PlistDictionary: CustomStringConvertible {
    /// The entries as ``PlistValue/description`` prints a dictionary, keys sorted.
    public var description: String { PlistValue.dictionary(self).description }
}
