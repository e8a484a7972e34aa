#if canImport(Glibc)
import Glibc
#endif

/// Top-level changes of a suite file: each key's new value, `nil` where the key was removed.
typealias FileDelta = [(key: PlistKey, value: PlistValue?)]

/// A binary suite file as last read or written: its bytes, and its top-level keys in the order of
/// its root dictionary.
///
/// With it, work follows what changed, not the size of the suite. A re-read walks the new file's
/// root entries beside the old ones, compares keys and values by their encoded bytes, and decodes
/// only the values that differ (``changes(to:)``). A write copies the encoded objects of every
/// entry it does not change and encodes only the rest (``applying(_:)``), keeping the order of
/// the entries, so that the next reader finds them where they were. The file stays a standard
/// `bplist00` property list.
struct SuiteImage: Sendable {
    let bytes: [UInt8]
    let keys: [PlistKey]

    /// How many entries a re-read looks ahead in the old file for the next key before it gives
    /// up on finding the two files in the same order (and matches the rest by key).
    static let lookahead = 8

    /// Decodes a binary suite file in full, with its image (`nil` when a key occurs twice in the
    /// root, where the last one wins, as in every reader).
    static func decode(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> (values: PlistDictionary, image: SuiteImage?) {
        try bytes.withUnsafeBufferPointer { buffer throws(PropertyListDecodingError) in
            var reader = try BinaryPropertyList.Reader(buffer)
            guard buffer[try reader.offset(reader.topObject)] >> 4 == 0xD else {
                throw PropertyListFormat.notADictionary(try reader.object(reader.topObject, depth: 0))
            }
            try reader.visit(depth: 0)
            let (count, refs) = try reader.topDictionary()
            var values = PlistDictionary()
            values.storage.reserveCapacity(count)
            var keys: [PlistKey] = []
            keys.reserveCapacity(count)
            for i in 0..<count {
                let entry = try reader.entry(i, of: count, at: refs)
                let key = try reader.key(entry.key)
                values.storage[key] = try reader.object(entry.value, depth: 1)
                keys.append(key)
            }
            return (values, values.count == count ? SuiteImage(bytes: bytes, keys: keys) : nil)
        }
    }

    /// What changed from this image to the binary suite file `newBytes`, and the new file's image.
    /// The delta holds every key whose value changed, and may hold keys whose value is only
    /// encoded differently (a nested dictionary's keys in another order): compare before telling.
    /// `added` are the keys the old file did not hold at all; the caller must check they are not
    /// in the suite already (a key that occurs twice in the new file), and decode the file in full
    /// if one is. Throws on anything unusual (the caller then decodes in full, for the error).
    func changes(to newBytes: [UInt8]) throws(PropertyListDecodingError) -> (image: SuiteImage, delta: FileDelta, added: [PlistKey]) {
        try bytes.withUnsafeBufferPointer { oldBuffer throws(PropertyListDecodingError) in
            try newBytes.withUnsafeBufferPointer { newBuffer throws(PropertyListDecodingError) in
                var old = try BinaryPropertyList.Reader(oldBuffer)
                var new = try BinaryPropertyList.Reader(newBuffer)
                let (oldCount, oldRefs) = try old.topDictionary()
                try new.visit(depth: 0)
                let (count, refs) = try new.topDictionary()
                var newKeys: [PlistKey] = []
                newKeys.reserveCapacity(count)
                var delta: FileDelta = []
                var unmatchedNew: [Int] = []
                var unmatchedOld: [Int] = []
                // Walk both root dictionaries in order: the common case, where a writer kept the
                // order and changed, added or removed a few entries, compares bytes and nothing else.
                var i = 0
                for j in 0..<count {
                    let entry = try new.entry(j, of: count, at: refs)
                    var match: Int? = nil
                    for candidate in i..<min(i + Self.lookahead, oldCount)
                    where try new.equal(entry.key, as: &old, old.ref(candidate, at: oldRefs)) {
                        match = candidate
                        break
                    }
                    guard let match else {
                        unmatchedNew.append(j)
                        newKeys.append(PlistKey(""))  // replaced below
                        continue
                    }
                    if match > i { unmatchedOld.append(contentsOf: i..<match) }
                    i = match + 1
                    newKeys.append(keys[match])
                    if try !new.equal(entry.value, as: &old, old.ref(oldCount + match, at: oldRefs)) {
                        delta.append((keys[match], try new.object(entry.value, depth: 1)))
                    }
                }
                if i < oldCount { unmatchedOld.append(contentsOf: i..<oldCount) }
                // The rest, matched by key.
                var added: [PlistKey] = []
                if !unmatchedNew.isEmpty || !unmatchedOld.isEmpty {
                    var oldIndex = Dictionary(uniqueKeysWithValues: unmatchedOld.map { (keys[$0], $0) })
                    for j in unmatchedNew {
                        let entry = try new.entry(j, of: count, at: refs)
                        let key = try new.key(entry.key)
                        newKeys[j] = key
                        if let m = oldIndex.removeValue(forKey: key) {
                            if try new.same(entry.value, as: &old, old.entry(m, of: oldCount, at: oldRefs).value, depth: 1) { continue }
                        } else {
                            added.append(key)
                        }
                        delta.append((key, try new.object(entry.value, depth: 1)))
                    }
                    delta += oldIndex.keys.map { ($0, nil) }
                    // A key twice among the new ones (the file in full decides which one wins).
                    if Set(added).count != added.count { throw PropertyListDecodingError("a key occurs twice") }
                }
                return (SuiteImage(bytes: newBytes, keys: newKeys), delta, added)
            }
        }
    }

    /// This file with `operations` applied, encoded, and its image: the objects of the entries
    /// the operations leave alone are copied; changed values keep their place, new keys go last.
    func applying(_ operations: Operations) throws(PropertyListDecodingError) -> (bytes: [UInt8], image: SuiteImage) {
        try bytes.withUnsafeBufferPointer { buffer throws(PropertyListDecodingError) in
            let reader = try BinaryPropertyList.Reader(buffer)
            let (oldCount, oldRefs) = try reader.topDictionary()
            var remaining = operations
            // Few operations (the usual write): compare each key with them, rather than hash it.
            let few = operations.count <= 8 ? Array(operations) : nil
            var keyItems: [BinaryPropertyList.Item] = []
            var valueItems: [BinaryPropertyList.Item] = []
            var newKeys: [PlistKey] = []
            keyItems.reserveCapacity(oldCount + operations.count)
            valueItems.reserveCapacity(oldCount + operations.count)
            newKeys.reserveCapacity(oldCount + operations.count)
            for i in 0..<oldCount {
                let key = keys[i]
                var operation: PendingOperation? = nil
                if let few {
                    var k = 0
                    while k < few.count, operation == nil {
                        if few[k].key == key { operation = few[k].value }
                        k += 1
                    }
                } else {
                    operation = remaining[key]
                }
                let entry = try reader.entry(i, of: oldCount, at: oldRefs)
                switch operation {
                case nil: valueItems.append(.copy(entry.value))
                case .remove: remaining[key] = nil; continue
                case .set(let value): remaining[key] = nil; valueItems.append(.value(value))
                }
                keyItems.append(.copy(entry.key))
                newKeys.append(key)
            }
            // What is left is what no entry matched: new keys, last.
            for (key, operation) in remaining {
                guard case .set(let value) = operation else { continue }
                keyItems.append(.value(.string(key.string)))
                valueItems.append(.value(value))
                newKeys.append(key)
            }
            var encoder = BinaryPropertyList.Encoder(copyingFrom: reader)
            let encoded = encoder.encodeDictionary(keys: keyItems, values: valueItems)
            return (encoded, SuiteImage(bytes: encoded, keys: newKeys))
        }
    }
}

extension BinaryPropertyList.Reader {
    /// The root dictionary's entry count and where its references begin.
    func topDictionary() throws(PropertyListDecodingError) -> (count: Int, refs: Int) {
        let offset = try offset(topObject)
        let marker = bytes[offset]
        guard marker >> 4 == 0xD else { throw PropertyListDecodingError("the root is not a dictionary") }
        var position = offset + 1
        let count = try length(marker, at: &position)
        guard count <= Int.max / (2 * refSize) else { throw PropertyListDecodingError("dictionary length overflows") }
        try checked(position, count * 2 * refSize)
        return (count, position)
    }

