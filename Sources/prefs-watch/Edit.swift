import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefs

struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Edit a suite (or one key) in $VISUAL or $EDITOR; only the keys you change are written.",
        discussion: """
            The suite is opened as an XML property list. Change, add or remove keys and save; the \
            keys you changed are written through the locked, merged write path, and nothing else. \
            A key that another process changed while you edited is a conflict: it is shown, not \
            overwritten, and the exit status is 1. Quitting the editor with an error, or saving an \
            empty file, changes nothing. When the edit cannot be applied, the edited file is kept \
            and its path printed.

            Examples:
              prefs-watch edit settings
              VISUAL=nano prefs-watch edit --group group.com.example.app settings window
            """)

    @OptionGroup var location: LocationOptions
    @Argument(help: "The suite.", completion: Completions.suite) var suite: String
    @Argument(help: "The key; without it, the whole suite.", completion: Completions.key) var key: String?
    @Flag(help: "Create the suite at a path that does not end in .plist.") var create = false

    func run() throws {
        let prefs = try location.open(suite, create: create)
        // What the suite held when the editor opened, read under the lock: the base of conflicts.
        let base = try prefs.update { $0.values }.filter { key == nil || $0.key == key }
        let document = EditDocument(base, suite: prefs.fileURL?.path ?? suite, key: key)
        let directory = try temporaryDirectory()
        let file = directory.appending(path: (prefs.fileURL?.lastPathComponent ?? "suite.plist"))
        try Data(document.text.utf8).write(to: file)
        var keepFile = true
        defer { if !keepFile { try? FileManager.default.removeItem(at: directory) } }

        var edited: PlistDictionary
        while true {
            try runEditor(on: file)
            let text = (try? Data(contentsOf: file)) ?? Data()
            if text.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }) {
                keepFile = false
                return note("The file was empty; nothing was changed.")
            }
            do {
                edited = try document.parse(text)
                break
            } catch let problem as EditDocument.Problem {
                note("\(problem.message)")
                guard isatty(STDIN_FILENO) == 1, ask("Edit again? [Y/n] ") else {
                    throw failure("Nothing was changed; your edit is kept in \(file.path).")
                }
            }
        }

        let changes = document.changes(to: edited)
        if changes.isEmpty {
            keepFile = false
            return note("No key was changed.")
        }
        // Apply each change unless the key moved on since the editor opened (and not to the same value).
        let conflicts: [(key: String, now: PlistValue?)]
        do {
            conflicts = try applying(changes, base: base, to: prefs)
        } catch {
            throw failure("\(describe(error)) Your edit is kept in \(file.path).")
        }
        let applied = changes.filter { change in !conflicts.contains { $0.key.isExactly(change.key) } }
        let set = applied.filter { $0.value != nil }.map { Self.quoted($0.key) }
        let removed = applied.filter { $0.value == nil }.map { Self.quoted($0.key) }
        if !set.isEmpty { note("Set \(set.joined(separator: ", ")).") }
        if !removed.isEmpty { note("Removed \(removed.joined(separator: ", ")).") }
        guard conflicts.isEmpty else {
            for conflict in conflicts {
                let yours = changes.first { $0.key.isExactly(conflict.key) }?.value
                note("Conflict: \(Self.quoted(conflict.key)) changed in another process while you edited: it was \(Self.show(base[conflict.key])), it is now \(Self.show(conflict.now)); you wrote \(Self.show(yours)). It was not overwritten.")
            }
            throw failure("\(conflicts.count) key(s) not written; run prefs-watch edit again to change them. Your edit is kept in \(file.path).")
        }
        keepFile = false
    }

    /// Writes each change in one update, unless its key moved on since the editor opened (and
    /// not to the same value); returns those that did.
    private func applying(_ changes: [(key: String, value: PlistValue?)], base: PlistDictionary, to prefs: PreferenceSuite) throws -> [(key: String, now: PlistValue?)] {
        try prefs.update { tx in
            var conflicts: [(key: String, now: PlistValue?)] = []
            for (changed, value) in changes {
                let now = tx[changed]
                if now != base[changed], now != value {
                    conflicts.append((changed, now))
                } else {
                    tx[changed] = value
                }
            }
            return conflicts
        }
    }

    private static func show(_ value: PlistValue?) -> String { value?.description ?? "(absent)" }
    /// A key in double quotes, control characters escaped.
    static func quoted(_ key: String) -> String { PlistValue.string(key).description }

    private func note(_ message: String) {
        printError("prefs-watch: \(message)\n")
    }

    private func ask(_ question: String) -> Bool {
        printError(question)
        let answer = readLine()?.trimmed.lowercased() ?? "n"
        return answer.isEmpty || answer.hasPrefix("y")
    }

    /// A private directory (0700) for the file the editor opens.
    private func temporaryDirectory() throws -> URL {
        var template = Array(FileManager.default.temporaryDirectory.appending(path: "prefs-watch-edit-XXXXXX").path.utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw failure("Could not create a temporary directory in \(FileManager.default.temporaryDirectory.path): \(String(cString: strerror(errno))). Set TMPDIR to a writable directory.")
        }
        return URL(filePath: String(cString: made))
    }

    /// Runs `$VISUAL`, else `$EDITOR`, else `vi`, through the shell as git does (so the variable
    /// may hold arguments), on the terminal of this process.
    private func runEditor(on file: URL) throws {
        let environment = ProcessInfo.processInfo.environment
        let editor = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        let command: [String] = ["/bin/sh", "-c", editor + " \"$@\"", editor, file.path(percentEncoded: false)]
        let arguments = command.map { strdup($0) }
        defer { arguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/sh", nil, nil, arguments + [nil], environ)
        guard spawned == 0 else {
            throw failure("Could not run /bin/sh for the editor: \(String(cString: strerror(spawned))). Nothing was changed.")
        }
        var status: CInt = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7F, exitStatus = (status >> 8) & 0xFF
        guard signal == 0, exitStatus == 0 else {
            throw failure("The editor (\(editor)) \(signal == 0 ? "exited with status \(exitStatus)" : "was killed by signal \(signal)"); nothing was changed. Set VISUAL or EDITOR to the editor you use. The file is kept in \(file.path).")
        }
    }
}

