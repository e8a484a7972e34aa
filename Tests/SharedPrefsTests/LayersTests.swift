import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// System layers (administrator and vendor defaults, locks), through real processes whose
/// `SHAREDPREFS_SYSTEM_ROOT` is a temporary directory this user owns.
@Suite("Layers")
struct LayersTests {
    /// A system root with its administrator's and a vendor's directories (and their `locks/`),
    /// writable by this user only, and a directory for the suites' own files.
    final class Place {
        let directory: TemporaryDirectory
        var root: URL { directory.file("system") }
        var admin: URL { root.appending(path: "etc/sharedprefs") }
        var vendor: URL { root.appending(path: "usr/share/sharedprefs") }
        /// Where suites opened by name live (`SHAREDPREFS_ROOT`'s `Preferences`): system layers
        /// apply to suites there, not to a file of the same name elsewhere.
        var suites: URL { directory.file("root/Preferences") }
        var environment: [String: String] { ["SHAREDPREFS_SYSTEM_ROOT": root.path, "SHAREDPREFS_ROOT": directory.file("root").path] }
        /// `environment` as `env` arguments, for a process started through `/usr/bin/env`.
        var env: [String] { environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } }

        init() throws {
            directory = try TemporaryDirectory()
            for path in ["system/etc/sharedprefs/locks", "system/usr/share/sharedprefs", "root/Preferences"] {
                try FileManager.default.createDirectory(at: directory.file(path), withIntermediateDirectories: true)
            }
            for path in ["system", "system/etc", "system/etc/sharedprefs", "system/etc/sharedprefs/locks", "system/usr", "system/usr/share", "system/usr/share/sharedprefs"] {
                chmod(directory.file(path).path, 0o755)
            }
        }

        func suite(_ name: String) -> URL { suites.appending(path: name + ".plist") }

        /// Puts `contents` at `url` as an administrator's tool would: written aside, mode 0644,
        /// renamed in.
        func install(_ url: URL, _ contents: Data) throws {
            let aside = url.deletingLastPathComponent().appending(path: ".\(url.lastPathComponent).new")
            try contents.write(to: aside)
            chmod(aside.path, 0o644)
            #expect(rename(aside.path, url.path) == 0)
        }

        func install(_ url: URL, _ values: [String: PlistValue]) throws {
            try install(url, Data(PlistValue.dictionary(PlistDictionary(values)).propertyListData(format: .binary)))
        }

        func child(_ arguments: String...) async throws -> ProcessResult {
            try await run(childExecutable, arguments, environment: environment)
        }

        func prefsWatch(_ arguments: String...) async throws -> ProcessResult {
            try await prefsWatch(arguments)
        }