    /// The key and value objects of entry `i` of a dictionary of `count` entries at `refs`.
    func entry(_ i: Int, of count: Int, at refs: Int) throws(PropertyListDecodingError) -> (key: Int, value: Int) {
        (try ref(i, at: refs), try ref(count + i, at: refs))
    }

    /// Reference `i` of a run of references at `refs` that is already bounds-checked.
    func ref(_ i: Int, at refs: Int) throws(PropertyListDecodingError) -> Int {
        let ref = Self.uint(bytes, refs + i * refSize, refSize)
        guard ref < UInt64(objectCount) else { throw PropertyListDecodingError("object reference \(ref) out of range") }
        return Int(ref)
    }

    /// A dictionary key: a string object.
    mutating func key(_ ref: Int) throws(PropertyListDecodingError) -> PlistKey {
        guard case .string(let key) = try object(ref, depth: 1) else { throw PropertyListDecodingError("dictionary key is not a string") }
        return PlistKey(key)
    }

    /// ``same(_:as:_:depth:)`` for a root entry, with a fast path for what most keys and values
    /// are: numbers and short strings, compared without parsing more than their marker.
    mutating func equal(_ object: Int, as other: inout Self, _ otherObject: Int) throws(PropertyListDecodingError) -> Bool {
        let a = Int(Self.uint(bytes, offsetTable + object * offsetSize, offsetSize))
        let b = Int(Self.uint(other.bytes, other.offsetTable + otherObject * other.offsetSize, other.offsetSize))
        if a >= 8, a < offsetTable, b >= 8, b < other.offsetTable {
            let marker = bytes[a]
            let nibble = Int(marker & 0x0F)
            let size: Int? = switch marker >> 4 {
            case 0x1 where nibble <= 4, 0x2 where nibble <= 3: 1 << nibble
            case 0x3: 8
            case 0x4 where nibble < 0x0F, 0x5 where nibble < 0x0F: nibble
            case 0x6 where nibble < 0x0F: 2 * nibble
            default: nil
            }
            if let size, a + 1 + size <= offsetTable, b + 1 + size <= other.offsetTable {
                return memcmp(bytes.baseAddress! + a, other.bytes.baseAddress! + b, 1 + size) == 0
            }
        }
        return try same(object, as: &other, otherObject, depth: 1)
    }

