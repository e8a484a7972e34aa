#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefsLocking

/// A suite's journal, `.<suite>.plist.journal`: its last writes, each with its number, its base
/// (the number of the file it was made on), and the keys it changed with their old and new values.
///
/// A write appends its record under the suite's lock before it renames in the file that carries
/// the number, so after any crash the journal holds every number a file was given (and perhaps one
/// no file got). The next number is one more than the larger of the file's and the journal's last:
/// none is given twice. A record is `SPJ1`, its payload's length (4 bytes), its number, base and the
/// journal's first number (8 bytes each), the payload (a binary property list: `pid`, `time`,
/// `set`, `old`, `removed`, `large`), and the length again, to be found from the end. Past
/// ``maximumRecords`` or ``maximumBytes`` it is rewritten with its newer half.
struct Journal {
    typealias Record = NumberedWrite

    /// How many numbers the journal spans before it is halved: a consumer away for 10,000 writes catches
    /// up without a gap (unless ``maximumBytes`` comes first).
    static let maximumRecords: UInt64 = 20_000
    /// How large the journal grows at most before it is rewritten with its newer half.
    static let maximumBytes = 4 << 20
    /// The largest value a record holds; a larger one is named, not copied (a 100 MB value
    /// changed ten times would make a journal of 2 GB).
    static let maximumValueBytes = 64 << 10
    private static let magic = Array("SPJ1".utf8)
    private static let header = 32

    let fd: CInt
    let path: String
    /// The directory it is in.
    let directory: CInt
    /// Its size when opened.
    let size: Int

    /// Opens (or creates) the journal of `file` with the suite file's mode, in the directory of writes
    /// where it can (no observer wakes for it); `nil`, said once, where it cannot: writes go on numbered
    /// from the file alone.
    static func open(_ file: SuiteFile, in dir: OpenDirectory, writes: CInt?) -> Journal? {
        let path = file.directory + (writes == nil ? "/" : "/" + SuiteFile.writesDirectoryName + "/") + file.journalName
        let directory = writes ?? dir.fd
        let opened = Syscall.openat(directory, file.journalName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, file.options.filePermissions)
        let problem: String
        switch opened {
        case .failure(let errno): problem = "it cannot be opened (\(errno))"
        case .success(let fd):
            switch Syscall.fstat(fd) {
            case .failure(let errno): problem = "it cannot be inspected (\(errno))"
            case .success(let st) where st.st_mode & S_IFMT != S_IFREG: problem = file.notRegular(st, path: path).message
            case .success(let st):
                do {
                    try file.checkOwner(st, of: path, in: dir)
                } catch {
                    problem = error.message
                    break
                }
                if dir.isGroupContainer, st.st_mode & 0o777 != file.options.filePermissions & 0o777, st.st_uid == geteuid() {
                    _ = Syscall.fchmod(fd, file.options.filePermissions & 0o777)
                }
                return Journal(fd: fd, path: path, directory: directory, size: Int(st.st_size))
            }
            Syscall.close(fd)
        }
        if unusable.withLock({ $0.insert(path).inserted }) {
            logger.warning("The journal \(path) is not used: \(problem). Writes are numbered from the suite file alone, so a number may be given again after another program replaces the file. Remove it or put it right.")
        }
        return nil
    }

    private static let unusable = Lock<Set<String>>([])

    /// The records of `file`'s journal in `directory` numbered above `after`, newest first, read from its
    /// end, if the suite's trust rule admits it. Where it does not end with a whole record (a writer is
    /// appending one, or died doing so), whole records are read from its start; a broken record
    /// elsewhere ends the reading.
    static func read(_ file: SuiteFile, in dir: OpenDirectory, directory: CInt, after: UInt64) -> [Record] {
        guard case .success(let fd) = Syscall.openat(directory, file.journalName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return [] }
        defer { Syscall.close(fd) }
        guard case .success(let st) = Syscall.fstat(fd), st.st_mode & S_IFMT == S_IFREG, (try? file.checkOwner(st, of: file.journalName, in: dir)) != nil else { return [] }
        var records: [Record] = []
        let size = Int(st.st_size)
        var end = size
        while end >= header + 4 {
            let footer = (try? Syscall.read(fd, at: end - 4, 4).get()) ?? []
            let start = end - header - 4 - Int(footer.count == 4 ? number(footer) : 0)
            guard footer.count == 4, start >= 0, end - start <= 2 * maximumBytes, case .success(let bytes) = Syscall.read(fd, at: start, end - start),
                let (record, _) = record(in: bytes, at: 0)
            else {
                if end == size { return fromStart(fd, size: size, after: after) }
                break
            }
            guard record.sequence > after else { break }
            records.append(record)
            end = start
        }
        return records
    }

