#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefs

/// One line of `prefs-watch tail` output.
struct Record: Sendable {
    enum Operation: String, Sendable {
        /// A key was set (added or changed).
        case set
        /// A key was removed.
        case removed
        /// A current value printed by `--initial`.
        case initial
        /// The watcher lost events and re-read everything (an inotify queue overflow).
        case resync
        /// The reader of the output fell behind by more than `--backlog`: the changes of each
        /// key that follow are merged, and this record says how many were.
        case overflow
        /// A suite could not be read (not a property list, permissions, …).
        case error
        /// A file-level inotify event (`--raw`).
        case raw
        /// `--since` or `--cursor`: the writes after one number up to another cannot be told one
        /// by one; the suite's stored values follow as `initial` records.
        case gap
        /// `--cursor`, for a write none of whose changes passes the filters: not printed, it only
        /// moves the cursor.
        case cursor
    }

    var time = timespec.now
    /// The record's place in the output, from 1.
    var record = 0
    /// The number of the write that made the change (`nil`: a change no number names, such as
    /// a system layer's or one heard before it was written; for `initial` records, the number
    /// of the suite's stored values when the stream began at a gap).
    var sequence: UInt64? = nil
    var suite: String
    var path: String
    var key: String?
    var operation: Operation
    var old: PlistValue?
    var new: PlistValue?
    var message: String?
    /// For a change a system layer made (an administrator's default, a lock): that layer.
    var layer: PreferenceLayer? = nil
    /// `--cursor`: the number to save once this record is written out (on the last record of a write).
    var cursor: UInt64? = nil

    /// What the record holds, roughly, in bytes: what the writer's backlog counts.
    var footprint: Int {
        64 + suite.utf8.count + path.utf8.count + (key?.utf8.count ?? 0) + (message?.utf8.count ?? 0) + (old?.footprint ?? 0) + (new?.footprint ?? 0)
    }
}

extension timespec {
    static var now: timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }

    /// `2026-11-21T11:35:04.123456Z`
    var iso8601: String {
        var seconds = tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return parts.dateAndTime + "." + (tv_nsec / 1000).padded(6) + "Z"
    }

    /// `11:35:04.123456`, local time.
    var clock: String {
        var seconds = tv_sec
        var parts = tm()
        localtime_r(&seconds, &parts)
        return parts.timeOfDay + "." + (tv_nsec / 1000).padded(6)
    }
}

extension String {
    /// As it is, or quoted and escaped like a string value's `description` when it holds a
    /// control character (ESC, CR, NUL, …): what a terminal is shown never has a raw one, and a
    /// `-0` record never holds a NUL.
    var displayed: String {
        unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) } ? PlistValue.string(self).description : self
    }
}

extension PlistValue {
    /// Strings without quotes (unless they hold a control character, see `displayed`), everything
    /// else as `description`: for CSV and `--format`.
    var bare: String {
        if case .string(let text) = self { return text.displayed }
        return description
    }

    /// What the value holds, roughly, in bytes.
    var footprint: Int {
        switch self {
        case .string(let v): 16 + v.utf8.count
        case .data(let v): 16 + v.count
        case .array(let v): v.reduce(16) { $0 + $1.footprint }
        case .dictionary(let v): v.reduce(16) { $0 + $1.key.utf8.count + $1.value.footprint }
        default: 16
        }
    }

    /// JSON text. Dates become ISO 8601 strings, data base64 strings, non-finite reals strings.
    var json: String {
        switch self {
        case .string(let v): return JSON.quote(v)
        case .integer(let v): return String(v)
        case .unsignedInteger(let v): return String(v)
        case .real(let v): return v.isFinite ? String(v) : JSON.quote(String(v))
        case .bool(let v): return v ? "true" : "false"
        case .date: return JSON.quote(description)
        case .data(let v): return JSON.quote(v.base64EncodedString())
        case .array(let v): return "[" + v.map(\.json).joined(separator: ",") + "]"
        case .dictionary(let v):
            return "{" + v.sortedByKey.map { JSON.quote($0.key) + ":" + $0.value.json }.joined(separator: ",") + "}"
        }
    }
}