        func prefsWatch(_ arguments: [String]) async throws -> ProcessResult {
            try await run(SharedPrefsTests.prefsWatch, arguments, environment: environment)
        }
    }

    /// Every combination of the suite's file, an administrator's and a vendor's default, each
    /// present or absent, for a plain and a locked key: `value(forKey:)`, the typed key,
    /// `@ObservablePrefs`, `source(ofKey:)`, `isWritable` and `prefs-watch read --explain` all
    /// read what the lookup order says (locked: administrator, vendor, declared; else the file
    /// first).
    @Test func everyLayerPresentOrAbsentIsReadInTheDocumentedOrder() async throws {
        let place = try Place()
        var cases: [(name: String, value: Int, layer: String, locked: Bool, what: String)] = []
        for locked in [false, true] {
            for mask in 0..<8 {
                let (file, admin, vendor) = (mask & 1 != 0, mask & 2 != 0, mask & 4 != 0)
                let name = "s\(locked ? 1 : 0)\(mask)"
                if file { try place.install(place.suite(name), ["app.volume": 1]) }
                if admin { try place.install(place.admin.appending(path: name + ".plist"), ["app.volume": 2]) }
                if vendor { try place.install(place.vendor.appending(path: name + ".plist"), ["app.volume": 3]) }
                if locked { try place.install(place.admin.appending(path: "locks/" + name), Data("# the kiosk's volume\napp.volume\n".utf8)) }
                cases.append((
                    name, locked ? (admin ? 2 : vendor ? 3 : 5) : (file ? 1 : admin ? 2 : vendor ? 3 : 5),
                    locked ? "locked" : file ? "suite" : admin ? "administrator" : vendor ? "vendor" : "registered",
                    locked, "locked \(locked), file \(file), administrator \(admin), vendor \(vendor)"))
            }
        }
        // The library's readers, in one process for every case.
        let read = try await run(childExecutable, ["layers-each"] + cases.map { place.suite($0.name).path } + ["app.volume"], environment: place.environment)
        #expect(read.status == 0, "\(read.output)")
        let lines = read.output.split(separator: "\n").map(String.init)
        for c in cases {
            let line = "\(place.suite(c.name).path) app.volume value=\(c.value) int=\(c.value) source=\(c.layer) writable=\(!c.locked) observable=\(c.value)"
            #expect(lines.contains(line), "\(c.what): \(lines.filter { $0.hasPrefix(place.suite(c.name).path + " ") })")
        }
        // prefs-watch read --explain (a process each: under ThreadSanitizer, four of the cases).
        for c in cases where !underThreadSanitizer || ["s00", "s07", "s10", "s17"].contains(c.name) {
            let explained = try await place.prefsWatch("read", "--explain", place.suite(c.name).path, "app.volume")
            let lines = explained.output.split(separator: "\n").map(String.init)
            if c.layer == "registered" {
                #expect(explained.status == 1 && explained.output.contains("No layer of the suite"), "\(c.what): \(explained.output)")
            } else {
                #expect(explained.status == 0 && lines.count == 4 && lines[1].hasPrefix("layer: \(c.layer)") && lines[2] == "system layers: those of suite \(c.name)" && lines[3].hasPrefix("sequence: "), "\(c.what): \(explained.output)")
                #expect(lines.first == (c.value == 5 ? "(no system value: programs read their registered or declared default)" : "\(c.value)"), "\(c.what): \(explained.output)")
            }
        }
    }

    /// `-key value` among a process's arguments, for a suite opened to read them: above the
    /// suite's file and system defaults, under a lock, never written; values read as
    /// `UserDefaults` reads its argument domain (JSON, OpenStep text, else a string).
    @Test func launchArgumentsOverrideTheFileButNotALockAndAreNeverWritten() async throws {
        let place = try Place()
        let suite = place.suite("launched")
        try place.install(suite, ["app.volume": 1, "mode": "file"])
        try place.install(place.admin.appending(path: "launched.plist"), ["app.volume": 2, "kiosk": 2])
        try place.install(place.admin.appending(path: "locks/launched"), Data("kiosk\n".utf8))
        let before = try Data(contentsOf: suite)
        let read = try await place.child(
            "layers", suite.path, "app.volume", "kiosk", "mode", "--launch-arguments",
            "-app.volume", "8", "-kiosk", "9", "-mode", "argument", "--", "-after", "1")
        // (The typed read of "mode" as an Int logs that it holds a string: that line aside.)
        #expect(read.output.split(separator: "\n").filter { !$0.contains(" SharedPrefs: ") }.joined(separator: "\n") + "\n" == """
            app.volume value=8 int=8 source=launchArguments writable=true
            kiosk value=2 int=2 source=locked writable=false
            mode value="argument" int=5 source=launchArguments writable=true
            observable volume=8

            """, "\(read.output)")
        // Without the option, the same arguments are nobody's business.
        let plain = try await place.child("layers", suite.path, "app.volume", "-app.volume", "8")
        #expect(plain.output.hasPrefix("app.volume value=1 int=1 source=suite"), "\(plain.output)")
        #expect(try Data(contentsOf: suite) == before, "an argument was written")
        // The forms UserDefaults reads.
        #expect(LaunchArguments.parse(["-volume", "7", "-theme", "dark", "-flags", "(a, b)", "-window", #"{"width": 800}"#, "-legacy", #"{ title = "main window"; size = (1, 2); }"#, "-ratio", "1.5", "-whole", "7.0", "-on", "true", "-broken", "(a,", "lone", "-x"]) == [
            "volume": 7, "theme": "dark", "flags": ["a", "b"], "window": ["width": 800], "legacy": ["title": "main window", "size": ["1", "2"]], "ratio": 1.5,
            "whole": .real(7), "on": true, "broken": "(a,",
        ])
        // Nothing after `--` is read, also where it stands as the word after an option's name.
        #expect(LaunchArguments.parse(["-v", "--", "-theme", "evil"]) == [:])
        #expect(LaunchArguments.parse(["-a", "1", "--", "-b", "2"]) == ["a": 1])
        // One JSON reader, one number rule: `prefs-watch write` reads `7.0` as a real too.
        #expect(try JSONText.parse("[7, 7.0, 7e0, 18446744073709551615]") == [.integer(7), .real(7), .real(7), .unsignedInteger(18_446_744_073_709_551_615)])
    }

    /// A locked key is refused through `set` (reported), `update` (thrown), `@ObservablePrefs`,
    /// `prefs-watch write`, `import`, `edit` and `migrate`, each naming the locks file; the suite's
    /// file is left as it was.
    @Test func aWriteToALockedKeyIsRefusedEverywhereAndNothingIsWritten() async throws {
        let place = try Place()
        let suite = place.suite("kiosk")
        let locks = place.admin.appending(path: "locks/kiosk")
        try place.install(place.admin.appending(path: "kiosk.plist"), ["app.volume": 2])
        try place.install(locks, Data("app.*\n".utf8))
        try place.install(suite, ["other": "kept"])
        let before = try Data(contentsOf: suite)

        let written = try await place.child("layer-write", suite.path, "app.volume", "9")
        #expect(written.status == 0, "\(written.output)")
        let said = written.output.split(separator: "\n").map(String.init)
        #expect(said.contains { $0.hasPrefix("set keyLocked") && $0.contains(locks.path) }, "\(written.output)")
        #expect(said.contains { $0.hasPrefix("update keyLocked") && $0.contains(locks.path) }, "\(written.output)")
        #expect(said.contains("observable 2"), "\(written.output)")

        let input = place.directory.file("input.plist")
        try place.install(input, ["app.volume": 9])
        let legacy = place.directory.file("config")
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true)
        try place.install(legacy.appending(path: "legacy.plist"), ["app.theme": "dark"])
        let editor = place.directory.file("editor.py")
        try "import plistlib, sys\nd = plistlib.load(open(sys.argv[1], 'rb'))\nd['app.volume'] = 9\nplistlib.dump(d, open(sys.argv[1], 'wb'))\n".write(to: editor, atomically: true, encoding: .utf8)
        for (verb, arguments, environment) in [
            ("write", ["write", suite.path, "app.volume", "-int", "9"], [:]),
            ("import", ["import", suite.path, input.path], [:]),
            ("edit", ["edit", suite.path], ["EDITOR": "python3 \(editor.path)", "VISUAL": ""]),
            ("migrate", ["migrate", suite.path, "legacy"], ["XDG_CONFIG_HOME": legacy.path]),
        ] {
            // (An edit refused keeps the edited file, in the test's own directory.)
            let result = try await run(SharedPrefsTests.prefsWatch, arguments, environment: place.environment.merging(environment) { $1 }.merging(["TMPDIR": place.directory.url.path]) { $1 })
            #expect(result.status == 1 && result.output.contains("is locked by \(locks.path)"), "\(verb): \(result.output)")
            if verb == "edit" { #expect(result.output.contains("Your edit is kept in \(place.directory.url.path)"), "\(result.output)") }
        }
        #expect(try Data(contentsOf: suite) == before, "the suite's file changed")
        let listed = try await place.prefsWatch("locks", suite.path)
        #expect(listed.status == 0 && listed.output == "app.*\t\(locks.path)\n", "\(listed.output)")
    }

    /// A value the suite's file held before its key was locked (no reader sees it) can be
    /// removed every way there is: `removeObject`, `update`, `prefs-watch delete` of the key or
    /// the suite, `rename`. An import that would set locked keys names every one of them, or with
    /// `--skip-locked` leaves them out and says so. (Before, each removal was refused.)
    @Test func aValueALockHidesCanBeRemovedAndAnImportNamesEveryLockedKey() async throws {
        let place = try Place()
        let suite = place.suite("kiosk")
        try place.install(place.admin.appending(path: "locks/kiosk"), Data("kiosk.mode\nkiosk.url\n".utf8))
        let stored: [String: PlistValue] = ["kiosk.mode": false, "kiosk.url": "http://old", "other": 1]
        try place.install(suite, stored)
        let removed = try await place.child("layer-write", suite.path, "kiosk.mode", "-")
        #expect(removed.status == 0 && removed.output.hasPrefix("set ok\nupdate ok\n"), "\(removed.output)")
        #expect(try readSuiteFile(suite) == ["kiosk.url": "http://old", "other": 1])
        let renamed = try await place.prefsWatch("rename", suite.path, "kiosk.url", "old.url")
        #expect(renamed.status == 0, "\(renamed.output)")
        #expect(try readSuiteFile(suite) == ["old.url": "http://old", "other": 1])
        try place.install(suite, stored)
        let deleted = try await place.prefsWatch("delete", suite.path, "kiosk.mode")
        #expect(deleted.status == 0, "\(deleted.output)")
        #expect(try await place.prefsWatch("delete", suite.path).status == 0)
        #expect(try readSuiteFile(suite) == [:])

        let input = place.directory.file("input.plist")
        try place.install(input, ["kiosk.url": "http://new", "kiosk.mode": true, "theme": "dark"])
        let refused = try await place.prefsWatch("import", suite.path, input.path)
        #expect(refused.status == 1 && refused.output.contains(#"keys "kiosk.mode", "kiosk.url" of suite kiosk are locked"#), "\(refused.output)")
        #expect(try readSuiteFile(suite) == [:])
        let skipped = try await place.prefsWatch("import", suite.path, input.path, "--skip-locked")
        #expect(skipped.status == 0 && skipped.output == "Skipped 2 locked key(s): kiosk.mode, kiosk.url.\n", "\(skipped.output)")
        #expect(try readSuiteFile(suite) == ["theme": "dark"])
    }

    /// System layers apply to a suite where suites live (by name, in a group's container, or a
    /// path to either), not to a file of the same name elsewhere: the article's staging file is
    /// written, and `read --explain` says which rule applied.
    @Test func systemLayersApplyWhereTheSuiteLivesNotToAFileOfItsNameElsewhere() async throws {
        let place = try Place()
        try place.install(place.admin.appending(path: "locks/settings"), Data("kiosk.mode\n".utf8))
        try place.install(place.admin.appending(path: "settings.plist"), ["kiosk.mode": true])
        let stage = place.directory.file("stage/settings.plist")
        try FileManager.default.createDirectory(at: stage.deletingLastPathComponent(), withIntermediateDirectories: true)
        let staged = try await place.prefsWatch("write", stage.path, "kiosk.mode", "-bool", "false")
        #expect(staged.status == 0, "\(staged.output)")
        #expect(try readSuiteFile(stage) == ["kiosk.mode": false])
        let explained = try await place.prefsWatch("read", "--explain", stage.path, "kiosk.mode")
        #expect(explained.output == "0\nlayer: suite, \(stage.path)\nsystem layers: none: the file is not where suites live (the user's preferences directory or an app group's container), so no system layer applies to it, whatever its name\nsequence: 1\n", "\(explained.output)")
        // The same name where suites live: by name, by its path, and in a group's container.
        for arguments in [["settings"], [place.suite("settings").path]] {
            let refused = try await place.prefsWatch(["write"] + arguments + ["kiosk.mode", "-bool", "false"])
            #expect(refused.status == 1 && refused.output.contains("is locked by"), "\(arguments): \(refused.output)")
            let read = try await place.prefsWatch(["read", "--explain"] + arguments + ["kiosk.mode"])
            #expect(read.output.hasPrefix("1\nlayer: locked") && read.output.hasSuffix("system layers: those of suite settings\nsequence: 0\n"), "\(arguments): \(read.output)")
        }
        let group = place.admin.appending(path: "group.com.example.kiosk")
        try FileManager.default.createDirectory(at: group.appending(path: "locks"), withIntermediateDirectories: true)
        for path in [group.path, group.appending(path: "locks").path] { chmod(path, 0o755) }
        try place.install(group.appending(path: "locks/settings"), Data("kiosk.url\n".utf8))
        let container = place.directory.file("root/containers/group.com.example.kiosk/Library/Preferences/settings.plist").path
        for arguments in [["--group", "group.com.example.kiosk", "settings"], [container]] {
            let read = try await place.prefsWatch(["read", "--explain"] + arguments + ["kiosk.url"])
            #expect(read.output.hasPrefix("(no system value") && read.output.contains("locked by \(group.path)/locks/settings") && read.output.hasSuffix("system layers: those of suite settings in app group group.com.example.kiosk\nsequence: 0\n"), "\(arguments): \(read.output)")
        }
    }

    /// Another process hears an administrator's default change, a key locked and unlocked, with
    /// the layer as origin; a foreign writer's value under a locked key is no change there, and
    /// is reported once.
    @Test func layerChangesReachAnotherProcessWithTheirOrigin() async throws {
        let place = try Place()
        let suite = place.suite("watched")
        let (defaults, locks) = (place.admin.appending(path: "watched.plist"), place.admin.appending(path: "locks/watched"))
        try place.install(suite, ["app.volume": 1])
        try place.install(defaults, ["app.volume": 2, "app.theme": "light"])
        let watcher = try Launched(URL(filePath: "/usr/bin/env"), place.env + [childExecutable.path, "watch", suite.path])
        try await watcher.records.wait(for: 1)  // ready
        let tail = try Launched(URL(filePath: "/usr/bin/env"), place.env + [SharedPrefsTests.prefsWatch.path, "tail", suite.path, "--json", "--count", "5", "--initial", "--key", "app.volume"])
        try await tail.records.wait(for: 1)  // the file's value

        try place.install(defaults, ["app.volume": 2, "app.theme": "dark"])
        try await watcher.records.wait(for: 2)
        #expect(watcher.records.items.last == #"change app.theme "dark" layer=administrator"#)
        try place.install(locks, Data("app.volume\n".utf8))
        try await watcher.records.wait(for: 3)
        #expect(watcher.records.items.last == "change app.volume 2 layer=locked")
        // Each step waits for the tail too: a step read with the next one is one change there.
        try await tail.records.wait(for: 2)
        // Under the lock, a foreign writer's value changes nothing here, and is said once.
        try place.install(suite, ["app.volume": 4])
        try await watcher.records.wait(until: { $0.contains("failure keyLocked") })
        try await tail.records.wait(for: 3)
        try place.install(defaults, ["app.volume": 7, "app.theme": "dark"])
        try await watcher.records.wait(until: { $0.last?.hasPrefix("change app.volume 7") == true })
        #expect(watcher.records.items.last == "change app.volume 7 layer=administrator")
        try await tail.records.wait(for: 4)
        try FileManager.default.removeItem(at: locks)
        try await watcher.records.wait(until: { $0.last?.hasPrefix("change app.volume 4") == true })
        #expect(watcher.records.items.last == "change app.volume 4 layer=locked")
        #expect(watcher.records.items.dropFirst() == [
            #"change app.theme "dark" layer=administrator"#, "change app.volume 2 layer=locked", "failure keyLocked",
            "change app.volume 7 layer=administrator", "change app.volume 4 layer=locked",
        ], "\(watcher.records.items)")
        try watcher.closeInput()
        #expect(try await watcher.status() == 0)
        // prefs-watch tail says which layer made each change, and the ignored value.
        #expect(try await tail.status() == 0, "\(tail.standardError)")
        #expect(tail.records.items.dropFirst().map { record in
            record.contains(#""op":"error""#) && record.contains("Ignored the value of key") ? "ignored"
                : record.firstMatch(of: /"old":(.*),"new":(.*),"layer":"(\w+)"/).map { "\($0.output.1) -> \($0.output.2) \($0.output.3)" } ?? record
        } == ["1 -> 2 locked", "ignored", "2 -> 7 administrator", "7 -> 4 locked"], "\(tail.records.items)")
    }

    /// System files replaced in place, as GNU `install` replaces them (the old file unlinked, a
    /// new one written) and as `tee` rewrites them (emptied, then written), 20 times each: a
    /// running process hears no lock lapse, no default flicker and no error for the moment a
    /// file is missing or empty; a file removed for good is heard, once confirmed, as the state
    /// on disk. (Before: `kiosk.mode: true -> true [locked]` twice in 2 of 5 runs, defaults
    /// removed and re-added, an error record for the empty file.)
    @Test func aSystemFileReplacedInPlaceNeitherLapsesNorFlickers() async throws {
        let place = try Place()
        let suite = place.suite("kiosk")
        let (defaults, locks) = (place.admin.appending(path: "kiosk.plist"), place.admin.appending(path: "locks/kiosk"))
        let (defaultsData, locksData) = (Data(PlistValue.dictionary(["kiosk.mode": true, "app.theme": "light"]).propertyListData(format: .xml)), Data("kiosk.mode\n".utf8))
        try place.install(suite, ["other": 1])
        try place.install(defaults, defaultsData)
        try place.install(locks, locksData)
        let sources = place.directory.file("sources")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try defaultsData.write(to: sources.appending(path: "kiosk.plist"))
        try locksData.write(to: sources.appending(path: "locks"))
        let watcher = try Launched(URL(filePath: "/usr/bin/env"), place.env + [childExecutable.path, "watch", suite.path])
        try await watcher.records.wait(until: { $0.contains("ready") })
        for _ in 0..<20 {
            for (source, target) in [("locks", locks), ("kiosk.plist", defaults)] {
                let installed = try await run(URL(filePath: "/usr/bin/install"), ["-m", "644", sources.appending(path: source).path, target.path])
                #expect(installed.status == 0, "\(installed.output)")
            }
            try locksData.write(to: locks)  // in place: truncated, then written
            try defaultsData.write(to: defaults)
        }
        // A change after all of them, which the watcher hears after whatever they made it hear.
        try place.install(defaults, ["kiosk.mode": true, "app.theme": "dark"])
        try await watcher.records.wait(until: { $0.last == #"change app.theme "dark" layer=administrator"# })
        let heard = { watcher.records.items.filter { $0.hasPrefix("change ") || $0.hasPrefix("failure ") } }
        #expect(heard() == [#"change app.theme "dark" layer=administrator"#], "\(watcher.records.items)")
        // Removed for good: unlocked (the value stays the administrator's, the key writable).
        let known = heard().count
        try FileManager.default.removeItem(at: locks)
        try await watcher.records.wait(until: { _ in heard().count > known })
        #expect(heard().last == "change kiosk.mode true layer=locked", "\(watcher.records.items)")
        try watcher.closeInput()
        #expect(try await watcher.status() == 0)
    }

    /// A running process hears a system file or directory start or stop counting as its mode
    /// changes (`chmod go-w`, as the log advises, and `chmod g+w`), as it hears content changes.
    /// (Before, only processes started later saw the fix: no attribute change was watched.)
    @Test func aRunningProcessHearsASystemFileFixedByChmod() async throws {
        let place = try Place()
        let suite = place.suite("fixed")
        let (defaults, locks) = (place.admin.appending(path: "fixed.plist"), place.admin.appending(path: "locks/fixed"))
        try place.install(suite, ["app.volume": 1])
        try place.install(defaults, ["app.volume": 2])
        try place.install(locks, Data("app.volume\n".utf8))
        chmod(defaults.path, 0o664)
        chmod(locks.path, 0o666)
        let watcher = try Launched(URL(filePath: "/usr/bin/env"), place.env + [childExecutable.path, "watch", suite.path])
        try await watcher.records.wait(until: { $0.contains("ready") })
        let changes = { watcher.records.items.filter { $0.hasPrefix("change ") } }
        chmod(locks.path, 0o644)  // locked: the layers below the file give no value
        try await watcher.records.wait(until: { _ in changes().count == 1 })
        chmod(defaults.path, 0o644)  // the administrator's default counts, under the lock
        try await watcher.records.wait(until: { _ in changes().count == 2 })
        chmod(place.admin.path, 0o775)  // the whole directory stops counting: unlocked, the file's
        try await watcher.records.wait(until: { _ in changes().count == 3 })
        chmod(place.admin.path, 0o755)
        try await watcher.records.wait(until: { _ in changes().count == 4 })
        #expect(changes() == [
            "change app.volume - layer=locked", "change app.volume 2 layer=administrator", "change app.volume 1 layer=locked", "change app.volume 2 layer=locked",
        ], "\(watcher.records.items)")
        try watcher.closeInput()
        #expect(try await watcher.status() == 0)
    }

    /// Files no user may plant count; others are ignored, never read, and named: another owner,
    /// group- or world-writable, a symbolic link, a FIFO, a reference bomb, a directory writable by
    /// others. Each leaves the value to the layers below.
    @Test func hostileSystemFilesAreIgnoredAndNamed() async throws {
        let place = try Place()
        var cases = [
            ("group-writable", "writable by its group"), ("world-writable", "writable by every user"), ("link", "symbolic link"),
            ("fifo", "not a regular file"), ("bomb", "Ignored the system layer"),
        ]
        if getuid() == 0 { cases.append(("owned", "belongs to uid 4243")) }
        for (name, why) in cases {
            try place.install(place.vendor.appending(path: name + ".plist"), ["app.volume": 3])
            let url = place.admin.appending(path: name + ".plist")
            switch name {
            case "fifo": #expect(mkfifo(url.path, 0o644) == 0)
            case "bomb": try place.install(url, HardeningTests.referenceBomb(outer: 2_900, inner: 2_900, pad: 0))
            case "link":
                let target = place.directory.file("elsewhere.plist")
                try place.install(target, ["app.volume": 9])
                try FileManager.default.createSymbolicLink(at: url, withDestinationURL: target)
            default:
                try place.install(url, ["app.volume": 9])
                if name == "group-writable" { chmod(url.path, 0o664) }
                if name == "world-writable" { chmod(url.path, 0o646) }
                if name == "owned" { #expect(chown(url.path, 4243, 4243) == 0) }
            }
            let read = try await place.child("layers", place.suite(name).path, "app.volume")
            let lines = read.output.split(separator: "\n").map(String.init)
            #expect(read.status == 0 && lines.contains { $0.hasPrefix("failure ") && $0.contains(url.path) && $0.contains(why) }, "\(name): \(read.output)")
            #expect(lines.contains("app.volume value=3 int=3 source=vendor writable=true"), "\(name): \(read.output)")
        }
        // A locks file with a UTF-8 byte-order mark locks what it names (it used to lock
        // "\u{FEFF}app.volume", which `locks` listed as app.volume); one in UTF-16 locks nothing,
        // and says so, in the library and in prefs-watch alike.
        let bom = place.admin.appending(path: "locks/bom")
        try place.install(bom, Data([0xEF, 0xBB, 0xBF] + Array("app.volume\n".utf8)))
        let bomRead = try await place.child("layers", place.suite("bom").path, "app.volume")
        #expect(bomRead.output.contains("app.volume value=5 int=5 source=locked writable=false"), "\(bomRead.output)")
        #expect(try await place.prefsWatch("locks", "bom").output == "app.volume\t\(bom.path)\n")
        let wide = place.admin.appending(path: "locks/wide")
        try place.install(wide, Data([0xFF, 0xFE] + "app.volume\n".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
        let wideRead = try await place.child("layers", place.suite("wide").path, "app.volume")
        #expect(wideRead.output.contains("Ignored the system layer \(wide.path): it is not UTF-8 text") && wideRead.output.contains("writable=true"), "\(wideRead.output)")
        let wideLocks = try await place.prefsWatch("locks", "wide")
        #expect(wideLocks.output.contains("it is not UTF-8 text") && !wideLocks.output.contains("app.volume\t"), "\(wideLocks.output)")
        // A locks directory others may write locks nothing.
        try place.install(place.admin.appending(path: "locks/open"), Data("app.volume\n".utf8))
        chmod(place.admin.appending(path: "locks").path, 0o777)
        let open = try await place.child("layers", place.suite("open").path, "app.volume")
        #expect(open.output.contains("Ignored the system layer \(place.admin.appending(path: "locks").path)") && open.output.contains("app.volume value=5 int=5 source=registered writable=true"), "\(open.output)")
    }
}
