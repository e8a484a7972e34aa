import FoundationEssentials

/// Why a property list could not be decoded; mapped to ``PreferenceError/Code/corruptFile`` with the path.
package struct PropertyListDecodingError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

/// Reads and writes `bplist00` binary property lists (Apple's `CFBinaryPList`, `plistlib.FMT_BINARY`).
/// Every offset and count is bounds-checked; cycles and reference bombs stop at a depth limit and a
/// budget of expanded bytes.
enum BinaryPropertyList {
    static let magic: [UInt8] = Array("bplist00".utf8)
    static let maximumDepth = 512
    /// The expanded bytes any file may decode to, however small it is.
    static let minimumExpansionBudget = 1 << 20

    // MARK: Decoding

    static func decode(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> PlistValue {
        try bytes.withUnsafeBufferPointer { buffer throws(PropertyListDecodingError) in
            var reader = try Reader(buffer)
            return try reader.object(reader.topObject, depth: 0)
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        let offsetSize: Int
        let refSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int
        /// Bytes the objects still to be decoded may occupy when each is written out in full (a
        /// shared reference counts every time it is followed).
        var budget: Int

        init(_ bytes: UnsafeBufferPointer<UInt8>) throws(PropertyListDecodingError) {
            self.bytes = bytes
            guard bytes.count >= 8 + 32, bytes.starts(with: BinaryPropertyList.magic) else {
                throw PropertyListDecodingError("not a binary property list (no bplist00 header or too short)")
            }
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            refSize = Int(bytes[trailer + 7])
            let count = Self.uint(bytes, trailer + 8, 8)
            let top = Self.uint(bytes, trailer + 16, 8)
            let table = Self.uint(bytes, trailer + 24, 8)
            guard (1...8).contains(offsetSize), (1...8).contains(refSize),
                count >= 1, count <= UInt64(trailer), top < count, table >= 8, table <= UInt64(trailer),
                (UInt64(trailer) - table) / UInt64(offsetSize) >= count
            else { throw PropertyListDecodingError("binary property list trailer is inconsistent (truncated file?)") }
            objectCount = Int(count)
            topObject = Int(top)
            offsetTable = Int(table)
            // Shared references may expand a small file into a huge tree: what is decoded may re-encode to
            // twice the file at most (1 MiB at least).
            budget = max(BinaryPropertyList.minimumExpansionBudget, bytes.count * 2)
        }

        /// A reader of `bytes` laid out as `layout` says: the same file a reader checked before.
        init(_ bytes: UnsafeBufferPointer<UInt8>, layout: Layout) {
            self.bytes = bytes
            (offsetSize, refSize, objectCount, topObject, offsetTable) = (layout.offsetSize, layout.refSize, layout.objectCount, layout.topObject, layout.offsetTable)
            budget = max(BinaryPropertyList.minimumExpansionBudget, bytes.count * 2)
        }

        /// What ``init(_:layout:)`` needs of this file.
        var layout: Layout { Layout(offsetSize: offsetSize, refSize: refSize, objectCount: objectCount, topObject: topObject, offsetTable: offsetTable) }

        struct Layout: Sendable {
            let offsetSize, refSize, objectCount, topObject, offsetTable: Int
        }

        /// An integer object's value of `size` bytes (1, 2, 4 or 8) at `at` (which the caller
        /// checked): the narrower ones unsigned, as every writer makes them, 8 bytes signed.
        static func integer(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int, _ size: Int) -> Int64 {
            let raw = uint(bytes, at, size)
            return size == 8 ? Int64(bitPattern: raw) : Int64(raw)
        }

        /// The big-endian unsigned integer of `size` bytes at `at` (which the caller checked).
        static func uint(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int, _ size: Int) -> UInt64 {
            let raw = UnsafeRawPointer(bytes.baseAddress! + at)
            switch size {
            case 1: return UInt64(bytes[at])
            case 2: return UInt64(UInt16(bigEndian: raw.loadUnaligned(as: UInt16.self)))
            case 4: return UInt64(UInt32(bigEndian: raw.loadUnaligned(as: UInt32.self)))
            case 8: return UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self))
            default:
                var value: UInt64 = 0
                for i in 0..<size { value = value << 8 | UInt64(bytes[at + i]) }
                return value
            }
        }

        func checked(_ at: Int, _ length: Int) throws(PropertyListDecodingError) {
            guard at >= 0, length >= 0, at <= offsetTable, length <= offsetTable - at else {
                throw PropertyListDecodingError("binary property list object runs past its end (truncated file?)")
            }
        }

        func ref(_ at: Int) throws(PropertyListDecodingError) -> Int {
            try checked(at, refSize)
            let ref = Self.uint(bytes, at, refSize)
            guard ref < UInt64(objectCount) else { throw PropertyListDecodingError("object reference \(ref) out of range") }
            return Int(ref)
        }

        /// Reads the length nibble of a marker, or the integer that follows it when the nibble is 0xF.
        func length(_ marker: UInt8, at position: inout Int) throws(PropertyListDecodingError) -> Int {
            let nibble = Int(marker & 0x0F)
            guard nibble == 0x0F else { return nibble }
            try checked(position, 1)
            let intMarker = bytes[position]
            guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else { throw PropertyListDecodingError("bad length marker") }
            let size = 1 << Int(intMarker & 0x0F)
            try checked(position + 1, size)
            let value = Self.uint(bytes, position + 1, size)
            position += 1 + size
            guard value <= UInt64(offsetTable) else { throw PropertyListDecodingError("length \(value) larger than the file") }
            return Int(value)
        }

        /// Where object `ref` (a checked reference) begins.
        func offset(_ ref: Int) throws(PropertyListDecodingError) -> Int {
            let rawOffset = Self.uint(bytes, offsetTable + ref * offsetSize, offsetSize)
            guard rawOffset < UInt64(offsetTable) else { throw PropertyListDecodingError("object offset \(rawOffset) points past the objects") }
            guard rawOffset >= 8 else { throw PropertyListDecodingError("object offset \(rawOffset) points into the header") }
            return Int(rawOffset)
        }

        /// Counts one object visited at `depth` against the depth limit, and its marker and
        /// offset against the budget.
        mutating func visit(depth: Int) throws(PropertyListDecodingError) {
            guard depth < BinaryPropertyList.maximumDepth else {
                throw PropertyListDecodingError("nesting deeper than \(BinaryPropertyList.maximumDepth) levels (or a reference cycle)")
            }
            try charge(1 + offsetSize)
        }

        /// Counts `bytes` of an object's payload or references against the budget.
        mutating func charge(_ bytes: Int) throws(PropertyListDecodingError) {
            budget -= bytes
            guard budget >= 0 else {
                throw PropertyListDecodingError(
                    "a reference bomb: shared references expand the values beyond twice the file's \(self.bytes.count) bytes")
            }
        }

        mutating func object(_ ref: Int, depth: Int) throws(PropertyListDecodingError) -> PlistValue {
            try visit(depth: depth)
            let offset = try offset(ref)
            let marker = bytes[offset]
            var position = offset + 1
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x08: return .bool(false)
                case 0x09: return .bool(true)
                default: throw PropertyListDecodingError("unsupported object marker 0x\(marker.padded(2, radix: 16))")
                }
            case 0x1:
                let size = 1 << Int(marker & 0x0F)
                guard size <= 16 else { throw PropertyListDecodingError("integer wider than 128 bits") }
                try checked(position, size)
                try charge(size)
                if size == 16 {
                    let high = Self.uint(bytes, position, 8)
                    let low = Self.uint(bytes, position + 8, 8)
                    if high == 0 {
                        return low <= UInt64(Int64.max) ? .integer(Int64(low)) : .unsignedInteger(low)
                    }
                    guard high == UInt64.max, low > UInt64(Int64.max) else {
                        throw PropertyListDecodingError("integer outside the 64-bit range")
                    }
                    return .integer(Int64(bitPattern: low))
                }
                return .integer(Self.integer(bytes, position, size))
            case 0x2:
                try charge(8)
                switch marker & 0x0F {
                case 2:
                    try checked(position, 4)
                    return .real(Double(Float(bitPattern: UInt32(Self.uint(bytes, position, 4)))))
                case 3:
                    try checked(position, 8)
                    return .real(Double(bitPattern: Self.uint(bytes, position, 8)))
                default: throw PropertyListDecodingError("unsupported real width")
                }
            case 0x3:
                guard marker == 0x33 else { throw PropertyListDecodingError("unsupported date width") }
                try checked(position, 8)
                try charge(8)
                let seconds = Double(bitPattern: Self.uint(bytes, position, 8))
                guard seconds.isFinite else { throw PropertyListDecodingError("a date is not a finite number") }
                return .date(Date(timeIntervalSinceReferenceDate: seconds))
            case 0x4:
                let count = try length(marker, at: &position)
                try checked(position, count)
                try charge(count)
                return .data(Data(UnsafeBufferPointer(rebasing: bytes[position..<position + count])))
            case 0x5:
                let count = try length(marker, at: &position)
                try checked(position, count)
                try charge(count)
                // Rebased, so String takes its fast path for contiguous UTF-8.
                return .string(String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<position + count]), as: UTF8.self))
            case 0x6:
                let count = try length(marker, at: &position)
                guard count <= Int.max / 2 else { throw PropertyListDecodingError("string length overflows") }
                try checked(position, count * 2)
                try charge(count * 2)
                let units = (0..<count).map { UInt16(bytes[position + 2 * $0]) << 8 | UInt16(bytes[position + 2 * $0 + 1]) }
                return .string(String(decoding: units, as: UTF16.self))
            case 0xA:
                let count = try length(marker, at: &position)
                guard count <= Int.max / refSize else { throw PropertyListDecodingError("array length overflows") }
                try checked(position, count * refSize)
                try charge(count * refSize)
                var items: [PlistValue] = []
                items.reserveCapacity(count)
                for i in 0..<count {
                    items.append(try object(try self.ref(position + i * refSize), depth: depth + 1))
                }
                return .array(items)
            case 0xD:
                let count = try length(marker, at: &position)
                guard count <= Int.max / (2 * refSize) else { throw PropertyListDecodingError("dictionary length overflows") }
                try checked(position, count * 2 * refSize)
                try charge(count * 2 * refSize)
                var items = PlistDictionary()
                items.storage.reserveCapacity(count)
                for i in 0..<count {
                    guard case .string(let key) = try object(try self.ref(position + i * refSize), depth: depth + 1) else {
                        throw PropertyListDecodingError("dictionary key is not a string")
                    }
                    items[key] = try object(try self.ref(position + (count + i) * refSize), depth: depth + 1)
                }
                return .dictionary(items)
            case 0x8:
                throw PropertyListDecodingError("UID objects (NSKeyedArchiver archives) are not preference values")
            default:
                throw PropertyListDecodingError("unsupported object marker 0x\(marker.padded(2, radix: 16))")
            }
        }
    }

    // MARK: Encoding

    /// Encodes `root` with objects laid out breadth-first, so each container's children occupy a
    /// contiguous run of references that is known before the children are written.
    static func encode(_ root: PlistValue) -> [UInt8] {
        var encoder = Encoder()
        return encoder.encode(root)
    }

    /// An object to write: a value, or an object copied from another binary property list (its
    /// subtree copied with it, references renumbered).
    enum Item {
        case value(PlistValue)
        case copy(Int)
    }

    /// Writes objects breadth-first; `.copy` objects come from `source`, a valid binary property
    /// list (a file already decoded).
    struct Encoder {
        /// The file `.copy` objects come from (empty without one: then there are no copies).
        private let bytes: UnsafeBufferPointer<UInt8>
        private let offsetTable: Int
        private let offsetSize: Int
        private let sourceRefSize: Int
        private var out: [UInt8] = []
        private var offsets: [Int] = []
        /// Objects whose references are written, in reference order, waiting to be written.
        private var queue: [Item] = []
        private var head = 0
        private var nextRef = 1
        private var refSize = 1

        init(copyingFrom source: Reader? = nil) {
            bytes = source?.bytes ?? UnsafeBufferPointer(start: nil, count: 0)
            offsetTable = source?.offsetTable ?? 0
            offsetSize = source?.offsetSize ?? 1
            sourceRefSize = source?.refSize ?? 1
        }

        mutating func encode(_ root: PlistValue) -> [UInt8] {
            start(objects: count(.value(root)))
            write(.value(root))
            return finish()
        }

        /// Encodes a root dictionary of `keys[i]` → `values[i]`. Its entries are written in place,
        /// not queued: the usual suite is a long root of short values.
        mutating func encodeDictionary(keys: [Item], values: [Item]) -> [UInt8] {
            start(objects: 1 + count(keys) + count(values))
            offsets.append(out.count)
            appendMarker(0xD0, count: keys.count, to: &out)
            announce(2 * keys.count)
            writeInOrder(keys)
            writeInOrder(values)
            return finish()
        }

        /// Writes `items` one after another. Copied scalars that lie one after another in the
        /// source (the keys and short values of an unchanged suite) are copied in one piece.
        private mutating func writeInOrder(_ items: [Item]) {
            var run = (start: 0, end: -1, base: 0)  // the source bytes of the copies not yet appended
            var i = 0
            while i < items.count {
                let item = items[i]
                i += 1
                guard case .copy(let ref) = item, case let start = sourceOffset(ref), !Self.isContainer(bytes[start]) else {
                    flush(&run)
                    write(item)
                    continue
                }
                if start != run.end {
                    flush(&run)
                    run = (start, start, out.count)
                }
                offsets.append(run.base + start - run.start)
                run.end = scalarEnd(at: start)
            }
            flush(&run)
        }

        /// Appends the copied bytes of `run`, if any, and ends it.
        private mutating func flush(_ run: inout (start: Int, end: Int, base: Int)) {
            if run.end > run.start { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run.start..<run.end])) }
            run.end = -1
        }

        /// Where the copied scalar object at `start` ends.
        private func scalarEnd(at start: Int) -> Int {
            let marker = bytes[start]
            switch marker >> 4 {
            case 0x0: return start + 1
            case 0x1, 0x2: return start + 1 + 1 << Int(marker & 0x0F)
            case 0x3: return start + 9
            case 0x6:
                let (_, count, body) = header(at: start)
                return body + 2 * count
            default:  // data, ASCII string
                let (_, count, body) = header(at: start)
                return body + count
            }
        }

        private mutating func start(objects: Int) {
            refSize = byteWidth(UInt64(objects))
            out = magic
            // About the source's size when copying from one (a suite written anew).
            out.reserveCapacity(64 + max(objects * 12, bytes.count * 9 / 8))
            offsets.reserveCapacity(objects)
        }

        private mutating func finish() -> [UInt8] {
            while head < queue.count {
                let item = queue[head]
                head += 1
                write(item)
            }
            appendTable(offsets, refSize: refSize, to: &out)
            return out
        }

        /// Writes the next `count` references; the objects they name come next in the queue.
        private mutating func announce(_ count: Int) {
            guard count > 0 else { return }
            let refs = [Int](unsafeUninitializedCapacity: count) { buffer, initialized in
                for i in 0..<count { buffer[i] = nextRef + i }
                initialized = count
            }
            refs.withUnsafeBufferPointer { appendBigEndian($0, size: refSize, to: &out) }
            nextRef += count
        }

        private func sourceOffset(_ ref: Int) -> Int {
            Int(Reader.uint(bytes, offsetTable + ref * offsetSize, offsetSize))
        }

        /// A copied object's marker, its length or child count, and where its payload or
        /// references begin.
        private func header(at offset: Int) -> (marker: UInt8, count: Int, body: Int) {
            let marker = bytes[offset]
            var body = offset + 1
            var count = Int(marker & 0x0F)
            switch marker >> 4 {
            case 0x4, 0x5, 0x6, 0xA, 0xD:
                guard count == 0x0F else { break }
                let size = 1 << Int(bytes[body] & 0x0F)
                count = Int(Reader.uint(bytes, body + 1, size))
                body += 1 + size
            default: break
            }
            return (marker, count, body)
        }

        private static func isContainer(_ marker: UInt8) -> Bool { marker >> 4 == 0xA || marker >> 4 == 0xD }

        /// The references of a copied container, in order.
        private func children(at offset: Int) -> (marker: UInt8, count: Int, refs: [Int]) {
            let (marker, count, body) = header(at: offset)
            let total = marker >> 4 == 0xD ? 2 * count : count
            return (marker, count, (0..<total).map { Int(Reader.uint(bytes, body + $0 * sourceRefSize, sourceRefSize)) })
        }

        /// How many objects `items` write. (Loops, not `reduce`: every write counts every entry,
        /// also in debug builds, where generic calls cost a hundred times more.)
        private func count(_ items: [Item]) -> Int {
            var total = 0
            var i = 0
            while i < items.count {
                total += count(items[i])
                i += 1
            }
            return total
        }

        /// How many objects `item` writes, itself included.
        private func count(_ item: Item) -> Int {
            switch item {
            case .value(let value): return BinaryPropertyList.count(value)
            case .copy(let ref):
                let offset = sourceOffset(ref)
                guard Self.isContainer(bytes[offset]) else { return 1 }
                return children(at: offset).refs.reduce(1) { $0 + count(.copy($1)) }
            }
        }

        /// Writes one object. Its children get the next references and join the queue.
        private mutating func write(_ item: Item) {
            offsets.append(out.count)
            switch item {
            case .value(.array(let items)):
                appendMarker(0xA0, count: items.count, to: &out)
                announce(items.count)
                queue.append(contentsOf: items.lazy.map { .value($0) })
            case .value(.dictionary(let items)):
                appendMarker(0xD0, count: items.count, to: &out)
                announce(2 * items.count)
                queue.append(contentsOf: items.storage.keys.lazy.map { .value(.string($0.string)) })
                queue.append(contentsOf: items.storage.values.lazy.map { .value($0) })
            case .value(let scalar):
                appendScalar(scalar, to: &out)
            case .copy(let ref):
                let start = sourceOffset(ref)
                let marker = bytes[start]
                if Self.isContainer(marker) {
                    let (marker, count, refs) = children(at: start)
                    appendMarker(marker & 0xF0, count: count, to: &out)
                    announce(refs.count)
                    queue.append(contentsOf: refs.lazy.map { .copy($0) })
                    return
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<scalarEnd(at: start)]))
            }
        }
    }

    /// Appends the offset table of objects at `offsets`, and the trailer (the root is object 0),
    /// to the objects in `out`.
    static func appendTable(_ offsets: [Int], refSize: Int, to out: inout [UInt8]) {
        let tableOffset = out.count
        let offsetSize = byteWidth(UInt64(tableOffset))
        offsets.withUnsafeBufferPointer { appendBigEndian($0, size: offsetSize, to: &out) }
        appendTrailer(offsetSize: offsetSize, refSize: refSize, objects: offsets.count, table: tableOffset, to: &out)
    }

    /// Appends the trailer of a file of `objects` objects whose offset table is at `table`.
    static func appendTrailer(offsetSize: Int, refSize: Int, objects: Int, table: Int, to out: inout [UInt8]) {
        out.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(refSize)])
        appendBigEndian(UInt64(objects), size: 8, to: &out)
        appendBigEndian(0, size: 8, to: &out)
        appendBigEndian(UInt64(table), size: 8, to: &out)
    }

    static func appendScalar(_ value: PlistValue, to out: inout [UInt8]) {
        switch value {
        case .bool(let v): out.append(v ? 0x09 : 0x08)
        case .integer(let v): appendInteger(v, to: &out)
        case .unsignedInteger(let v):
            if let small = Int64(exactly: v) {
                appendInteger(small, to: &out)
            } else {
                // Above Int64.max: a 16-byte integer, as CFBinaryPList and plistlib write it.
                out.append(0x14)
                appendBigEndian(0, size: 8, to: &out)
                appendBigEndian(v, size: 8, to: &out)
            }
        case .real(let v):
            out.append(0x23)
            appendBigEndian(v.bitPattern, size: 8, to: &out)
        case .date(let v):
            out.append(0x33)
            appendBigEndian(v.timeIntervalSinceReferenceDate.bitPattern, size: 8, to: &out)
        case .data(let v):
            appendMarker(0x40, count: v.count, to: &out)
            out.append(contentsOf: v)
        case .string(let v):
            if v.utf8.allSatisfy({ $0 < 0x80 }) {
                appendMarker(0x50, count: v.utf8.count, to: &out)
                out.append(contentsOf: v.utf8)
            } else {
                let units = Array(v.utf16)
                appendMarker(0x60, count: units.count, to: &out)
                for unit in units { out.append(UInt8(unit >> 8)); out.append(UInt8(unit & 0xFF)) }
            }
        case .array, .dictionary: break  // written by the encoder, with references to their children
        }
    }

    static func count(_ value: PlistValue) -> Int {
        switch value {
        case .array(let items): items.reduce(1) { $0 + count($1) }
        case .dictionary(let items): items.values.reduce(1 + items.count) { $0 + count($1) }
        default: 1
        }
    }

    static func byteWidth(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    static func appendBigEndian(_ value: UInt64, size: Int, to out: inout [UInt8]) {
        var shift = UInt64(size) * 8
        while shift > 0 {
            shift -= 8
            out.append(UInt8(truncatingIfNeeded: value &>> shift))
        }
    }

    /// Appends each of `values` as a big-endian integer of `size` bytes in one growth of `out`.
    /// (Concrete: a hot loop of every write. Never with no values: an empty
    /// `Array(unsafeUninitializedCapacity:)` writes the shared empty singleton, a race TSan reports.)
    static func appendBigEndian(_ values: UnsafeBufferPointer<Int>, size: Int, to out: inout [UInt8]) {
        guard !values.isEmpty else { return }
        out += [UInt8](unsafeUninitializedCapacity: values.count * size) { buffer, initialized in
            for value in values {
                var shift = size * 8
                while shift > 0 {
                    shift -= 8
                    buffer[initialized] = UInt8(truncatingIfNeeded: value &>> shift)
                    initialized += 1
                }
            }
        }
    }

    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        // 1-, 2- and 4-byte integers are unsigned in bplist00; negatives take 8 bytes.
        let size = value < 0 ? 8 : byteWidth(UInt64(value))
        out.append(0x10 | UInt8(size.trailingZeroBitCount))
        appendBigEndian(UInt64(bitPattern: value), size: size, to: &out)
    }

    static func appendMarker(_ type: UInt8, count: Int, to out: inout [UInt8]) {
        if count < 15 {
            out.append(type | UInt8(count))
        } else {
            out.append(type | 0x0F)
            appendInteger(Int64(count), to: &out)
        }
    }
}
