import FoundationEssentials

/// `-key value` pairs among the process's arguments, as `UserDefaults` reads its argument domain:
/// `-volume 7`, `-theme dark`, `-flags '(a, b)'`, `-window '{width = 800; title = main;}'` or JSON.
enum LaunchArguments {
    /// The process's, read once.
    static let values = parse(Array(CommandLine.arguments.dropFirst()))

    /// Each `-key value` pair: a word of one dash and at least one more character, and the word
    /// after it, whatever it is. `--` and what follows it are not read. A value that reads as
    /// JSON is taken as JSON (``JSONText``: `7` an integer, `7.0` a real, `true` a boolean, `[…]`, `{…}`), one in OpenStep's
    /// property-list text as that (`(a, b)`, `{a = 1;}`, `"quoted"`), anything else as a string.
    static func parse(_ arguments: [String]) -> PlistDictionary {
        var values = PlistDictionary()
        var i = 0
        while i < arguments.count {
            let word = arguments[i]
            if word == "--" { break }
            guard word.count > 1, word.hasPrefix("-"), !word.hasPrefix("--"), i + 1 < arguments.count else {
                i += 1
                continue
            }
            // `-v -- -theme evil`: the `--` ends the options, it is no value of `-v`.
            if arguments[i + 1] == "--" { break }
            values[String(word.dropFirst())] = value(arguments[i + 1])
            i += 2
        }
        return values
    }

    static func value(_ text: String) -> PlistValue {
        if let json = try? JSONText.parse(text) { return json }
        if let first = text.first, "({\"".contains(first) {
            var parser = OpenStep(text)
            if let value = parser.value(), parser.atEnd { return value }
        }
        return .string(text)
    }

    /// OpenStep's property-list text: strings (quoted, or words of letters, digits and `_$+/:.-`),
    /// arrays `( a, b )` and dictionaries `{ key = value; }`.
    private struct OpenStep {
        private let scalars: [Unicode.Scalar]
        private var at = 0

        init(_ text: String) { scalars = Array(text.unicodeScalars) }

        var atEnd: Bool {
            mutating get {
                skipSpace()
                return at == scalars.count
            }
        }

        mutating func value(depth: Int = 0) -> PlistValue? {
            guard depth < PlistValue.maximumNesting else { return nil }
            skipSpace()
            guard at < scalars.count else { return nil }
            switch scalars[at] {
            case "(":
                at += 1
                var items: [PlistValue] = []
                while true {
                    if take(")") { return .array(items) }
                    guard let item = value(depth: depth + 1) else { return nil }
                    items.append(item)
                    if take(")") { return .array(items) }
                    guard take(",") else { return nil }
                }
            case "{":
                at += 1
                var entries = PlistDictionary()
                while !take("}") {
                    guard case .string(let key)? = value(depth: depth + 1), take("="), let item = value(depth: depth + 1), take(";") else { return nil }
                    entries[key] = item
                }
                return .dictionary(entries)
            case "\"":
                at += 1
                var text = String.UnicodeScalarView()
                while at < scalars.count, scalars[at] != "\"" {
                    if scalars[at] == "\\", at + 1 < scalars.count {
                        at += 1
                        text.append(scalars[at] == "n" ? "\n" : scalars[at] == "t" ? "\t" : scalars[at])
                    } else {
                        text.append(scalars[at])
                    }
                    at += 1
                }
                guard at < scalars.count else { return nil }
                at += 1
                return .string(String(text))
            default:
                let start = at
                while at < scalars.count, scalars[at].properties.isAlphabetic || ("0"..."9").contains(scalars[at]) || "_$+/:.-".unicodeScalars.contains(scalars[at]) { at += 1 }
                return at > start ? .string(String(String.UnicodeScalarView(scalars[start..<at]))) : nil
            }
        }

        private mutating func take(_ scalar: Unicode.Scalar) -> Bool {
            skipSpace()
            guard at < scalars.count, scalars[at] == scalar else { return false }
            at += 1
            return true
        }

        private mutating func skipSpace() {
            while at < scalars.count, scalars[at].properties.isWhitespace { at += 1 }
        }
    }
}
