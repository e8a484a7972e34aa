import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefs

/// Prints to standard error and returns the failure exit code, for outcomes that are not usage errors.
func failure(_ message: String) -> ExitCode {
    printError("prefs-watch: \(message)\n")
    return ExitCode.failure
}

func noKey(_ key: String, _ suite: String, _ place: String) -> ExitCode {
    failure("The key \"\(key)\" does not exist in suite \(suite) (\(place)).")
}

struct Read: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Print a suite (as an XML property list) or one key's value.",
        discussion: """
            The suite's own file; with --explain, a key's value as programs read it, with the \
            layer and the file it comes from (a locked key, the suite, an administrator's or a \
            package's defaults), and the number of the suite's last write (tail --since takes it).

            Examples:
              prefs-watch read settings
              prefs-watch read settings theme
              prefs-watch read --explain settings theme
              prefs-watch read --group group.com.example.app settings --json
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite: a name, group.… or a .plist path.", completion: Completions.suite) var suite: String
    @Argument(help: "The key; without it, the whole suite.", completion: Completions.key) var key: String?
    @Flag(help: "Print JSON instead.") var json = false
    @Flag(help: "Print the key's value as programs read it, then its layer and file, and the suite's number.") var explain = false

    func validate() throws {
        if explain && key == nil { throw ValidationError("--explain needs a key: read --explain <suite> <key>.") }
    }

    func run() throws {
        if explain, let key { return try explainKey(key) }
        let (url, values, _) = try location.readValues(suite)
        guard let key else {
            let all = PlistValue.dictionary(values)
            return json ? print(all.json) : printDocument(all)
        }
        guard let value = values[key] else { throw noKey(key, suite, url) }
        show(value)
    }

    private func show(_ value: PlistValue) {
        if json { return print(value.json) }
        switch value {
        case .string(let v): print(v.displayed)
        case .bool(let v): print(v ? 1 : 0)
        case .data(let v): print("<" + v.map { $0.padded(2, radix: 16) }.joined() + ">")
        case .array, .dictionary: printDocument(value)
        default: print(value.description)
        }
    }

    /// The key's value through every layer, and where it comes from: `layer: locked (…)` on a
    /// line of its own after the value, then the system layers' rule and the suite's number
    /// (`sequence: N`). Exits 1 when no layer holds it.
    private func explainKey(_ key: String) throws {
        let (place, stored, sequence) = try location.etcd != nil || FileManager.default.fileExists(atPath: location.fileURL(of: suite).path)
            ? location.readValues(suite) : (location.fileURL(of: suite).path, [:], 0)
        let identity = try location.layerIdentity(suite)
        let rule = identity.rule
        let (value, source) = location.systemLayers(identity).explain(PlistKey(key), stored: { stored.storage[$0] }, file: place)
        guard let source else {
            throw failure("No layer of the suite \(suite) holds the key \(key.displayed): not its own (\(place)), nor a system layer (system layers: \(rule)); a program reads its registered or declared default.")
        }
        if let value { show(value) } else { print("(no system value: programs read their registered or declared default)") }
        print("layer: \(source)")
        print("system layers: \(rule)")
        print("sequence: \(sequence)")
    }

    /// An XML property list, or, for values XML cannot carry (control characters), the escaped
    /// one-line rendering: never raw control characters or binary bytes on a terminal.
    private func printDocument(_ value: PlistValue) {
        let xml = value.propertyListData(format: .xml)
        if xml.starts(with: Array("bplist".utf8)) { return print(value.description) }
        print(String(decoding: xml, as: UTF8.self), terminator: "")
    }
}

struct Locks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locks",
        abstract: "List the keys a system layer locks in a suite, each with its locks file.",
        discussion: """
            A locked key's value is the system layers', and writes to it are refused. Locks live \
            in /etc/sharedprefs/locks/<suite> (and <dir>/sharedprefs/locks/<suite> for each of \
            $XDG_DATA_DIRS; in an app group, <dir>/<group>/locks/<suite>): one key per line, \
            prefix* for every key under a prefix.

            Example:
              prefs-watch locks settings
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String

    func run() throws {
        for (key, path) in location.systemLayers(try location.layerIdentity(suite)).locks { print("\(key.displayed)\t\(path.displayed)") }
    }
}

struct ReadType: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read-type", abstract: "Print the property-list type of a key's value.",
        discussion: "Example:\n  prefs-watch read-type settings volume      # Type is integer")

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The key.", completion: Completions.key) var key: String

    func run() throws {
        let (url, values, _) = try location.readValues(suite)
        guard let value = values[key] else { throw noKey(key, suite, url) }
        print("Type is \(value.typeName)")
    }
}

