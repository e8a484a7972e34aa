#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// A property-list value: what a suite stores for each key.
///
/// Every value a suite holds, every ``PreferenceChange`` and every registered default is one of
/// these. Typed code rarely needs it directly (``PreferenceKey`` and ``PreferenceValue`` convert),
/// but it is the exact, `Sendable` picture of what is on disk.
///
/// ```swift
/// suite.set(PlistValue.array([.string("a"), .integer(2)]), forKey: "mixed")
/// if case .integer(let n)? = suite.value(forKey: "count") { print(n) }
/// ```
///
/// Reals compare by bit pattern, so a stored NaN equals itself and never looks like a change.
public enum PlistValue: Sendable {
    /// Text (`<string>`), any Unicode, kept scalar for scalar.
    case string(String)
    /// An integer from `Int64.min` to `Int64.max` (`<integer>`).
    case integer(Int64)
    /// An integer above `Int64.max`, up to `UInt64.max`: property lists hold these as 128-bit
    /// integers (Python's `2**64 - 1`, a `UInt64` bit mask). The decoders produce it only for such
    /// values, and it equals ``integer(_:)`` of the same number.
    case unsignedInteger(UInt64)
    /// A floating-point number (`<real>`), NaN and infinities included; 32-bit reals read as `Double`.
    case real(Double)
    /// `<true/>` or `<false/>`.
    case bool(Bool)
    /// A moment (`<date>`): to the sub-microsecond in binary files, whole seconds in XML ones.
    case date(Date)
    /// Bytes (`<data>`).
    case data(Data)
    /// An ordered list of values (`<array>`).
    case array([PlistValue])
    /// Values by string key (`<dict>`), keys compared by their exact Unicode scalars; a suite is
    /// one of these at its root.
    case dictionary(PlistDictionary)
}

