import Foundation
@testable import SharedPrefs
import SharedPrefsLocking
import SharedPrefsTestSupport
import Testing

/// Whether the library's test hooks (`TestingHooks`) are built in: in debug builds only.
#if SHAREDPREFS_TESTING
let testHooksBuiltIn = true
#else
let testHooksBuiltIn = false
#endif

/// Every ``TemporaryDirectory`` made, removed again at exit once the suites in them are written:
/// a suite whose values a test left pending is written by the library's exit flush, which makes
/// its directory again after the test removed it.
private let madeDirectories = Lock<[URL]>([])
private let removeMadeDirectoriesAtExit: Void = {
    atexit {
        StoreRegistry.flushAll()
        for url in madeDirectories.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
    }
}()

/// A fresh directory per test, removed afterwards (and at exit, see `madeDirectories`).
struct TemporaryDirectory: ~Copyable {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-tests-\(UUID().uuidString)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        _ = removeMadeDirectoriesAtExit
        madeDirectories.withLock { $0.append(url) }
    }
    func file(_ name: String) -> URL { url.appending(path: name) }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Runs `prefs-test-child` and expects it to succeed.
func child(_ arguments: String...) async throws {
    try await child(arguments)
}

/// ``child(_:)-(String...)`` with the arguments in an array.
func child(_ arguments: [String]) async throws {
    let result = try await run(childExecutable, arguments)
    #expect(result.status == 0, "prefs-test-child \(arguments.joined(separator: " ")) failed: \(result.output)")
}

/// Runs a Python 3 script (a foreign writer that knows nothing of SharedPrefs).
func python(_ script: String, _ arguments: String...) async throws -> ProcessResult {
    try await python(script, arguments)
}

/// ``python(_:_:)-(_,String...)`` with the arguments in an array.
func python(_ script: String, _ arguments: [String]) async throws -> ProcessResult {
    try await run(URL(filePath: "/usr/bin/env"), ["python3", "-c", script] + arguments)
}

/// Reads a suite file straight from disk, bypassing every cache.
func readSuiteFile(_ url: URL) throws -> PlistDictionary {
    try PropertyListFormat.decodeSuite(Array(try Data(contentsOf: url))).values
}

/// The built `prefs-watch`, next to the test bundle.
let prefsWatch = childExecutable.deletingLastPathComponent().appending(path: "prefs-watch")

/// Processes started by ``Launched`` and not seen to end: killed when the test process exits, so
/// that a test that fails halfway (a wait that timed out) leaves none of them running.
private let unended = Lock<Set<Int32>>([])
private let killUnendedAtExit: Void = {
    atexit {
        for pid in unended.withLock({ $0 }) {
            // Still our child (not a number the system gave to another process since).
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            let parent = stat.split(separator: ")").last?.split(separator: " ").dropFirst().first
            if parent == Substring("\(getpid())") { kill(pid, SIGKILL) }
        }
    }
}()

/// A process started in the background whose standard output is recorded record by record.
struct Launched: Sendable {
    /// Records (lines, or NUL-terminated records), as they arrive.
    let records: Recorder<String>
    private let exit: Recorder<Int32>
    private let errors: Recorder<String>
    /// The process identifier, to signal it.
    let pid: Int32
    private let input: FileHandle

    init(_ executable: URL, _ arguments: [String], separator: UInt8 = 10) throws {
        records = Recorder()
        exit = Recorder()
        errors = Recorder()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        let input = Pipe()
        process.standardInput = input
        self.input = input.fileHandleForWriting
        process.standardOutput = output
        process.standardError = error
        let (records, exit, errors) = (records, exit, errors)
        let done = Recorder<Bool>()
        _ = killUnendedAtExit
        process.terminationHandler = { process in
            unended.withLock { _ = $0.remove(process.processIdentifier) }
            // Report the status only after standard output is drained.
            Task {
                _ = try? await done.wait(for: 2)
                exit.record(process.terminationStatus)
            }
        }
        try process.run()
        pid = process.processIdentifier
        if process.isRunning { unended.withLock { _ = $0.insert(process.processIdentifier) } }
        for (pipe, sink) in [(output, records), (error, errors)] {
            let reader = pipe.fileHandleForReading
            Thread {
                var pending: [UInt8] = []
                while true {
                    let chunk = reader.availableData
                    if chunk.isEmpty { break }
                    pending += chunk
                    while let end = pending.firstIndex(of: separator) {
                        sink.record(String(decoding: pending[..<end], as: UTF8.self))
                        pending.removeSubrange(...end)
                    }
                }
                if !pending.isEmpty { sink.record(String(decoding: pending, as: UTF8.self)) }
                done.record(true)
            }.start()
        }
    }

