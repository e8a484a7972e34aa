#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims

/// Top-level changes of a suite file: each key's new value, `nil` where the key was removed.
package typealias FileDelta = [(key: PlistKey, value: PlistValue?)]

/// A binary suite file as last read or written: its bytes and its root's keys in order. Work follows
/// what changed, not the suite's size: a re-read compares entries by their encoded bytes and decodes
/// only those that differ (``changes(to:)``); a write copies unchanged entries' objects and encodes
/// the rest in place (``applying(_:)``). In this library's own layout (``canonical``), a few scalar
/// values changed cost less still: the write splices bytes, the re-read finds them with `memcmp`.
struct SuiteImage: Sendable {
    let bytes: [UInt8]
    let keys: [PlistKey]
    /// Whether the file has this library's layout: the root first, its `n` keys and `n` values as
    /// objects `1...2n` referenced by the root alone, then nested objects, each where the last ends.
    let canonical: Bool
    /// Each key's entry by open addressing on its hash (at most half full; `0` none, else index + 1):
    /// the image is the suite's values in memory, each decoded when read (``SuiteSnapshot``).
    private let slots: [UInt32]
    /// The file's layout and where its root's references are, for ``value(at:)``.
    private let root: (layout: BinaryPropertyList.Reader.Layout, count: Int, refs: Int)?

    /// - Parameter sameKeys: An image with the same keys in the same order, whose index is reused.
    init(bytes: [UInt8], keys: [PlistKey], canonical: Bool, sameKeys: SuiteImage? = nil) {
        self.bytes = bytes
        self.keys = keys
        self.canonical = canonical
        root = bytes.withUnsafeBufferPointer { buffer in
            guard let reader = try? BinaryPropertyList.Reader(buffer), let (count, refs) = try? reader.topDictionary() else { return nil }
            return (reader.layout, count, refs)
        }
        if let sameKeys {
            slots = sameKeys.slots
            return
        }
        var slots = [UInt32](repeating: 0, count: max(4, 1 << (Int.bitWidth - (2 * keys.count).leadingZeroBitCount)))
        for (i, key) in keys.enumerated() {
            var slot = key.hashValue & (slots.count - 1)
            while slots[slot] != 0 { slot = (slot + 1) & (slots.count - 1) }
            slots[slot] = UInt32(i + 1)
        }
        self.slots = slots
    }

    /// The value of `key`, decoded from the file's bytes; `nil` when the file does not hold it.
    func value(of key: PlistKey) -> PlistValue? {
        index(of: key).flatMap(value(at:))
    }

    /// The index of `key`'s entry; `nil` when the file does not hold it.
    func index(of key: PlistKey) -> Int? {
        var slot = key.hashValue & (slots.count - 1)
        while slots[slot] != 0 {
            let i = Int(slots[slot]) - 1
            if keys[i] == key { return i }
            slot = (slot + 1) & (slots.count - 1)
        }
        return nil
    }

