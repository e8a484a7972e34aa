#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import Foundation
import SharedPrefsLocking
import Synchronization

/// The parts of a suite's atomic replace that no observer needs to wait for, done before or after
/// the write by the ``Housekeeper``:
/// - making the next temporary file, an unnamed (`O_TMPFILE`) inode with the last file's size
///   preallocated: on ext4 without a journal, allocating an inode while others were freed in the
///   last seconds costs more than the rest of the write, and a rename that replaces a file
///   allocates the new file's blocks before it returns (`auto_da_alloc`);
/// - closing the file the write before made. While it is open, the rename that replaces it does
///   not free it (the kernel frees an unlinked inode at its last close), and its close comes when
///   nothing waits for it. What is held is a read-only descriptor (``SuiteFile/UnnamedFile``),
///   whose close wakes no watcher of the directory; closing one open for writing would.
///
/// A file open in a directory keeps the kernel from reporting the directory's removal
/// (`IN_DELETE_SELF` comes at the last close), and keeps its file system from being unmounted. So
/// the files are let go as soon as the suite file is deleted or moved away (``releaseAll()``, from
/// the watcher), and ``idleRelease`` after a suite's last write; the process holds at most
/// ``limit`` for all its suites, those waiting to be closed among them. Past it, a write makes and
/// closes its file itself, as it would without this.
final class WriteAhead: Sendable {
    private struct State {
        /// An unnamed file made in the directory with identity `directory`, ready to be written.
        var spare: (file: SuiteFile.UnnamedFile, directory: FileIdentity)?
        /// The file this suite wrote last, closed after the next write replaces it.
        var written: CInt?
        /// Files replaced since, for the housekeeper to close.
        var replaced: [CInt] = []
        /// Whether the housekeeper has a job of this suite queued: one at a time, however many
        /// writes come while it waits for an idle CPU.
        var queued = false
        /// When this suite last wrote, and whether a check for idleness is scheduled.
        var lastWrite = ContinuousClock.now
        var idleCheckScheduled = false
    }

    private let state = Lock(State())
    /// Descriptors held for this by every suite of the process.
    private static let held = Atomic<Int>(0)
    static let limit = 8
    static let idleRelease: Duration = .seconds(5)

    deinit {
        releaseAll()
    }

    private static func reserve(_ count: Int = 1) -> Bool {
        if held.add(count, ordering: .relaxed).newValue <= limit { return true }
        held.subtract(count, ordering: .relaxed)
        return false
    }

    private static func release(_ fd: CInt) {
        Syscall.close(fd)
        held.subtract(1, ordering: .relaxed)
    }

    /// Whether the file this suite wrote last is held open.
    var holdsWritten: Bool { state.withLock { $0.written != nil } }

    /// Closes every file this suite holds.
    func releaseAll() {
        let held = state.withLock { s in
            defer { (s.spare, s.written, s.replaced) = (nil, nil, []) }
            return s.replaced + (s.spare?.file.descriptors ?? []) + [s.written].compactMap { $0 }
        }
        for fd in held { Self.release(fd) }
    }

    /// The spare file for a write to `dir`, if one was made there: for ``SuiteFile/write(_:in:as:into:)``.
    func takeSpare(for dir: OpenDirectory) -> SuiteFile.UnnamedFile? {
        guard let spare = state.withLock({ s in defer { s.spare = nil }; return s.spare }) else { return nil }
        guard spare.directory == dir.identity else {
            spare.file.descriptors.forEach(Self.release)
            return nil
        }
        Self.held.subtract(spare.file.descriptors.count, ordering: .relaxed)
        return spare.file
    }

    /// Keeps the descriptor of the file just written (`size` bytes), and has the housekeeper close
    /// the one written before and make the next spare in `file`'s directory.
    func wrote(_ fd: CInt, size: Int, to file: SuiteFile) {
        let keeps = Self.reserve()
        if !keeps { Syscall.close(fd) }
        let (queues, checksIdle) = state.withLock { s -> (Bool, Bool) in
            if let written = s.written { s.replaced.append(written) }
            s.written = keeps ? fd : nil
            s.lastWrite = .now
            defer { (s.queued, s.idleCheckScheduled) = (true, true) }
            return (!s.queued, !s.idleCheckScheduled)
        }
        if checksIdle { scheduleIdleCheck(after: Self.idleRelease) }
        guard queues else { return }
        Housekeeper.shared.run { [self] in
            let replaced = state.withLock { s in
                s.queued = false
                defer { s.replaced = [] }
                return s.replaced
            }
            for fd in replaced { Self.release(fd) }
            makeSpare(in: file, size: size)
        }
    }

    /// Lets everything go once the suite has not written for ``idleRelease``.
    private func scheduleIdleCheck(after delay: Duration) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay / .seconds(1)) { [weak self] in
            guard let self else { return }
            let idleFor = state.withLock { s -> Duration? in
                let since = ContinuousClock.now - s.lastWrite
                if since < Self.idleRelease { return since }
                s.idleCheckScheduled = false
                return nil
            }
            if let idleFor { scheduleIdleCheck(after: Self.idleRelease - idleFor) } else { releaseAll() }
        }
    }

    private func makeSpare(in file: SuiteFile, size: Int) {
        guard state.withLock({ $0.spare == nil }), Self.reserve(2) else { return }
        guard let dir = try? file.openDirectory(creating: false), let spare = file.makeUnnamedFile(in: dir) else {
            Self.held.subtract(2, ordering: .relaxed)
            return
        }
        defer { dir.close() }
        _ = sharedprefs_preallocate(spare.fd, (size + 4095) / 4096 * 4096)
        let kept = state.withLock { s -> Bool in
            if s.spare != nil { return false }
            s.spare = (spare, dir.identity)
            return true
        }
        if !kept { return spare.descriptors.forEach(Self.release) }
        // Kept first, then checked: a deletion of the suite file after this check reaches the
        // watcher, which lets the spare go (``releaseAll()``); one before it is seen here.
        guard case .success = Syscall.lstatat(dir.fd, file.fileName) else { return releaseAll() }
    }
}

/// One thread per process, at `SCHED_IDLE` priority, for work that nobody waits for: it runs
/// only when a core would otherwise idle, so it never delays a write or a change on its way to
/// an observer.
final class Housekeeper: Sendable {
    static let shared = Housekeeper()

    private let jobs = Lock<[@Sendable () -> Void]>([])
    private let ready = DispatchSemaphore(value: 0)

    private init() {
        Thread.start(named: "prefs.keeper") { [self] in
            _ = sharedprefs_run_when_idle()
            while true {
                ready.wait()
                for job in jobs.withLock({ jobs in defer { jobs = [] }; return jobs }) { job() }
            }
        }
    }

    /// Runs `job` on the housekeeper's thread, after the jobs before it.
    func run(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        ready.signal()
    }
}
