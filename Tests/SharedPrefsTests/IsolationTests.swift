import Dispatch
import Foundation
import SharedPrefs
import SharedPrefsLocking
import SharedPrefsTestSupport
import Testing

/// The threads of this process that read changes (`prefs.watcher`); with `waiting`, only those
/// free, waiting for events (in `epoll_wait`, where `/proc` tells), so that readers that other
/// tests of this process hold busy at the moment are not counted.
private func readerThreads(waiting: Bool = false) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.count { task in
        guard (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix("prefs.watcher") == true else { return false }
        guard waiting, let channel = try? String(contentsOfFile: "/proc/self/task/\(task)/wchan", encoding: .utf8), channel != "0" else { return true }
        return channel.contains("epoll")
    }
}

/// Writes `k` of each suite file given, in order, by an atomic replace, as a foreign writer
/// (Python's plistlib) would.
private let writeEach = """
    import os, plistlib, sys
    value = int(sys.argv[1])
    for path in sys.argv[2:]:
        with open(path + '.new', 'wb') as f: plistlib.dump({'k': value}, f, fmt=plistlib.FMT_BINARY)
        os.rename(path + '.new', path)
    """

/// What a handler that blocks, and a suite that waits, may hold up: only their own.
@Suite("Isolation and bounds") struct IsolationTests {
    /// 30 suites whose `.synchronousExternalChanges` handlers block until the test lets them go,
    /// and an ordinary observer of a 31st: its change arrives while every one of them still
    /// blocks (it took 1.0–9.1 s when a watchdog moved the reading one suite a second), and the
    /// reader threads the blocked handlers took end once they return.
    @Test func thirtyBlockedHandlersDelayNoOtherSuite() async throws {
        let directory = try TemporaryDirectory()
        let files = (0...30).map { directory.file("s\($0).plist").path }
        _ = try await python(writeEach, ["0"] + files)
        let suites = try files.map { try PreferenceSuite(fileURL: URL(filePath: $0)) }
        let blocked = Recorder<Int>()
        let returned = Recorder<Int>()
        let release = DispatchSemaphore(value: 0)
        let tokens = suites.prefix(30).enumerated().map { i, suite in
            suite.observe(.key("k"), options: .synchronousExternalChanges) { _ in
                blocked.record(i)
                release.wait()
                returned.record(i)
            }
        }
        let heard = Recorder<Int>()
        let last = suites[30].observe(.key("k")) { _ in heard.record(returned.items.count) }
        defer { withExtendedLifetime((tokens, last)) {} }
        _ = try await python(writeEach, ["1"] + files)
        // The 31st hears its change while none of the 30 has returned (none can: the test holds them).
        #expect(try await heard.wait(for: 1) == [0])
        for _ in 0..<30 { release.signal() }
        // Every blocked handler got its change (none waits behind another), and when they have
        // returned the readers they held end: three at most stay, waiting. (Other tests of this
        // process may hold more readers busy meanwhile: only the waiting ones are counted.)
        _ = try await blocked.wait(for: 30, timeout: .seconds(10))
        _ = try await returned.wait(for: 30, timeout: .seconds(10))
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while readerThreads(waiting: true) > 3 && clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(readerThreads(waiting: true) <= 3, "\(readerThreads(waiting: true)) reader threads waiting, \(readerThreads()) in all")
    }

