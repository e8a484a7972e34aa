import ArgumentParser
import Foundation
import SharedPrefs

/// What the shell completes (bash, zsh, fish): suite names and group identifiers where a suite
/// goes, files and directories for paths, the keys of the suite named earlier on the line, and
/// the type flags after a key.
enum Completions {
    static let suite = CompletionKind.custom { words, index, prefix in offered(suites(words, index, prefix)) }
    static let key = CompletionKind.custom { words, index, prefix in offered(keys(words, index, prefix)) }
    static let group = CompletionKind.custom { _, _, prefix in offered(SuiteDirectory.groups().map(\.identifier).filter { $0.hasPrefix(prefix) }) }
    static let typeFlags = CompletionKind.list(ValueParser.typeFlags.sorted() + ["-array", "-array-add", "-dict", "-dict-add"])

    /// Candidates as the shell asking for them (`SAP_SHELL`) takes them literally. Keys and file
    /// names are anyone's who may write a suite or name a file: bash's script passes candidates
    /// through `compgen -W`, which expands them (`$(…)` and backquotes would run), so each is
    /// given there single-quoted, its metacharacters escaped for the command line it lands on;
    /// zsh's `_describe` reads a colon as the start of a description, fish a tab. One with a
    /// control character (a newline would make two) is left out.
    static func offered(_ candidates: [String], shell: String? = ProcessInfo.processInfo.environment["SAP_SHELL"]) -> [String] {
        let whole = candidates.filter { !$0.unicodeScalars.contains { $0.properties.generalCategory == .control } }
        switch shell {
        case "bash":
            return whole.map { candidate in
                let escaped = candidate.map { $0.isLetter || $0.isNumber || "._-/:=@%+,".contains($0) ? String($0) : "\\" + String($0) }.joined()
                return "'" + escaped.replacingOccurrences(of: "'", with: "'\\''") + "'"
            }
        case "zsh": return whole.map { $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ":", with: "\\:") }
        default: return whole
        }
    }

    /// Options that take a value: their value is not a positional word.
    private static let optionsWithValues: Set<String> = ["--group", "--dir", "--etcd", "--format", "--prefix", "--key", "--count", "-c", "--timeout", "-t"]

    /// The positional words before the one being completed (the verb first, when given), and
    /// the `--group` or `--dir` given, as the command would read them.
    private static func parse(_ words: [String], _ index: Int) -> (positional: [String], location: LocationOptions?) {
        var positional: [String] = []
        var location: [String] = []
        var i = 1
        while i < min(index, words.count) {
            let word = words[i]
            if optionsWithValues.contains(word), i + 1 < words.count {
                if word == "--group" || word == "--dir" { location += [word, words[i + 1]] }
                i += 2
                continue
            }
            if !word.hasPrefix("-") { positional.append(word) }
            i += 1
        }
        if let verb = positional.first, PrefsWatch.verbs.contains(verb) { positional.removeFirst() }
        return (positional, try? LocationOptions.parse(location))
    }

    /// Suite names of the `--group` or `--dir` directory, or of the root's `Preferences` and
    /// the groups' own suites; paths when the word has a `/`.
    static func suites(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        if prefix.contains("/") || prefix.hasPrefix(".") || prefix.hasPrefix("~") { return paths(prefix) }
        guard let location = parse(words, index).location else { return [] }
        let directory = try? location.directory()
        let names = (try? (directory ?? .ungrouped).suiteNames()) ?? []
        let groups = directory == nil ? SuiteDirectory.groups().map(\.identifier) : []
        return (names + groups).filter { $0.hasPrefix(prefix) }
    }

    /// The keys of the suite named before the word being completed.
    static func keys(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let (positional, location) = parse(words, index)
        guard let spec = positional.first, let url = try? location?.fileURL(of: spec),
            let values = (try? PreferenceSuite.readStoredValues(fileURL: url)) ?? nil
        else { return [] }
        return values.sortedByKey.map(\.key).filter { $0.hasPrefix(prefix) }
    }

    /// Directories and property-list files that start with `prefix`.
    private static func paths(_ prefix: String) -> [String] {
        let expanded = prefix.hasPrefix("~") ? NSString(string: prefix).expandingTildeInPath : prefix
        let (directory, start) = expanded.hasSuffix("/") ? (expanded, "") : ((expanded as NSString).deletingLastPathComponent, (expanded as NSString).lastPathComponent)
        let base = directory.isEmpty ? "." : directory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return [] }
        let shown = prefix.hasSuffix("/") ? prefix : String(prefix.dropLast(start.count))
        return names.filter { $0.hasPrefix(start) && (start.hasPrefix(".") || !$0.hasPrefix(".")) }.sorted().compactMap { name in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: base + "/" + name, isDirectory: &isDirectory) else { return nil }
            return isDirectory.boolValue ? shown + name + "/" : name.hasSuffix(".plist") ? shown + name : nil
        }
    }
}