/// The text `prefs-watch edit` opens, and what an edited copy of it changes.
struct EditDocument {
    struct Problem: Error { let message: String }

    /// The keys as the document shows them (XML keeps whole seconds of a date, for one).
    let shown: PlistDictionary
    let key: String?
    let text: String

    init(_ values: PlistDictionary, suite: String, key: String?) {
        // Keys holding a string XML cannot carry are left out, and so never removed by the edit.
        var carried = PlistDictionary(), hidden: [String] = []
        for (name, value) in values.sortedByKey {
            if PlistValue.dictionary([name: value]).propertyListData(format: .xml).starts(with: Array("bplist".utf8)) {
                hidden.append(name)
            } else {
                carried[name] = value
            }
        }
        let xml = String(decoding: PlistValue.dictionary(carried).propertyListData(format: .xml), as: UTF8.self)
        var comment = [
            "prefs-watch edit: \(key.map { "the key \(Edit.quoted($0)) of " } ?? "")\(suite)",
            key == nil
                ? "Change, add or remove keys and save: only the keys you change are written."
                : "Change or remove this key and save; other keys are edited without a key argument.",
            "A key another process changes meanwhile is not overwritten. Save an empty file to cancel.",
        ]
        if !hidden.isEmpty {
            comment.append("Not shown (XML cannot hold their characters; use prefs-watch write): " + hidden.map(Edit.quoted).joined(separator: ", "))
        }
        // "--" may not appear inside an XML comment.
        let body = comment.map { "  " + $0.replacing("--", with: "- -") }.joined(separator: "\n")
        let start = xml.firstRange(of: "<plist")!.lowerBound
        text = String(xml[..<start]) + "<!--\n\(body)\n-->\n" + String(xml[start...])
        self.key = key
        // What the document holds, read back: an untouched key compares equal to it.
        shown = (try? PlistValue(propertyListData: Data(text.utf8))).flatMap { if case .dictionary(let d) = $0 { d } else { nil } } ?? carried
    }

    /// The values of an edited copy of `text`.
    func parse(_ data: Data) throws -> PlistDictionary {
        let root: PlistValue
        do { root = try PlistValue(propertyListData: data) } catch {
            let reason = error.message.hasPrefix("Not a property list: ") ? String(error.message.dropFirst(21)) : error.message
            throw Problem(message: "The edited file is not a property list: \(reason)")
        }
        guard case .dictionary(let values) = root else {
            throw Problem(message: "The edited file holds a \(root.typeName); it must keep the <dict> of keys at its root.")
        }
        if let key, let other = values.keys.first(where: { !$0.isExactly(key) }) {
            throw Problem(message: "The edited file holds the key \(Edit.quoted(other)); only \(Edit.quoted(key)) is edited here. Run prefs-watch edit without a key to edit other keys.")
        }
        return values
    }

    /// The keys whose value the edit changed: the new value, or `nil` for a removed key.
    func changes(to edited: PlistDictionary) -> [(key: String, value: PlistValue?)] {
        var changes: [(key: String, value: PlistValue?)] = []
        for (name, value) in edited.sortedByKey where shown[name] != value { changes.append((name, value)) }
        for (name, _) in shown.sortedByKey where edited[name] == nil { changes.append((name, nil)) }
        return changes
    }
}
