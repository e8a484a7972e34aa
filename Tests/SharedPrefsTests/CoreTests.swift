import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// The storage core's promises that the defects of issue 28 broke: nothing foreign under a lock,
/// nothing held between writes, one lock file for everyone.
@Suite("Core")
struct CoreTests {
    /// An app that opens a suite per request: open by path, set, synchronize, let it go, in four
    /// processes at once. The last reference of a suite could be dropped by the watcher thread
    /// while it held its own lock, and the suite's deinit took that lock again ("Recursive call
    /// to lock Mutex", 9 of 12 processes).
    @Test func suitesOpenedAndLetGoPerRequestNeverCrash() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("churn.plist")
        let count = underThreadSanitizer ? 200 : 1_500
        try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for _ in 0..<4 { group.addTask { try await run(childExecutable, ["churn", file.path, "\(count)"]) } }
            for try await result in group {
                #expect(result.status == 0 && result.output.contains("churned \(count)"), "\(result.output)")
            }
        }
    }

    /// A process that only writes sets no inotify watch and starts no watcher thread.
    @Test func aProcessThatOnlyWritesWatchesNothing() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(childExecutable, ["writes", directory.file("w.plist").path, "3"])
        #expect(result.status == 0 && result.output.contains("watches 0"), "\(result.output)")
    }

    /// One that observes watches the suite's directory, and its ancestors only up to the trusted
    /// directory: for a suite given by its file, the directory itself, never up to `/`.
    @Test func anObserverWatchesNothingAboveTheTrustedDirectory() async throws {
        let directory = try TemporaryDirectory()
        let nested = directory.file("a/b")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        let watcher = try Launched(childExecutable, ["watch", nested.appending(path: "s.plist").path])
        try await watcher.records.wait { $0.contains("ready") }
        try watcher.send("watches")
        let records = try await watcher.records.wait { $0.contains("ok watches") }
        #expect(records.contains("watches 1"), "\(records)")
        try watcher.closeInput()
        #expect(try await watcher.status() == 0, "\(watcher.standardError)")
    }

    /// Two processes increment a counter 400 times each while a third deletes the lock file every
    /// millisecond, so that writers often lock different lock files: the suite file's own lock
    /// keeps them apart. Nothing is lost.
    @Test func aLockFileDeletedEveryMillisecondLosesNoIncrement() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("locked.plist")
        let stop = directory.file("stop")
        let count = underThreadSanitizer ? 100 : 400
        let deleter = Task {
            try await python(
                "import os, sys, time\nwhile not os.path.exists(sys.argv[2]):\n    try: os.unlink(sys.argv[1])\n    except FileNotFoundError: pass\n    time.sleep(0.001)",
                directory.file(".locked.plist.lock").path, stop.path)
        }
        try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for id in ["a", "b"] { group.addTask { try await run(childExecutable, ["hammer", file.path, id, "\(count)"]) } }
            for try await result in group { #expect(result.status == 0, "\(result.output)") }
        }
        _ = FileManager.default.createFile(atPath: stop.path, contents: nil)
        #expect(try await deleter.value.status == 0)
        #expect(try readSuiteFile(file)["counter"] == .integer(Int64(2 * count)))
    }

    /// A deadline bounds waiting, not the suite's own work: with a lock timeout of 100 ms,
    /// `synchronize()` after 200,000 sets (background writes of a suite that grows to megabytes,
    /// each longer than the timeout) waits for the write under way and returns `true` once all
    /// is written. (Before, it gave up waiting for the write of its own values: `false`.)
    /// (Under ThreadSanitizer, 20,000 sets: each write is as long there, and the whole run's other
    /// tests are not starved of the cores for minutes.)
    @Test func synchronizeAfterAWriteLongerThanTheTimeoutSucceeds() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("large.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(durability: .none, lockTimeout: .milliseconds(100)))
        let count = underThreadSanitizer ? 20_000 : 200_000
        // On a thread of its own: seconds of sets and a blocking synchronize() on one of the
        // cooperative pool's two threads starved the run's other tests (a poll of /proc/locks
        // that did not run for 60 s under ThreadSanitizer).
        let written = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                for i in 0..<count { suite.set(i, forKey: "key.\(i)") }
                continuation.resume(returning: suite.synchronize())
            }
        }
        #expect(written)
        let stored = try readSuiteFile(file)
        #expect(stored.count == count && stored["key.\(count - 1)"] == .integer(Int64(count - 1)))
    }

    /// A process that has written forks without exec; parent and child each increment 500 times.
    /// Nothing is held between writes, so the child shares no locked file with its parent. (Not
    /// under ThreadSanitizer, which ends a forked child that starts a thread, as a lock wait does.)
    @Test(.enabled(if: !underThreadSanitizer, "ThreadSanitizer does not support threads started in a forked child"))
    func aForkedChildAndItsParentLoseNoIncrement() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("forked.plist")
        let result = try await run(childExecutable, ["fork-increments", file.path, "500"])
        #expect(result.status == 0 && result.output.contains("child 0"), "\(result.output)")
        #expect(try readSuiteFile(file)["counter"] == 1_000)
    }

    /// 100 children forked without exec while their parent is busy (a thread setting keys
    /// without pause, the owner writing them, reader threads re-reading, an observer hearing
    /// them): each writes and synchronizes, increments in an update, and hears the parent's next
    /// change, within 10 s. (Before, 29 of 30 such children stopped at their first lock: a
    /// `Mutex` held by a thread of the parent's at the fork.) Not under ThreadSanitizer, which
    /// ends a forked child that starts a thread.
    @Test(.enabled(if: !underThreadSanitizer, "ThreadSanitizer does not support threads started in a forked child"))
    func aChildForkedAtABusyMomentWritesUpdatesAndObserves() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("busy.plist")
        let result = try await run(childExecutable, ["fork-busy", file.path, "100"])
        // The result's line, among the log's (a lock waited for over a second is said, under load).
        #expect(result.status == 0 && result.output.split(separator: "\n").contains("failed 0"), "\(result.output.prefix(3000))")
        let stored = try readSuiteFile(file)
        #expect(stored["counter"] == 100 && stored.storage.keys.count { $0.string.hasPrefix("child.") } == 100, "counter \(stored["counter"].map { "\($0)" } ?? "-"), \(stored.storage.keys.count { $0.string.hasPrefix("child.") }) children's keys")
    }

    /// A child forked while a thread of its parent delivers an observer's first values (with
    /// `.initial` and `.synchronousLocalChanges`, which make a later change wait for them) gets
    /// its own change to that observer: it used to wait forever for a thread it does not have.
    @Test(.enabled(if: !underThreadSanitizer, "ThreadSanitizer does not support threads started in a forked child"))
    func aChildForkedWhileFirstValuesAreDeliveredHearsItsOwnChange() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(childExecutable, ["fork-in-first-delivery", directory.file("first.plist").path])
        #expect(result.status == 0 && result.output.hasPrefix("child 0"), "\(result.output.prefix(3000))")
    }

    /// A child forked while a thread of its parent delivers a `changes(since:)` event gets its
    /// own next write through the stream: the stream used to wait for that thread, which the
    /// child does not have.
    @Test(.enabled(if: !underThreadSanitizer, "ThreadSanitizer does not support threads started in a forked child"))
    func aChildForkedWhileAChangeStreamDeliversGetsItsOwnWrite() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(childExecutable, ["fork-in-change-stream", directory.file("stream.plist").path])
        #expect(result.status == 0 && result.output.hasPrefix("child 0"), "\(result.output.prefix(3000))")
    }

    /// A process that forks a helper (never exec'd) while it holds a suite's locks, inside an
    /// update here, lets the locks go when the write ends: the helper shares the locked files'
    /// descriptions, and closing them alone would leave every other writer waiting for the helper.
    @Test(.enabled(if: !underThreadSanitizer, "ThreadSanitizer does not support threads started in a forked child"))
    func aChildForkedDuringAWriteKeepsNoLock() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("forked.plist")
        let forking = try Launched(childExecutable, ["fork-in-update", file.path])
        try await forking.records.wait { $0.contains("written") }
        let suite = try PreferenceSuite(fileURL: file, options: .init(lockTimeout: .milliseconds(500)))
        suite.set(2, forKey: "after")
        try await suite.flush()
        #expect(try readSuiteFile(file) == ["forked": 1, "after": 2])
        try forking.closeInput()
        #expect(try await forking.status() == 0, "\(forking.standardError)")
    }

    /// A writer opens what it needs for each write and closes it before the write returns: nothing
    /// in the suite's directory stays open (it would keep the directory's file system from being
    /// unmounted, and a read-only bind mount laid over it from being seen), whether the suite is
    /// watched or polled; and the file it wrote was closed for writing with the rename, not later.
    @Test(arguments: [false, true])
    func nothingInTheDirectoryIsHeldOnceAWriteReturns(polled: Bool) async throws {
        let directory = try TemporaryDirectory()
        let writer = try Launched(childExecutable, ["watch", directory.file("idle.plist").path] + (polled ? ["--fail-watches"] : []))
        try await writer.records.wait { $0.contains("ready") }
        for count in 1...5 {
            try writer.send("write")
            let records = try await writer.records.wait { $0.count { $0 == "ok write" } == count }
            #expect(records.last { $0.hasPrefix("held ") } == "held 0", "write \(count): \(records)")
        }
        try writer.closeInput()
        #expect(try await writer.status() == 0, "\(writer.standardError)")
    }

    /// 1,000 writes leave the process's descriptor table as they found it.
    @Test func aThousandWritesLeakNoDescriptor() async throws {
        let directory = try TemporaryDirectory()
        try await expectNoDescriptorLeak(writing: directory.file("many.plist"))
    }

    /// The same on a FUSE file system (bindfs), which refuses unnamed temporary files: each write
    /// then makes a named one.
    @Test(.enabled(if: canMountFUSE, "needs root, /dev/fuse and bindfs (apt-get install bindfs)"))
    func aThousandWritesOnAFileSystemWithoutUnnamedFilesLeakNoDescriptor() async throws {
        let directory = try TemporaryDirectory()
        let (_, mount, unmount) = try mountBindfs(in: directory)
        defer { unmount() }
        try await expectNoDescriptorLeak(writing: mount.appending(path: "many.plist"))
    }

    /// Runs 1,000 writes of `file` in a child process, which counts its descriptors before and after.
    private func expectNoDescriptorLeak(writing file: URL) async throws {
        let result = try await run(childExecutable, ["writes", file.path, "1000"])
        let line = result.output.split(separator: "\n").first { $0.hasPrefix("descriptors ") }.map(String.init) ?? ""
        let counts = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        #expect(result.status == 0 && counts.count == 2 && counts[0] == counts[1], "\(result.output)")
    }

    /// `synchronize()` behind a background write that waits for the same held lock gives up, not
    /// before its deadline, and says which keys are not written; then writes them.
    @Test func synchronizeGivesUpOneLockTimeoutAfterItWasCalled() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("bound.plist")
        let holder = try await lockHolder(directory.file(".bound.plist.lock"))
        let suite = try PreferenceSuite(fileURL: file, options: .init(lockTimeout: .seconds(2)))
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        suite.set(1, forKey: "pending.key")
        let clock = ContinuousClock()
        let start = clock.now
        #expect(!suite.synchronize())
        let waited = clock.now - start
        // Not before its deadline (how soon after it is prefs-bench's row 17).
        #expect(waited >= .seconds(2), "synchronize() gave up after \(waited), with a lock timeout of 2 s")
        let reported = try await failures.wait(for: 1)
        #expect(reported[0].code == .lockTimedOut && reported[0].message.contains("Not written yet: pending.key"), "\(reported[0])")
        try holder.closeInput()
        _ = try await holder.status()
        #expect(suite.synchronize())
        #expect(try readSuiteFile(file)["pending.key"] == 1)
    }

    /// A lock timeout meant as "for ever" (`.seconds(Int64.max)`) waits for a held lock until it
    /// is free, then writes. Before, turning it into nanoseconds stopped the process (an integer
    /// overflow) at the first `synchronize()`.
    @Test func aLockTimeoutMeantAsForEverWaitsUntilTheLockIsFree() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("forever.plist")
        let holder = try await lockHolder(directory.file(".forever.plist.lock"))
        let suite = try PreferenceSuite(fileURL: file, options: .init(lockTimeout: .seconds(Int64.max)))
        suite.set(1, forKey: "k")
        let synchronized = Task.detached { suite.synchronize() }
        try await waitUntilWaiting(for: [directory.file(".forever.plist.lock")], by: getpid())
        try holder.closeInput()
        _ = try await holder.status()
        #expect(await synchronized.value)
        #expect(try readSuiteFile(file)["k"] == 1)
    }

    /// A maximum file size meant as "no limit" (`Int.max`) reads a suite file that is there, and
    /// writes. Before, opening it stopped the process (an integer overflow).
    @Test func aMaximumFileSizeMeantAsNoLimitReadsAndWrites() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("unlimited.plist")
        try Data(PropertyListFormat.binary.encode(.dictionary(["k": 1]))).write(to: file)
        let suite = try PreferenceSuite(fileURL: file, options: .init(maximumFileSize: .max))
        #expect(suite.integer(forKey: "k") == 1)
        try await suite.update { $0["k"] = 2 }
        #expect(try readSuiteFile(file)["k"] == 2)
    }

    /// The flush at exit gives up once its lock timeout passed, naming the keys it could not write.
    @Test func theExitFlushGivesUpOneLockTimeoutAfterItBegan() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("exit.plist")
        let holder = try await lockHolder(directory.file(".exit.plist.lock"))
        let result = try await run(childExecutable, ["set", file.path, "late=int:2", "--lock-timeout-ms", "2000"])
        #expect(result.output.contains("Could not save 1 pending value(s)") && result.output.contains("late"), "\(result.output)")
        // Counted by the process itself, from main's return to the end of the exit handlers.
        let took = result.output.split(separator: "\n").first { $0.hasPrefix("exit flush took ") }
            .flatMap { Int($0.split(separator: " ")[3]) }
        // It waited its timeout (how soon after it ended is prefs-bench's row 17).
        #expect(took.map { $0 >= 2_000 } == true, "\(result.output)")
        try holder.closeInput()
        _ = try await holder.status()
    }

    /// A read-only bind mount laid over a suite's directory right after a write: the next write
    /// goes where the path leads now and fails with `EROFS`, naming the path; and the mount can
    /// be taken away at once, since nothing in the directory is held open.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount"), "needs root to mount"))
    func aReadOnlyMountLaidOverTheDirectoryFailsTheNextWriteAndCanBeUnmounted() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.file("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let suite = try PreferenceSuite(fileURL: folder.appending(path: "s.plist"))
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        suite.set(1, forKey: "k")
        #expect(suite.synchronize())
        try #require(system("/bin/mount --bind '\(folder.path)' '\(folder.path)' && /bin/mount -o remount,ro,bind '\(folder.path)'") == 0)
        var mounted = true
        // Lazily, if it is busy: a failing run must leave no mount behind.
        defer { if mounted { _ = system("/bin/umount -l '\(folder.path)'") } }
        suite.set(2, forKey: "k")
        #expect(!suite.synchronize())
        let reported = try await failures.wait(for: 1)
        #expect(reported[0].errno == .readOnlyFileSystem && reported[0].message.contains(folder.path), "\(reported[0])")
        #expect(system("/bin/umount '\(folder.path)'") == 0, "the directory's mount is busy")
        mounted = system("/bin/mountpoint -q '\(folder.path)'") == 0
        #expect(suite.synchronize())
        #expect(try readSuiteFile(folder.appending(path: "s.plist"))["k"] == 2)
    }

    /// On a 2 MB tmpfs: a 700 KB value, then 50 KB, then 1.4 MB. Old and new file fit, so the last
    /// write succeeds: no file the user never asked for (a spare made ahead at the last size)
    /// takes the room.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount"), "needs root to mount"))
    func aSmallFileSystemHoldsTheOldAndTheNewFileAndNothingElse() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.file("small")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try #require(system("/bin/mount -t tmpfs -o size=2m none '\(folder.path)'") == 0)
        defer { _ = system("/bin/umount -l '\(folder.path)'") }
        let suite = try PreferenceSuite(fileURL: folder.appending(path: "s.plist"), options: .init(durability: .none))
        for size in [700_000, 50_000, 1_400_000] {
            suite.set(Data(count: size), forKey: "blob")
            #expect(suite.synchronize(), "a write of \(size) bytes failed")
        }
        #expect(try readSuiteFile(folder.appending(path: "s.plist"))["blob"] == .data(Data(count: 1_400_000)))
    }

    /// An idle `tail` wakes only for changes: four threads (main, blocked in `pause`; two
    /// readers, blocked in `epoll_wait`, three once two were busy at once; the output writer,
    /// waiting for records) and no armed timer, also after it printed a change. (Run as tasks, it
    /// had six threads and two timer descriptors, one re-armed every second.)
    @Test func anIdleTailRunsFourThreadsAndNoArmedTimer() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("idle.plist")
        try await child("set", file.path, "k=int:1")
        let tail = try Launched(prefsWatch, ["tail", file.path, "--initial", "--json"])
        defer { kill(tail.pid, SIGTERM) }
        try await tail.records.wait(for: 1)
        try await child("set", file.path, "k=int:2")
        try await tail.records.wait(for: 2)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(tail.pid)/task")
        let names = try tasks.map { try String(contentsOfFile: "/proc/\(tail.pid)/task/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
        // ThreadSanitizer's runtime adds a thread of its own, named like the process.
        let expected = (underThreadSanitizer ? ["prefs-watch"] : []) + ["prefs-watch", "prefs-watch.out"]
        #expect(names.filter { $0 != "prefs.watcher" }.sorted() == expected, "\(names)")
        #expect((2...3).contains(names.count { $0 == "prefs.watcher" }), "\(names)")
        // The readers' poll timer exists, disarmed: it is armed only while something is polled.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(tail.pid)/fd")
        let timers = try descriptors.filter { try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(tail.pid)/fd/\($0)").contains("timerfd") }
        for timer in timers {
            let info = try String(contentsOfFile: "/proc/\(tail.pid)/fdinfo/\(timer)", encoding: .utf8)
            #expect(info.contains("it_value: (0, 0)"), "an armed timer: \(info)")
        }
    }
}