    /// ``read(_:in:directory:after:)`` from the journal's start: its whole records numbered above
    /// `after`, newest first.
    private static func fromStart(_ fd: CInt, size: Int, after: UInt64) -> [Record] {
        guard case .success(let all) = Syscall.readAll(fd, sizeHint: size, limit: 2 * maximumBytes) else { return [] }
        var records: [Record] = []
        var offset = 0
        while let frame = frame(in: all, at: offset) {
            if frame.sequence > after, let (record, _) = record(in: all, at: offset) { records.append(record) }
            offset = frame.end
        }
        return records.reversed()
    }

    func close() { Syscall.close(fd) }

    /// Where the journal ends: its last whole record's number (`0` for none), the first number it
    /// holds, where the whole records end (a record a crash cut short lies beyond), and its size.
    struct Tail {
        var last: UInt64 = 0
        var first: UInt64 = 0
        var end = 0
        var size = 0
    }

    /// Reads where the journal ends: one `pread` of its last bytes, as a rule.
    func tail() -> Tail {
        guard size > 0 else { return Tail() }
        if case .success(let chunk) = Syscall.read(fd, at: max(0, size - 512), min(size, 512)), chunk.count >= 4 {
            let start = size - Self.header - 4 - Int(Self.number(chunk.suffix(4)))
            let from = size - chunk.count
            let head = start >= from ? Array(chunk[(start - from)...]) : (try? Syscall.read(fd, at: start, Self.header).get()) ?? []
            if start >= 0, let frame = Self.frame(in: head, at: 0, wholeAt: size - start) {
                return Tail(last: frame.sequence, first: frame.first, end: size, size: size)
            }
        }
        // Cut short: the last whole record, from the start.
        guard case .success(let all) = Syscall.readAll(fd, sizeHint: size, limit: 2 * Self.maximumBytes) else { return Tail(size: size) }
        var tail = Tail(size: size)
        while let frame = Self.frame(in: all, at: tail.end) { (tail.last, tail.first, tail.end) = (frame.sequence, frame.first, frame.end) }
        return tail
    }

    /// Appends `record` where the whole records end (cutting off a short one), halving the journal once
    /// it spans too much. Not flushed: a power loss may lose its last records (a gap), never give a
    /// number twice.
    func append(_ record: Record, after tail: Tail, file: SuiteFile) throws(PreferenceError) {
        let first = tail.end == 0 ? record.sequence : tail.first
        let bytes = Self.encode(record, first: first)
        if tail.size != tail.end {
            try Syscall.truncate(fd, tail.end).get("ftruncate", path: path, doing: "cut off a record a crash left short in")
        }
        try Syscall.writeAll(fd, bytes, at: tail.end).get("write", path: path, doing: "append to")
        guard tail.end + bytes.count > Self.maximumBytes || record.sequence - min(first, record.sequence) >= Self.maximumRecords else { return }
        // The newer half, by count and by size: whole records, copied as they are.
        guard case .success(let all) = Syscall.readAll(fd, sizeHint: tail.end + bytes.count, limit: 2 * Self.maximumBytes) else { return }
        var starts: [Int] = []
        var offset = 0
        while let next = Self.frame(in: all, at: offset) {
            starts.append(offset)
            offset = next.end
        }
        guard var kept = starts.indices.first else { return }
        while kept < starts.count - 1, offset - starts[kept] > Self.maximumBytes / 2 || starts.count - kept > Int(Self.maximumRecords / 2) { kept += 1 }
        // The last record says where the journal now begins.
        var newer = Array(all[starts[kept]..<offset])
        let keptFirst = Self.frame(in: all, at: starts[kept])!.sequence
        for i in 0..<8 { newer[starts.last! - starts[kept] + 24 + i] = UInt8(truncatingIfNeeded: keptFirst >> (8 * (7 - i))) }
        let temporary = file.temporaryName()
        let out = try Syscall.openat(directory, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600).get("openat", path: path, doing: "rewrite")
        defer { Syscall.close(out) }
        do throws(PreferenceError) {
            if case .success(let st) = Syscall.fstat(fd) { _ = Syscall.fchmod(out, st.st_mode & 0o777) }
            try Syscall.writeAll(out, newer).get("write", path: path, doing: "rewrite")
            try Syscall.renameat(directory, temporary, file.journalName).get("renameat", path: path, doing: "replace")
        } catch {
            _ = Syscall.unlinkat(directory, temporary)
            throw error
        }
    }

