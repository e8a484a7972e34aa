import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// Root may mount a FUSE file system (bindfs, from Debian's packages) for the polling test.
let canMountFUSE = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/bindfs")
    && FileManager.default.fileExists(atPath: "/dev/fuse")

/// A FUSE file system (bindfs) in `directory`: `source` seen through `mount`, and what unmounts it (lazily: a descriptor still open in it leaves no mount behind).
func mountBindfs(in directory: borrowing TemporaryDirectory) throws -> (source: URL, mount: URL, unmount: () -> Void) {
    let (source, mount) = (directory.file("source"), directory.file("mount"))
    for url in [source, mount] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false) }
    // bindfs daemonizes, and Foundation's Process does not see its parent exit: use system(3).
    // It starts with standard input, output and error only: a daemon holding this process's
    // descriptors (the write ends of other children's standard input) would keep them from ever
    // reading the end of their input, and running, if this process died before unmounting it.
    let start = "import os, sys; os.closerange(3, os.sysconf('SC_OPEN_MAX')); os.execv('/usr/bin/bindfs', ['bindfs'] + sys.argv[1:])"
    try #require(system("/usr/bin/env python3 -c \"\(start)\" '\(source.path)' '\(mount.path)'") == 0, "bindfs could not mount \(mount.path)")
    let daemon = try FileManager.default.contentsOfDirectory(atPath: "/proc").first { pid in
        (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.contains(mount.path) == true
    }
    func descriptors(of pid: String) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") })
    }
    // None of this process's pipes or sockets (fuse_daemonize's own pipe, closed a moment after
    // it starts, is not one of them).
    let ours = try descriptors(of: "self").filter { $0.hasPrefix("pipe:") || $0.hasPrefix("socket:") }
    let held = try daemon.map(descriptors(of:))
    #expect(held?.isDisjoint(with: ours) == true, "bindfs holds \(held ?? []), of this process's \(ours)")
    return (source, mount, { _ = system("/bin/umount -l '\(mount.path)'") })
}

@Suite("The watcher under stress")
struct WatcherStressTests {
    @Test func anInotifyQueueOverflowEndsInTheExactFinalStateAndIsReported() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("flooded.plist")
        try await child("set", file.path, "a=int:1", "b=int:2")
        // The watcher is another process, so holding its watcher thread stalls no other test.
        let watcher = try Launched(childExecutable, ["watch", file.path])
        try await watcher.records.wait { $0.contains("ready") }
        try watcher.send("hold")
        try await watcher.records.wait { $0.contains("ok hold") }

        // More events than the kernel queues for one inotify instance, while nobody reads them;
        // then the change that matters, which cannot be queued any more.
        let limit = Int(try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16_384
        let flood = try await python(
            "import os, sys\nfor i in range(int(sys.argv[2])): open(os.path.join(sys.argv[1], 'flood%d' % i), 'w').close()",
            directory.url.path, String(limit + 1_000))
        #expect(flood.status == 0, "\(flood.output)")
        try await child("set", file.path, "a=int:10", "b=-", "c=str:new")
        try watcher.send("release")

        let records = try await watcher.records.wait { $0.contains("failure watchOverflowed") && $0.count { $0.hasPrefix("change") } == 3 }
        try watcher.send("dump")
        let dumped = try await watcher.records.wait { $0.contains("ok dump") }
        #expect(records.filter { $0.hasPrefix("change") }.sorted() == ["change a 10", "change b -", "change c \"new\""], "\(records)")
        #expect(dumped.contains("values a=10,c=new"), "\(dumped)")
        try watcher.closeInput()
        #expect(try await watcher.status() == 0, "\(watcher.standardError)")
    }

    @Test func whenInotifyAddWatchFailsWithENOSPCTheSuiteIsPolledWithAWarning() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("polled.plist")
        let watcher = try Launched(childExecutable, ["watch", file.path, "--fail-watches"])
        do {
            try await watcher.records.wait { $0.contains("ready") }
        } catch {
            Issue.record("the child never became ready; it wrote \(watcher.standardError)")
            throw error
        }
        try await child("set", file.path, "k=int:1")
        try await watcher.records.wait { $0.contains("change k 1") }
        try watcher.closeInput()
        #expect(try await watcher.status() == 0)
        let log = watcher.standardError
        #expect(log.contains("inotify_add_watch") && log.contains("fs.inotify.max_user_watches") && log.contains("Polling every 100 ms"), "\(log)")
    }

    @Test(.enabled(if: canMountFUSE, "needs root, /dev/fuse and bindfs (apt-get install bindfs)"))
    func aSuiteOnAFileSystemWithoutInotifyEventsIsPolled() async throws {
        let directory = try TemporaryDirectory()
        let (source, mount, unmount) = try mountBindfs(in: directory)
        defer { unmount() }
        let suite = try PreferenceSuite(fileURL: mount.appending(path: "remote.plist"))
        let (all, token) = suite.record(.all)
        defer { _ = token }
        // Another machine's write, as far as this mount can tell: through the directory underneath,
        // which produces no inotify event on the FUSE mount.
        try await child("set", source.appending(path: "remote.plist").path, "k=int:1")
        let changes = try await all.wait(for: 1)
        #expect(changes[0].key == "k" && changes[0].newValue == 1 && changes[0].origin == .external)
    }

    @Test func anUpdateWaitingForAnotherSuitesChangeDoesNotStallTheWatcher() async throws {
        let directory = try TemporaryDirectory()
        let a = try PreferenceSuite(fileURL: directory.file("a.plist"))
        let b = try PreferenceSuite(fileURL: directory.file("b.plist"))
        let go = DispatchSemaphore(value: 0)
        let token = b.observe(.key("go")) { _ in go.signal() }
        defer { _ = token }

        // An update of a whose body waits for a change of b, which only the watcher can bring.
        // The wait is long because it also covers this test's own steps below (a Python writer,
        // a child process), which need the task pool; under ThreadSanitizer, CPU-bound tests can
        // hold both threads of a 2-core pool for over a minute (this failed twice so, at 60 s).
        // It returns as soon as the change arrives.
        let started = Recorder<Bool>()
        let outcome = Recorder<Bool>()
        Thread {
            let sawGo = try? a.update { tx -> Bool in
                started.record(true)
                return go.wait(timeout: .now() + .seconds(10 * Int(defaultTimeout.components.seconds))) == .success
            }
            outcome.record(sawGo ?? false)
        }.start()
        try await started.wait(for: 1)
        // While a's I/O is held, a changes (a foreign writer that takes no lock; its re-read must
        // not make the watcher wait for the update), then b.
        let foreign = try await python(
            "import os, plistlib, sys\nwith open(sys.argv[1] + '.tmp', 'wb') as f: plistlib.dump({'x': 1}, f)\nos.replace(sys.argv[1] + '.tmp', sys.argv[1])",
            directory.file("a.plist").path)
        #expect(foreign.status == 0, "\(foreign.output)")
        try await child("set", directory.file("b.plist").path, "go=bool:true")
        #expect(try await outcome.wait(for: 1) == [true])
    }
}
