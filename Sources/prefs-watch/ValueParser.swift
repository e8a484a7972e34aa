import ArgumentParser
import FoundationEssentials
import SharedPrefs

/// Parses the value words of `write`, in the manner of macOS `defaults write`.
enum ValueParser {
    static let typeFlags: Set<String> = ["-string", "-int", "-integer", "-float", "-bool", "-boolean", "-date", "-data"]

    /// One value: a type flag and its word, or a literal. Returns the words left over.
    static func one(_ words: ArraySlice<String>) throws -> (PlistValue, ArraySlice<String>) {
        var words = words
        guard let first = words.popFirst() else { throw ValidationError("Missing value.") }
        // `--` ends the flags: the next word is a value, even one that starts with -.
        if first == "--" {
            guard let text = words.popFirst() else { throw ValidationError("-- needs a value after it.") }
            return (try literal(text), words)
        }
        guard typeFlags.contains(first) else {
            // `-intt`: a mistyped flag, not a string to store.
            if first.count > 1, first.hasPrefix("-"), first.dropFirst().allSatisfy({ $0.isLetter || $0 == "-" }) {
                throw ValidationError("Unknown type flag \(first). The flags are \(typeFlags.sorted().joined(separator: ", ")), -array, -array-add, -dict and -dict-add; to store the text \(first), write -string \(first).")
            }
            return (try literal(first), words)
        }
        guard let text = words.popFirst() else { throw ValidationError("\(first) needs a value after it.") }
        return (try typed(first, text), words)
    }

    /// Items of `-array`: each a typed pair or a string.
    static func items(_ words: ArraySlice<String>) throws -> PlistValue {
        var words = words
        var items: [PlistValue] = []
        while !words.isEmpty {
            let (value, rest) = try one(words)
            items.append(value)
            words = rest
        }
        return .array(items)
    }

    /// Pairs of `-dict`: a key, then a typed pair or a string.
    static func dictionary(_ words: ArraySlice<String>) throws -> PlistValue {
        var words = words
        var entries = PlistDictionary()
        while let key = words.popFirst() {
            guard !words.isEmpty else { throw ValidationError("-dict: the key \"\(key)\" has no value.") }
            let (value, rest) = try one(words)
            entries[key] = value
            words = rest
        }
        return .dictionary(entries)
    }

    static func typed(_ flag: String, _ text: String) throws -> PlistValue {
        switch flag {
        case "-string": return .string(text)
        case "-int", "-integer":
            if let value = Int64(text) { return .integer(value) }
            guard let value = UInt64(text) else {
                throw ValidationError("\(flag) \"\(text)\" is not an integer from \(Int64.min) to \(UInt64.max).")
            }
            return .unsignedInteger(value)
        case "-float":
            guard let value = Double(text) else { throw ValidationError("-float \"\(text)\" is not a number.") }
            return .real(value)
        case "-bool", "-boolean":
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw ValidationError("\(flag) \"\(text)\" is not true, false, yes, no, 1 or 0.")
            }
        case "-date":
            if let seconds = Double(text), seconds.isFinite { return .date(Date(timeIntervalSince1970: seconds)) }
            if let date = try? Date(text, strategy: .iso8601) { return .date(date) }
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return .date(date) }
            throw ValidationError("-date \"\(text)\" is neither ISO 8601 (2026-11-21T10:00:00Z) nor seconds since 1970.")
        case "-data":
            let hex = text.filter { !" <>\n\t".contains($0) }
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
                guard hex.distance(from: index, to: next) == 2, let byte = UInt8(hex[index..<next], radix: 16) else {
                    throw ValidationError("-data \"\(text)\" is not hexadecimal bytes (like 0a1b2c).")
                }
                bytes.append(byte)
                index = next
            }
            return .data(Data(bytes))
        default:
            throw ValidationError("Unknown type flag \(flag).")
        }
    }

    /// A bare value: JSON when it starts with { or [, an XML property list when it starts with <,
    /// otherwise a string.
    static func literal(_ text: String) throws -> PlistValue {
        if text.hasPrefix("{") || text.hasPrefix("[") {
            do { return try JSONText.parse(text) } catch {
                throw ValidationError("The value starts like JSON but does not parse: \(error). Use -string to store it as text.")
            }
        }
        if text.hasPrefix("<") {
            let document = text.hasPrefix("<?xml") || text.hasPrefix("<plist") ? text : "<plist version=\"1.0\">\(text)</plist>"
            do { return try PlistValue(propertyListData: Data(document.utf8)) } catch {
                throw ValidationError("The value starts like a property list but does not parse: \(error.message) Use -string to store it as text.")
            }
        }
        return .string(text)
    }
}

extension PlistValue {
    var arrayItems: [PlistValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