    /// The value of entry `i`. (Every value was decoded once when the image was made, or copied
    /// from one that was: a failure here would be a defect, and reads as no value.)
    func value(at i: Int) -> PlistValue? {
        guard let root else { return nil }
        return bytes.withUnsafeBufferPointer { buffer in
            var reader = BinaryPropertyList.Reader(buffer, layout: root.layout)
            guard let ref = try? reader.ref(root.count + i, at: root.refs), let offset = try? reader.offset(ref) else { return nil }
            // The usual value, an integer of up to 8 bytes, without the general decoder.
            let marker = buffer[offset]
            if marker >> 4 == 0x1, marker & 0x0F < 4, case let size = 1 << Int(marker & 0x0F), offset + 1 + size <= root.layout.offsetTable {
                return .integer(BinaryPropertyList.Reader.integer(buffer, offset + 1, size))
            }
            return try? reader.object(ref, depth: 1)
        }
    }

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
            guard values.count == count else { return (values, nil) }
            return (values, SuiteImage(bytes: bytes, keys: keys, canonical: reader.isCanonical(entries: count)))
        }
    }

    /// What changed from this image to the binary file `newBytes`, and the new image. The delta may
    /// hold keys only encoded differently: compare before telling. Throws on anything unusual, or a
    /// key twice (the caller then decodes in full).
    func changes(to newBytes: [UInt8]) throws(PropertyListDecodingError) -> (image: SuiteImage, delta: FileDelta) {
        try bytes.withUnsafeBufferPointer { oldBuffer throws(PropertyListDecodingError) in
            try newBytes.withUnsafeBufferPointer { newBuffer throws(PropertyListDecodingError) in
                var old = try BinaryPropertyList.Reader(oldBuffer)
                var new = try BinaryPropertyList.Reader(newBuffer)
                if canonical, let delta = try scalarChanges(from: old, to: &new) {
                    return (SuiteImage(bytes: newBytes, keys: keys, canonical: true, sameKeys: self), delta)
                }
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
                    // A key twice in the new file (the file in full decides which one wins): twice
                    // among the new keys, or a new key the old file held (matched in the walk).
                    if Set(added).count != added.count || (!added.isEmpty && !Set(keys).isDisjoint(with: added)) {
                        throw PropertyListDecodingError("a key occurs twice")
                    }
                }
                return (SuiteImage(bytes: newBytes, keys: newKeys, canonical: new.isCanonical(entries: count)), delta)
            }
        }
    }

    /// This file with `operations` applied, encoded, and its image: the objects of the entries
    /// the operations leave alone are copied; changed values keep their place, new keys go last.
    func applying(_ operations: Operations) throws(PropertyListDecodingError) -> (bytes: [UInt8], image: SuiteImage) {
        let new = try writing(operations)
        let bytes = new.file.joined()
        return (bytes, SuiteImage(bytes: bytes, keys: new.keys, canonical: true, sameKeys: new.sameKeys))
    }

    /// ``applying(_:)``'s new file, as ``splice(_:)`` gives it where it can, with what its image
    /// is made of once the file is written: its keys in order, and the image whose index it
    /// shares (this one, when the keys stay).
    func writing(_ operations: Operations) throws(PropertyListDecodingError) -> (file: FileBytes, keys: [PlistKey], sameKeys: SuiteImage?) {
        if let file = splice(operations) { return (file, keys, self) }
        return try bytes.withUnsafeBufferPointer { buffer throws(PropertyListDecodingError) in
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
            return (FileBytes(encoded), newKeys, nil)
        }
    }

    /// ``applying(_:)`` for the usual write to a ``canonical`` file, a few scalars set to scalars: new
    /// bytes replace old, offsets after them shift, the layout stays. `nil` for any other write.
    func splicing(_ operations: Operations) -> (bytes: [UInt8], image: SuiteImage)? {
        splice(operations).map { file in
            let bytes = file.joined()
            return (bytes, SuiteImage(bytes: bytes, keys: keys, canonical: true, sameKeys: self))
        }
    }

    /// ``splicing(_:)``'s new file as pieces of this one's bytes and the new bytes between them,
    /// written as they are: joined only once the file is in place, off the path to its readers.
    func splice(_ operations: Operations) -> FileBytes? {
        guard canonical, !keys.isEmpty, !operations.isEmpty, operations.count <= 8 else { return nil }
        // Each key as this library encodes it, and the new value's bytes.
        // (Capacities reserved, so that the allocations are the same on every run: the benchmark's
        // thresholds count them.)
        var needles: [(name: PlistKey, key: Range<Int>, value: Range<Int>, object: Int)] = []
        needles.reserveCapacity(operations.count)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(256)
        for (key, operation) in operations {
            switch operation {
            case .set(.array), .set(.dictionary), .remove: return nil
            case .set(let value):
                let keyStart = encoded.count
                BinaryPropertyList.appendScalar(.string(key.string), to: &encoded)
                let valueStart = encoded.count
                BinaryPropertyList.appendScalar(value, to: &encoded)
                needles.append((key, keyStart..<valueStart, valueStart..<encoded.count, -1))
            }
        }
        return bytes.withUnsafeBufferPointer { buffer in
            let n = keys.count
            guard let reader = try? BinaryPropertyList.Reader(buffer), let keysStart = try? reader.offset(1), let keysEnd = try? reader.offset(n + 1),
                keysStart <= keysEnd
            else { return nil }
            // Entry i's key is object i + 1 (``canonical``), its value object n + i + 1, where
            // the key must be encoded as this library encodes it. A key written otherwise
            // (UTF-16 where it could be ASCII) or not there: in full.
            for k in needles.indices {
                guard let i = index(of: needles[k].name), let position = try? reader.offset(i + 1), position + needles[k].key.count <= keysEnd,
                    encoded.withUnsafeBufferPointer({ memcmp(buffer.baseAddress! + position, $0.baseAddress! + needles[k].key.lowerBound, needles[k].key.count) }) == 0,
                    (try? reader.scalar(at: position))?.count == needles[k].key.count
                else { return nil }
                needles[k].object = n + i + 1
            }
            needles.sort { $0.object < $1.object }
            // The bytes up to each old value, and the new value after them.
            var pieces: [(old: Range<Int>, new: Range<Int>)] = []
            pieces.reserveCapacity(needles.count + 1)
            var (copied, length) = (0, 0)  // of the old file, and the new file's length so far
            var shifts: [Int] = []  // how far the objects after each new value moved
            shifts.reserveCapacity(needles.count)
            for needle in needles {
                guard let start = try? reader.offset(needle.object), let old = try? reader.scalar(at: start) else { return nil }
                pieces.append((copied..<start, needle.value))
                length += start - copied + needle.value.count
                copied = old.upperBound
                shifts.append(length - copied)
            }
            // The offset table: up to the first new value as it was (when its width stays),
            // the rest shifted, in runs: each new value's object moves as the objects before
            // it, those after it by its shift. After the new values, with the trailer.
            let tableOffset = length + reader.offsetTable - copied
            let (count, oldSize, size) = (reader.objectCount, reader.offsetSize, BinaryPropertyList.byteWidth(UInt64(tableOffset)))
            let same = size == oldSize ? needles[0].object + 1 : 0
            let table = encoded.count
            encoded.reserveCapacity(table + (count - same) * size + 32)
            encoded.append(contentsOf: repeatElement(0, count: (count - same) * size))
            encoded.withUnsafeMutableBufferPointer { added in
                var (shift, next, start) = (0, 0, same)
                while next < needles.count, needles[next].object < same {
                    shift = shifts[next]
                    next += 1
                }
                while start < count {
                    let end = next < needles.count ? needles[next].object + 1 : count
                    Self.shift(buffer.baseAddress! + reader.offsetTable + start * oldSize, oldSize, into: added.baseAddress! + table + (start - same) * size, size, count: end - start, by: shift)
                    start = end
                    if next < needles.count { shift = shifts[next] }
                    next += 1
                }
            }
            BinaryPropertyList.appendTrailer(offsetSize: size, refSize: reader.refSize, objects: count, table: tableOffset, to: &encoded)
            pieces.append((copied..<(reader.offsetTable + same * size), table..<encoded.count))
            return FileBytes(base: bytes, added: encoded, pieces: pieces)
        }
    }

    /// Copies `count` big-endian offsets of `oldSize` bytes from `source` to `target`, as
    /// `size` bytes each, each moved by `shift`.
    private static func shift(_ source: UnsafePointer<UInt8>, _ oldSize: Int, into target: UnsafeMutablePointer<UInt8>, _ size: Int, count: Int, by shift: Int) {
        for k in 0..<count {
            var offset = 0
            for byte in 0..<oldSize { offset = offset << 8 | Int(source[k * oldSize + byte]) }
            offset &+= shift
            for byte in 0..<size { target[k * size + byte] = UInt8(truncatingIfNeeded: offset >> (8 * (size - 1 - byte))) }
        }
    }

    /// ``changes(to:)`` between two ``canonical`` files with the same keys and a few scalars changed:
    /// compared with `memcmp` from both ends, every other object where it was (moved by the change in
    /// size), only the values between decoded. `nil` when the files are not so.
    func scalarChanges(from old: BinaryPropertyList.Reader, to new: inout BinaryPropertyList.Reader) throws(PropertyListDecodingError) -> FileDelta? {
        let n = keys.count
        let count = old.objectCount
        guard n > 0, new.refSize == old.refSize, new.objectCount == count, new.topObject == 0 else { return nil }
        let (a, b) = (old.bytes.baseAddress!, new.bytes.baseAddress!)
        // The root, with its references, is the same, and where the first object begins.
        let rootEnd = try old.offset(1)
        guard new.offsetTable >= rootEnd, memcmp(a, b, rootEnd) == 0 else { return nil }
        let (oldEnd, newEnd) = (old.offsetTable, new.offsetTable)
        // The bytes that differ: [p, oldEnd - s) in the old file, [p, newEnd - s) in the new.
        let p = Self.commonPrefix(a, b, from: rootEnd, to: min(oldEnd, newEnd))
        let s = Self.commonSuffix(a + p, oldEnd - p, b + p, newEnd - p)
        // The old objects they cover: `first...last`, values (`n + 1...2n`) and scalars.
        func object(at position: Int) -> Int { old.lastObject(startingAtOrBefore: position, in: 1...(count - 1)) }
        let identical = p == oldEnd && oldEnd == newEnd
        let moved = newEnd - oldEnd
        let first = identical ? count : object(at: min(p, oldEnd - 1))
        var last = identical ? count - 1 : max(first, object(at: oldEnd - s - 1))
        // The common suffix can reach back into a changed object whose new bytes happen to end
        // like the old ones and what came before them: an object after it that does not start
        // where it did, moved by the change in size, changed too.
        while !identical, last + 1 < count, try new.offset(last + 1) != old.offset(last + 1) + moved { last += 1 }
        guard identical || (first > n && last <= 2 * n) else { return nil }
        // Every object outside them where it was, moved by the change in size after them: the
        // same offsets, compared as bytes where they are the same width and did not move.
        let width = old.offsetSize
        if width == new.offsetSize {
            guard memcmp(a + oldEnd, b + newEnd, min(first, count) * width) == 0 else { return nil }
        }
        let checkedAfter = width == new.offsetSize && moved == 0 && last + 1 < count
        if checkedAfter {
            guard memcmp(a + oldEnd + (last + 1) * width, b + newEnd + (last + 1) * width, (count - last - 1) * width) == 0 else { return nil }
        }
        for i in 0..<count where (i < first && width != new.offsetSize) || (i > last && !checkedAfter) {
            let was = Int(BinaryPropertyList.Reader.uint(old.bytes, oldEnd + i * old.offsetSize, old.offsetSize))
            let now = Int(BinaryPropertyList.Reader.uint(new.bytes, newEnd + i * new.offsetSize, new.offsetSize))
            guard now == (i < first ? was : was + moved) else { return nil }
        }
        // The objects in between, one after another from where the first one was: scalars, and
        // containers left as they were (their children lie outside, after the root's objects).
        var delta: FileDelta = []
        var position = identical ? newEnd : try old.offset(first)
        for i in first..<(last + 1) {
            guard try new.offset(i) == position, let before = try old.extent(at: old.offset(i)), let after = try new.extent(at: position) else { return nil }
            if before.range.count != after.range.count || memcmp(a + before.range.lowerBound, b + after.range.lowerBound, before.range.count) != 0 {
                guard before.refs == nil, after.refs == nil else { return nil }
                delta.append((keys[i - n - 1], try new.object(i, depth: 1)))
            }
            position = after.range.upperBound
        }
        guard position == (last + 1 < count ? try new.offset(last + 1) : newEnd) else { return nil }
        return delta
    }

    /// Where `a[from..<end]` and `b[from..<end]` first differ (`end` if nowhere).
    private static func commonPrefix(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, from: Int, to end: Int) -> Int {
        var i = from
        while end - i >= 256, memcmp(a + i, b + i, 256) == 0 { i += 256 }
        while i < end, a[i] == b[i] { i += 1 }
        return i
    }

    /// How many bytes `a[0..<aCount]` and `b[0..<bCount]` have in common at their ends.
    private static func commonSuffix(_ a: UnsafePointer<UInt8>, _ aCount: Int, _ b: UnsafePointer<UInt8>, _ bCount: Int) -> Int {
        let limit = min(aCount, bCount)
        var s = 0
        while limit - s >= 256, memcmp(a + aCount - s - 256, b + bCount - s - 256, 256) == 0 { s += 256 }
        while s < limit, a[aCount - s - 1] == b[bCount - s - 1] { s += 1 }
        return s
    }
}