    /// A new suite file that appears while a `.synchronousExternalChanges` handler blocks is
    /// announced while it blocks, not when the handler returns (nor, as before, never once the
    /// reading had moved to another thread). The observing process is a child: holding its
    /// readers (a test hook) holds no other test's.
    @Test(.enabled(if: testHooksBuiltIn, "needs the test hooks of a debug build"))
    func aNewSuiteIsAnnouncedWhileAHandlerBlocks() async throws {
        let directory = try TemporaryDirectory()
        let stuck = directory.file("stuck.plist").path
        _ = try await python(writeEach, ["0", stuck])
        let watcher = try Launched(childExecutable, ["watch", stuck, "--block"])
        defer { try? watcher.closeInput() }
        try await watcher.records.wait { $0.contains("ready") }
        // One foreign writer changes the suite and creates another while the events wait unread
        // (the readers held a moment), so that one read finds both.
        try watcher.send("hold")
        try await watcher.records.wait { $0.contains("ok hold") }
        _ = try await python(
            """
            import os, plistlib, sys
            for path in sys.argv[1:]:
                with open(path + '.new', 'wb') as f: plistlib.dump({'k': 1}, f, fmt=plistlib.FMT_BINARY)
            for path in sys.argv[1:]: os.rename(path + '.new', path)
            """, stuck, directory.file("fresh.plist").path)
        try watcher.send("release")
        // The handler never returns: "added fresh" comes while it blocks, or the wait fails.
        try await watcher.records.wait { $0.contains("entered") && $0.contains("added fresh") }
    }

