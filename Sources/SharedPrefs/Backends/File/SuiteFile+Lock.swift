#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import FoundationEssentials

/// Locking a suite: its lock file, then the suite file itself, each waited for until a deadline.
extension SuiteFile {
    // MARK: Locking

    /// The lock file's mode: the suite file's less read access for whoever may not write (`flock`
    /// needs only read access, and a reader holding it would block every writer): `0640` → `0600`.
    func lockMode(in dir: OpenDirectory) -> mode_t {
        let mode = options.filePermissions & 0o777 & (dir.isGroupContainer ? 0o777 : ~Syscall.umask)
        var result = mode
        for shift: mode_t in [6, 3, 0] where mode & (0o2 << shift) == 0 { result &= ~(0o4 << shift) }
        return result
    }

    /// The suite's lock file, open and locked, and what identifies it.
    struct LockFile {
        let fd: CInt
        let identity: FileIdentity
        /// What ``isCurrent(_:in:)`` found at the name (this file's status once it is locked), and
        /// when (``FileVersion/now()`` just before).
        private(set) var status: (stat, takenAt: Int64)? = nil

        /// Whether the file at `name` in `dir` is still this one: a lock taken on a file that was
        /// deleted or replaced since excludes nobody who opens the name now.
        mutating func isCurrent(_ name: String, in dir: OpenDirectory) -> Bool {
            let takenAt = FileVersion.now()
            guard case .success(let st) = Syscall.lstatat(dir.fd, name), FileIdentity(st) == identity else { return false }
            status = (st, takenAt)
            return true
        }

        /// Lets the lock go, then closes: a child forked meanwhile shares the description, and the lock,
        /// until it execs or exits.
        func unlock() {
            _ = Syscall.lock(fd, LOCK_UN)
            Syscall.close(fd)
        }
    }

    /// Takes the suite's exclusive lock by `deadline` at most (``PreferenceSuite/Options/lockTimeout``).
    /// A lock file deleted or replaced while waited for is let go and its name locked again. The kernel
    /// releases it when the process dies.
    /// - Throws: ``PreferenceError/Code/lockTimedOut`` naming the holder where `/proc/locks` tells.
    func lock(in dir: OpenDirectory, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> LockFile {
        while true {
            var lock = try lockOnce(in: dir, until: deadline)
            if lock.isCurrent(lockName, in: dir) { return lock }
            lock.unlock()
        }
    }

    /// Locks the suite file itself, once ``lock(in:until:)`` holds the lock file: a lock file can be
    /// deleted while locked, so it alone cannot keep two writers apart; the suite file is replaced only
    /// by a writer holding its lock. A file replaced while waited for is locked anew. `nil` when there
    /// is no suite file, or no regular file (the read reports it).
    ///
    /// Anyone who may read the suite file may `flock` it, so a lock held only by processes that may not
    /// write its directory is passed by. Held until the write ends, the descriptor also keeps the file
    /// the write replaces from being freed inside the rename (slow on ext4 with `discard`, tmpfs).
    func lockSuiteFile(in dir: OpenDirectory, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> LockFile? {
        while true {
            guard case .success(let fd) = Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return nil }
            guard case .success(let st) = Syscall.fstat(fd), st.st_mode & S_IFMT == S_IFREG else {
                Syscall.close(fd)
                return nil
            }
            var lock = LockFile(fd: fd, identity: FileIdentity(st))
            if case .failure(let errno) = Syscall.lock(fd, LOCK_EX | LOCK_NB) {
                if errno.rawValue == EWOULDBLOCK, onlyReadersHold(lock.identity, dir) {
                    if lock.isCurrent(fileName, in: dir) { return lock }
                    lock.unlock()
                    continue
                }
                do throws(PreferenceError) {
                    try acquire(fd, lock.identity, of: path, until: deadline)
                } catch {
                    lock.unlock()
                    throw error
                }
            }
            if lock.isCurrent(fileName, in: dir) { return lock }
            lock.unlock()
        }
    }

    /// Whether every process holding a lock on the file may not write `dir`: readers, who cannot
    /// be writers of this library. `false` when `/proc` does not tell.
    private func onlyReadersHold(_ identity: FileIdentity, _ dir: OpenDirectory) -> Bool {
        guard case .success(let st) = Syscall.fstat(dir.fd) else { return false }
        let holders = LockHolder.pids(device: identity.device, inode: identity.inode)
        return !holders.isEmpty && holders.allSatisfy { LockHolder.mayWrite(pid: $0, st) == false }
    }

    private func lockOnce(in dir: OpenDirectory, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> LockFile {
        // Read-only (closing a writable descriptor would wake every watcher) and non-blocking (a FIFO
        // planted here must not hang the open).
        let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
        var opened = Syscall.openat(dir.fd, lockName, flags)
        if case .failure(let errno) = opened, errno == .noSuchFileOrDirectory {
            createLockFile(in: dir)
            opened = Syscall.openat(dir.fd, lockName, flags | O_CREAT, lockMode(in: dir))
        }
        let fd = try opened.get("openat", path: lockPath, doing: "open the lock file")
        do throws(PreferenceError) {
            let st = try Syscall.fstat(fd).get("fstat", path: lockPath, doing: "inspect the lock file")
            guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st, path: lockPath) }
            try checkOwner(st, of: lockPath, in: dir)
            if needsModeSet(st, in: dir) {
                try Syscall.fchmod(fd, lockMode(in: dir)).get("fchmod", path: lockPath, doing: "set the mode of the lock file")
            }
            try acquire(fd, FileIdentity(st), of: lockPath, until: deadline)
            return LockFile(fd: fd, identity: FileIdentity(st))
        } catch {
            Syscall.close(fd)
            throw error
        }
    }