extension BinaryPropertyList.Reader {
    /// The last of `objects`, whose offsets ascend, that starts at or before `position` (the
    /// first of them when none does).
    func lastObject(startingAtOrBefore position: Int, in objects: ClosedRange<Int>) -> Int {
        var (low, high) = (objects.lowerBound, objects.upperBound)
        while low < high {
            let mid = (low + high + 1) / 2
            if Int(Self.uint(bytes, offsetTable + mid * offsetSize, offsetSize)) <= position { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// Whether this file, whose root is a dictionary of `n` entries, has the layout of
    /// ``SuiteImage/canonical``. One pass over the objects; `false` at anything else.
    func isCanonical(entries n: Int) -> Bool {
        guard topObject == 0, objectCount >= 1 + 2 * n, (try? offset(0)) == 8, let (count, refs) = try? topDictionary(), count == n else { return false }
        for k in 0..<2 * n where Self.uint(bytes, refs + k * refSize, refSize) != UInt64(1 + k) { return false }
        var end = refs + 2 * n * refSize
        for i in 1..<objectCount {
            guard (try? offset(i)) == end, let object = try? extent(at: end) else { return false }
            // A container's children are nested objects, after the root's.
            if let refs = object.refs {
                for at in stride(from: refs, to: object.range.upperBound, by: refSize) where (try? ref(at)).map({ $0 <= 2 * n }) ?? true {
                    return false
                }
            }
            end = object.range.upperBound
        }
        return end == offsetTable
    }

    /// The root dictionary's entry count and where its references begin.
    func topDictionary() throws(PropertyListDecodingError) -> (count: Int, refs: Int) {
        let offset = try offset(topObject)
        guard bytes[offset] >> 4 == 0xD, case let (range, refs?)? = try extent(at: offset) else {
            throw PropertyListDecodingError("the root is not a dictionary")
        }
        return ((range.upperBound - refs) / (2 * refSize), refs)
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
    /// order. Bounds, depth and the budget are checked as in decoding.
    mutating func same(_ object: Int, as other: inout Self, _ otherObject: Int, depth: Int) throws(PropertyListDecodingError) -> Bool {
        try visit(depth: depth)
        let a = try offset(object)
        let b = try other.offset(otherObject)
        guard bytes[a] == other.bytes[b], let mine = try extent(at: a), let theirs = try other.extent(at: b) else { return false }
        try charge(mine.range.count)
        guard let pa = mine.refs, let pb = theirs.refs else {
            return mine.range.count == theirs.range.count
                && memcmp(bytes.baseAddress! + mine.range.lowerBound, other.bytes.baseAddress! + theirs.range.lowerBound, mine.range.count) == 0
        }
        let children = (mine.range.upperBound - pa) / refSize
        guard children == (theirs.range.upperBound - pb) / other.refSize else { return false }
        for k in 0..<children where try !same(ref(pa + k * refSize), as: &other, other.ref(pb + k * other.refSize), depth: depth + 1) {
            return false
        }
        return true
    }

    /// The bytes of the object at `offset`, marker included (a container's end with its
    /// references), and for a container where its references begin; `nil` for an object this
    /// library does not read.
    func extent(at offset: Int) throws(PropertyListDecodingError) -> (range: Range<Int>, refs: Int?)? {
        let marker = bytes[offset]
        guard marker >> 4 == 0xA || marker >> 4 == 0xD else { return try scalar(at: offset).map { ($0, nil) } }
        var position = offset + 1
        let count = try length(marker, at: &position)
        let children = marker >> 4 == 0xD ? 2 * count : count
        guard children <= Int.max / refSize else { throw PropertyListDecodingError("container length overflows") }
        try checked(position, children * refSize)
        return (offset..<(position + children * refSize), position)
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