extension PlistValue: Hashable {
    public static func == (lhs: PlistValue, rhs: PlistValue) -> Bool {
        switch (lhs, rhs) {
        case let (.string(a), .string(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.unsignedInteger(a), .unsignedInteger(b)): a == b
        case let (.integer(a), .unsignedInteger(b)), let (.unsignedInteger(b), .integer(a)): a >= 0 && UInt64(a) == b
        case let (.real(a), .real(b)): a.bitPattern == b.bitPattern
        case let (.bool(a), .bool(b)): a == b
        case let (.date(a), .date(b)): a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case let (.data(a), .data(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.dictionary(a), .dictionary(b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let v): hasher.combine(0); hasher.combine(v)
        case .integer(let v): hasher.combine(1); hasher.combine(v)
        // The same bits as `.integer` of the same number, so equal values hash alike.
        case .unsignedInteger(let v): hasher.combine(1); hasher.combine(Int64(bitPattern: v))
        case .real(let v): hasher.combine(2); hasher.combine(v.bitPattern)
        case .bool(let v): hasher.combine(3); hasher.combine(v)
        case .date(let v): hasher.combine(4); hasher.combine(v.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let v): hasher.combine(5); hasher.combine(v)
        case .array(let v): hasher.combine(6); hasher.combine(v)
        case .dictionary(let v): hasher.combine(7); hasher.combine(v)
        }
    }
}

extension PlistValue {
    /// The property-list type name, as `plutil` and `defaults read-type` print it.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer, .unsignedInteger: "integer"
        case .real: "float"
        case .bool: "boolean"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// The value as Foundation types, the way `UserDefaults.object(forKey:)` returns them:
    /// `String`, `Int`, `Double`, `Bool`, `Date`, `Data`, `[Any]`, `[String: Any]`. In a
    /// `[String: Any]`, keys that differ only in Unicode normalization become one.
    public var foundationValue: Any {
        switch self {
        case .string(let v): v
        case .integer(let v): Int(v)
        case .unsignedInteger(let v): v
        case .real(let v): v
        case .bool(let v): v
        case .date(let v): v
        case .data(let v): v
        case .array(let v): v.map(\.foundationValue)
        case .dictionary(let v): v.swiftDictionary.mapValues(\.foundationValue)
        }
    }
}

extension PlistValue {
    /// The deepest nesting a stored value may have: the decoders stop at 512 levels, the suite's
    /// dictionary being the first. A deeper value is refused when it is set.
    public static let maximumNesting = BinaryPropertyList.maximumDepth - 1

    /// Why no reader of this library would take the value, if none would: it nests more than
    /// `limit` levels (a scalar is one level, an array of scalars two), or holds a date that is no
    /// finite number (the binary decoder refuses it, and with it the whole suite). Iterative, and
    /// stops at the limit, so any value can be checked.
    func unreadable(nestingLimit limit: Int) -> String? {
        let nonFinite = "holds a date that is not a finite number (NaN or infinite), which no property-list reader of this library accepts. Store a real date"
        switch self {
        case .array, .dictionary: break
        case .date(let date): return date.timeIntervalSinceReferenceDate.isFinite ? nil : nonFinite
        default: return nil  // a scalar: no allocation on the path of every set
        }
        var stack: [(PlistValue, Int)] = [(self, 1)]
        while let (value, depth) = stack.popLast() {
            if depth > limit { return "is nested more than \(limit) levels deep, which no property-list reader of this library accepts. Flatten the value" }
            switch value {
            case .array(let items): for item in items { stack.append((item, depth + 1)) }
            case .dictionary(let items): for item in items.values { stack.append((item, depth + 1)) }
            case .date(let date) where !date.timeIntervalSinceReferenceDate.isFinite: return nonFinite
            default: continue
            }
        }
        return nil
    }
}

extension PlistValue: CustomStringConvertible {
    /// A compact one-line rendering, safe to print on a terminal: strings quoted, with `\`, `"` and
    /// control characters escaped (`\n`, `\r`, `\t`, `\0`, `\u{1B}`); dates in RFC 3339 UTC with
    /// their fraction of a second (`2026-11-21T10:00:00.123Z`); data in hex (shortened).
    public var description: String {
        switch self {
        case .string(let v): return Self.quoted(v)
        case .integer(let v): return String(v)
        case .unsignedInteger(let v): return String(v)
        case .real(let v): return String(v)
        case .bool(let v): return v ? "true" : "false"
        case .date(let v): return Self.rfc3339(v)
        case .data(let v):
            let hex = v.prefix(32).map { $0.padded(2, radix: 16) }.joined()
            return "<" + hex + (v.count > 32 ? "… \(v.count) bytes" : "") + ">"
        case .array(let v): return "[" + v.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let v):
            return "{" + v.sortedByKey.map { "\(Self.quoted($0.key)): \($0.value)" }.joined(separator: ", ") + "}"
        }
    }

    /// `text` in double quotes, with `\`, `"` and control characters (C0, DEL, C1) escaped.
    package static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\0": out += "\\0"
            case "\u{1}"..."\u{1F}", "\u{7F}"..."\u{9F}": out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// RFC 3339 in UTC, with the fraction of a second to the microsecond when there is one:
    /// `2026-11-21T10:00:00Z`, `2026-11-21T10:00:00.123Z`.
    static func rfc3339(_ date: Date) -> String {
        let time = date.timeIntervalSince1970
        guard time.isFinite, abs(time) < 1e14 else { return String(time) }
        var seconds = time.rounded(.down)
        var micros = Int(((time - seconds) * 1_000_000).rounded())
        if micros == 1_000_000 { seconds += 1; micros = 0 }
        var whole = time_t(seconds)
        var parts = tm()
        gmtime_r(&whole, &parts)
        var fraction = micros == 0 ? "" : "." + micros.padded(6)
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return parts.dateAndTime + fraction + "Z"
    }
}

extension PlistValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: PlistValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, PlistValue)...) {
        self = .dictionary(PlistDictionary(elements))
    }
}
