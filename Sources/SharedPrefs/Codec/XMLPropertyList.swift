#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Reads and writes XML property lists (Apple's `PropertyList-1.0.dtd`, as `plutil -convert xml1`
/// and Python's default `plistlib.dump` write them).
enum XMLPropertyList {
    // MARK: Encoding

    /// A string XML 1.0 cannot hold: control characters other than tab, line feed and carriage
    /// return (not even as `&#1;`), and the non-characters U+FFFE and U+FFFF.
    struct Uncarriable: Error {
        var scalar: Unicode.Scalar
    }

    /// Encodes `root`, or throws when a string in it holds a character XML cannot carry: the
    /// caller then writes a binary property list instead, never broken XML.
    static func encode(_ root: PlistValue) throws(Uncarriable) -> [UInt8] {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        try write(root, indent: 0, to: &out)
        out += "</plist>\n"
        return Array(out.utf8)
    }

    private static func write(_ value: PlistValue, indent: Int, to out: inout String) throws(Uncarriable) {
        let pad = String(repeating: "\t", count: indent)
        switch value {
        case .string(let v): out += "\(pad)<string>\(try escape(v))</string>\n"
        case .integer(let v): out += "\(pad)<integer>\(v)</integer>\n"
        case .unsignedInteger(let v): out += "\(pad)<integer>\(v)</integer>\n"
        case .real(let v): out += "\(pad)<real>\(v.isNaN ? "nan" : "\(v)")</real>\n"
        case .bool(let v): out += "\(pad)<\(v)/>\n"
        case .date(let v): out += "\(pad)<date>\(iso8601(v))</date>\n"
        case .data(let v): out += "\(pad)<data>\(v.base64EncodedString())</data>\n"
        case .array(let items) where items.isEmpty: out += "\(pad)<array/>\n"
        case .array(let items):
            out += "\(pad)<array>\n"
            for item in items { try write(item, indent: indent + 1, to: &out) }
            out += "\(pad)</array>\n"
        case .dictionary(let items) where items.isEmpty: out += "\(pad)<dict/>\n"
        case .dictionary(let items):
            out += "\(pad)<dict>\n"
            for (key, value) in items.sortedByKey {
                out += "\(pad)\t<key>\(try escape(key))</key>\n"
                try write(value, indent: indent + 1, to: &out)
            }
            out += "\(pad)</dict>\n"
        }
    }