    /// The flush at exit of 4 suites whose locks another process holds: the process waits for
    /// the four locks at once, so one lock timeout passes in all, not one per suite (it took 4
    /// timeouts), and each suite's unsaved keys are named.
    @Test func theExitFlushOfFourHeldSuitesTakesOneLockTimeout() async throws {
        let directory = try TemporaryDirectory()
        let names = (0..<4).map { "held\($0)" }
        let locks = names.map { directory.file(".\($0).plist.lock") }
        var holders: [Launched] = []
        for lock in locks { holders.append(try await lockHolder(lock)) }
        defer { for holder in holders { try? holder.closeInput() } }
        let child = try Launched(childExecutable, ["set-each"] + names.map { directory.file("\($0).plist").path } + ["--lock-timeout-ms", "5000"])
        try await waitUntilWaiting(for: locks, by: child.pid)
        #expect(try await child.status() == 0)
        let output = (child.records.items + [child.standardError]).joined(separator: "\n")
        for name in names { #expect(output.contains("pending value(s) of \(name) at exit"), "\(output)") }
    }

    /// `synchronize()` with a lock timeout of 1 s while another program appends a 4 MB suite file
    /// in place, 16 KB every 5 ms, without end: it gives up instead of reading the file again
    /// for as long as it changes (26–31 s before). How long it takes is the benchmark's to say.
    @Test func synchronizeKeepsItsBoundWhileTheFileIsRewrittenInPlace() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("streamed.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(lockTimeout: .seconds(1)))
        suite.set(0, forKey: "k")
        #expect(suite.synchronize())
        // Appends 4 MB in 16 KB pieces every 5 ms, and again from the start, until its input ends:
        // the file is never a whole property list meanwhile.
        let writer = try Launched(URL(filePath: "/usr/bin/env"), [
            "python3", "-c",
            """
            import select, sys, time
            header = b'<?xml version="1.0" encoding="UTF-8"?>\\n<plist version="1.0"><dict><key>x</key><string>'
            done = lambda: select.select([sys.stdin], [], [], 0)[0]
            with open(sys.argv[1], 'r+b') as f:
                print('writing', flush=True)
                while not done():
                    f.seek(0); f.truncate(0); f.write(header); f.flush()
                    for _ in range(256):
                        if done(): break
                        f.write(b'y' * 16384); f.flush(); time.sleep(0.005)
            """,
            file.path,
        ])
        _ = try await writer.records.wait(for: 1)
        suite.set(1, forKey: "k")  // its background write meets the file being written, as does synchronize
        // It returns false while the file is still being written (the writer goes on until told
        // to stop): it gave up, within a wait ten times its lock timeout.
        let outcome = Recorder<Bool>()
        Thread { outcome.record(suite.synchronize()) }.start()
        #expect(try await outcome.wait(for: 1, timeout: .seconds(10)) == [false])
        try writer.closeInput()
        _ = try await writer.status(timeout: .seconds(60))
    }

    /// A listener of a directory on a FUSE file system (bindfs), where inotify misses what is
    /// written through another path, is polled for as long as it lives: the poll did not hand it
    /// an inotify watch after its first tick.
    @Test(.enabled(if: canMountFUSE, "needs root, /dev/fuse and bindfs (apt-get install bindfs)"))
    func aListenerOnAFUSEDirectoryStaysPolled() async throws {
        let directory = try TemporaryDirectory()
        let (source, mount, unmount) = try mountBindfs(in: directory)
        defer { unmount() }
        let added = Recorder<String>()
        let additions = try SuiteDirectory(url: mount).observeSuiteAdditions { added.record($0) }
        defer { additions.cancel() }
        // Written beside the mount, where only polling sees them, several poll ticks apart.
        for name in ["first", "second", "third"] {
            _ = try await python(writeEach, ["1", source.appending(path: "\(name).plist").path])
            #expect(try await added.wait(until: { $0.contains(name) }).contains(name))
        }
    }

    /// `prefs-watch tail` whose reader stops reading while 100 changes of 1 KB each are made, each
    /// once tail has read the one before (more than the pipe holds): once it reads again, it
    /// gets every one, in order. The thread that reads changes never waits for the
    /// output (it did: the changes made while it waited reached it as one, and here the writer
    /// would wait for it in vain).
    @Test func aTailWhoseReaderStopsGetsEveryChangeOnceItReadsAgain() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("stalled.plist")
        try await child("set", file.path, "k=str:start")
        // Read up to the initial record, then not again until the writer is done.
        let tail = try HeldTail([file.path, "--initial", "--format", "%n"])
        defer { kill(tail.pid, SIGKILL) }
        #expect(try await tail.records { $0.count == 1 } == ["start"])
        // Each change waits until tail has read the one before: the read sets the access time that
        // the writer zeroed (relatime), so no two changes can reach its reader as one, however
        // loaded the cores. Where reads leave the access time alone (noatime), 50 ms apart.
        let writer = try await python(
            """
            import os, plistlib, sys, time
            path = sys.argv[1]
            def write(name, i):
                with open(name, 'wb') as f: plistlib.dump({'k': 'x' * 1000 + str(i)}, f, fmt=plistlib.FMT_BINARY)
                os.utime(name, ns=(0, os.stat(name).st_mtime_ns))
            def read_by_now(name, seconds):
                deadline = time.monotonic() + seconds
                while os.stat(name).st_atime_ns == 0:
                    if time.monotonic() > deadline: return False
                    time.sleep(0.001)
                return True
            write(path + '.probe', 0)
            with open(path + '.probe', 'rb') as f: f.read()
            paced = read_by_now(path + '.probe', 0)
            os.remove(path + '.probe')
            print('paced' if paced else 'noatime')
            for i in range(100):
                write(path + '.new', i)
                os.rename(path + '.new', path)
                if not paced: time.sleep(0.05)
                elif not read_by_now(path, 10): sys.exit('change %d was not read within 10 s' % i)
            """,
            file.path)
        #expect(writer.status == 0, "\(writer.output)")
        // Every change was read by tail while its reader was stopped; now the reader goes on.
        let printed = try await tail.records { $0.last?.hasSuffix("x99") == true }
        let numbers = printed.compactMap { line in Int(line.drop { $0 == "x" }) }
        if writer.output.contains("paced") {
            #expect(numbers == Array(0..<100))
        } else {
            // 50 ms apart on loaded cores, two changes can reach the reader as one (a value
            // replaced before it is read is not heard); a reader that waited for the output merged
            // the changes of its whole wait.
            #expect(numbers == numbers.sorted() && Set(numbers).count == numbers.count && numbers.last == 99, "\(numbers)")
            #expect(numbers.count >= 90, "\(100 - numbers.count) of 100 changes were not heard: \(numbers)")
        }
    }
}
