import ArgumentParser
import FoundationEssentials
import SharedPrefs

/// What the shell completes (bash, zsh, fish): suite names and group identifiers where a suite
/// goes, files and directories for paths, the keys of the suite named earlier on the line, and
/// the type flags after a key.
enum Completions {
    static let suite = CompletionKind.custom { words, index, prefix in offered(suites(words, index, prefix)) }
    static let key = CompletionKind.custom { words, index, prefix in offered(keys(words, index, prefix)) }
    static let group = CompletionKind.custom { _, _, prefix in offered(SuiteDirectory.groups().map(\.identifier).filter { $0.hasPrefix(prefix) }) }
    static let typeFlags = CompletionKind.list(typeFlagList)
    static let typeFlagList = ValueParser.typeFlags.sorted() + ["-array", "-array-add", "-dict", "-dict-add"]

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
                return "'" + escaped.replacing("'", with: "'\\''") + "'"
            }
        case "zsh": return whole.map { $0.replacing("\\", with: "\\\\").replacing(":", with: "\\:") }
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
            let values = ((try? PreferenceSuite.readStored(fileURL: url)) ?? nil)?.values
        else { return [] }
        return values.sortedByKey.map(\.key).filter { $0.hasPrefix(prefix) }
    }

    /// Directories and property-list files that start with `prefix`.
    private static func paths(_ prefix: String) -> [String] {
        let expanded = Path.expandingTilde(prefix)
        let (directory, start) = expanded.hasSuffix("/") ? (expanded, "") : (Path.parent(expanded), Path.lastComponent(expanded))
        let base = directory.isEmpty ? "." : directory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return [] }
        let shown = prefix.hasSuffix("/") ? prefix : String(prefix.dropLast(start.count))
        return names.filter { $0.hasPrefix(start) && (start.hasPrefix(".") || !$0.hasPrefix(".")) }.sorted().compactMap { name in
            guard let isDirectory = isDirectory(base + "/" + name) else { return nil }
            return isDirectory ? shown + name + "/" : name.hasSuffix(".plist") ? shown + name : nil
        }
    }
}

/// The scripts `--generate-completion-script` prints: ArgumentParser's, with what it does not
/// say itself: a first word that is no verb is the default verb's (`tail`), so `prefs-watch
/// se<TAB>` offers suite names beside the verbs; a verb's aliases (`domains`) complete as the
/// verb; and in bash, `-<TAB>` after `write`'s key offers the type flags beside the options
/// (zsh and fish do already).
extension Completions {
    /// The shell that `--generate-completion-script SHELL` (or `=SHELL`), alone, asks for.
    static func shellAsked(_ arguments: [String]) -> CompletionShell? {
        let option = "--generate-completion-script"
        let value = arguments.count == 2 && arguments[0] == option ? arguments[1]
            : arguments.count == 1 && arguments[0].hasPrefix(option + "=") ? String(arguments[0].dropFirst(option.count + 1)) : nil
        return value.flatMap(CompletionShell.init(rawValue:))
    }

    static func script(for shell: CompletionShell) -> String {
        var script = PrefsWatch.completionScript(for: shell)
        let verbs = PrefsWatch.configuration.subcommands.map { $0.configuration.commandName! } + ["help"]
        let aliases = PrefsWatch.configuration.subcommands.flatMap { command in
            command.configuration.aliases.map { (alias: $0, verb: command.configuration.commandName!, abstract: command.configuration.abstract) }
        }
        // Replaces the first `anchor` after `after` (its start when empty); leaves the script as
        // it is when ArgumentParser wrote something else (the tests run the result).
        func patch(_ anchor: String, after: String = "", with replacement: String) {
            guard let start = after.isEmpty ? script.startIndex : script.firstRange(of: after)?.upperBound,
                let range = script[start...].firstRange(of: anchor)
            else { return }
            script.replaceSubrange(range, with: replacement)
        }
        let pattern = verbs.joined(separator: "|")
        let withAliases = ([pattern] + aliases.map(\.alias)).joined(separator: "|")
        switch shell {
        case .bash:
            let list = verbs.joined(separator: " ")
            patch("    \(pattern))\n", with: "    \(withAliases))\n")
            patch(
                "        COMPREPLY+=($(compgen -W '\(list)' -- \"${cur}\"))\n        ;;",
                with: "        # Where the first word goes: the verbs. And the default verb's completions (suite names).\n        [[ \"${#unparsed_words[@]}\" -eq 0 ]] && COMPREPLY+=($(compgen -W '\(([list] + aliases.map(\.alias)).joined(separator: " "))' -- \"${cur}\"))\n        _prefs-watch_tail\n        ;;")
            patch(
                "    # Offer positional completions", after: "_prefs-watch_write() {",
                with: "    # A type flag after the key (-<TAB>).\n    if [[ \"${cur}\" == -* && \"${positional_number}\" -ge 2 ]]; then\n        __prefs-watch_add_completions -W '\(typeFlagList.joined(separator: "'$'\\n''"))'\n    fi\n\n    # Offer positional completions")
        case .zsh:
            patch(
                "        _describe -V subcommand subcommands && ret=0\n",
                with: "        _describe -V subcommand subcommands && ret=0\n        # Or the default verb's: suite names.\n        __prefs-watch_custom_complete ---completion tail -- positional@0 \"${current_word_index}\" \"$(__prefs-watch_cursor_index_in_current_word)\" && ret=0\n")
            patch("        )\n        _describe -V subcommand subcommands", with: aliases.map { "            '\($0.alias):\($0.abstract.replacing("'", with: "'\\''"))'\n" }.joined() + "        )\n        _describe -V subcommand subcommands")
            patch(
                "        \(pattern))\n            \"_prefs-watch_${words[1]}\" && ret=0\n            ;;\n",
                with: "        \(withAliases))\n            \"_prefs-watch_${words[1]}\" && ret=0\n            ;;\n        *)\n            _prefs-watch_tail && ret=0\n            ;;\n")
        case .fish:
            if !script.hasSuffix("\n") { script += "\n" }
            for (alias, verb, abstract) in aliases {
                patch("        case '\(verb)'\n", with: "        case '\(verb)' '\(alias)'\n")
                let lines = script.split(separator: "\n", omittingEmptySubsequences: false)
                let copies = lines.filter { $0.contains("\"prefs-watch \(verb)\"") }.map { $0.replacing("\"prefs-watch \(verb)\"", with: "\"prefs-watch \(alias)\"") }
                script += "complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional \"prefs-watch\" -eq 1' -fa '\(alias)' -d '\(abstract.replacing("'", with: "\\'"))'\n"
                script += copies.map { $0 + "\n" }.joined()
            }
            // The default verb's suite names where a verb goes.
            script += "complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional \"prefs-watch\" -eq 1' -fka '(__prefs-watch_custom_completion ---completion tail -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'\n"
        default: break
        }
        if shell == .bash || shell == .zsh {
            // An alias's function is its verb's.
            script += aliases.map { "\n_prefs-watch_\($0.alias)() {\n    _prefs-watch_\($0.verb)\n}\n" }.joined()
        }
        return script
    }
}
