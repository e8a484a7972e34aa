import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefs

@main
struct PrefsWatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefs-watch",
        abstract: "Tail SharedPrefs suites key by key, and read or write them like macOS defaults.",
        discussion: """
            A suite is a suite name (settings), an app group's own suite (group.com.example.app), \
            or a path (it has a / or ends in .plist). With --group ID or --dir PATH it is always a \
            name, looked up in that group's container or directory; a name that would leave it is \
            refused.

            Writes go through the same locked, merged, atomic write path as the library, so a \
            script's write never loses a running app's update. The verbs that change a suite never \
            move, replace or re-mode a file that is not a property list; a path that does not end \
            in .plist and does not exist needs --create.

            Exit status: 0 on success; 1 when what was asked for does not exist or the library or \
            the file system refused it (the message says why); 2 when tail's --timeout passes with \
            no record; 64 for a usage error (an unknown verb or option, a missing argument, a value \
            that is not of its type, an invalid suite name or group identifier), with nothing read \
            or changed.
            """,
        version: PreferenceSuite.libraryVersion,
        subcommands: [
            Tail.self, Read.self, ReadType.self, Write.self, Delete.self, List.self, Find.self, Export.self, Import.self,
            Migrate.self, Rename.self, Edit.self, Locks.self,
        ],
        defaultSubcommand: Tail.self
    )

    /// Refuses a first word that looks like a mistyped verb before it can be taken as the name
    /// of a suite to tail, then runs the command as ArgumentParser's `main()` does, but with an
    /// invalid suite name or group identifier a usage error (status 64), as a malformed value is,
    /// and the library's errors printed once, labelled as the rest.
    static func main() {
        CommandLineLog.bootstrap()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let shell = Completions.shellAsked(arguments) {
            print(Completions.script(for: shell), terminator: "")
            return
        }
        if let error = mistypedVerb(arguments) { exit(withError: error) }
        var verb: ParsableCommand.Type = PrefsWatch.self
        do {
            var command = try parseAsRoot()
            verb = type(of: command)
            try command.run()
        } catch let error as PreferenceError where error.code == .invalidName {
            exit(usageError: LocationOptions.inCommandLineTerms(error.message), of: verb)
        } catch let error as PreferenceError {
            // Said once, with the one label of every line this command prints.
            if !CommandLineLog.wasPrinted("\(error)") { printError("prefs-watch: \(LocationOptions.inCommandLineTerms("\(error)"))\n") }
            exit(withError: ExitCode.failure)
        } catch where verb != PrefsWatch.self && exitCode(for: error) == .validationFailure {
            exit(usageError: message(for: error), of: verb)
        } catch {
            exit(withError: error)
        }
    }

    /// Every problem line starts with the command's name, as the docs say (ArgumentParser's own
    /// would say `Error:`).
    static var _errorPrefix: String { "prefs-watch: " }

    /// A usage error found while a verb ran: said as a parse error is, with that verb's usage
    /// (ArgumentParser would show the top level's), status 64.
    static func exit(usageError message: String, of verb: ParsableCommand.Type) -> Never {
        let name = verb == PrefsWatch.self ? "prefs-watch" : "prefs-watch \(verb.configuration.commandName ?? "")"
        let usage = usageString(for: verb).split(separator: "\n").joined(separator: "\n       ")
        printError("prefs-watch: \(message)\nUsage: \(usage)\n  See '\(name) --help' for more information.\n")
        Glibc.exit(ExitCode.validationFailure.rawValue)
    }

    /// The words that name a verb (`help` too), and words of macOS `defaults` named otherwise here.
    static let verbs = ["help"] + configuration.subcommands.flatMap { [$0.configuration.commandName!] + $0.configuration.aliases }
    static let otherNames = ["remove": "delete", "read-keys": "read"]

    /// A usage error for a first argument (or the word after `help`) that is no verb and no
    /// suite there is, but is one edit from a verb (two for words over five letters), or a
    /// `defaults` verb named otherwise here; `nil` for anything else: a verb, an option, a path,
    /// or a suite name.
    static func mistypedVerb(_ arguments: [String]) -> ValidationError? {
        let afterHelp = arguments.first == "help" && arguments.count > 1
        guard let word = afterHelp ? arguments[1] : arguments.first, !word.hasPrefix("-"), !verbs.contains(word),
            !word.contains("/"), !word.hasSuffix(".plist"), afterHelp || !suiteExists(word)
        else { return nil }
        let edits = word.count > 5 ? 2 : 1
        guard let verb = otherNames[word] ?? verbs.first(where: { word.count >= 3 && editDistance(word, $0) <= edits }) else {
            return afterHelp ? ValidationError("\(word) is not a verb of prefs-watch; prefs-watch --help lists them.") : nil
        }
        return ValidationError("\(word) is not a verb of prefs-watch: did you mean \(verb)? (To tail a suite named \(word), say prefs-watch tail \(word).)")
    }

    /// Whether a suite of this name is where `prefs-watch NAME` would look for it.
    static func suiteExists(_ name: String) -> Bool {
        guard let url = try? LocationOptions.parse([]).fileURL(of: name) else { return false }
        return FileManager.default.fileExists(atPath: url.path)
    }

    /// Edits from `a` to `b`: insertions, deletions, substitutions, and two neighbours swapped
    /// (`wirte`, `lsit`), each one edit (the optimal string alignment distance).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let (a, b) = (Array(a), Array(b))
        var d = (0...a.count).map { i in (0...b.count).map { j in i == 0 ? j : j == 0 ? i : 0 } }
        for i in a.indices.map({ $0 + 1 }) {
            for j in b.indices.map({ $0 + 1 }) {
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}