    /// Escapes `&`, `<`, `>` and a carriage return (`&#13;`: a raw one reads back as a line feed),
    /// scalar by scalar (a `<` with a combining mark is no `"<"` Character: found by the fuzzer).
    /// - Throws: ``Uncarriable`` for a character no XML 1.0 document can hold.
    private static func escape(_ text: String) throws(Uncarriable) -> String {
        // Fast path: nothing to escape (no markup, no control character, no U+FFFE/U+FFFF, whose
        // UTF-8 begins with 0xEF 0xBF).
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 < 0x20 || $0 == 0xEF })
        else { return text }
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped.append(contentsOf: "&amp;".unicodeScalars)
            case "<": escaped.append(contentsOf: "&lt;".unicodeScalars)
            case ">": escaped.append(contentsOf: "&gt;".unicodeScalars)
            case "\r": escaped.append(contentsOf: "&#13;".unicodeScalars)
            case "\t", "\n": escaped.append(scalar)
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": throw Uncarriable(scalar: scalar)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`: XML property lists keep whole seconds.
    /// Seconds since 1970 of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range XML dates can write.
    static let dateRange: ClosedRange<Double> = -62_135_596_800...253_402_300_799

    /// `date` as an XML property list keeps it: whole seconds (rounded down), clamped to years 1 through 9999.
    static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: min(max(date.timeIntervalSince1970.rounded(.down), dateRange.lowerBound), dateRange.upperBound))
    }

    /// `value` as an XML property list keeps it: the same, but for dates (see ``wholeSeconds(_:)``)
    /// and NaNs (one `nan`, without sign or payload).
    static func storable(_ value: PlistValue) -> PlistValue {
        switch value {
        case .date(let date): .date(wholeSeconds(date))
        case .real(let v) where v.isNaN: .real(.nan)
        case .array(let items): .array(items.map(storable))
        case .dictionary(let items): .dictionary(items.mapValues(storable))
        default: value
        }
    }

    /// A suite as writing it in the XML format keeps it: ``storable(_:)`` for each value, or the
    /// suite unchanged when XML cannot carry it and it is written as a binary property list.
    static func storable(_ suite: PlistDictionary) -> PlistDictionary {
        (try? encode(.dictionary(suite))) == nil ? suite : suite.mapValues(storable)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`: whole seconds (rounded down), clamped to years 1 through 9999.
    static func iso8601(_ date: Date) -> String {
        var seconds = time_t(wholeSeconds(date).timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return parts.dateAndTime + "Z"
    }

    // MARK: Decoding

    static func decode(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> PlistValue {
        var parser = Parser(bytes: bytes)
        return try parser.document()
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            // Skip a UTF-8 byte order mark.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        }

        /// `text` as a message may quote it: 64 bytes at most (whole characters), control characters
        /// escaped, its length when cut (a file's text can be megabytes, or hold terminal escapes).
        static func quoted(_ text: some StringProtocol) -> String {
            var out = ""
            var size = 0
            for character in text {
                size += character.utf8.count
                if size > 64 { return out + "… (\(text.utf8.count) bytes)" }
                for scalar in character.unicodeScalars {
                    out += scalar.properties.generalCategory == .control ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
                }
            }
            return out
        }

        func fail(_ what: String) -> PropertyListDecodingError {
            let line = bytes[..<min(i, bytes.count)].reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            return PropertyListDecodingError("XML property list, line \(line): \(what)")
        }

        func starts(with text: String) -> Bool {
            let utf8 = text.utf8
            return bytes.count - i >= utf8.count && zip(bytes[i...], utf8).allSatisfy { $0 == $1 }
        }

        mutating func skip(past text: String) throws(PropertyListDecodingError) {
            while i < bytes.count {
                if starts(with: text) { i += text.utf8.count; return }
                i += 1
            }
            throw fail("unterminated construct, expected \(text)")
        }

        /// Skips white space, comments, processing instructions and the DOCTYPE.
        mutating func skipMisc() throws(PropertyListDecodingError) {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                case UInt8(ascii: "<") where starts(with: "<!--"): try skip(past: "-->")
                case UInt8(ascii: "<") where starts(with: "<?"): try skip(past: "?>")
                case UInt8(ascii: "<") where starts(with: "<!DOCTYPE"): try skip(past: ">")
                default: return
                }
            }
        }

        /// Reads `<name …>` or `<name …/>`; returns the name and whether the element is empty.
        mutating func openTag() throws(PropertyListDecodingError) -> (name: String, empty: Bool) {
            try skipMisc()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "<"), i + 1 < bytes.count, bytes[i + 1] != UInt8(ascii: "/") else {
                throw fail("expected an element")
            }
            i += 1
            let start = i
            while i < bytes.count, !" \t\r\n/>".utf8.contains(bytes[i]) { i += 1 }
            let name = String(decoding: bytes[start..<i], as: UTF8.self)
            while i < bytes.count, bytes[i] != UInt8(ascii: ">") { i += 1 }
            guard i < bytes.count else { throw fail("unterminated <\(Self.quoted(name))>") }
            let empty = bytes[i - 1] == UInt8(ascii: "/")
            i += 1
            return (name, empty)
        }

        mutating func closeTag(_ name: String) throws(PropertyListDecodingError) {
            try skipMisc()
            guard starts(with: "</\(name)") else { throw fail("expected </\(name)>") }
            i += 2 + name.utf8.count
            while i < bytes.count, bytes[i] != UInt8(ascii: ">") { i += 1 }
            guard i < bytes.count else { throw fail("unterminated </\(name)>") }
            i += 1
        }

        /// Character data up to the next tag, with entities and CDATA sections resolved.
        mutating func text() throws(PropertyListDecodingError) -> String {
            var out: [UInt8] = []
            while i < bytes.count {
                let byte = bytes[i]
                if byte == UInt8(ascii: "<") {
                    if starts(with: "<![CDATA[") {
                        i += 9
                        let start = i
                        try skip(past: "]]>")
                        out.append(contentsOf: bytes[start..<(i - 3)])
                        continue
                    }
                    if starts(with: "<!--") { try skip(past: "-->"); continue }
                    break
                }
                if byte == UInt8(ascii: "&") {
                    let start = i + 1
                    while i < bytes.count, bytes[i] != UInt8(ascii: ";"), i - start < 12 { i += 1 }
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ";") else { throw fail("unterminated entity") }
                    let entity = String(decoding: bytes[start..<i], as: UTF8.self)
                    i += 1
                    switch entity {
                    case "lt": out.append(UInt8(ascii: "<"))
                    case "gt": out.append(UInt8(ascii: ">"))
                    case "amp": out.append(UInt8(ascii: "&"))
                    case "quot": out.append(UInt8(ascii: "\""))
                    case "apos": out.append(UInt8(ascii: "'"))
                    default:
                        let hex = entity.hasPrefix("#x") || entity.hasPrefix("#X")
                        guard entity.hasPrefix("#"), let code = UInt32(entity.dropFirst(hex ? 2 : 1), radix: hex ? 16 : 10),
                            let scalar = Unicode.Scalar(code)
                        else { throw fail("unknown entity &\(Self.quoted(entity));") }
                        out.append(contentsOf: String(Character(scalar)).utf8)
                    }
                    continue
                }
                out.append(byte)
                i += 1
            }
            guard let string = String(validating: out, as: UTF8.self) else { throw fail("text is not valid UTF-8") }
            return string
        }

        mutating func document() throws(PropertyListDecodingError) -> PlistValue {
            var (name, empty) = try openTag()
            var wrapped = false
            if name == "plist" {
                guard !empty else { throw fail("empty <plist/>") }
                wrapped = true
                (name, empty) = try openTag()
            }
            let root = try value(name, empty: empty, depth: 0)
            if wrapped { try closeTag("plist") }
            try skipMisc()
            guard i == bytes.count else { throw fail("content after the root element") }
            return root
        }

        mutating func element(depth: Int) throws(PropertyListDecodingError) -> PlistValue {
            let (name, empty) = try openTag()
            return try value(name, empty: empty, depth: depth)
        }

        mutating func scalarText(_ name: String, empty: Bool) throws(PropertyListDecodingError) -> String {
            if empty { return "" }
            let content = try text()
            try closeTag(name)
            return content
        }

        mutating func value(_ name: String, empty: Bool, depth: Int) throws(PropertyListDecodingError) -> PlistValue {
            guard depth < BinaryPropertyList.maximumDepth else { throw fail("nesting deeper than \(BinaryPropertyList.maximumDepth) levels") }
            switch name {
            case "string":
                return .string(try scalarText(name, empty: empty))
            case "integer":
                let text = try String(scalarText(name, empty: empty).trimmed)
                if let v = Int64(text) { return .integer(v) }
                if let v = UInt64(text) { return .unsignedInteger(v) }
                let negative = text.hasPrefix("-")
                let digits = text.dropFirst(negative ? 1 : 0)
                if digits.lowercased().hasPrefix("0x"), let v = Int64(digits.dropFirst(2), radix: 16) { return .integer(negative ? -v : v) }
                throw fail("<integer>\(Self.quoted(text))</integer> is not a 64-bit integer")
            case "real":
                let text = try String(scalarText(name, empty: empty).trimmed)
                guard let v = Double(text) ?? Double(text.lowercased().replacing("infinity", with: "inf")) else {
                    throw fail("<real>\(Self.quoted(text))</real> is not a number")
                }
                return .real(v)
            case "true", "false":
                _ = try scalarText(name, empty: empty)
                return .bool(name == "true")
            case "date":
                let text = try String(scalarText(name, empty: empty).trimmed)
                guard let date = Self.parseDate(text) else { throw fail("<date>\(Self.quoted(text))</date> is not YYYY-MM-DDTHH:MM:SSZ") }
                return .date(date)
            case "data":
                let text = try scalarText(name, empty: empty).filter { !$0.isWhitespace }
                guard let data = Data(base64Encoded: text) else { throw fail("<data> is not base64") }
                return .data(data)
            case "array":
                var items: [PlistValue] = []
                if empty { return .array(items) }
                while true {
                    try skipMisc()
                    if starts(with: "</") { try closeTag("array"); return .array(items) }
                    items.append(try element(depth: depth + 1))
                }
            case "dict":
                var items = PlistDictionary()
                if empty { return .dictionary(items) }
                while true {
                    try skipMisc()
                    if starts(with: "</") { try closeTag("dict"); return .dictionary(items) }
                    let (tag, keyEmpty) = try openTag()
                    guard tag == "key" else { throw fail("expected <key> in <dict>, found <\(Self.quoted(tag))>") }
                    let key = try scalarText("key", empty: keyEmpty)
                    items[key] = try element(depth: depth + 1)
                }
            default:
                throw fail("unknown element <\(Self.quoted(name))>")
            }
        }

        static func parseDate(_ text: String) -> Date? {
            let fields = text.split(whereSeparator: { "-T:Z".contains($0) }).compactMap { Int32($0) }
            let ranges: [ClosedRange<Int32>] = [1...9999, 1...12, 1...31, 0...23, 0...59, 0...60]
            guard text.hasSuffix("Z"), fields.count == 6, zip(fields, ranges).allSatisfy({ $1.contains($0) }) else { return nil }
            var parts = tm()
            parts.tm_year = fields[0] - 1900
            parts.tm_mon = fields[1] - 1
            parts.tm_mday = fields[2]
            parts.tm_hour = fields[3]
            parts.tm_min = fields[4]
            parts.tm_sec = fields[5]
            return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
        }
    }
}
