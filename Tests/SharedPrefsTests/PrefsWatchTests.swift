import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// A suite file holding `theme = "dark"`.
func suiteWithTheme(_ directory: borrowing TemporaryDirectory) async throws -> URL {
    let file = directory.file("s.plist")
    let suite = try PreferenceSuite(fileURL: file)
    suite.set("dark", forKey: "theme")
    try await suite.flush()
    return file
}

@Suite("prefs-watch")
struct PrefsWatchTests {
    /// Starts a tail that prints the initial value, waits until it has, then changes the suite
    /// from another process through the library and through `prefs-watch write`.
    func tail(_ file: URL, _ options: [String], separator: UInt8 = 10) async throws -> [String] {
        let tail = try Launched(prefsWatch, ["tail", file.path, "--initial", "--count", "3"] + options, separator: separator)
        try await tail.records.wait(for: 1)
        try await child("set", file.path, "theme=str:light")
        try await tail.records.wait(for: 2)
        #expect(try await prefsWatchRun("write", file.path, "volume", "-int", "7").status == 0)
        #expect(try await tail.status() == 0, "\(tail.standardError)")
        return tail.records.items
    }

    @Test func textRecordsShowSuiteKeyOldAndNew() async throws {
        let directory = try TemporaryDirectory()
        let records = try await tail(try await suiteWithTheme(directory), [])
        #expect(records.count == 3)
        #expect(records[0].hasSuffix(" s theme = \"dark\""))
        #expect(records[1].hasSuffix(" s theme: \"dark\" -> \"light\""))
        #expect(records[2].hasSuffix(" s volume: (none) -> 7"))
        #expect(records[0].range(of: #"^\d\d:\d\d:\d\d\.\d{6} "#, options: .regularExpression) != nil)
    }