    /// Writes a line to the process's standard input.
    func send(_ line: String) throws {
        try input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes its standard input (end of input).
    func closeInput() throws {
        try input.close()
    }

    /// Waits for the process to exit; returns its status.
    func status(timeout: Duration = defaultTimeout) async throws -> Int32 {
        try await exit.wait(for: 1, timeout: timeout)[0]
    }

    /// Waits for `count` lines on standard error; returns them.
    func errorLines(_ count: Int) async throws -> [String] {
        try await errors.wait(for: count)
    }

    /// What it printed on standard error so far (complete after `status()`).
    var standardError: String { errors.items.joined(separator: "\n") }
}

/// Runs `prefs-watch` to completion.
func prefsWatchRun(_ arguments: String...) async throws -> ProcessResult {
    try await run(prefsWatch, arguments)
}

/// The name `/proc/locks` gives the file `url` (`major:minor:inode`, in hexadecimal), if it exists.
func procLocksName(_ url: URL) -> String? {
    var st = stat()
    guard stat(url.path, &st) == 0 else { return nil }
    let device = UInt64(st.st_dev)
    return String(format: "%02x:%02x:%llu", ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff), (device & 0xff) | ((device >> 12) & ~0xff), UInt64(st.st_ino))
}

/// The `flock`s of process `pid` in `/proc/locks`, by file name: held, or waited for (`->`).
func flocks(of pid: Int32, waiting: Bool) -> Set<String> {
    let locks = Syscall.procFile("/proc/locks") ?? ""
    return Set(locks.split(separator: "\n").compactMap { line -> String? in
        var fields = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst()
        guard (fields.first == "->") == waiting else { return nil }
        if waiting { fields = fields.dropFirst() }
        let f = Array(fields)
        return f.count >= 5 && f[0] == "FLOCK" && f[3] == Substring("\(pid)") ? String(f[4]) : nil
    })
}

/// Waits until process `pid` holds the `flock` of `suite`'s lock file: it is inside a write,
/// under the suite's lock. (The kernel offers no event for it: `/proc/locks` is looked at every
/// 5 ms.)
func waitUntilWriting(_ suite: URL, by pid: Int32, timeout: Duration = defaultTimeout) async throws {
    let lock = suite.deletingLastPathComponent().appending(path: ".\(suite.lastPathComponent).lock")
    try await waitForLocks(by: pid, timeout: timeout, "hold the lock of \(suite.path)") {
        procLocksName(lock).map { flocks(of: pid, waiting: false).contains($0) } ?? false
    }
}

/// Waits until process `pid` waits for the `flock` of every one of `locks` at once (looked at
/// every 5 ms, as ``waitUntilWriting(_:by:timeout:)``).
func waitUntilWaiting(for locks: [URL], by pid: Int32, timeout: Duration = defaultTimeout) async throws {
    let names = locks.compactMap(procLocksName)
    try await waitForLocks(by: pid, timeout: timeout, "wait for \(locks.count) locks at once") {
        names.count == locks.count && Set(names).isSubset(of: flocks(of: pid, waiting: true))
    }
}

private func waitForLocks(by pid: Int32, timeout: Duration, _ what: String, _ done: @escaping @Sendable () -> Bool) async throws {
    // Looked at on a thread of its own: under ThreadSanitizer beside every other test, the
    // cooperative pool's two threads can stay blocked for minutes by tests that wait
    // synchronously, and a poll that needed one of them missed a lock held for a whole minute.
    let seen = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Thread.detachNewThread {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if done() { return continuation.resume(returning: true) }
                usleep(5_000)
            }
            continuation.resume(returning: false)
        }
    }
    struct NeverLocked: Error, CustomStringConvertible { var description: String }
    if !seen { throw NeverLocked(description: "process \(pid) did not \(what) in \(timeout)") }
}

/// A process (Python) holding the lock file `lock` (created if missing), as a writer stopped with
/// SIGSTOP would, until its standard input is closed.
func lockHolder(_ lock: URL) async throws -> Launched {
    let holder = try Launched(URL(filePath: "/usr/bin/env"), [
        "python3", "-c",
        "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
        lock.path,
    ])
    try await holder.records.wait(for: 1)
    return holder
}

/// Root may make and mount an ext2 file system on a loop device: tried once (a container may
/// refuse loop mounts even to root).
let canMountLoopDevices: Bool = {
    guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/mkfs.ext2"), FileManager.default.fileExists(atPath: "/dev/loop-control") else { return false }
    do {
        let directory = try TemporaryDirectory()
        try mountExt2WithSmallInodes(in: directory).unmount()
        return true
    } catch {
        return false
    }
}()

private struct MountFailed: Error, CustomStringConvertible { var description: String }

/// An 8 MB ext2 file system with 128-byte inodes (times in whole seconds) mounted in `directory`, and what unmounts it (lazily, as `mountBindfs`).
func mountExt2WithSmallInodes(in directory: borrowing TemporaryDirectory) throws -> (mount: URL, unmount: () -> Void) {
    let (image, mount, log) = (directory.file("ext2.img"), directory.file("ext2"), directory.file("mount.log"))
    try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: false)
    // mkfs's notes (128-byte inodes are deprecated) go to the log, not the test run's output.
    guard system("{ truncate -s 8M '\(image.path)' && /usr/sbin/mkfs.ext2 -q -F -I 128 '\(image.path)' && mount -o loop '\(image.path)' '\(mount.path)'; } >'\(log.path)' 2>&1") == 0 else {
        throw MountFailed(description: "could not make and mount ext2 at \(mount.path): \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }
    return (mount, { _ = system("/bin/umount -l '\(mount.path)'") })
}