    // MARK: Encoding

    static func encode(_ record: Record, first: UInt64) -> [UInt8] {
        var set = PlistDictionary(), old = PlistDictionary()
        var removed: [PlistValue] = [], large: [PlistValue] = []
        for change in record.changes {
            guard change.kept, fits(change.old), fits(change.new) else {
                large.append(.string(change.key))
                continue
            }
            if let new = change.new { set[change.key] = new } else { removed.append(.string(change.key)) }
            if let value = change.old { old[change.key] = value }
        }
        let payload = BinaryPropertyList.encode(.dictionary([
            "pid": .integer(Int64(record.pid)), "time": .date(record.time), "set": .dictionary(set), "old": .dictionary(old), "removed": .array(removed),
            "large": .array(large),
        ]))
        var bytes = magic
        bytes.reserveCapacity(header + payload.count + 4)
        BinaryPropertyList.appendBigEndian(UInt64(payload.count), size: 4, to: &bytes)
        BinaryPropertyList.appendBigEndian(record.sequence, size: 8, to: &bytes)
        BinaryPropertyList.appendBigEndian(record.base, size: 8, to: &bytes)
        BinaryPropertyList.appendBigEndian(first, size: 8, to: &bytes)
        bytes += payload
        BinaryPropertyList.appendBigEndian(UInt64(payload.count), size: 4, to: &bytes)
        return bytes
    }

    /// Whether `value` is small enough for a record (``maximumValueBytes``), counted roughly.
    private static func fits(_ value: PlistValue?) -> Bool {
        var budget = maximumValueBytes
        func take(_ value: PlistValue) -> Bool {
            switch value {
            case .string(let text): budget -= text.utf8.count
            case .data(let data): budget -= data.count
            case .array(let items): budget -= 8; return items.allSatisfy(take)
            case .dictionary(let items): budget -= 8; return items.allSatisfy { budget -= $0.key.utf8.count; return take($0.value) }
            default: budget -= 8
            }
            return budget >= 0
        }
        return value.map(take) ?? true
    }

    /// Where the record at `offset` has its header fields and payload, and where it ends; `nil` unless a
    /// whole record starts there. `wholeAt`: the length when `bytes` hold only its beginning.
    static func frame(in bytes: [UInt8], at offset: Int, wholeAt: Int? = nil) -> (sequence: UInt64, base: UInt64, first: UInt64, payload: Range<Int>, end: Int)? {
        guard offset >= 0, bytes.count - offset >= header + (wholeAt == nil ? 4 : 0), bytes[offset..<(offset + 4)].elementsEqual(magic) else { return nil }
        let length = Int(number(bytes[(offset + 4)..<(offset + 8)]))
        let end = offset + header + length + 4
        guard wholeAt.map({ $0 == end - offset }) ?? (end <= bytes.count && number(bytes[(end - 4)..<end]) == UInt64(length)) else { return nil }
        let field = { (at: Int) in number(bytes[(offset + at)..<(offset + at + 8)]) }
        return (field(8), field(16), field(24), (offset + header)..<(end - 4), end)
    }

    /// The whole record at `offset` of `bytes`, and where it ends; `nil` for anything else.
    static func record(in bytes: [UInt8], at offset: Int) -> (record: Record, end: Int)? {
        guard let frame = frame(in: bytes, at: offset), case .dictionary(let payload)? = try? BinaryPropertyList.decode(Array(bytes[frame.payload])) else { return nil }
        var changes: [Record.Change] = []
        if case .dictionary(let set)? = payload["set"] {
            for (key, value) in set { changes.append(.init(key: key, old: nil, new: value)) }
        }
        if case .array(let removed)? = payload["removed"] {
            for case .string(let key) in removed { changes.append(.init(key: key, old: nil, new: nil)) }
        }
        if case .array(let large)? = payload["large"] {
            for case .string(let key) in large { changes.append(.init(key: key, old: nil, new: nil, kept: false)) }
        }
        if case .dictionary(let old)? = payload["old"] {
            for i in changes.indices { changes[i].old = old[changes[i].key] }
        }
        changes.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        guard case .integer(let pid)? = payload["pid"], case .date(let time)? = payload["time"] else { return nil }
        return (Record(sequence: frame.sequence, base: frame.base, pid: Int32(truncatingIfNeeded: pid), time: time, changes: changes), frame.end)
    }

    private static func number<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