    /// Whether `object` here and `otherObject` of `other` (a file already decoded, so
    /// valid) encode the same value: the same bytes, and containers the same children in the same
    /// order. Bounds, depth and the node budget are checked as in decoding.
    mutating func same(_ object: Int, as other: inout Self, _ otherObject: Int, depth: Int) throws(PropertyListDecodingError) -> Bool {
        try visit(depth: depth)
        let a = try offset(object)
        let b = try other.offset(otherObject)
        let marker = bytes[a]
        guard marker == other.bytes[b] else { return false }
        switch marker >> 4 {
        case 0xA, 0xD:
            var pa = a + 1
            var pb = b + 1
            let count = try length(marker, at: &pa)
            guard count == (try other.length(marker, at: &pb)) else { return false }
            let children = marker >> 4 == 0xD ? 2 * count : count
            guard children <= Int.max / refSize else { throw PropertyListDecodingError("container length overflows") }
            try checked(pa, children * refSize)
            try other.checked(pb, children * other.refSize)
            for k in 0..<children where try !same(ref(pa + k * refSize), as: &other, other.ref(pb + k * other.refSize), depth: depth + 1) {
                return false
            }
            return true
        default:
            guard let mine = try scalar(at: a), let theirs = try other.scalar(at: b), mine.count == theirs.count else { return false }
            return memcmp(bytes.baseAddress! + mine.lowerBound, other.bytes.baseAddress! + theirs.lowerBound, mine.count) == 0
        }
    }

    /// The bytes of the scalar object at `offset`, marker included; `nil` for a container or an
    /// object this library does not read (which the decoder then reports).
    func scalar(at offset: Int) throws(PropertyListDecodingError) -> Range<Int>? {
        let marker = bytes[offset]
        var position = offset + 1
        let size: Int
        switch marker >> 4 {
        case 0x0: size = 0
        case 0x1, 0x2: size = 1 << Int(marker & 0x0F)
        case 0x3: size = 8
        case 0x4, 0x5: size = try length(marker, at: &position)
        case 0x6:
            let count = try length(marker, at: &position)
            guard count <= Int.max / 2 else { throw PropertyListDecodingError("string length overflows") }
            size = 2 * count
        default: return nil
        }
        try checked(position, size)
        return offset..<(position + size)
    }
}