    /// `seq` is the number of the write that made the change (the suite's first write made the
    /// theme dark); `record` counts the output.
    @Test func jsonLinesCarryTimeSequenceAndValues() async throws {
        let directory = try TemporaryDirectory()
        let records = try await tail(try await suiteWithTheme(directory), ["--json"])
        let objects = try records.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects[0]["seq"] is NSNull && objects.dropFirst().map { $0["seq"] as? Int } == [2, 3])
        #expect(objects.map { $0["record"] as? Int } == [1, 2, 3])
        #expect(objects.map { $0["op"] as? String } == ["initial", "set", "set"])
        #expect(objects[1]["old"] as? String == "dark" && objects[1]["new"] as? String == "light")
        #expect(objects[2]["old"] is NSNull && objects[2]["new"] as? Int == 7)
        #expect(objects.allSatisfy { $0["suite"] as? String == "s" })
        #expect((objects[0]["ts"] as? String)?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"#, options: .regularExpression) != nil)
    }

    @Test func csvQuotesLikeInotifywait() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set("a, \"quoted\" value", forKey: "theme")
        try await suite.flush()
        let records = try await tail(file, ["--csv"])
        #expect(records[0].hasSuffix(#",,s,theme,initial,,"a, ""quoted"" value","#))
        #expect(records[1].hasSuffix(#",2,s,theme,set,"a, ""quoted"" value",light,"#))
        #expect(records[2].hasSuffix(",3,s,volume,set,,7,"))
    }

    @Test func formatLettersAndNulTerminators() async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let records = try await tail(file, ["--format", "%r:%q|%s|%k|%e|%o|%n|%w|100%%", "-0"], separator: 0)
        #expect(records == [
            "1:|s|theme|initial||dark|\(file.path)|100%",
            "2:2|s|theme|set|dark|light|\(file.path)|100%",
            "3:3|s|volume|set||7|\(file.path)|100%",
        ])
    }

    /// `--since N` prints the writes after N from the suite's journal. `--cursor` starts a tail
    /// without a cursor file with the stored values (`--initial`), and resumes one that was
    /// SIGKILLed after the last write it saved, none missed and none twice; a write none of whose
    /// keys passes `--key` moves the cursor all the same.
    @Test func sinceAndACursorResumeAKilledTailWithNothingMissed() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        func write(_ key: String, _ value: Int) async throws {
            #expect(try await prefsWatchRun("write", file.path, key, "-int", "\(value)").status == 0)
        }
        func parse(_ output: String) -> [[String: Any]] {
            output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        for i in 1...3 { try await write("k", i) }
        let since = try await run(prefsWatch, ["tail", file.path, "--since", "1", "--json", "--count", "2"])
        #expect(parse(since.output).map { "\($0["seq"]!)=\($0["new"]!)" } == ["2=2", "3=3"], "\(since.output)")

        let cursor = directory.file("cursor").path
        let first = try await run(prefsWatch, ["tail", file.path, "--cursor", cursor, "--initial", "--json", "--count", "2"])
        #expect(parse(first.output).map { "\($0["op"]!) \($0["seq"]!)" } == ["gap 3", "initial 3"], "\(first.output)")
        #expect(try String(contentsOfFile: cursor, encoding: .utf8) == "3\n")

        let held = try HeldTail([file.path, "--cursor", cursor, "--key", "k", "--json"])
        for i in 4...8 { try await write("k", i) }
        try await write("other", 9)
        let seen = parse(try await held.records { $0.count == 5 }.joined(separator: "\n"))
        #expect(seen.map { $0["seq"] as? Int } == [4, 5, 6, 7, 8])
        // The write of "other" prints nothing, and moves the cursor (no event says when: the
        // file is looked at every 5 ms).
        let deadline = ContinuousClock.now + defaultTimeout
        while (try? String(contentsOfFile: cursor, encoding: .utf8)) != "9\n", ContinuousClock.now < deadline { usleep(5_000) }
        #expect(try String(contentsOfFile: cursor, encoding: .utf8) == "9\n")
        kill(held.pid, SIGKILL)
        _ = try await held.status()
        try await write("k", 10)
        let resumed = try await run(prefsWatch, ["tail", file.path, "--cursor", cursor, "--json", "--count", "1"])
        #expect(parse(resumed.output).map { "\($0["seq"]!)=\($0["new"]!)" } == ["10=10"], "\(resumed.output)")
        #expect(try String(contentsOfFile: cursor, encoding: .utf8) == "10\n")
    }

    /// A cursor file that is a FIFO, a symbolic link, a directory or holds no number is an
    /// error naming it, never a hang; `--since` and `--cursor` take exactly one suite.
    @Test func aHostileCursorFileIsAnErrorNamingIt() async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let fifo = directory.file("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let garbage = directory.file("garbage").path
        try Data("twelve\n".utf8).write(to: URL(filePath: garbage))
        let link = directory.file("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: garbage)
        let folder = directory.file("folder").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        for (cursor, says) in [(fifo, "is not a regular file"), (link, "not a symbolic link"), (folder, "is not a regular file"), (garbage, "does not hold a write number")] {
            let result = try await run(prefsWatch, ["tail", file.path, "--cursor", cursor])
            #expect(result.status == 1 && result.output.contains(cursor) && result.output.contains(says), "\(result.output)")
        }
        for arguments in [[file.path, file.path, "--since", "1"], ["--dir", directory.url.path, "--cursor", garbage], [file.path, "--since", "1", "--initial"]] {
            let result = try await run(prefsWatch, ["tail"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.output)")
        }
    }

    @Test func filtersPassOnlyMatchingKeys() async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let tail = try Launched(prefsWatch, ["tail", file.path, "--prefix", "net.", "--key", "theme", "--count", "2", "--initial"])
        try await tail.records.wait(for: 1)
        try await child("set", file.path, "other=int:1", "net.proxy=str:on")
        #expect(try await tail.status() == 0)
        #expect(tail.records.items.count == 2)
        #expect(tail.records.items[1].hasSuffix("s net.proxy: (none) -> \"on\""))
    }

    @Test func aTimeoutWithNoRecordExitsWithTwo() async throws {
        let directory = try TemporaryDirectory()
        let result = try await prefsWatchRun("tail", try await suiteWithTheme(directory).path, "--timeout", "0.2")
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        // A suite that does not exist yet is an error (a typo would wait forever), unless --wait
        // asks to wait for it; then a note says so.
        let missing = try await prefsWatchRun("tail", directory.file("typo.plist").path, "-t", "0.2")
        #expect(missing.status == 1 && missing.output.contains("does not exist") && missing.output.contains("--wait"), "\(missing.output)")
        let waiting = try await prefsWatchRun("tail", directory.file("typo.plist").path, "-t", "0.2", "--wait")
        #expect(waiting.status == 2)
        #expect(waiting.output.contains("typo.plist does not exist yet"))
    }

    /// A suite Foundation's `UserDefaults` wrote (in `$XDG_CONFIG_HOME`, by a real Foundation
    /// process) is copied into a SharedPrefs suite with every type kept, what was copied and kept
    /// is printed, and the UserDefaults file is left byte for byte.
    @Test func aUserDefaultsSuiteIsMigratedWithItsTypesAndTheSourceUntouched() async throws {
        let directory = try TemporaryDirectory()
        let environment = ["XDG_CONFIG_HOME": directory.file("config").path, "SHAREDPREFS_ROOT": directory.file("root").path]
        #expect(try await run(childExecutable, ["user-defaults", "legacy"], environment: environment).status == 0)
        let source = directory.file("config/legacy.plist")
        let before = try Data(contentsOf: source)
        #expect(try await run(prefsWatch, ["write", "settings", "shared", "mine"], environment: environment).status == 0)
        let moved = try await run(prefsWatch, ["migrate", "settings", "legacy"], environment: environment)
        #expect(moved.status == 0, "\(moved.output)")
        #expect(moved.output.contains("Copied 8 key(s) from \(source.path)") && moved.output.contains("Kept 1 key(s) the suite had (--overwrite replaces them): shared."), "\(moved.output)")
        let suite = try readSuiteFile(directory.file("root/Preferences/settings.plist"))
        #expect(suite == [
            "int": 42, "real": 1.5, "bool": true, "string": "text", "date": .date(Date(timeIntervalSince1970: 1_000_000)),
            "data": .data(Data([1, 2, 3])), "array": ["a", "b"], "dictionary": ["nested": 1], "shared": "mine",
        ])
        #expect(try Data(contentsOf: source) == before)
        #expect(try await run(prefsWatch, ["migrate", "settings", "legacy", "--overwrite"], environment: environment).status == 0)
        #expect(try readSuiteFile(directory.file("root/Preferences/settings.plist"))["shared"] == "theirs")
        let missing = try await run(prefsWatch, ["migrate", "settings", "nothing"], environment: environment)
        #expect(missing.status == 1 && missing.output.contains(directory.file("config/nothing.plist").path), "\(missing.output)")
        // Without XDG_CONFIG_HOME, Foundation keeps it in $HOME/.config, whatever the password
        // database says (sudo -E, containers, CI): migrate looks there too.
        let home = ["HOME": directory.file("home").path, "SHAREDPREFS_ROOT": directory.file("root").path]
        #expect(try await run(childExecutable, ["user-defaults", "homed"], environment: home).status == 0)
        let homed = try await run(prefsWatch, ["migrate", "settings", "homed", "--overwrite"], environment: home)
        #expect(homed.status == 0 && homed.output.contains("Copied 9 key(s) from \(directory.file("home/.config/homed.plist").path)"), "\(homed.output)")
    }

    /// SIGTERM (Foundation's `terminate()`), SIGINT and SIGHUP each end a running tail, though
    /// the process that started it (this test's) blocks them: it outlived every test run before.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aSignalEndsATail(_ signal: Int32) async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let tail = try Launched(prefsWatch, ["tail", file.path, "--initial"])
        try await tail.records.wait(for: 1)
        kill(tail.pid, signal)
        #expect(try await tail.status() == signal)
    }

    /// A signal while tail writes a large record to a reader that has stopped: the reader gets
    /// the record whole, ended by its newline, and tail then dies of the signal. (Before: 455–501
    /// KB of half a JSON record, with no newline, for each of the signals.)
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aSignalNeverCutsARecord(_ signal: Int32) async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let tail = try HeldTail([file.path, "--json", "--initial"])
        _ = try await tail.records { $0.count == 1 }
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(String(repeating: "x", count: 600_000), forKey: "big")
        try await suite.flush()
        try await tail.waitUntilTheReaderIsBehind()
        kill(tail.pid, signal)
        let records = try await tail.records { _ in false }
        #expect(tail.rest.isEmpty, "a record cut after \(tail.rest.count) bytes")
        let big = records.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }.first { $0["key"] as? String == "big" }
        #expect((big?["new"] as? String)?.count == 600_000, "\(records.map(\.count))")
        #expect(try await tail.status() == (signal, .uncaughtSignal))
    }

    /// A reader that stops while 300 changes of 16 KB values arrive: past `--backlog`, tail
    /// merges each key's changes and says so in an overflow record; once read again, the reader
    /// gets every key's latest value, and the change after them. (Before: every change was held,
    /// about a byte of memory per byte of backlog: +106–116 MB for 3,000 changes.)
    @Test func aStalledReaderGetsAnOverflowRecordAndEachKeysLatestValue() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(durability: .none))
        suite.set("dark", forKey: "theme")
        try await suite.flush()
        let tail = try HeldTail([file.path, "--json", "--initial", "--backlog", "256K"])
        _ = try await tail.records { $0.count == 1 }
        let value = { (i: Int) in String(repeating: "\(i % 10)", count: 16_384) + "\(i)" }
        for i in 0..<300 {
            suite.set(value(i), forKey: "k\(i % 4)")
            #expect(suite.synchronize())
        }
        suite.set("end", forKey: "done")
        try await suite.flush()
        let records = try await tail.records { $0.last?.contains(#""key":"done""#) == true }
        kill(tail.pid, SIGTERM)
        let parsed = records.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(parsed.count == records.count)
        let merged = parsed.filter { $0["op"] as? String == "overflow" }.compactMap { ($0["message"] as? String)?.split(separator: " ").first.flatMap { Int($0) } }
        #expect(!merged.isEmpty && merged.allSatisfy { $0 > 0 }, "\(parsed.map { $0["op"] ?? "" })")
        #expect(records.count < 300)
        for k in 0..<4 {
            #expect(parsed.last { $0["key"] as? String == "k\(k)" }?["new"] as? String == value(296 + k))
        }
        #expect(parsed.map { $0["record"] as? Int ?? 0 } == Array(2...parsed.count + 1), "numbered in output order, after the initial record")
        #expect(try await tail.status() == (SIGTERM, .uncaughtSignal))
    }

    /// The same stall with `--cursor`: the changes merged while the reader stopped end with the
    /// number of the last write they hold saved, not that of the first change each key had in the
    /// backlog (which a restart would print again).
    @Test func aStalledReaderWithACursorSavesTheNumberOfTheLastMergedWrite() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        let cursor = directory.file("cursor").path
        let suite = try PreferenceSuite(fileURL: file, options: .init(durability: .none))
        suite.set("dark", forKey: "theme")
        try await suite.flush()
        // A gap, then the current values (no cursor yet): printed once the tail follows.
        let tail = try HeldTail([file.path, "--json", "--cursor", cursor, "--initial", "--backlog", "256K"])
        _ = try await tail.records { $0.contains { $0.contains(#""op":"initial""#) } }
        let value = { (i: Int) in String(repeating: "\(i % 10)", count: 16_384) + "\(i)" }
        for i in 0..<300 {
            suite.set(value(i), forKey: "k\(i % 4)")
            #expect(suite.synchronize())
        }
        let last = value(299)
        let records = try await tail.records { $0.contains { $0.contains(last) } }
        #expect(records.contains { $0.contains(#""op":"overflow""#) }, "no change was merged: \(records.count) records")
        kill(tail.pid, SIGTERM)
        #expect(try await tail.status() == (SIGTERM, .uncaughtSignal))
        // Saved before the signal ended it (a write and its save are not split by one).
        let saved = try String(contentsOfFile: cursor, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(saved == String(suite.sequence), "saved \(saved), the last write \(suite.sequence)")
    }

    /// Keys and file names with a newline or terminal escape sequences (planted by whoever may
    /// write a suite, or name a file): `find`, `migrate` and `list` print one line per result,
    /// none with a control byte, each key escaped as `read` escapes it.
    @Test func findMigrateAndListPrintOneLinePerResultAndNoControlByte() async throws {
        let directory = try TemporaryDirectory()
        let environment = ["XDG_CONFIG_HOME": directory.file("config").path, "SHAREDPREFS_ROOT": directory.file("root").path]
        let hostile = ["a\nforged = 1", "\u{1B}]0;owned\u{07}title", "csi\u{9B}2J", "dark"]
        let preferences = directory.file("root/Preferences")
        let planted = try await python(
            """
            import os, plistlib, sys
            keys = sys.argv[4:]
            for path in sys.argv[1:4]:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'wb') as f: plistlib.dump({k: 'dark ' + k for k in keys}, f, fmt=plistlib.FMT_BINARY)
            """, preferences.appending(path: "plain.plist").path, preferences.appending(path: "line\nbreak\u{1B}[2J.plist").path,
            directory.file("config/legacy.plist").path, hostile[0], hostile[1], hostile[2], hostile[3])
        #expect(planted.status == 0, "\(planted.output)")
        func isClean(_ output: String) -> Bool {
            !output.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
        }
        let found = try await run(prefsWatch, ["find", "dark"], environment: environment)
        #expect(found.status == 0 && isClean(found.output), "\(found.output.debugDescription)")
        #expect(found.output.split(separator: "\n").count == hostile.count, "\(found.output.debugDescription)")
        let migrated = try await run(prefsWatch, ["migrate", "settings", "legacy"], environment: environment)
        #expect(migrated.status == 0 && isClean(migrated.output), "\(migrated.output.debugDescription)")
        #expect(migrated.output.split(separator: "\n").count == 1 && migrated.output.contains(#""a\nforged = 1""#), "\(migrated.output.debugDescription)")
        let listed = try await run(prefsWatch, ["list", "--dir", preferences.path], environment: environment)
        #expect(listed.status == 0 && isClean(listed.output), "\(listed.output.debugDescription)")
        // plain and settings: the file whose name no suite can have is left out.
        #expect(listed.output.split(separator: "\n") == ["plain", "settings"], "\(listed.output.debugDescription)")
    }

    /// On a terminal (`script` gives it one), an import that goes on for over a second says what
    /// it is doing, and a wait of over a second for a lock another process holds says so, naming
    /// the holder; in a pipe neither is printed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) (bsdutils) for a terminal"))
    func onATerminalLongWaitsAndLongWorkAreSaid() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("held.plist")
        #expect(try await prefsWatchRun("write", file.path, "before", "-int", "1").status == 0)
        let source = directory.file("source.plist")
        try Data(PropertyListFormat.binary.encode(["k": 2])).write(to: source)
        let holder = try await lockHolder(directory.file(".held.plist.lock"))
        // A lock timeout long enough for this test to see the lines and let the lock go, however
        // loaded the machine (5 s ran out once under ThreadSanitizer).
        let importer = try Launched(URL(filePath: "/usr/bin/script"), ["-qec", "'\(prefsWatch.path)' import --lock-timeout 60 '\(file.path)' '\(source.path)'", "/dev/null"])
        let said = try await importer.records.wait(until: { lines in lines.contains { $0.contains("Waiting for the lock") } && lines.contains { $0.contains("importing") } })
        #expect(said.contains { $0.hasPrefix("prefs-watch: importing \(source.path) (") && $0.contains("into \(file.path)") }, "\(said)")
        #expect(said.contains { $0.contains("prefs-watch: notice: Waiting for the lock \(directory.file(".held.plist.lock").path), held by PID \(holder.pid)") }, "\(said)")
        try holder.closeInput()
        let status = try await importer.status()
        #expect(status == 0, "exit status \(status); printed: \(importer.records.items)")
        #expect(try readSuiteFile(file) == ["k": 2], "exit status \(status); printed: \(importer.records.items)")
        // In a pipe: nothing, however long it takes (over a second here; under ThreadSanitizer a
        // third of the keys take as long).
        let big = directory.file("big.plist")
        let keys = underThreadSanitizer ? 100_000 : 300_000
        try Data(PropertyListFormat.binary.encode(.dictionary(PlistDictionary((0..<keys).map { ("k\($0)", PlistValue.integer(Int64($0))) })))).write(to: big)
        let piped = try await prefsWatchRun("import", directory.file("b.plist").path, big.path)
        #expect(piped.status == 0 && piped.output.isEmpty, "\(piped.output)")
    }

    /// One version, said alike by the library, `prefs-watch --version` and the CHANGELOG's
    /// newest entry; the LICENSE is there.
    @Test func theVersionIsOneAndTheLicenseIsThere() async throws {
        let version = try await prefsWatchRun("--version")
        #expect(version.status == 0 && version.output == PreferenceSuite.libraryVersion + "\n")
        let changelog = try String(contentsOf: repositoryRoot.appending(path: "CHANGELOG.md"), encoding: .utf8)
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") }
        #expect(newest?.hasPrefix("## \(PreferenceSuite.libraryVersion) ") == true, "\(newest ?? "no entry")")
        #expect(try String(contentsOf: repositoryRoot.appending(path: "LICENSE"), encoding: .utf8).contains("Apache License"))
    }

    /// Every line prefs-watch prints about a problem has one label, `prefs-watch:`; the error
    /// a command fails with is printed once; `--quiet` leaves the library's warnings out.
    @Test func problemsArePrintedOnceWithOneLabel() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("broken.plist")
        try Data("bplist00 and then nothing".utf8).write(to: file)
        let loud = try await prefsWatchRun("write", file.path, "k", "-int", "1")
        let lines = loud.output.split(separator: "\n")
        #expect(loud.status == 1 && lines.count == 2, "\(loud.output)")
        #expect(lines.allSatisfy { $0.hasPrefix("prefs-watch: ") && !$0.contains("[SharedPrefs]") }, "\(loud.output)")
        #expect(lines[0].hasPrefix("prefs-watch: warning: ") && lines[1].contains("never read a good version"), "\(loud.output)")
        let quiet = try await prefsWatchRun("write", "--quiet", file.path, "k", "-int", "1")
        #expect(quiet.status == 1 && quiet.output.split(separator: "\n").count == 1 && quiet.output.contains("never read a good version"), "\(quiet.output)")
    }

    /// `tail --dir DIR --wait` started before anything makes DIR (the README's order: the tail,
    /// then the demo) waits for it, and reports the suites made in it as new. A container half
    /// made (`later/Library` only, as a slow `mkdir -p` leaves it) is not taken for a directory of
    /// suites: the tail waits for its Library/Preferences.
    @Test func aTailOfADirectoryThatDoesNotExistYetWaitsForItWhenAsked() async throws {
        let directory = try TemporaryDirectory()
        let later = directory.file("later/Library/Preferences")
        #expect(try await prefsWatchRun("tail", "--dir", directory.file("later").path).status == 1)
        let tail = try Launched(prefsWatch, ["tail", "--dir", directory.file("later").path, "--wait", "--json", "--count", "1"])
        #expect(try await tail.errorLines(1)[0].contains("does not exist yet; waiting for it"))
        try FileManager.default.createDirectory(at: directory.file("later/Library"), withIntermediateDirectories: true)
        let halfMade = try Launched(prefsWatch, ["tail", "--dir", directory.file("later").path, "--wait", "--json", "--count", "1"])
        #expect(try await halfMade.errorLines(1)[0].contains("a container without its Library/Preferences yet; waiting for it"))
        try await child("set", later.appending(path: "made.plist").path, "k=int:1")
        for tail in [tail, halfMade] {
            #expect(try await tail.status() == 0, "\(tail.standardError)")
            #expect(tail.records.items.count == 1 && tail.records.items[0].contains(#""suite":"made","key":"k","op":"set","old":null,"new":1"#), "\(tail.records.items)")
        }
    }

    /// `--` ends the type flags; JSON is read as JSON parsers read it (no trailing comma, every
    /// problem said with where it is); a
    /// mistyped `--dir` is not created without `--create`; `--etcd` is not offered by a build
    /// without etcd.
    @Test func valuesAndDirectoriesAreTakenAsWritten() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("values.plist").path
        #expect(try await prefsWatchRun("write", file, "dash", "--", "-int").status == 0)
        #expect(try readSuiteFile(URL(filePath: file))["dash"] == "-int")
        for json in [#"{"a": 1,}"#, #"[1, 2 , ]"#, #"{"a": [1,], "b": 2}"#] {
            let result = try await prefsWatchRun("write", file, "json", json)
            #expect(result.status == 64 && result.output.contains("a comma before a closing bracket"), "\(json): \(result.output)")
        }
        #expect(try await prefsWatchRun("write", file, "json", #"{"s": ",}", "t": [","]}"#).status == 0)
        // prefs-watch's own JSON reader: escapes, surrogate pairs, every number kind, key order kept.
        let json = #"{"z": "\u00e9\ud83d\ude00\n\"\/", "a": [0, -2, 3.5, 1e3, 18446744073709551615, 1e20, true, false], "e": {}}"#
        #expect(try await prefsWatchRun("write", file, "json", json).status == 0)
        #expect(try readSuiteFile(URL(filePath: file))["json"] == .dictionary([
            "z": "é😀\n\"/", "a": [0, -2, 3.5, 1000.0, .unsignedInteger(.max), 1e20, true, false], "e": .dictionary([:]),
        ]))
        for (bad, problem) in [
            (#"{"a": null}"#, "A null (no property-list value) around character 6"), (#"[01]"#, "around character 1"),
            (#"[1 2]"#, "Expected ',' or ']' around character 3"), (#"{"a": 1}}"#, "Unexpected text around character 8"),
            (#"["open"#, "Unterminated string"), (#"["\ud800"]"#, "Invalid \\u escape"), (#"["\q"]"#, "Invalid escape around character 2"),
            (#"[1e400]"#, "Number out of range"), (#"{1: 2}"#, "Expected a key in quotes"), (String(repeating: "[", count: 600), "Nesting deeper than 512"),
        ] {
            let result = try await prefsWatchRun("write", file, "json", bad)
            #expect(result.status == 64 && result.output.contains(problem), "\(bad): \(result.output)")
        }
        // The excerpt quoted in a JSON error escapes control characters, C1 (a terminal's CSI,
        // U+009B) included, as every other message does.
        let c1 = try await prefsWatchRun("write", file, "json", "[\"a\u{9B}2J\" x]")
        #expect(c1.status == 64 && c1.output.contains(#"after "[\"a\u{9B}2J\" ""#) && !c1.output.unicodeScalars.contains("\u{9B}"), "\(c1.output.debugDescription)")
        let missing = directory.file("no/such/dir").path
        let refused = try await prefsWatchRun("write", "--dir", missing, "s", "k", "v")
        #expect(refused.status == 1 && refused.output.contains("--create"), "\(refused.output)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("no").path))
        #expect(try await prefsWatchRun("write", "--dir", missing, "s", "k", "v", "--create").status == 0)
        // A path's folder follows the same rule, with the same status and words.
        let missingPath = directory.file("nor/this/s.plist").path
        let refusedPath = try await prefsWatchRun("write", missingPath, "k", "v")
        #expect(refusedPath.status == 1 && refusedPath.output.contains("The directory \(directory.file("nor/this").path) does not exist; pass --create"), "\(refusedPath.output)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("nor").path))
        #expect(try await prefsWatchRun("write", missingPath, "k", "v", "--create").status == 0)
        #expect(try readSuiteFile(URL(filePath: missingPath)) == ["k": "v"])
        #if !Etcd
        #expect(try await prefsWatchRun("write", "--help").output.contains("--etcd") == false)
        #endif
    }

    /// A mistyped verb, or a macOS `defaults` verb named otherwise here, is a usage error that
    /// names the verb meant, never a tail of suites of those names; `domains` and `find` are
    /// verbs, as in `defaults`. Every verb follows one scheme of exit statuses.
    @Test func aMistypedVerbIsAUsageErrorNamingTheVerbMeant() async throws {
        let directory = try TemporaryDirectory()
        let root = ["SHAREDPREFS_ROOT": directory.url.path]
        for (arguments, meant) in [(["wrte", "settings", "k", "v"], "write"), (["reed", "settings"], "read"), (["remove", "settings", "k"], "delete"), (["help", "wrte"], "write"),
            // Two neighbours swapped are one edit.
            (["wirte", "settings", "k", "v"], "write"), (["raed", "settings"], "read"), (["lsit"], "list"), (["tial", "settings"], "tail")] {
            let result = try await run(prefsWatch, arguments, environment: root)
            #expect(result.status == 64 && result.output.contains("did you mean \(meant)?"), "\(arguments): \(result.output)")
        }
        #expect(try await run(prefsWatch, ["help", "nothing-like-a-verb"], environment: root).status == 64)
        // An existing suite of such a name is tailed, and `tail NAME` always means the suite.
        #expect(try await run(prefsWatch, ["write", "mail", "k", "-int", "1"], environment: root).status == 0)
        #expect(try await run(prefsWatch, ["mail", "--timeout", "0.2"], environment: root).status == 2)
        #expect(try await run(prefsWatch, ["tail", "mial", "--wait", "--timeout", "0.2"], environment: root).status == 2)
        // domains and find.
        #expect(try await run(prefsWatch, ["write", "settings", "theme", "Dark blue"], environment: root).status == 0)
        let domains = try await run(prefsWatch, ["domains", "--dir", directory.url.appending(path: "Preferences").path], environment: root)
        #expect(domains.status == 0 && domains.output.split(separator: "\n").sorted() == ["mail", "settings"], "\(domains.output)")
        let found = try await run(prefsWatch, ["find", "dark"], environment: root)
        #expect(found.status == 0 && found.output == "\(directory.url.path)/Preferences/settings.plist theme = \"Dark blue\"\n", "\(found.output)")
        #expect(try await run(prefsWatch, ["find", "SETTINGS", "--dir", directory.url.appending(path: "Preferences").path], environment: root).output == "settings\n")
        #expect(try await run(prefsWatch, ["find", "nowhere"], environment: root).status == 1)
        // Exit statuses: 64 for usage errors, invalid names included; 1 for what does not exist.
        for arguments in [["write", "settings", "k", "-int", "abc"], ["read", "--group", "group.x", ".."], ["read", "--bogus"]] {
            #expect(try await run(prefsWatch, arguments, environment: root).status == 64, "\(arguments)")
        }
        #expect(try await run(prefsWatch, ["read", "settings", "nokey"], environment: root).status == 1)
        #expect(try await run(prefsWatch, ["read", "nosuite"], environment: root).status == 1)
    }

    /// A usage error, found while parsing or while the verb ran, says `prefs-watch:` as every
    /// other problem line does and shows that verb's usage; `write --help`'s type flags fit 80
    /// columns, on the screen and in the man page.
    @Test func aUsageErrorHasTheDocumentedLabelAndTheVerbsUsage() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist").path
        for (arguments, verb) in [
            (["write", file, "k", "-int", "abc"], "write"), (["write", file, "k", "-int", "2", "extra"], "write"),
            (["write", "--dir", directory.url.path, "a/b", "k", "v"], "write"), (["read"], "read"), (["delete", file, "--bogus"], "delete"),
        ] {
            let result = try await run(prefsWatch, arguments)
            #expect(result.status == 64 && result.output.hasPrefix("prefs-watch: ") && !result.output.contains("Error:")
                && result.output.contains("Usage: prefs-watch \(verb) ") && result.output.contains("See 'prefs-watch \(verb) --help'"), "\(arguments): \(result.output)")
        }
        let help = try await run(prefsWatch, ["write", "--help"], environment: ["COLUMNS": "80"]).output
        let table = help.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.contains("type flag comes first") }.prefix { !$0.isEmpty }
        #expect(table.count >= 5 && table.allSatisfy { $0.count <= 80 }, "\(table)")
    }

    /// The man page as `man` shows it at 80 columns: the write table whole, no line longer.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/man"), "needs man (apt-get install man-db)"))
    func theManPageFitsEightyColumns() async throws {
        let page = try await run(URL(filePath: "/usr/bin/man"), ["-l", repositoryRoot.appending(path: "docs/man/prefs-watch.1").path], environment: ["MANWIDTH": "80", "MANPAGER": "cat"])
        let lines = page.output.split(separator: "\n")
        #expect(page.status == 0 && lines.contains { $0.contains("-date ISO-8601|seconds") } && lines.allSatisfy { $0.count <= 80 }, "\(lines.filter { $0.count > 80 })")
    }

    @Test func aClosedPipeEndsTheTailCleanly() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("big.plist")
        let suite = try PreferenceSuite(fileURL: file)
        // More initial output than a pipe holds, so the tail is still writing when head exits.
        for i in 0..<5000 { suite.set(i, forKey: "key.\(i)") }
        try await suite.flush()
        let result = try await run(
            URL(filePath: "/bin/bash"),
            ["-c", "set -o pipefail; '\(prefsWatch.path)' tail '\(file.path)' --initial --timeout 20 | head -1"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.split(separator: "\n").count == 1)
    }

    @Test func watchingADirectorySeesSuitesCreatedLater() async throws {
        let directory = try TemporaryDirectory()
        _ = try await suiteWithTheme(directory)
        let tail = try Launched(prefsWatch, ["tail", "--dir", directory.url.path, "--initial", "--json", "--count", "3"])
        try await tail.records.wait(for: 1)
        try await child("set", directory.file("later.plist").path, "y=int:2", "z=str:new")
        #expect(try await tail.status() == 0, "\(tail.standardError)")
        let later = tail.records.items.dropFirst().sorted()
        #expect(later.count == 2)
        #expect(later.allSatisfy { $0.contains("\"suite\":\"later\"") && $0.contains("\"op\":\"set\"") && $0.contains("\"old\":null") })
    }

    @Test func aFileThatDoesNotParseIsAnErrorRecord() async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let tail = try Launched(prefsWatch, ["tail", file.path, "--initial", "--count", "2", "--json"])
        try await tail.records.wait(for: 1)
        try Data("bplist00 garbage".utf8).write(to: file)
        #expect(try await tail.status() == 0)
        #expect(tail.records.items[1].contains("\"op\":\"error\"") && tail.records.items[1].contains("not a valid property list"))
    }

    /// The blocker of issue 13: `write ../../etc/passwd k v` moved the file aside and replaced it.
    @Test func writeVerbsNeverMoveReplaceOrReModeAFileThatIsNoPropertyList() async throws {
        let directory = try TemporaryDirectory()
        let system = directory.file("passwd")
        let text = Data("root:x:0:0:root:/root:/bin/bash\n".utf8)
        try text.write(to: system)
        chmod(system.path, 0o644)
        let backup = directory.file("backup.plist")
        try Data(PropertyListFormat.binary.encode(["k": 1])).write(to: backup)
        for arguments in [
            ["write", system.path, "k", "v"], ["write", system.path, "k", "v", "--create"], ["delete", system.path, "k"],
            ["delete", system.path], ["import", system.path, backup.path], ["rename", system.path, "a", "b"],
        ] {
            let result = try await run(prefsWatch, arguments)
            #expect(result.status != 0 && result.output.contains(system.path) && result.output.contains("left exactly as it was"), "\(arguments): \(result.output)")
        }
        #expect(try Data(contentsOf: system) == text)
        var st = stat()
        #expect(stat(system.path, &st) == 0 && st.st_mode & 0o777 == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["backup.plist", "passwd"])
    }

    /// A sparse 1 TiB file where a suite should be: every verb that reads it itself says how large
    /// it is and what the limit is, reads none of it, and changes nothing (the command read it
    /// whole before, and then said "permission denied", or "error 256").
    @Test func aTerabyteSuiteFileIsRefusedByTheVerbsNamingItsSize() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("huge.plist")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        #expect(truncate(file.path, 1 << 40) == 0)
        for arguments in [["read", file.path], ["read", file.path, "k"], ["read-type", file.path, "k"], ["export", file.path, "-"], ["write", file.path, "k", "1"], ["delete", file.path, "k"]] {
            let result = try await run(prefsWatch, arguments)
            #expect(result.status != 0 && result.output.contains("\(file.path) is 1099511627776 bytes") && result.output.contains("maximumFileSize"), "\(arguments): \(result.output)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["huge.plist"])
    }

    /// 600 MB of zeros on standard input: `import` stops reading at the suite size limit (256 MiB,
    /// so it never holds more) and says so, and creates nothing. It read everything first before,
    /// 1.2 GB resident. (No `ulimit -v` to show it: ThreadSanitizer's runtime reserves terabytes.)
    @Test func importStopsReadingAtTheSuiteSizeLimit() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("imported.plist")
        let result = try await run(URL(filePath: "/bin/sh"), ["-c", "head -c 600000000 /dev/zero | \"$0\" import \"$1\" -", prefsWatch.path, file.path])
        #expect(result.status == 1 && result.output.contains("Standard input holds more than a suite may be (268435456 bytes"), "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test func withGroupOrDirTheSuiteIsANameNeverAPath() async throws {
        let directory = try TemporaryDirectory()
        let container = directory.file("container")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        for name in ["../escaped", "../../escaped.plist", "a/b", ".hidden"] {
            let result = try await prefsWatchRun("write", "--dir", container.path, name, "k", "v")
            #expect(result.status != 0 && result.output.contains("is not allowed"), "\(name): \(result.output)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["container"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path) == [])
        // `name.plist` with --dir is the suite `name`.
        #expect(try await prefsWatchRun("write", "--dir", container.path, "named.plist", "k", "v").status == 0)
        #expect(try readSuiteFile(container.appending(path: "named.plist")) == ["k": "v"])
    }

    /// A container the CLI creates first can be shared with the group, as one an app creates.
    @Test func aGroupContainerTheCLICreatesGetsTheLibrarysModes() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(URL(filePath: "/usr/bin/env"), [
            "SHAREDPREFS_ROOT=\(directory.url.path)", prefsWatch.path, "write", "--group", "group.cli", "settings", "k", "v",
        ])
        #expect(result.status == 0, "\(result.output)")
        let preferences = directory.file("containers/group.cli/Library/Preferences")
        var st = stat()
        #expect(stat(preferences.path, &st) == 0 && st.st_mode & 0o7777 == 0o2770, "\(String(st.st_mode & 0o7777, radix: 8))")
        #expect(stat(preferences.appending(path: "settings.plist").path, &st) == 0 && st.st_mode & 0o777 == 0o660, "\(String(st.st_mode & 0o777, radix: 8))")
    }

    /// The reading verbs resolve a suite as the library does, with its refusals: a container
    /// whose `Library` is a link, and a suite file that is a link, are refused by `read` and
    /// `export` as by `write` (they printed the file outside before).
    @Test func readingVerbsRefuseTheLinksTheLibraryRefuses() async throws {
        let directory = try TemporaryDirectory()
        let outside = directory.file("outside")
        try FileManager.default.createDirectory(at: outside.appending(path: "Preferences"), withIntermediateDirectories: true)
        let secret = Data(PropertyListFormat.binary.encode(["theme": "outside"]))
        try secret.write(to: outside.appending(path: "Preferences/settings.plist"))
        try secret.write(to: outside.appending(path: "linked-target.plist"))
        // group.a: its Library is a link to the outside; group.b: its suite file is a link.
        try FileManager.default.createDirectory(at: directory.file("containers/group.a"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: directory.file("containers/group.a/Library"), withDestinationURL: outside)
        try FileManager.default.createDirectory(at: directory.file("containers/group.b/Library/Preferences"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: directory.file("containers/group.b/Library/Preferences/settings.plist"), withDestinationURL: outside.appending(path: "linked-target.plist"))
        for group in ["group.a", "group.b"] {
            for verb in [["read"], ["export"], ["write"]] {
                let arguments = verb + ["--group", group, "settings"] + (verb == ["write"] ? ["k", "v"] : verb == ["export"] ? ["-"] : [])
                let result = try await run(URL(filePath: "/usr/bin/env"), ["SHAREDPREFS_ROOT=\(directory.url.path)", prefsWatch.path] + arguments)
                #expect(result.status != 0 && !result.output.contains("outside</string>") && result.output.contains("link"), "\(group) \(arguments): \(result.output)")
            }
        }
        #expect(try Data(contentsOf: outside.appending(path: "Preferences/settings.plist")) == secret)
    }

    @Test func homeAndXDGDataHomeAreHonouredAsXDGSays() async throws {
        let directory = try TemporaryDirectory()
        let home = directory.file("home")
        let viaHome = try await run(URL(filePath: "/usr/bin/env"), [
            "-u", "SHAREDPREFS_ROOT", "-u", "XDG_DATA_HOME", "HOME=\(home.path)", prefsWatch.path, "write", "settings", "k", "v",
        ])
        #expect(viaHome.status == 0, "\(viaHome.output)")
        #expect(try readSuiteFile(home.appending(path: ".local/share/sharedprefs/Preferences/settings.plist")) == ["k": "v"])
        let data = directory.file("data")
        let viaXDG = try await run(URL(filePath: "/usr/bin/env"), [
            "-u", "SHAREDPREFS_ROOT", "XDG_DATA_HOME=\(data.path)", "HOME=\(home.path)", prefsWatch.path, "write", "settings", "k", "w",
        ])
        #expect(viaXDG.status == 0, "\(viaXDG.output)")
        #expect(try readSuiteFile(data.appending(path: "sharedprefs/Preferences/settings.plist")) == ["k": "w"])
        // A relative XDG_DATA_HOME is ignored, as the specification says.
        let relative = try await run(URL(filePath: "/usr/bin/env"), [
            "-u", "SHAREDPREFS_ROOT", "XDG_DATA_HOME=relative", "HOME=\(home.path)", prefsWatch.path, "write", "settings", "k", "x",
        ])
        #expect(relative.status == 0)
        #expect(try readSuiteFile(home.appending(path: ".local/share/sharedprefs/Preferences/settings.plist")) == ["k": "x"])
    }

    @Test func aPathWithoutPlistThatDoesNotExistNeedsCreate() async throws {
        let directory = try TemporaryDirectory()
        let target = directory.file("settings.conf")
        let refused = try await prefsWatchRun("write", target.path, "k", "v")
        #expect(refused.status == 1 && refused.output.contains("--create"), "\(refused.output)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try await prefsWatchRun("write", target.path, "k", "v", "--create").status == 0)
        #expect(try readSuiteFile(target) == ["k": "v"])
    }

    @Test func writingASuiteKeepsItsFormatAndMode() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("kept.plist")
        try Data(PropertyListFormat.xml.encode(["a": 1])).write(to: file)
        chmod(file.path, 0o644)
        #expect(try await prefsWatchRun("write", file.path, "b", "-int", "2").status == 0)
        #expect(try String(contentsOf: file, encoding: .utf8).hasPrefix("<?xml"))
        #expect(try readSuiteFile(file) == ["a": 1, "b": 2])
        var st = stat()
        #expect(stat(file.path, &st) == 0 && st.st_mode & 0o777 == 0o644)
    }

    @Test func datesAreRFC3339WithZoneAndFractionAndRoundTrip() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("dates.plist").path
        #expect(try await prefsWatchRun("write", path, "when", "-date", "2026-11-21T12:00:00.123+02:00").status == 0)
        let json = try await prefsWatchRun("read", path, "when", "--json")
        #expect(json.output.trimmingCharacters(in: .newlines) == "\"2026-11-21T10:00:00.123Z\"", "\(json.output)")
        let text = try await prefsWatchRun("read", path, "when")
        #expect(text.output.contains("2026-11-21T10:00:00.123Z"), "\(text.output)")
        // What read --json printed, written back, is the same date.
        let printed = json.output.trimmingCharacters(in: CharacterSet(charactersIn: "\"\n"))
        #expect(try await prefsWatchRun("write", path, "again", "-date", printed).status == 0)
        let stored = try readSuiteFile(directory.file("dates.plist"))
        #expect(stored["again"] == stored["when"])
    }

    @Test func controlCharactersNeverReachTheTerminalRaw() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("ctl.plist")
        let made = try await python(
            "import plistlib, sys; plistlib.dump({'k\\x1b[31m': 'a\\rb', 'nul\\x00key': 1}, open(sys.argv[1], 'wb'), fmt=plistlib.FMT_BINARY)", file.path)
        #expect(made.status == 0, "\(made.output)")
        let raw: (String) -> Bool = { $0.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\r" || $0 == "\0" } }
        for arguments in [["read", file.path], ["tail", file.path, "--initial", "--count", "2"], ["tail", file.path, "--initial", "--count", "2", "--format", "%k=%n"]] {
            let result = try await run(prefsWatch, arguments)
            #expect(result.status == 0 && !raw(result.output) && result.output.contains("\\u{1B}[31m"), "\(arguments): \(result.output.debugDescription)")
        }
        // -0: exactly one NUL per record, the key's NUL escaped.
        let framed = try await run(prefsWatch, ["tail", file.path, "--initial", "--count", "2", "-0"])
        let records = framed.output.split(separator: "\0", omittingEmptySubsequences: false)
        #expect(records.count == 3 && records.last == "" && records.contains { $0.contains("nul\\0key") }, "\(framed.output.debugDescription)")
    }

    @Test func defaultsVerbsReadWriteAndRoundTrip() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v.plist").path
        for arguments in [
            ["write", path, "s", "text"], ["write", path, "i", "-int", "-5"], ["write", path, "f", "-float", "1.5"],
            ["write", path, "b", "-bool", "yes"], ["write", path, "d", "-date", "2026-01-02T03:04:05Z"],
            ["write", path, "x", "-data", "00ff10"], ["write", path, "a", "-array", "one", "-int", "2"],
            ["write", path, "a", "-array-add", "three"], ["write", path, "m", "-dict", "k", "v", "n", "-bool", "false"],
            ["write", path, "m", "-dict-add", "k2", "-int", "3"], ["write", path, "j", #"{"nested": [1, true, "x"]}"#],
            ["write", path, "old", "gone"], ["rename", path, "old", "new"], ["write", path, "tmp", "1"], ["delete", path, "tmp"],
        ] {
            let result = try await run(prefsWatch, arguments)
            #expect(result.status == 0, "\(arguments): \(result.output)")
        }
        let expected: PlistDictionary = [
            "s": "text", "i": -5, "f": 1.5, "b": true, "d": .date(Date(timeIntervalSince1970: 1_767_323_045)),
            "x": .data(Data([0, 255, 16])), "a": ["one", 2, "three"], "m": ["k": "v", "n": false, "k2": 3],
            "j": ["nested": [1, true, "x"]], "new": "gone",
        ]
        #expect(try readSuiteFile(URL(filePath: path)) == expected)
        #expect(try await prefsWatchRun("read", path, "s").output == "text\n")
        #expect(try await prefsWatchRun("read", path, "b").output == "1\n")
        #expect(try await prefsWatchRun("read", path, "j", "--json").output == "{\"nested\":[1,true,\"x\"]}\n")
        #expect(try await prefsWatchRun("read-type", path, "m").output == "Type is dictionary\n")
        let xml = try await prefsWatchRun("read", path).output
        #expect(try PlistValue(propertyListData: Data(xml.utf8)) == .dictionary(expected))
        // export → import into another suite (through standard output and input), and list.
        let copy = directory.file("copy.plist").path
        let piped = try await run(
            URL(filePath: "/bin/bash"), ["-c", "set -o pipefail; '\(prefsWatch.path)' export '\(path)' - | '\(prefsWatch.path)' import '\(copy)' -"])
        #expect(piped.status == 0, "\(piped.output)")
        #expect(try readSuiteFile(URL(filePath: copy)) == expected)
        #expect(try await prefsWatchRun("list", "--dir", directory.url.path).output == "copy\nv\n")
    }

    @Test(arguments: [
        (["tail"], 64, "Name at least one suite"),
        (["tail", "x.plist", "--count", "0"], 64, "--count"),
        (["tail", "x.plist", "--format", "%z"], 64, "unknown letter"),
        (["tail", "x.plist", "--json", "--csv"], 64, "Choose one"),
        (["read", "..", "k"], 64, "not allowed"),
        (["read", "nosuch-suite-\(UUID().uuidString)"], 1, "does not exist"),
        (["write", "/tmp/prefs-watch-bad.plist", "k", "-int", "x"], 64, "is not an integer from"),
        (["write", "/tmp/prefs-watch-bad.plist", "k", "-intt", "5"], 64, "Unknown type flag -intt. The flags are -bool"),
        (["write", "/tmp/prefs-watch-bad.plist", "k", "-int"], 64, "-int needs a value"),
        (["write", "/tmp/prefs-watch-bad.plist", "k", "-date", "nan"], 64, "-date \"nan\" is neither ISO 8601"),
        (["write", "/tmp/prefs-watch-bad.plist", "k", "-date", "-inf"], 64, "-date \"-inf\" is neither ISO 8601"),
        (["write", "/tmp/prefs-watch-bad.plist", "k", "{\"a\": 1, \"b\": x}"], 64, "around character 14, after"),
        (["list", "--group", "group.nosuch-\(UUID().uuidString)"], 1, "has no container"),
        (["tail", "--group", "group.nosuch-\(UUID().uuidString)"], 1, "has no container"),
        (["write", "/tmp/prefs-watch-bad.plist", "k"], 64, "Missing value"),
        (["read", "/etc/hostname"], 1, "/etc/hostname is not a property list"),
        (["--frobnicate"], 64, "Usage"),
    ])
    func badArgumentsAndMissingSuitesSayWhatIsWrong(arguments: [String], status: Int32, message: String) async throws {
        let result = try await run(prefsWatch, arguments)
        #expect(result.status == status)
        #expect(result.output.contains(message), "\(result.output)")
    }

    /// The man page has ENVIRONMENT, FILES, EXIT STATUS, EXAMPLES and SEE ALSO, and the current
    /// rules.
    @Test func theManPageSaysWhereSuitesLive() async throws {
        let page = try String(contentsOf: repositoryRoot.appending(path: "docs/man/prefs-watch.1"), encoding: .utf8)
        for expected in [".Sh ENVIRONMENT", "Ev SHAREDPREFS_ROOT", "Ev XDG_DATA_HOME", ".Sh FILES", ".<suite>.plist.lock", "--create", ".It 64", ".Sh EXAMPLES", ".Xr inotifywait 1"] {
            #expect(page.contains(expected), "docs/man/prefs-watch.1 lacks \(expected): run docs/man/generate")
        }
    }

    /// The man page renders without a warning.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/groff"), "needs groff (apt-get install groff-base)"))
    func theManPageRendersCleanly() async throws {
        let render = try await run(URL(filePath: "/usr/bin/groff"), ["-mdoc", "-ww", "-z", repositoryRoot.appending(path: "docs/man/prefs-watch.1").path])
        #expect(render.status == 0 && render.output.isEmpty, "\(render.output)")
    }

    /// bash that sources the committed completions and defines `complete_line LINE`: completes
    /// LINE as bash does on TAB, then runs `printing` with `COMPREPLY` set.
    func bashCompletion(printing: String) -> String {
        """
        source '\(repositoryRoot.appending(path: "docs/completions/prefs-watch.bash").path)'
        complete_line() {
            COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
            read -ra COMP_WORDS <<< "$COMP_LINE"
            [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
            COMP_WORDS[0]='\(prefsWatch.path)'
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMPREPLY=()
            _prefs-watch "${COMP_WORDS[0]}" "${COMP_WORDS[$COMP_CWORD]}" "${COMP_WORDS[$COMP_CWORD-1]}"
            \(printing)
        }

        """
    }

    /// The committed bash completions, run by bash against the built binary: suite names and
    /// group identifiers, keys of the suite on the line, type flags after a key, groups after
    /// --group, directories and suite files for a path.
    @Test func bashCompletesSuitesKeysGroupsTypeFlagsAndPaths() async throws {
        let directory = try TemporaryDirectory()
        let root = ["SHAREDPREFS_ROOT": directory.url.path]
        for arguments in [["write", "settings", "theme", "dark"], ["write", "settings", "volume", "-int", "3"], ["write", "group.com.example.app", "k", "-int", "1"]] {
            #expect(try await run(prefsWatch, arguments, environment: root).status == 0)
        }
        let script = bashCompletion(printing: #"echo "${COMPREPLY[*]}""#) + """
            complete_line "prefs-watch read "
            complete_line "prefs-watch read se"
            complete_line "prefs-watch read settings vo"
            complete_line "prefs-watch write settings theme "
            complete_line "prefs-watch read --group "
            complete_line "prefs-watch tail settings --key "
            complete_line "prefs-watch read \(directory.url.path)/Pref"
            complete_line "prefs-watch read \(directory.url.path)/Preferences/"
            complete_line "prefs-watch se"
            complete_line "prefs-watch settings --key "
            complete_line "prefs-watch dom"
            complete_line "prefs-watch domains --g"
            complete_line "prefs-watch write settings theme -i"
            """
        let result = try await run(URL(filePath: "/bin/bash"), ["-c", script], environment: root)
        #expect(result.status == 0)
        #expect(result.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast() == [
            "settings group.com.example.app", "settings", "volume",
            "-bool -boolean -data -date -float -int -integer -string -array -array-add -dict -dict-add", "group.com.example.app", "theme volume",
            "\(directory.url.path)/Preferences/", "\(directory.url.path)/Preferences/settings.plist",
            "settings", "theme volume", "domains", "--group", "-int -integer",
        ], "\(result.output)")
    }

    /// zsh and fish, interactive on a pseudo-terminal with the committed completions sourced:
    /// TAB after the line shows every expected candidate (the default verb's suite names where a
    /// verb goes, `domains` as `list`, the type flags after `write`'s key).
    @Test(
        .enabled(if: ["zsh", "fish"].allSatisfy { FileManager.default.isExecutableFile(atPath: "/usr/bin/\($0)") }, "needs zsh and fish (apt-get install zsh fish)"),
        arguments: ["zsh", "fish"])
    func zshAndFishCompleteTheDefaultVerbAliasesAndTypeFlags(_ shell: String) async throws {
        let directory = try TemporaryDirectory()
        let bin = directory.file("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(at: bin.appending(path: "prefs-watch"), withDestinationURL: prefsWatch)
        let environment = [
            "SHAREDPREFS_ROOT": directory.url.path, "HOME": directory.url.path, "XDG_CONFIG_HOME": directory.url.path,
            // fish keeps a runtime folder (fish.$USER) there: in the test's directory, not the system's.
            "XDG_RUNTIME_DIR": directory.url.path, "TMPDIR": directory.url.path,
            "PATH": bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        ]
        for arguments in [["write", "settings", "theme", "dark"], ["write", "sessions", "n", "-int", "1"]] {
            #expect(try await run(prefsWatch, arguments, environment: environment).status == 0)
        }
        let script = repositoryRoot.appending(path: "docs/completions/prefs-watch.\(shell)").path
        for (line, expected) in [("prefs-watch se", ["sessions", "settings"]), ("prefs-watch dom", ["domains"]), ("prefs-watch write settings theme -d", ["-date", "-dict-add"])] {
            let typed = try await run(URL(filePath: "/usr/bin/env"), ["python3", "-c", Self.typeAndTab, shell, script, line] + expected, environment: environment)
            #expect(typed.status == 0, "\(shell): \(line)<TAB> did not show \(expected):\n\(typed.output)")
        }
    }

    /// Types a line and TAB into an interactive zsh or fish on a pseudo-terminal that sourced
    /// the script, and waits until every expected word is on the screen (exit 0) or 20 s pass.
    static let typeAndTab = #"""
        import os, pty, re, select, sys, time
        shell, script, line, expected = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
        setup = {
            "zsh": f"autoload -U compinit; compinit -u -D; source {script}; compdef _prefs-watch prefs-watch; echo READY\n",
            "fish": f"source {script}; echo READY\n",
        }[shell]
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update(PS1="> ", TERM="xterm")
            os.execvp(shell, [shell, "-f", "-i"] if shell == "zsh" else [shell, "-i", "--no-config"])
        screen = b""
        def text():
            return re.sub(rb"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07|\x1b[()][AB0-9]|\x1b[=>]", b"", screen)
        def wait(predicate, seconds=20):
            global screen
            end = time.time() + seconds
            while time.time() < end:
                if select.select([fd], [], [], 0.1)[0]:
                    try:
                        screen += os.read(fd, 65536)
                    except OSError:
                        return False
                    if predicate(text()):
                        return True
            return False
        os.write(fd, setup.encode())
        ready = wait(lambda s: s.count(b"READY") >= 2)
        screen = b""
        os.write(fd, (line + "	").encode())
        shown = ready and wait(lambda s: all(word.encode() in s for word in expected))
        print(text().decode(errors="replace")[-2000:])
        os.kill(pid, 9)
        sys.exit(0 if shown else 1)
        """#

    /// Keys and file names that hold `$(…)`, backquotes and `$HOME` (anyone who may write a
    /// suite, or name a file, chooses them): TAB in bash runs none of them, and each candidate,
    /// as bash reads it back from the command line, is the literal key or path. A key with a
    /// newline, which cannot be one candidate, is left out.
    @Test func bashCompletionRunsNothingAKeyOrFileNameHolds() async throws {
        let directory = try TemporaryDirectory()
        let root = ["SHAREDPREFS_ROOT": directory.url.path]
        let keys = ["$(touch key-dollar)", "`touch key-backquote`", "$HOME", "two words", "it's"]
        #expect(try await run(prefsWatch, ["write", "settings", "plain", "1"], environment: root).status == 0)
        let planted = try await python(
            """
            import plistlib, sys
            keys = sys.argv[2:] + ['new\\nline']
            for path in (sys.argv[1] + '/Preferences/settings.plist', sys.argv[1] + '/Preferences/$(touch name-dollar).plist'):
                with open(path, 'wb') as f: plistlib.dump({k: 1 for k in keys}, f, fmt=plistlib.FMT_BINARY)
            """, [directory.url.path] + keys)
        #expect(planted.status == 0, "\(planted.output)")
        // Each candidate as the shell reads it once it is on the command line.
        let script = "cd '\(directory.url.path)'\n" + bashCompletion(printing: #"for candidate in "${COMPREPLY[@]}"; do eval "set -- $candidate"; printf '%s\n' "$1"; done"#) + """
            complete_line "prefs-watch read settings "
            echo --
            cd Preferences
            complete_line "prefs-watch read ./"
            """
        let result = try await run(URL(filePath: "/bin/bash"), ["-c", script], environment: root)
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n").map(String.init)
        let dash = try #require(lines.firstIndex(of: "--"), "\(result.output)")
        #expect(Set(lines[..<dash]) == Set(keys), "\(result.output)")
        #expect(Set(lines[(dash + 1)...]) == ["./settings.plist", "./$(touch name-dollar).plist"], "\(result.output)")
        let ran = try [directory.url.path, directory.url.path + "/Preferences"].flatMap { try FileManager.default.contentsOfDirectory(atPath: $0) }
            .filter { $0.hasPrefix("key-") || $0.hasPrefix("name-") }
        #expect(ran.isEmpty, "planted commands ran: \(ran)")
    }

    #if !InotifyTools
    /// The completions in docs/ are what the default build generates (no `--raw`, which only
    /// the InotifyTools trait has).
    @Test(arguments: ["bash", "zsh", "fish"])
    func theCommittedCompletionsMatchTheDefaultBuild(_ shell: String) async throws {
        let generated = try await prefsWatchRun("--generate-completion-script", shell)
        let committed = repositoryRoot.appending(path: "docs/completions/prefs-watch.\(shell)")
        #expect(generated.output == (try String(contentsOf: committed, encoding: .utf8)), "regenerate docs/completions (README)")
        #expect(!generated.output.contains("--raw"))
    }
    #endif

    #if InotifyTools
    @Test func rawPrintsFileLevelEventsThroughLibinotifytools() async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let tail = try Launched(prefsWatch, ["tail", file.path, "--raw", "--initial"])
        try await tail.records.wait(for: 1)
        try await child("set", file.path, "theme=str:raw")
        // A write: renamed over the suite (MOVED_TO), beside the per-key record. Its temporary
        // file is made, written and closed in the directory of writes, which is not watched.
        let records = try await tail.records.wait(until: { records in
            records.contains { $0.hasSuffix(" RAW \(file.path) MOVED_TO") } && records.contains { $0.contains("theme: \"dark\" -> \"raw\"") }
        })
        #expect(records.first?.contains("theme = \"dark\"") == true)
        #expect(!records.contains { $0.contains(".tmp") || $0.contains("CLOSE_WRITE") }, "\(records)")
        kill(tail.pid, SIGTERM)
    }
    #endif
}

/// `prefs-watch edit`, driven by scripted editors: Python programs given as `$EDITOR`.
@Suite("prefs-watch edit")
struct PrefsWatchEditTests {
    /// An `$EDITOR` that loads the file it is given with plistlib, runs `body` (with `d` the
    /// dictionary and `path` the file), and saves `d` back as XML, as a user's editor would.
    func editor(_ body: String, in directory: borrowing TemporaryDirectory) throws -> [String: String] {
        let script = directory.file("editor-\(UUID().uuidString).py")
        try """
            import os, plistlib, subprocess, sys
            path = sys.argv[1]
            text = open(path).read()
            d = plistlib.loads(text.encode())
            \(body)
            plistlib.dump(d, open(path, 'wb'))
            """.write(to: script, atomically: true, encoding: .utf8)
        return ["EDITOR": "python3 \(script.path)", "VISUAL": "", "PREFS_WATCH": prefsWatch.path]
    }

    func edit(_ arguments: [String], _ environment: [String: String]) async throws -> ProcessResult {
        try await run(prefsWatch, ["edit"] + arguments, environment: environment)
    }

    /// The path `prefs-watch` says it kept the edited file at.
    func keptFile(in output: String) -> String? {
        output.range(of: "kept in ").map { String(output[$0.upperBound...].prefix { $0 != "\n" }).trimmingCharacters(in: CharacterSet(charactersIn: ".")) }
    }

    @Test func editWritesOnlyTheKeysTheUserChanged() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        let moment = Date(timeIntervalSince1970: 1_700_000_000.25)
        let suite = try PreferenceSuite(fileURL: file)
        suite.set("dark", forKey: "theme")
        suite.set(3, forKey: "volume")
        suite.set(true, forKey: "old")
        suite.set(moment, forKey: "when")  // XML shows whole seconds: untouched, the fraction stays
        suite.set("\u{1B}[1mbold", forKey: "esc")  // XML cannot show it: not in the document, never removed
        try await suite.flush()

        let result = try await edit([file.path], try editor("""
            assert 'prefs-watch edit' in text and 'Not shown' in text and 'esc' not in d, text
            d['theme'] = 'light'; del d['old']; d['new'] = 5
            """, in: directory))
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains(#"Set "new", "theme"."#) && result.output.contains(#"Removed "old"."#), "\(result.output)")
        #expect(try readSuiteFile(file) == ["theme": "light", "volume": 3, "new": 5, "when": .date(moment), "esc": "\u{1B}[1mbold"])

        // One key: only it is shown and changed; another key in the edit is refused, nothing changed.
        let one = try await edit([file.path, "volume"], try editor("assert list(d) == ['volume'], d; d['volume'] = 9", in: directory))
        #expect(one.status == 0 && one.output.contains(#"Set "volume"."#), "\(one.output)")
        #expect(try readSuiteFile(file)["volume"] == 9)
        let other = try await edit([file.path, "volume"], try editor("d['theme'] = 'x'", in: directory))
        #expect(other.status == 1 && other.output.contains("only \"volume\" is edited here"), "\(other.output)")
        #expect(try readSuiteFile(file)["theme"] == "light")
        if let kept = keptFile(in: other.output) { try FileManager.default.removeItem(atPath: URL(filePath: kept).deletingLastPathComponent().path) }
    }

    @Test func aKeyChangedMeanwhileIsAConflictShownNotOverwritten() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set("dark", forKey: "theme")
        suite.set(3, forKey: "volume")
        try await suite.flush()

        // While the editor is open, another process writes theme; the user changes theme and volume.
        let result = try await edit([file.path], try editor("""
            subprocess.run([os.environ['PREFS_WATCH'], 'write', \(String(reflecting: file.path)), 'theme', 'blue'], check=True)
            d['theme'] = 'light'; d['volume'] = 4
            """, in: directory))
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains(#"Set "volume"."#), "\(result.output)")
        #expect(result.output.contains(#"Conflict: "theme" changed in another process while you edited: it was "dark", it is now "blue"; you wrote "light". It was not overwritten."#), "\(result.output)")
        #expect(try readSuiteFile(file) == ["theme": "blue", "volume": 4])
        let kept = try #require(keptFile(in: result.output))
        #expect(try String(contentsOfFile: kept, encoding: .utf8).contains("<string>light</string>"))
        try FileManager.default.removeItem(atPath: URL(filePath: kept).deletingLastPathComponent().path)
    }

    @Test func anEditThatFailsChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        let file = try await suiteWithTheme(directory)
        let before = try Data(contentsOf: file)

        let failing = try await edit([file.path], ["VISUAL": "false"])
        #expect(failing.status == 1 && failing.output.contains("The editor (false) exited with status 1; nothing was changed"), "\(failing.output)")
        let keptAfterFailure = try #require(keptFile(in: failing.output))
        try FileManager.default.removeItem(atPath: URL(filePath: keptAfterFailure).deletingLastPathComponent().path)
        let untouched = try await edit([file.path], ["VISUAL": "true"])
        #expect(untouched.status == 0 && untouched.output.contains("No key was changed"), "\(untouched.output)")
        let emptied = try await edit([file.path], ["VISUAL": "truncate -s 0"])
        #expect(emptied.status == 0 && emptied.output.contains("The file was empty; nothing was changed"), "\(emptied.output)")
        // Not a property list any more: with no terminal to ask on, the edit is kept, nothing applied.
        let broken = try await edit([file.path], ["VISUAL": "sed -i s/dict/dcit/"])
        #expect(broken.status == 1 && broken.output.contains("The edited file is not a property list"), "\(broken.output)")
        let kept = try #require(keptFile(in: broken.output))
        #expect(try String(contentsOfFile: kept, encoding: .utf8).contains("<dcit>"))
        try FileManager.default.removeItem(atPath: URL(filePath: kept).deletingLastPathComponent().path)
        #expect(try Data(contentsOf: file) == before)

        // On a terminal, a broken edit is offered again; the second save is applied.
        let twice = directory.file("twice.sh")
        try "#!/bin/sh\nif [ -e \"$1.once\" ]; then sed -i 's/dcit/dict/; s/dark/light/' \"$1\"; else touch \"$1.once\"; sed -i s/dict/dcit/ \"$1\"; fi\n"
            .write(to: twice, atomically: true, encoding: .utf8)
        chmod(twice.path, 0o755)
        let again = try await run(
            URL(filePath: "/bin/sh"), ["-c", "printf 'y\\n' | script -qec \"$PW edit \(file.path)\" /dev/null"],
            environment: ["VISUAL": twice.path, "PW": prefsWatch.path])
        #expect(again.status == 0 && again.output.contains("Edit again? [Y/n]") && again.output.contains(#"Set "theme"."#), "\(again.output)")
        #expect(try readSuiteFile(file) == ["theme": "light"])

        // A file that is no property list is refused before any editor runs, and left as it was.
        let passwd = directory.file("passwd")
        try Data("root:x:0:0:root:/root:/bin/sh\n".utf8).write(to: passwd)
        let refused = try await edit([passwd.path], ["VISUAL": "touch /nonexistent/never-run"])
        #expect(refused.status == 1 && refused.output.contains("is not a property list"), "\(refused.output)")
        #expect(try Data(contentsOf: passwd) == Data("root:x:0:0:root:/root:/bin/sh\n".utf8))
    }
}

/// A `prefs-watch tail` whose standard output the test reads only when it says: a reader of the
/// output that stops, and goes on.
final class HeldTail: @unchecked Sendable {
    private let process = Process()
    private let output = Pipe()
    private let exit = Recorder<Int32>()
    /// Bytes read after the last complete record.
    private(set) var rest: [UInt8] = []
    var pid: Int32 { process.processIdentifier }

    init(_ arguments: [String]) throws {
        process.executableURL = prefsWatch
        process.arguments = ["tail"] + arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exit = exit
        process.terminationHandler = { exit.record($0.terminationStatus) }
        try process.run()
    }

    /// Reads records (lines) until `enough` holds for those read by this call, or the output
    /// ends, on a thread of its own (a read blocks); past `timeout`, tail is killed, which ends
    /// its output: the records that came are returned, for the test's expectations to judge.
    func records(timeout: Duration = defaultTimeout, until enough: @escaping @Sendable ([String]) -> Bool) async throws -> [String] {
        let finished = Recorder<Bool>()
        let pid = pid
        Task {
            if (try? await finished.wait(for: 1, timeout: timeout)) == nil { kill(pid, SIGKILL) }
        }
        defer { finished.record(true) }
        return try await withCheckedThrowingContinuation { continuation in
            Thread { [self] in
                var records: [String] = []
                let reader = output.fileHandleForReading
                while !enough(records) {
                    let chunk = reader.availableData
                    if chunk.isEmpty { break }
                    rest += chunk
                    while let end = rest.firstIndex(of: 10) {
                        records.append(String(decoding: rest[..<end], as: UTF8.self))
                        rest.removeSubrange(...end)
                    }
                }
                continuation.resume(returning: records)
            }.start()
        }
    }

    /// Waits until tail has filled the pipe to its reader: it is blocked inside a write. (No
    /// event says so: the pipe is looked at every 5 ms.)
    func waitUntilTheReaderIsBehind(timeout: Duration = defaultTimeout) async throws {
        let fd = output.fileHandleForReading.fileDescriptor
        let capacity = fcntl(fd, 1032)  // F_GETPIPE_SZ
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var unread: Int32 = 0
            if ioctl(fd, UInt(FIONREAD), &unread) == 0, unread >= capacity { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        struct NeverBehind: Error {}
        throw NeverBehind()
    }

    /// Its exit status and why it ended, once it has.
    func status() async throws -> (Int32, Process.TerminationReason) {
        let status = try await exit.wait(for: 1)[0]
        return (status, process.terminationReason)
    }
}
