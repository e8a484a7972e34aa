import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// Whether a user namespace can be made (`unshare -U -r`) and entered (`nsenter`), and its
/// inotify instance limit set: the limit of a user's instances met for real, without touching
/// the machine's own sysctl.
let canLimitInotifyInstances: Bool = {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"), FileManager.default.isExecutableFile(atPath: "/usr/bin/nsenter") else { return false }
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/unshare")
    process.arguments = ["-U", "-r", "sh", "-c", "echo 1 > /proc/sys/user/max_inotify_instances"]
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}()

/// Runs `body` on a thread of its own, not on one of the cooperative pool's two (on this
/// machine), which the other tests' tasks need: starting 200 processes takes seconds under load.
private func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The pids of `processes` that hold an inotify instance.
private func watching(_ processes: [Launched]) -> [Int32] {
    processes.map(\.pid).filter { pid in
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == "anon_inode:inotify" }
    }
}

/// 1,000 observers of one user on one host (issue 53): one process watches a directory with
/// inotify and rings its bell for the others, who wait on it.
@Suite("Many processes")
struct ManyProcessesTests {
    /// 200 observer processes of one user, whose inotify instances are all taken but one (a user
    /// namespace whose limit is 1: as when other programs hold 127 of the 128): none polls, one
    /// holds the instance, and every change reaches every one, the library's and a foreign
    /// writer's. The process on duty is then SIGKILLed 50 times, each time after a change:
    /// another takes its duty over, and every observer left hears the next change.
    @Test(.enabled(if: canLimitInotifyInstances, "needs unshare -U -r and nsenter (a user namespace, made by root or where unprivileged ones are allowed)"))
    func twoHundredObserversPastTheInstanceLimitHearEveryChangeAndNonePolls() async throws {
        let directory = try TemporaryDirectory()
        let bells = try TemporaryDirectory()  // not in the suite's directory, whose events it would add to
        let file = directory.file("shared.plist")
        let writer = try PreferenceSuite(fileURL: file)
        writer.set(0, forKey: "n")
        #expect(writer.synchronize())
        let namespace = try Launched(URL(filePath: "/usr/bin/unshare"), ["-U", "-r", "sh", "-c", "echo 1 > /proc/sys/user/max_inotify_instances && echo ready && exec cat"])
        defer { try? namespace.closeInput() }
        try await namespace.records.wait { $0.contains("ready") }
        let count = underThreadSanitizer ? 50 : 200
        let (target, bellsPath) = (namespace.pid, bells.file("bells").path)
        var observers = try await offThePool {
            try (0..<count).map { _ in
                try Launched(URL(filePath: "/usr/bin/nsenter"), [
                    "--user", "--target", "\(target)", "--preserve-credentials",
                    "/usr/bin/env", "SHAREDPREFS_BELLS=\(bellsPath)", childExecutable.path, "watch", file.path,
                ])
            }
        }
        defer { for observer in observers { try? observer.closeInput() } }
        for observer in observers { try await observer.records.wait { $0.contains("ready") } }
        let first = observers
        #expect(try await offThePool { watching(first) }.count == 1)

        func expectEveryoneHears(_ value: Int) async throws {
            for observer in observers { try await observer.records.wait { $0.contains("change n \(value)") } }
        }
        for value in 1...5 {
            writer.set(value, forKey: "n")
            try await writer.flush()
            try await expectEveryoneHears(value)
        }
        let foreign = try await python(
            "import plistlib, os, sys; d = plistlib.load(open(sys.argv[1], 'rb')); d['n'] = 6; open(sys.argv[1] + '.tmp', 'wb').write(plistlib.dumps(d)); os.rename(sys.argv[1] + '.tmp', sys.argv[1])",
            file.path)
        #expect(foreign.status == 0, "\(foreign.output)")
        try await expectEveryoneHears(6)

        for round in 1...(underThreadSanitizer ? 10 : 50) {
            let left = observers
            let onDuty = try await offThePool { watching(left) }
            try #require(onDuty.count == 1, "round \(round): \(onDuty.count) processes hold an inotify instance")
            kill(onDuty[0], SIGKILL)
            observers.removeAll { $0.pid == onDuty[0] }
            writer.set(6 + round, forKey: "n")
            try await writer.flush()
            try await expectEveryoneHears(6 + round)
        }
        for observer in observers {
            #expect(!observer.standardError.contains("olling"), "\(observer.standardError)")
        }
    }

