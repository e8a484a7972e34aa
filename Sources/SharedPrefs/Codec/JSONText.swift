/// JSON text (RFC 8259) read as a property-list value, with one rule for numbers: an integer
/// that fits 64 bits (signed, else unsigned) stays an integer (`7`), any other number is a real
/// (`7.0`, `7e0`, `1.5`). Read by `prefs-watch write` and by launch arguments
/// (``PreferenceSuite/Options/launchArguments``), so that both read `7.0` alike.
package enum JSONText {
    /// Parses JSON text (RFC 8259) into a property-list value: integers that fit 64 bits stay
    /// integers, other numbers are reals; `null` has no property-list form.
    /// - Throws: ``Problem``, saying where the text stops parsing.
    package static func parse(_ text: String) throws(Problem) -> PlistValue {
        var parser = Parser(bytes: Array(text.utf8))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == parser.bytes.count else { throw parser.problem("Unexpected text") }
        return value
    }

    package struct Problem: Error, CustomStringConvertible { package let description: String }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        func problem(_ what: String) -> Problem {
            let before = String(decoding: bytes.prefix(at), as: UTF8.self)
            return Problem(description: "\(what) around character \(at), after \(PlistValue.quoted((before.count > 20 ? "…" : "") + before.suffix(20)))")
        }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        mutating func value(depth: Int) throws(Problem) -> PlistValue {
            guard depth < 512 else { throw problem("Nesting deeper than 512 levels") }
            guard at < bytes.count else { throw problem("Unexpected end of text") }
            switch bytes[at] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = bytes[at] == UInt8(ascii: "{"), close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                at += 1
                var items: [PlistValue] = [], dictionary = PlistDictionary()
                skipSpace()
                if take(close) { return isObject ? .dictionary(dictionary) : .array(items) }
                while true {
                    skipSpace()
                    if isObject {
                        guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw problem("Expected a key in quotes") }
                        guard case .string(let key) = try value(depth: depth + 1) else { throw problem("Invalid key") }
                        skipSpace()
                        guard take(UInt8(ascii: ":")) else { throw problem("Expected ':'") }
                        skipSpace()
                        dictionary[key] = try value(depth: depth + 1)
                    } else {
                        items.append(try value(depth: depth + 1))
                    }
                    skipSpace()
                    if take(close) { return isObject ? .dictionary(dictionary) : .array(items) }
                    guard take(UInt8(ascii: ",")) else { throw problem("Expected ',' or '\(Character(UnicodeScalar(close)))'") }
                    let comma = at
                    skipSpace()
                    if at < bytes.count, bytes[at] == close {
                        at = comma
                        throw problem("a comma before a closing bracket")
                    }
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t") where word("true"): return .bool(true)
            case UInt8(ascii: "f") where word("false"): return .bool(false)
            case UInt8(ascii: "n") where word("null"): 
                at -= 4
                throw problem("A null (no property-list value)")
            default: return try number()
            }
        }

        mutating func word(_ word: String) -> Bool {
            guard bytes[at...].starts(with: word.utf8) else { return false }
            at += word.utf8.count
            return true
        }

        mutating func number() throws(Problem) -> PlistValue {
            let start = at
            func digits() -> Int {
                let from = at
                while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) { at += 1 }
                return at - from
            }
            _ = take(UInt8(ascii: "-"))
            let whole = digits()
            var integral = true
            if whole > 1 && bytes[at - whole] == UInt8(ascii: "0") || whole == 0 { at = start; throw problem("Invalid value") }
            if take(UInt8(ascii: ".")) {
                integral = false
                guard digits() > 0 else { throw problem("Invalid number") }
            }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                integral = false
                _ = take(UInt8(ascii: "+")) || take(UInt8(ascii: "-"))
                guard digits() > 0 else { throw problem("Invalid number") }
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            if integral, let v = Int64(text) { return .integer(v) }
            if integral, let v = UInt64(text) { return .unsignedInteger(v) }
            guard let v = Double(text), v.isFinite else { at = start; throw problem("Number out of range") }
            return .real(v)
        }

        mutating func string() throws(Problem) -> String {
            at += 1
            var scalars = String.UnicodeScalarView()
            var run = at
            func flush(_ end: Int) { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
            while true {
                guard at < bytes.count else { throw problem("Unterminated string") }
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    flush(at)
                    at += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { throw problem("Unescaped control character in a string") }
                guard byte == UInt8(ascii: "\\") else { at += 1; continue }
                flush(at)
                at += 1
                guard at < bytes.count else { throw problem("Unterminated string") }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(UnicodeScalar(escape))
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), word("\\u") {
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw problem("Invalid surrogate pair") }
                        code = 0x10000 + (code - 0xD800) << 10 + (low - 0xDC00)
                    }
                    guard let scalar = UnicodeScalar(code) else { throw problem("Invalid \\u escape") }
                    scalars.append(scalar)
                default:
                    at -= 2
                    throw problem("Invalid escape")
                }
                run = at
            }
        }

        mutating func hex4() throws(Problem) -> UInt32 {
            guard at + 4 <= bytes.count, bytes[at..<at + 4].allSatisfy({ Character(UnicodeScalar($0)).isHexDigit }),
                let code = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16)
            else { throw problem("Invalid \\u escape") }
            at += 4
            return code
        }
    }
}