    /// Whether the lock file, ours, has another mode than ``lockMode(in:)`` asks for (in a group
    /// container), or gives more than it (elsewhere).
    private func needsModeSet(_ st: stat, in dir: OpenDirectory) -> Bool {
        let mode = st.st_mode & 0o777
        let wanted = lockMode(in: dir)
        return (dir.isGroupContainer ? mode != wanted : mode & ~wanted != 0) && st.st_uid == geteuid()
    }

    /// Creates the lock file with its final mode at once: unnamed, given its mode, then linked in
    /// (`EEXIST` from a lost race is fine). `open` would give the umask's mode until an `fchmod`, and a
    /// group member opening it then `EACCES`. Without unnamed files, `open` creates it.
    private func createLockFile(in dir: OpenDirectory) {
        let mode = lockMode(in: dir)
        guard Self.canLinkUnnamedFiles,
            case .success(let fd) = Syscall.openat(dir.fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode)
        else { return }
        defer { Syscall.close(fd) }
        if case .success = Syscall.fchmod(fd, mode) { _ = Syscall.linkUnnamed(fd, dir.fd, lockName) }
    }

    /// Takes the lock on `fd`, waiting until `deadline` at most (see ``LockWait``).
    private func acquire(_ fd: CInt, _ identity: FileIdentity, of lockPath: String, until deadline: ContinuousClock.Instant) throws(PreferenceError) {
        let waiting = { [options] in
            let holder = LockHolder.find(device: identity.device, inode: identity.inode).map { ", held by \($0)" } ?? ""
            logger.notice("Waiting for the lock \(lockPath)\(holder), for \(options.lockTimeout) at most.")
        }
        switch LockWait.lock(fd, path: lockPath, timeout: max(deadline - .now, .zero), saying: waiting) {
        case .success(true): return
        case .success(false):
            let holder = LockHolder.find(device: identity.device, inode: identity.inode).map { " It is held by \($0)." } ?? ""
            throw PreferenceError(
                code: .lockTimedOut,
                message: "Gave up after \(options.lockTimeout) waiting for the lock \(lockPath).\(holder) A stopped or hung process, or one that only reads the lock file, is holding it: end that process, or raise PreferenceSuite.Options.lockTimeout. The values stay pending and are written by the next flush.",
                path: lockPath, systemCall: "flock")
        case .failure(let errno): throw PreferenceError.system("flock", errno, path: lockPath, doing: "lock")
        }
    }

    /// Whether this machine can name an unnamed file through `/proc/self/fd` (for `O_TMPFILE`).
    private static let canLinkUnnamedFiles = access("/proc/self/fd", X_OK) == 0
}
