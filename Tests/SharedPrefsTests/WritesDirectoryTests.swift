import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// The directory of writes (`.sharedprefs-writes`) is used only where it admits no writer the
/// suite directory does not admit and works; anything else falls back to the suite directory,
/// and a write never reports success for a file it did not write.
@Suite("Directory of writes")
struct WritesDirectoryTests {
    /// Someone who may write the directory of writes renames a file of theirs over the temporary
    /// file of a write, just before its rename: the write is made again in the suite directory,
    /// says so once in the log, and the suite holds what it wrote. The next write's temporary
    /// file is in the suite directory; swapped there, the write fails and says why. (Before,
    /// both writes reported success, and the suite held the swapped-in file.)
    @Test(.enabled(if: testHooksBuiltIn, "needs the library's test hooks (a debug build)"))
    func aTemporaryFileSwappedBeforeItsRenameIsNeverReportedWritten() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        try await child("set", file.path, "first=int:1")  // makes the directory of writes
        let writes = directory.file(".sharedprefs-writes")
        #expect(FileManager.default.fileExists(atPath: writes.path))
        let writer = try Launched(childExecutable, ["paced-writes", file.path, "3"])
        let foreign = Data(PlistValue.dictionary(["foreign": 1]).propertyListData(format: .binary))

        // In the directory of writes: swapped, then written again in the suite directory.
        let first = try await writer.records.wait(for: 1)[0]
        #expect(first == "renaming \(writes.path)/" + first.split(separator: "/").last!, "\(first)")
        try foreign.write(to: writes.appending(path: "mine"))
        #expect(rename(writes.appending(path: "mine").path, String(first.dropFirst("renaming ".count))) == 0)
        try writer.send("")
        // The write made again stops before its rename too, in the suite directory.
        let again = try await writer.records.wait(for: 2)[1]
        #expect(again.hasPrefix("renaming \(directory.url.path)/.s.plist."), "\(again)")
        try writer.send("")
        #expect(try await writer.records.wait(for: 3)[2] == "written 0", "\(writer.records.items) \(writer.standardError)")
        #expect(try readSuiteFile(file) == ["first": 1, "paced": 0])
        #expect(try await writer.errorLines(1).contains { $0.contains(".sharedprefs-writes is no longer used by this process") && $0.contains("replaced before its rename") })

        // In the suite directory: swapped, and the write fails, saying so.
        let second = try await writer.records.wait(for: 4)[3]
        #expect(second.hasPrefix("renaming \(directory.url.path)/.s.plist."), "\(second)")
        try foreign.write(to: directory.file("mine"))
        #expect(rename(directory.file("mine").path, String(second.dropFirst("renaming ".count))) == 0)
        try writer.send("")
        let failed = try await writer.records.wait(for: 5)[4]
        #expect(failed.hasPrefix("failed 1 ") && failed.contains("is not the one written"), "\(failed)")
        // The third write is whole again.
        _ = try await writer.records.wait(for: 6)
        try writer.send("")
        #expect(try await writer.records.wait(for: 7)[6] == "written 2")
        #expect(try await writer.status() == 0)
        #expect(try readSuiteFile(file) == ["foreign": 1, "paced": 2])
    }

    /// A directory of writes this process may not write (its own, mode 0500; another member's,
    /// 2755, as a foreign writer made it) is passed over: writes go through the suite directory
    /// and succeed. (Before, every write failed with "Permission denied".)
    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run writers under other uids"), arguments: [(PermissionTests.alice, UInt32(0o500)), (PermissionTests.bob, UInt32(0o2755))])
    func aDirectoryOfWritesThisProcessMayNotWriteIsPassedOver(owner: uid_t, mode: UInt32) async throws {
        let directory = try TemporaryDirectory()
        chmod(directory.url.path, 0o755)
        let container = directory.file("container")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: false)
        #expect(chown(container.path, PermissionTests.alice, PermissionTests.sharedGroup) == 0 && chmod(container.path, 0o2770) == 0)
        let writes = container.appending(path: ".sharedprefs-writes")
        try FileManager.default.createDirectory(at: writes, withIntermediateDirectories: false)
        #expect(chown(writes.path, owner, PermissionTests.sharedGroup) == 0 && chmod(writes.path, mode_t(mode)) == 0)
        let file = container.appending(path: "s.plist")
        for value in 1...2 {
            let result = try await childUnderStrictUmask(as: (PermissionTests.alice, PermissionTests.sharedGroup), "set", file.path, "k=int:\(value)")
            #expect(result.status == 0, "\(result.output)")
            #expect(try readSuiteFile(file) == ["k": .integer(Int64(value))])
        }
    }

    /// A directory of writes that is another mount of the same file system (a bind mount): the
    /// rename from it fails with EXDEV; the write is made in the suite directory instead, said
    /// once in the log, and so is every later write of the process. (Before, every write failed
    /// with EXDEV and advice to check the disk.)
    @Test(.enabled(if: getuid() == 0, "needs root to bind-mount a directory"))
    func aBindMountOnTheDirectoryOfWritesFallsBackOnce() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("s.plist")
        try await child("set", file.path, "first=int:1")
        let writes = directory.file(".sharedprefs-writes")
        let elsewhere = directory.file("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: false)
        chmod(elsewhere.path, 0o700)
        try #require(system("/bin/mount --bind '\(elsewhere.path)' '\(writes.path)'") == 0)
        defer { _ = system("/bin/umount -l '\(writes.path)'") }
        let result = try await run(childExecutable, ["writes", file.path, "3"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.components(separatedBy: "EXDEV").count == 2, "said once: \(result.output)")
        #expect(try readSuiteFile(file)["n"] == 2)
    }
}
