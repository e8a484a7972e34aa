#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import Foundation
import SharedPrefsLocking
import Synchronization

/// The files a suite keeps open between its reads and writes, so that neither opening them nor
/// freeing them is on the way to an observer:
/// - the suite's directory and its lock file. A read or write that finds the directory's path
///   still leading to the directory held (one `stat`) uses it instead of walking the path again
///   (``DirectoryLocation``), and takes the lock through the lock file held, checked to be still
///   the one at its name (one `fstatat`), instead of opening it again;
/// - the next temporary file, made by the ``Housekeeper``: an unnamed (`O_TMPFILE`) inode with the
///   last file's size preallocated. On ext4 without a journal, allocating an inode while others
///   were freed in the last seconds costs more than the rest of the write, and a rename that
///   replaces a file allocates the new file's blocks before it returns (`auto_da_alloc`);
/// - the file the write before made, closed by the housekeeper. While it is open, the rename that
///   replaces it does not free it (the kernel frees an unlinked inode at its last close), and its
///   close comes when nothing waits for it. What is held is a read-only descriptor
///   (``SuiteFile/UnnamedFile``), whose close wakes no watcher of the directory; closing one open
///   for writing would.
///
/// A file open in a directory keeps the kernel from reporting the directory's removal
/// (`IN_DELETE_SELF` comes at the last close), and keeps its file system from being unmounted. So
/// the files are let go as soon as the suite file is deleted or moved away (``releaseAll()``, from
/// the watcher), when a read finds no suite file, and ``idleRelease`` after the suite's last write
/// or read of a change; the process holds at most ``DescriptorBudget/process`` (16) for all its
/// suites, those waiting to be closed among them. Past it, a read or write opens and closes its
/// files itself, as it would without this.
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
        /// The suite's directory and lock file, held between reads and writes.
        var directory: OpenDirectory?
        var lock: SuiteFile.LockFile?
        /// Whether a read or write is using them (the store runs one at a time), and whether they
        /// are to be closed once it is done.
        var inUse = false
        var releaseWhenDone = false
        /// When this suite last wrote or read a change, and whether a check for idleness is scheduled.
        var lastUse = ContinuousClock.now
        var idleCheckScheduled = false

        /// Notes a use; returns whether an idle check must be scheduled.
        mutating func used() -> Bool {
            lastUse = .now
            defer { idleCheckScheduled = true }
            return !idleCheckScheduled
        }
    }

    private let state = Lock(State())
    private let budget: DescriptorBudget
    static let idleRelease: Duration = .seconds(5)

    /// - Parameter budget: What all the holders share (the process's, but in tests).
    init(budget: DescriptorBudget = .process) {
        self.budget = budget
    }

    deinit {
        releaseAll()
    }

    /// Whether the file this suite wrote last is held open.
    var holdsWritten: Bool { state.withLock { $0.written != nil } }

    /// Closes every file this suite holds; the directory and lock file once the read or write
    /// using them is done.
    func releaseAll() {
        let held = state.withLock { s in
            defer { (s.spare, s.written, s.replaced) = (nil, nil, []) }
            var held = s.replaced + (s.spare?.file.descriptors ?? []) + [s.written].compactMap { $0 }
            if s.inUse { s.releaseWhenDone = true } else { held += Self.takeDirectory(&s) }
            return held
        }
        for fd in held { budget.release(fd) }
    }

    /// Takes the held directory and lock file out of `s`, for closing.
    private static func takeDirectory(_ s: inout State) -> [CInt] {
        defer { (s.directory, s.lock) = (nil, nil) }
        return [s.directory?.fd, s.lock?.fd].compactMap { $0 }
    }

    // MARK: The directory and the lock file

    /// The suite's directory for one read or write (under the store's I/O exclusion): the one
    /// held, when `file`'s directory path still leads to it and it is not writable by every user
    /// without the sticky bit, or else opened by a walk (``SuiteFile/openDirectory(creating:)``).
    /// Every call is followed by ``done(with:keepsOpen:changed:)``, even when it throws.
    ///
    /// The check follows links in the path, as `open` would: what it proves is that the
    /// descriptor is the directory the path names now, the one a walk made safely before.
    func openDirectory(_ file: SuiteFile, creating: Bool) throws(PreferenceError) -> OpenDirectory? {
        let held = state.withLock { s in
            s.inUse = true
            return s.directory
        }
        if let held {
            if case .success(let st) = Syscall.stat(file.directory), FileIdentity(st) == held.identity,
                !DirectoryLocation.isInsecure(st.st_mode) {
                return OpenDirectory(fd: held.fd, mode: st.st_mode, identity: held.identity)
            }
            for fd in state.withLock({ Self.takeDirectory(&$0) }) { budget.release(fd) }
        }
        return try file.openDirectory(creating: creating)
    }

    /// Ends a read or write that ``openDirectory(_:creating:)`` began, with `dir` as it returned
    /// (`nil` for none): keeps `dir` (and the lock file taken in it) open when `keepsOpen` (the
    /// suite file exists) and nothing asked for them to be let go, or else closes them.
    /// - Parameter changed: Whether it wrote or read a change. Only such a use keeps the files
    ///   open for ``idleRelease`` more: a suite polled every 100 ms (on a file system inotify
    ///   cannot watch) that does not change must not hold its directory for ever.
    func done(with dir: OpenDirectory?, keepsOpen: Bool, changed: Bool) {
        let (release, close, checksIdle) = state.withLock { s -> ([CInt], CInt?, Bool) in
            s.inUse = false
            defer { s.releaseWhenDone = false }
            // Opened by this read or write, or else the one held (closed by `takeDirectory`).
            let opened = dir.flatMap { $0.fd == s.directory?.fd ? nil : $0.fd }
            guard keepsOpen, !s.releaseWhenDone, let dir else { return (Self.takeDirectory(&s), opened, false) }
            guard opened != nil else { return ([], nil, changed && s.used()) }
            // The one held, if any, was let go when this one was opened.
            guard changed, s.directory == nil, budget.reserve() else { return ([], dir.fd, false) }
            s.directory = dir
            return ([], nil, s.used())
        }
        for fd in release { budget.release(fd) }
        if let close { Syscall.close(close) }
        if checksIdle { scheduleIdleCheck(after: Self.idleRelease) }
    }

    /// Takes the suite's lock in `dir`, from ``openDirectory(_:creating:)``, through the lock
    /// file held when it is still the one in `dir` (``SuiteFile/relock(_:in:)``). Let go with
    /// ``unlock(_:)``.
    func lock(_ file: SuiteFile, in dir: OpenDirectory) throws(PreferenceError) -> CInt {
        if let held = state.withLock({ $0.lock }) {
            do throws(PreferenceError) {
                if try file.relock(held, in: dir) { return held.fd }
            } catch {
                // A wait that timed out may still take the lock through a duplicate of this
                // descriptor (``LockWait``) and give it back: it must never be used again.
                dropLock(held)
                throw error
            }
            dropLock(held)
        }
        let lock = try file.lock(in: dir)
        // Held only in a directory held: they are let go together.
        state.withLock { s in
            if s.lock == nil, s.directory?.fd == dir.fd, budget.reserve() { s.lock = lock }
        }
        return lock.fd
    }

    /// Lets the lock go: unlocks the lock file held, or closes one that is not.
    func unlock(_ fd: CInt) {
        guard let held = state.withLock({ $0.lock }), held.fd == fd else { return Syscall.close(fd) }
        if case .failure = Syscall.lock(fd, LOCK_UN) { dropLock(held) }
    }

    private func dropLock(_ lock: SuiteFile.LockFile) {
        let taken = state.withLock { s in
            guard s.lock?.fd == lock.fd else { return false }
            s.lock = nil
            return true
        }
        if taken { budget.release(lock.fd) }
    }

    /// The spare file for a write to `dir`, if one was made there: for ``SuiteFile/write(_:in:as:into:)``.
    func takeSpare(for dir: OpenDirectory) -> SuiteFile.UnnamedFile? {
        guard let spare = state.withLock({ s in defer { s.spare = nil }; return s.spare }) else { return nil }
        guard spare.directory == dir.identity else {
            spare.file.descriptors.forEach(budget.release)
            return nil
        }
        budget.unreserve(spare.file.descriptors.count)
        return spare.file
    }

    /// Keeps the descriptor of the file just written (`size` bytes), and has the housekeeper close
    /// the one written before and make the next spare in `file`'s directory.
    func wrote(_ fd: CInt, size: Int, to file: SuiteFile) {
        let keeps = budget.reserve()
        if !keeps { Syscall.close(fd) }
        let (queues, checksIdle) = state.withLock { s -> (Bool, Bool) in
            if let written = s.written { s.replaced.append(written) }
            s.written = keeps ? fd : nil
            defer { s.queued = true }
            return (!s.queued, s.used())
        }
        if checksIdle { scheduleIdleCheck(after: Self.idleRelease) }
        guard queues else { return }
        Housekeeper.shared.run { [self] in
            let replaced = state.withLock { s in
                s.queued = false
                defer { s.replaced = [] }
                return s.replaced
            }
            for fd in replaced { budget.release(fd) }
            makeSpare(in: file, size: size)
        }
    }

    /// Lets everything go once the suite has not written or read a change for ``idleRelease``.
    private func scheduleIdleCheck(after delay: Duration) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay / .seconds(1)) { [weak self] in
            guard let self else { return }
            let idleFor = state.withLock { s -> Duration? in
                let since = ContinuousClock.now - s.lastUse
                if since < Self.idleRelease { return since }
                s.idleCheckScheduled = false
                return nil
            }
            if let idleFor { scheduleIdleCheck(after: Self.idleRelease - idleFor) } else { releaseAll() }
        }
    }

    private func makeSpare(in file: SuiteFile, size: Int) {
        guard state.withLock({ $0.spare == nil }), budget.reserve(2) else { return }
        guard let dir = try? file.openDirectory(creating: false), let spare = file.makeUnnamedFile(in: dir) else {
            budget.unreserve(2)
            return
        }
        defer { dir.close() }
        _ = sharedprefs_preallocate(spare.fd, (size + 4095) / 4096 * 4096)
        let kept = state.withLock { s -> Bool in
            if s.spare != nil { return false }
            s.spare = (spare, dir.identity)
            return true
        }
        if !kept { return spare.descriptors.forEach(budget.release) }
        // Kept first, then checked: a deletion of the suite file after this check reaches the
        // watcher, which lets the spare go (``releaseAll()``); one before it is seen here.
        guard case .success = Syscall.lstatat(dir.fd, file.fileName) else { return releaseAll() }
    }
}

/// How many descriptors ``WriteAhead`` may hold open, for all the suites that share it.
final class DescriptorBudget: Sendable {
    /// The process's: 16.
    static let process = DescriptorBudget(limit: 16)

    let limit: Int
    private let held = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `count` from the budget; `false`, taking nothing, when it would go over the limit.
    func reserve(_ count: Int = 1) -> Bool {
        if held.add(count, ordering: .relaxed).newValue <= limit { return true }
        held.subtract(count, ordering: .relaxed)
        return false
    }

    /// Gives `count` back without closing anything (the descriptors were handed on).
    func unreserve(_ count: Int) {
        held.subtract(count, ordering: .relaxed)
    }

    /// Closes a descriptor held, and gives its place back.
    func release(_ fd: CInt) {
        Syscall.close(fd)
        held.subtract(1, ordering: .relaxed)
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
