import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

@Suite("Files and directories")
struct FileSystemTests {
    @Test func suitesForTheSameFileShareOneLiveStore() throws {
        let directory = try TemporaryDirectory()
        let group = try AppGroup(identifier: "group.shared", containerURL: directory.url)
        let first = try PreferenceSuite(suiteName: "prefs", in: group)
        let second = try PreferenceSuite(fileURL: group.preferencesDirectory.appending(path: "prefs.plist"))
        first.set("visible at once", forKey: "k")
        #expect(second.string(forKey: "k") == "visible at once")
        #expect(first.store === second.store)
        // Written now, not by the flush at exit, after the directory is gone (which made it again).
        #expect(first.synchronize())
    }

    @Test func groupSuitesResolveUnderTheRootAndGetSharedModes() async throws {
        let directory = try TemporaryDirectory()
        setenv("SHAREDPREFS_ROOT", directory.url.path, 1)
        defer { unsetenv("SHAREDPREFS_ROOT") }
        let suite = try #require(PreferenceSuite(suiteName: "group.com.example.tests"))
        let expected = directory.url.appending(path: "containers/group.com.example.tests/Library/Preferences/group.com.example.tests.plist")
        #expect(suite.fileURL?.standardizedFileURL == expected.standardizedFileURL)
        suite.set(1, forKey: "k")
        #expect(suite.synchronize())
        // Exactly, whatever the umask: a group container is for every member of the group.
        let rewrite = try await childUnderStrictUmask("set", expected.path, "k=int:2")
        #expect(rewrite.status == 0, "\(rewrite.output)")
        var st = stat()
        #expect(stat(expected.path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o660)
        #expect(stat(expected.deletingLastPathComponent().path, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o2770)
        // The directory of writes too, for every member's temporary files.
        #expect(stat(expected.deletingLastPathComponent().appending(path: SuiteFile.writesDirectoryName).path, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o2770)
        let plain = try #require(PreferenceSuite(suiteName: "plain"))
        #expect(plain.fileURL?.path.hasSuffix("/Preferences/plain.plist") == true)
    }