struct Write: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Set a key, through the locked, merged, atomic write path.",
        discussion: """
            The value is a string unless a type flag comes first:
              -string S   -int N   -float X   -bool true|false|yes|no
              -date ISO-8601|seconds   -data HEX
              -array ITEM…   -array-add ITEM…   (an item typed: -int 3)
              -dict KEY ITEM…   -dict-add KEY ITEM…

            A value starting with { or [ is read as JSON, one starting with < as an \
            XML property list.

            Examples:
              prefs-watch write settings theme dark
              prefs-watch write settings volume -int 7
              prefs-watch write settings recent -array-add -int 42
              prefs-watch write settings window '{"width": 800, "title": "main"}'
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The key.", completion: Completions.key) var key: String
    @Flag(help: "Create the suite at a path that does not end in .plist, or the directory it goes in.") var create = false
    @Argument(parsing: .captureForPassthrough, help: "The value, with an optional type flag.", completion: Completions.typeFlags) var value: [String] = []

    func run() throws {
        // The value is captured for passthrough, and --create with it when it follows the key.
        var words = value.filter { $0 != "--create" }[...]
        guard let first = words.first else { throw ValidationError("Missing value: write <suite> <key> <value>, or a type flag and value.") }
        let prefs = try location.open(suite, create: create || value.contains("--create"))
        switch first {
        case "-array", "-dict":
            words.removeFirst()
            let parsed = first == "-array" ? try ValueParser.items(words) : try ValueParser.dictionary(words)
            try prefs.update { $0[key] = parsed }
        case "-array-add":
            words.removeFirst()
            let items = try ValueParser.items(words)
            try prefs.update { tx in
                guard case .array(let existing) = tx[key] ?? .array([]) else {
                    throw ValidationError("The key \"\(key)\" holds a \(tx[key]!.typeName), not an array; -array-add cannot append to it.")
                }
                tx[key] = .array(existing + (items.arrayItems ?? []))
            }
        case "-dict-add":
            words.removeFirst()
            let entries = try ValueParser.dictionary(words)
            try prefs.update { tx in
                guard case .dictionary(var existing) = tx[key] ?? .dictionary([:]) else {
                    throw ValidationError("The key \"\(key)\" holds a \(tx[key]!.typeName), not a dictionary; -dict-add cannot add to it.")
                }
                if case .dictionary(let new) = entries { existing.merge(new) { _, new in new } }
                tx[key] = .dictionary(existing)
            }
        default:
            let (parsed, rest) = try ValueParser.one(words)
            guard rest.isEmpty else { throw ValidationError("Unexpected \(rest.map { "\"\($0)\"" }.joined(separator: " ")) after the value; quote a value with spaces, or use -array.") }
            try prefs.update { $0[key] = parsed }
        }
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove a key, or every key of a suite.",
        discussion: "Examples:\n  prefs-watch delete settings theme\n  prefs-watch delete settings")

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The key; without it, every key.", completion: Completions.key) var key: String?

    func run() throws {
        let prefs = try location.openExisting(suite)
        let removed = try prefs.update { tx -> Bool in
            guard let key else {
                for existing in tx.values.keys { tx[existing] = nil }
                return true
            }
            guard tx[key] != nil else { return false }
            tx[key] = nil
            return true
        }
        if !removed, let key { throw noKey(key, suite, location.place(suite, prefs)) }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List suites: names in a group or directory, or the paths of all suites.",
        discussion: "Examples:\n  prefs-watch list\n  prefs-watch domains --group group.com.example.app",
        aliases: ["domains"])

    @OptionGroup var location: LocationOptions

    func run() throws {
        for (place, _) in try location.everySuite(doing: "list") { print(place.displayed) }
    }
}

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Print every suite, key and value that contains a word (ignoring case), as defaults find does.",
        discussion: """
            One line per key whose name or value contains the word, as SUITE KEY = VALUE (the value \
            as JSON), and SUITE alone for a suite whose name does; suites as list names them. \
            Exit status 1 when nothing contains it.

            Examples:
              prefs-watch find dark
              prefs-watch find proxy --group group.com.example.app
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The word to look for.") var word: String

    func run() throws {
        var found = false
        for (place, url) in try location.everySuite(doing: "find") {
            func matches(_ text: String) -> Bool { text.lowercased().contains(word.lowercased()) }
            if matches(url.deletingPathExtension().lastPathComponent) {
                print(place.displayed)
                found = true
            }
            let values: PlistDictionary
            do {
                guard let read = try PreferenceSuite.readStored(fileURL: url) else { continue }
                values = read.values
            } catch {
                printError("prefs-watch: \(error)\n")
                continue
            }
            for (key, value) in values.sortedByKey where matches(key) || matches(value.json) {
                print("\(place.displayed) \(key.displayed) = \(value.json)")
                found = true
            }
        }
        if !found { throw ExitCode.failure }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a suite to a property-list file, or to standard output with -.",
        discussion: "Examples:\n  prefs-watch export settings backup.plist\n  prefs-watch export settings - | plutil -p -")

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The destination file, or - for standard output.", completion: .file(extensions: ["plist"])) var destination: String
    @Option(help: "xml or binary.") var format: FormatChoice = .xml

    func run() throws {
        let data = PlistValue.dictionary(try location.readValues(suite).values).propertyListData(format: format.format)
        if destination == "-" {
            StandardOutput.write(Array(data))
        } else {
            do { try data.write(to: URL(filePath: destination), options: .atomic) } catch {
                throw failure("Could not write \(destination): \(describe(error)). Check that its directory exists and that you may write there.")
            }
        }
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Replace a suite's values with those of a property-list file (- reads standard input).",
        discussion: """
            A key a system layer locks is refused, every such key named, and nothing is imported; \
            --skip-locked imports the rest and lists the keys it left out. A value stored before \
            its key was locked is removed as any other.

            Examples:
              prefs-watch import settings backup.plist
              prefs-watch export old - | prefs-watch import new -
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The source file, or - for standard input.", completion: .file(extensions: ["plist"])) var source: String
    @Flag(help: "Keep keys the file does not have.") var merge = false
    @Flag(help: "Leave out the keys a system layer locks, and list them, instead of refusing the whole import.") var skipLocked = false
    @Flag(help: "Create the suite at a path that does not end in .plist, or the directory it goes in.") var create = false

    func run() throws {
        let data: Data
        if source == "-" {
            data = try readSuiteBytes(STDIN_FILENO, from: "Standard input", unchanged: " Nothing was changed.")
        } else {
            let fd = open(source, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw failure("Could not open \(source): \(String(cString: strerror(errno))). Nothing was changed.") }
            defer { close(fd) }
            data = try readSuiteBytes(fd, from: source, unchanged: " Nothing was changed.")
        }
        try CommandLineLog.progress("importing \(source == "-" ? "standard input" : source) (\(data.count) bytes) into \(suite)") {
            let root: PlistValue
            do throws(PreferenceError) { root = try PlistValue(propertyListData: data) } catch {
                throw failure("\(source == "-" ? "Standard input" : source): \(error.message)")
            }
            guard case .dictionary(let values) = root else {
                throw failure("\(source == "-" ? "Standard input" : source) holds a \(root.typeName); a suite needs a dictionary at the root.")
            }
            let prefs = try location.open(suite, create: create)
            let skipped = skipLocked ? Set(values.keys.filter { !prefs.isWritable($0) }) : []
            try prefs.update { tx in
                if !merge { for key in tx.values.keys where values[key] == nil { tx[key] = nil } }
                for (key, value) in values where !skipped.contains(key) { tx[key] = value }
            }
            if !skipped.isEmpty { print("Skipped \(skipped.count) locked key(s): \(skipped.sorted().map(\.displayed).joined(separator: ", ")).") }
        }
    }
}

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy a Foundation UserDefaults suite's values into a suite, types kept; the UserDefaults file is only read.",
        discussion: """
            Foundation on Linux keeps UserDefaults(suiteName: NAME) in $XDG_CONFIG_HOME/NAME.plist \
            (else ~/.config/NAME.plist) and rewrites it in place without a lock: it shares nothing \
            with a SharedPrefs suite of the same name. Stop the programs that write it first. Keys \
            the suite holds already keep their values unless --overwrite. Prints what was copied \
            and what was kept.

            Examples:
              prefs-watch migrate group.com.example.app com.example.app
              prefs-watch migrate settings settings --overwrite
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite to copy into.", completion: Completions.suite) var suite: String
    @Argument(help: "The name the program passed to UserDefaults(suiteName:).") var userDefaultsSuite: String
    @Flag(help: "Let the UserDefaults values replace the suite's own.") var overwrite = false
    @Flag(help: "Create the suite at a path that does not end in .plist, or the directory it goes in.") var create = false

    func run() throws {
        let prefs = try location.open(suite, create: create)
        let moved = try CommandLineLog.progress("copying UserDefaults suite \(userDefaultsSuite) into \(location.place(suite, prefs))") {
            try prefs.importUserDefaults(suiteName: userDefaultsSuite, overwrite: overwrite)
        }
        let place = location.place(suite, prefs)
        print("Copied \(moved.copied.count) key(s) from \(moved.source.path.displayed) into \(place.displayed)\(moved.copied.isEmpty ? "" : ": " + moved.copied.map(\.displayed).joined(separator: ", ")).")
        if !moved.kept.isEmpty {
            print("Kept \(moved.kept.count) key(s) the suite had (--overwrite replaces them): \(moved.kept.map(\.displayed).joined(separator: ", ")).")
        }
    }
}

struct Rename: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename",
        abstract: "Rename a key, atomically.", discussion: "Example:\n  prefs-watch rename settings colour color")

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The key's current name.", completion: Completions.key) var old: String
    @Argument(help: "The key's new name.") var new: String

    func run() throws {
        let prefs = try location.openExisting(suite)
        let renamed = try prefs.update { tx -> Bool in
            guard let value = tx[old] else { return false }
            tx[new] = value
            tx[old] = nil
            return true
        }
        if !renamed { throw noKey(old, suite, location.place(suite, prefs)) }
    }
}

enum FormatChoice: String, ExpressibleByArgument, CaseIterable {
    case xml, binary
    var format: PropertyListFormat { self == .xml ? .xml : .binary }
}