    /// The process that takes a directory's duty over but can add no watch there (`ENOSPC`, as
    /// when the user's watches are all taken) polls its suites and says so in its log; it hears a
    /// foreign write that nobody rings for.
    @Test func aProcessThatTakesTheDutyOverButCannotWatchPollsAndSaysSo() async throws {
        let directory = try TemporaryDirectory()
        let bells = try TemporaryDirectory()
        let file = directory.file("duty.plist")
        try await child("set", file.path, "n=int:0")
        func observer(_ options: [String] = []) throws -> Launched {
            try Launched(URL(filePath: "/usr/bin/env"), ["SHAREDPREFS_BELLS=\(bells.file("bells").path)", childExecutable.path, "watch", file.path] + options)
        }
        let onDuty = try observer()
        try await onDuty.records.wait { $0.contains("ready") }
        let other = try observer(["--fail-watches"])
        defer { try? other.closeInput() }
        try await other.records.wait { $0.contains("ready") }
        #expect(watching([onDuty, other]) == [onDuty.pid])
        kill(onDuty.pid, SIGKILL)
        let foreign = try await python(
            "import plistlib, os, sys; d = plistlib.load(open(sys.argv[1], 'rb')); d['n'] = 1; open(sys.argv[1] + '.tmp', 'wb').write(plistlib.dumps(d)); os.rename(sys.argv[1] + '.tmp', sys.argv[1])",
            file.path)
        #expect(foreign.status == 0, "\(foreign.output)")
        try await other.records.wait { $0.contains("change n 1") }
        #expect(other.standardError.contains("Polling every"), "\(other.standardError)")
    }

    /// In a process that hears a directory through its bell, a handler that runs on the thread
    /// that re-reads and blocks there for good holds that thread, never the bells: another suite's
    /// change still arrives (a thread that waits on bells starts once the re-read has run 250 ms).
    /// `--block`: a `.synchronousExternalChanges` observer's, entered on a change. `--block-failures`:
    /// a failure observer's, the process's only such handler, entered on a file that another
    /// program renamed in and that does not parse.
    @Test(arguments: ["--block", "--block-failures"])
    func aHandlerThatBlocksHoldsNoBell(_ flag: String) async throws {
        let directory = try TemporaryDirectory()
        let bells = try TemporaryDirectory()
        let (stuck, other) = (directory.file("stuck.plist"), directory.file("other.plist"))
        try await child("set", stuck.path, "k=int:0")
        try await child("set", other.path, "k=int:0")
        func observer(_ arguments: [String]) throws -> Launched {
            try Launched(URL(filePath: "/usr/bin/env"), ["SHAREDPREFS_BELLS=\(bells.file("bells").path)", childExecutable.path, "watch"] + arguments)
        }
        let onDuty = try observer([stuck.path])
        defer { try? onDuty.closeInput() }
        try await onDuty.records.wait { $0.contains("ready") }
        let blocked = try observer([stuck.path, flag, "--also", other.path])
        defer { kill(blocked.pid, SIGKILL) }
        try await blocked.records.wait { $0.contains("ready") }
        if flag == "--block" {
            try await child("set", stuck.path, "k=int:1")
            try await blocked.records.wait { $0.contains("entered") }
        } else {
            let broken = "import os, sys; open(sys.argv[1] + '.new', 'wb').write(b'<?xml version=\"1.0\"?><plist><dict><key>k'); os.rename(sys.argv[1] + '.new', sys.argv[1])"
            #expect(try await python(broken, stuck.path).status == 0)
            try await blocked.records.wait { $0.contains("entered corruptFile") }
        }
        try await child("set", other.path, "k=int:2")
        try await blocked.records.wait { $0.contains("also k 2") }
    }

    /// What stands where this user's bells should be and is not a regular file of this user's
    /// that only this user may read and write (a link, a FIFO, a file others may read, as root
    /// one of another user's: planted in `/dev/shm`, say) is not used, nor changed: the process
    /// says so and watches with an inotify instance of its own, and hears every change.
    @Test(arguments: ["link", "fifo", "readable", "foreign"])
    func bellsThatAreNotThisUsersOwnAreNotUsed(kind: String) async throws {
        if kind == "foreign", getuid() != 0 { return }  // only root can make a file of another user's
        let directory = try TemporaryDirectory()
        let bells = try TemporaryDirectory()
        let path = bells.file("bells").path
        switch kind {
        case "link":
            try Data("elsewhere".utf8).write(to: bells.file("target"))
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: bells.file("target").path)
        case "fifo": #expect(mkfifo(path, 0o600) == 0)
        case "readable":
            try Data("mine".utf8).write(to: URL(filePath: path))
            #expect(chmod(path, 0o644) == 0)
        default:
            try Data("theirs".utf8).write(to: URL(filePath: path))
            #expect(chmod(path, 0o600) == 0 && chown(path, 65534, 65534) == 0)
        }
        let before = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        let file = directory.file("s.plist")
        try await child("set", file.path, "k=int:0")
        let observer = try Launched(URL(filePath: "/usr/bin/env"), ["SHAREDPREFS_BELLS=\(path)", childExecutable.path, "watch", file.path])
        defer { try? observer.closeInput() }
        try await observer.records.wait { $0.contains("ready") }
        #expect(watching([observer]) == [observer.pid])
        let result = try await run(URL(filePath: "/usr/bin/env"), ["SHAREDPREFS_BELLS=\(path)", childExecutable.path, "set", file.path, "k=int:1"])
        #expect(result.status == 0, "\(result.output)")
        try await observer.records.wait { $0.contains("change k 1") }
        #expect(observer.standardError.contains(path), "\(observer.standardError)")
        #expect((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == before)
    }
}