    @Test func aSymlinkWhereTheSuiteFileShouldBeIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let target = directory.file("target.plist")
        try Data(PropertyListFormat.binary.encode(["secret": 1])).write(to: target)
        try FileManager.default.createSymbolicLink(at: directory.file("linked.plist"), withDestinationURL: target)
        let error = #expect(throws: PreferenceError.self) { try PreferenceSuite(fileURL: directory.file("linked.plist")) }
        #expect(error?.code == .symbolicLink)
        #expect(error?.message.contains("linked.plist") == true)
        // A link planted after the suite was opened: the write refuses it too.
        let suite = try PreferenceSuite(fileURL: directory.file("later.plist"))
        try FileManager.default.createSymbolicLink(at: directory.file("later.plist"), withDestinationURL: target)
        suite.set(2, forKey: "k")
        let flushError = await #expect(throws: PreferenceError.self) { try await suite.flush() }
        #expect(flushError?.code == .symbolicLink)
        #expect(try readSuiteFile(target) == ["secret": 1])
    }

    @Test func symlinksPlantedAsTemporaryFilesAreRemovedNeverFollowed() async throws {
        let directory = try TemporaryDirectory()
        let outside = try TemporaryDirectory()
        let target = outside.file("target")
        try Data("untouched".utf8).write(to: target)
        // Links named like a dead writer's temporary files: to a file, to a directory, and to
        // a file that does not exist yet.
        let planted = [("file", target), ("directory", outside.url), ("dangling", outside.file("created"))].map { name, destination in
            let link = directory.file(".planted.plist.\(name).tmp")
            try? FileManager.default.createSymbolicLink(at: link, withDestinationURL: destination)
            return link
        }
        let suite = try PreferenceSuite(fileURL: directory.file("planted.plist"))
        suite.set(1, forKey: "k")
        try await suite.flush()
        #expect(try readSuiteFile(directory.file("planted.plist")) == ["k": 1])
        for link in planted {
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == nil, "\(link.lastPathComponent) is still there")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.url.path) == ["target"])
        #expect(try Data(contentsOf: target) == Data("untouched".utf8))
    }

    /// The events a write sends the suite directory, as its observers' watch asks for them: one
    /// rename, once the directory of writes is there (its creation is the first write's event).
    /// The writer is a child process that starts no other: a process that forks while a write
    /// has its temporary file open lends the file to the new process, and the file's last close
    /// (an `IN_CLOSE_WRITE`, under the suite's name by then) comes when that process execs or
    /// exits. This test process starts children for other tests at any moment.
    @Test func aWriteSendsTheSuiteDirectoryOneEvent() async throws {
        let directory = try TemporaryDirectory()
        let writer = try Launched(childExecutable, ["watch", directory.file("one.plist").path])
        try await writer.records.wait { $0.contains("ready") }
        try writer.send("write")
        try await writer.records.wait { $0.contains("ok write") }
        let inotify = inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC))
        defer { close(inotify) }
        #expect(inotify_add_watch(inotify, directory.url.path, InotifyWatcher.mask) >= 0)
        // Read after each write: inotify merges an event with the same one still unread.
        var buffer = [UInt8](repeating: 0, count: 4096)
        for count in 2...4 {
            try writer.send("write")
            try await writer.records.wait { $0.count { $0 == "ok write" } == count }
            var events: [String] = []
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            var offset = 0
            while offset < count {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let name = buffer[nameStart..<(nameStart + Int(event.len))].prefix { $0 != 0 }
                events.append("\(event.mask == UInt32(IN_MOVED_TO) ? "MOVED_TO" : "0x" + String(event.mask, radix: 16)) \(String(decoding: name, as: UTF8.self))")
                offset = nameStart + Int(event.len)
            }
            #expect(events == ["MOVED_TO one.plist"])
        }
        try writer.closeInput()
        #expect(try await writer.status() == 0, "\(writer.standardError)")
    }

    /// Something else where the directory of writes should be: a link to another directory, a
    /// file, a FIFO, a directory that everyone may write, or (as root) one of another user. None
    /// is used or changed; writes make their temporary files in the suite directory instead, and
    /// lose nothing.
    @Test func aDirectoryOfWritesThatCannotBeTrustedIsNotUsed() async throws {
        let outside = try TemporaryDirectory()
        var cases: [(String, (URL) throws -> Void)] = [
            ("link", { try FileManager.default.createSymbolicLink(at: $0, withDestinationURL: outside.url) }),
            ("file", { try Data("mine".utf8).write(to: $0) }),
            ("fifo", { #expect(mkfifo($0.path, 0o600) == 0) }),
            ("everyone's", { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
                #expect(chmod(url.path, 0o777) == 0)
            }),
        ]
        if geteuid() == 0 {
            cases.append(("another user's", { url in
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
                #expect(chown(url.path, 4321, 4321) == 0 && chmod(url.path, 0o700) == 0)
            }))
        }
        for (kind, plant) in cases {
            let directory = try TemporaryDirectory()
            let writes = directory.file(SuiteFile.writesDirectoryName)
            try plant(writes)
            let before = try FileManager.default.attributesOfItem(atPath: writes.path)
            let suite = try PreferenceSuite(fileURL: directory.file("planted.plist"))
            for value in 1...3 {
                suite.set(value, forKey: "k")
                try await suite.flush()
            }
            #expect(try readSuiteFile(directory.file("planted.plist")) == ["k": 3], "\(kind)")
            let after = try FileManager.default.attributesOfItem(atPath: writes.path)
            #expect(before[.type] as? FileAttributeType == after[.type] as? FileAttributeType && before[.modificationDate] as? Date == after[.modificationDate] as? Date, "\(kind): \(after)")
            if kind != "link", before[.type] as? FileAttributeType == .typeDirectory {
                #expect(try FileManager.default.contentsOfDirectory(atPath: writes.path).isEmpty, "\(kind)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasSuffix(".tmp") }.isEmpty, "\(kind)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.url.path).isEmpty)
    }

    @Test func aWorldWritableDirectoryWithoutStickyBitIsRefused() throws {
        let directory = try TemporaryDirectory()
        let open = directory.file("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        chmod(open.path, 0o777)
        let error = #expect(throws: PreferenceError.self) { try PreferenceSuite(fileURL: open.appending(path: "s.plist")) }
        #expect(error?.code == .insecureDirectory)
        #expect(error?.message.contains("chmod o-w \(open.path)") == true)
        chmod(open.path, 0o1777)
        #expect(throws: Never.self) { try PreferenceSuite(fileURL: open.appending(path: "s.plist")) }
    }

    @Test func aRemovedAndRecreatedDirectoryIsWatchedAgain() async throws {
        let directory = try TemporaryDirectory()
        let container = directory.file("container")
        let file = container.appending(path: "again.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(1, forKey: "a")
        try await suite.flush()
        let (all, token) = suite.record(.all)
        defer { _ = token }
        try FileManager.default.removeItem(at: container)
        let removal = try await all.wait(for: 1)
        #expect(removal[0].key == "a" && removal[0].isRemoval && removal[0].origin == .external)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        try await child("set", file.path, "b=int:2")
        let changes = try await all.wait(for: 2)
        #expect(changes[1].key == "b" && changes[1].newValue == 2)
        // And it stays watched: a later write arrives too.
        try await child("set", file.path, "b=int:3")
        #expect(try await all.wait(for: 3)[2].newValue == 3)
    }

    @Test func xmlFormatAndNoDurabilityAreHonoured() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("xml.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(format: .xml, durability: .none))
        suite.set("x", forKey: "k")
        try await suite.flush()
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.hasPrefix("<?xml") && text.contains("<key>k</key>"))
    }
}