enum JSON {
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value): out += "\\u" + scalar.value.padded(4, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// How records are printed.
enum OutputStyle: Sendable {
    case text
    case json
    case csv
    case format(String)

    /// The letters `--format` understands.
    static let formatLetters: [Character: String] = [
        "T": "time, ISO 8601 UTC with microseconds",
        "t": "time of day, local, with microseconds",
        "q": "number of the write (empty for a change no number names)",
        "r": "record number in output order",
        "s": "suite name",
        "w": "suite file path",
        "k": "key",
        "f": "key (inotifywait's %f)",
        "e": "operation: set, removed, initial, gap, resync, overflow, error, raw",
        "o": "old value",
        "n": "new value",
        "m": "message (resync, overflow, error, raw)",
        "%": "a literal %",
    ]

    func render(_ record: Record) -> String {
        switch self {
        case .text: text(record)
        case .json: json(record)
        case .csv:
            [record.time.iso8601, record.sequence.map(String.init) ?? "", record.suite, record.key?.displayed ?? "", record.operation.rawValue,
             record.old?.bare ?? "", record.new?.bare ?? "", record.message?.displayed ?? ""].map(Self.csvField).joined(separator: ",")
        case .format(let format): Self.expand(format, record)
        }
    }

    private func text(_ r: Record) -> String {
        let head = "\(r.time.clock) \(r.suite)"
        let key = r.key?.displayed ?? ""
        let message = r.message?.displayed ?? ""
        switch r.operation {
        case .set, .removed:
            return "\(head) \(key): \(r.old?.description ?? "(none)") -> \(r.new?.description ?? "(removed)")" + (r.layer.map { " [\($0)]" } ?? "")
        case .initial: return "\(head) \(key) = \(r.new?.description ?? "(none)")"
        case .resync: return "\(head) RESYNC \(message)"
        case .gap: return "\(head) GAP \(message)"
        case .overflow: return "\(r.time.clock) OVERFLOW \(message)"
        case .error: return "\(head) ERROR \(message)"
        case .raw: return "\(r.time.clock) RAW \(message)"
        case .cursor: return ""
        }
    }

    private func json(_ r: Record) -> String {
        var fields = [
            "\"ts\":\(JSON.quote(r.time.iso8601))", "\"seq\":\(r.sequence.map(String.init) ?? "null")", "\"record\":\(r.record)",
            "\"suite\":\(JSON.quote(r.suite))",
            "\"key\":\(r.key.map(JSON.quote) ?? "null")", "\"op\":\"\(r.operation.rawValue)\"",
            "\"old\":\(r.old?.json ?? "null")", "\"new\":\(r.new?.json ?? "null")",
        ]
        if let message = r.message { fields.append("\"message\":\(JSON.quote(message))") }
        if let layer = r.layer { fields.append("\"layer\":\"\(layer)\"") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// inotifywait's CSV quoting: a field with a comma, quote or line break is quoted, quotes doubled.
    static func csvField(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacing("\"", with: "\"\"") + "\""
    }

    private static func expand(_ format: String, _ r: Record) -> String {
        var out = ""
        var iterator = format.makeIterator()
        while let character = iterator.next() {
            guard character == "%", let letter = iterator.next() else {
                out.append(character)
                continue
            }
            switch letter {
            case "T": out += r.time.iso8601
            case "t": out += r.time.clock
            case "q": out += r.sequence.map(String.init) ?? ""
            case "r": out += String(r.record)
            case "s": out += r.suite
            case "w": out += r.path.displayed
            case "k", "f": out += r.key?.displayed ?? ""
            case "e": out += r.operation.rawValue
            case "o": out += r.old?.bare ?? ""
            case "n": out += r.new?.bare ?? ""
            case "m": out += r.message?.displayed ?? ""
            case "%": out += "%"
            default: out += "%"; out.append(letter)
            }
        }
        return out
    }
}

/// Writes `text` to standard error, whole, with write(2); a failure is ignored (there is nowhere
/// left to say it).
func printError(_ text: String) {
    _ = Syscall.writeAll(STDERR_FILENO, Array(text.utf8))
}

/// Whether `path` is a directory (following symbolic links); `nil` when nothing is there.
func isDirectory(_ path: String) -> Bool? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    return st.st_mode & S_IFMT == S_IFDIR
}

/// What went wrong, in words: the system's for a file operation that failed (`CocoaError`'s own
/// description names no cause).
func describe(_ error: any Error) -> String {
    if let error = error as? CocoaError, let posix = error.underlying as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    return "\(error)"
}

/// Writes whole records to standard output with write(2), as soon as the writer has them. A
/// closed pipe (`prefs-watch … | head -1`) ends the process with 0.
enum StandardOutput {
    /// Writes `bytes` whole; a closed pipe ends the process with 0, another failure with 1.
    static func write(_ bytes: [UInt8]) {
        guard case .failure(let error) = Syscall.writeAll(STDOUT_FILENO, bytes) else { return }
        if error.rawValue == EPIPE { exit(0) }
        printError("prefs-watch: cannot write to standard output: \(String(cString: strerror(error.rawValue)))\n")
        exit(1)
    }
}
