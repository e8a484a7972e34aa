#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import Foundation
import SharedPrefsLocking
import SystemPackage

/// The result of reading a suite file.
enum SuiteFileContents {
    /// No file: the suite is empty.
    case missing
    /// A good file, and its image when it is a binary one.
    case loaded(SuiteValues, FileVersion, SuiteImage?)
    /// A file that does not parse: a foreign writer mid-write, or garbage. `looksLikePropertyList`
    /// is `false` for a file that is plainly something else, which is never moved aside.
    case corrupt(PreferenceError, looksLikePropertyList: Bool, stamp: FileStamp)
}

/// The on-disk protocol of one suite: `<directory>/<suite>.plist`, the lock file
/// `.<suite>.plist.lock` and temporary files `.<suite>.plist.<random>.tmp`, all opened relative
/// to the directory's descriptor with `O_NOFOLLOW | O_CLOEXEC`, and never blocking: a FIFO or
/// device planted in their place is an error, not a hang.
struct SuiteFile: Sendable {
    let location: DirectoryLocation
    let fileName: String
    let options: PreferenceSuite.Options

    var directory: String { location.path }
    var path: String { directory + "/" + fileName }
    var lockName: String { "." + fileName + ".lock" }
    var lockPath: String { directory + "/" + lockName }

    /// The file of the suite `suiteName`: in `group`'s container; with no group, a `group.…`
    /// name's own container, any other name in `<root>/Preferences`.
    static func named(_ suiteName: String, in group: AppGroup?, options: PreferenceSuite.Options) throws(PreferenceError) -> SuiteFile {
        try SuiteName.validate(suiteName, what: "suite name")
        let location: DirectoryLocation
        let ownGroup: AppGroup? = suiteName.hasPrefix("group.") ? try AppGroup(identifier: suiteName) : nil
        if let group = group ?? ownGroup {
            // The container is trusted as given; Library/Preferences below it is walked without links.
            location = group.location
        } else {
            location = DirectoryLocation(trusted: AppGroup.rootDirectory.path(percentEncoded: false), components: ["Preferences"], mode: 0o700)
        }
        return SuiteFile(location: location, fileName: suiteName + ".plist", options: options)
    }

    /// The file at `fileURL`, whose directory is trusted as given, and the suite's name (the file
    /// name without `.plist`).
    static func at(_ fileURL: URL, options: PreferenceSuite.Options) throws(PreferenceError) -> (name: String, file: SuiteFile) {
        guard fileURL.isFileURL else {
            throw PreferenceError(code: .invalidName, message: "\(fileURL) is not a file URL; pass URL(filePath:).")
        }
        let path = fileURL.standardizedFileURL.path(percentEncoded: false)
        let fileName = (path as NSString).lastPathComponent
        try SuiteName.validate(fileName, what: "suite file name")
        let name = fileName.hasSuffix(".plist") ? String(fileName.dropLast(6)) : fileName
        return (name, SuiteFile(location: DirectoryLocation(trusted: (path as NSString).deletingLastPathComponent), fileName: fileName, options: options))
    }

    /// Reads the file once, without a store; `nil` when it (or its directory) does not exist. A
    /// file that does not parse is an error.
    func readOnce() throws(PreferenceError) -> PlistDictionary? {
        guard let dir = try openDirectory(creating: false) else { return nil }
        defer { dir.close() }
        switch try read(in: dir) {
        case .missing: return nil
        case .loaded(.full(let values), _, _): return values
        case .loaded(.changes, _, _): return nil  // only against a previous image, which there is none of
        case .corrupt(let error, _, _): throw error
        }
    }

    /// Opens the suite's directory (see ``DirectoryLocation``); `nil` when it is missing and
    /// `creating` is `false`.
    func openDirectory(creating: Bool) throws(PreferenceError) -> OpenDirectory? {
        try location.open(creating: creating)
    }

    /// The error for a directory that vanished while it was being created.
    func missingDirectory() -> PreferenceError {
        PreferenceError(code: .ioFailure, message: "\(directory) disappeared while it was being opened; check what removes it.", path: directory)
    }

    // MARK: Reading

    /// Whether the suite file is still `version`: returns the version (its stamp retaken) when it
    /// is, `nil` when the file changed. One `fstatat`, plus, when the stamp alone does not prove
    /// it (see ``FileVersion``), an open and the version's ``FileVersion/Proof`` or a read.
    func confirm(_ version: FileVersion, in dir: OpenDirectory) throws(PreferenceError) -> FileVersion? {
        let takenAt = FileVersion.now()
        let st: stat
        switch Syscall.lstatat(dir.fd, fileName) {
        case .success(let status): st = status
        case .failure(.noSuchFileOrDirectory): return version.stamp == nil ? version : nil
        case .failure(let errno): throw PreferenceError.system("fstatat", errno, path: path, doing: "inspect")
        }
        guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st, path: path) }
        guard FileStamp(st) == version.stamp else { return nil }
        if !version.isRacy { return version }
        // A racy stamp: the file must hold the bytes last read or written.
        guard case .success(let fd) = Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return nil }
        defer { Syscall.close(fd) }
        guard case .success(let opened) = Syscall.fstat(fd), FileStamp(opened) == version.stamp,
            version.proof.holds(fd) || Syscall.holds(fd, version.content) == .success(true)
        else { return nil }
        var confirmed = version
        confirmed.takenAt = takenAt
        return confirmed
    }

    /// Reads and decodes the suite file. Never follows a symbolic link, never blocks, and never
    /// reads more than ``PreferenceSuite/Options/maximumFileSize`` bytes.
    /// - Parameters:
    ///   - previous: The image of the file as last read or written: a binary file is then decoded
    ///     only where it differs from it.
    func read(in dir: OpenDirectory, previous: SuiteImage? = nil) throws(PreferenceError) -> SuiteFileContents {
        let fd: CInt
        switch Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) {
        case .success(let descriptor): fd = descriptor
        case .failure(.noSuchFileOrDirectory): return .missing
        case .failure(let errno): throw PreferenceError.system("openat", errno, path: path, doing: "open the suite file")
        }
        defer { Syscall.close(fd) }
        let takenAt = FileVersion.now()
        let st = try Syscall.fstat(fd).get("fstat", path: path, doing: "inspect")
        guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st, path: path) }
        try checkOwner(st, of: path, in: dir)
        let limit = options.maximumFileSize
        if Int64(st.st_size) > Int64(limit) { throw tooLarge(Int64(st.st_size)) }
        _Stages.mark("X")
        let bytes = try Syscall.readAll(fd, sizeHint: Int(st.st_size), limit: limit).get("read", path: path, doing: "read")
        _Stages.mark("Y")
        if bytes.count > limit { throw tooLarge(Int64(bytes.count)) }
        let version = FileVersion(stamp: FileStamp(st), content: bytes, takenAt: takenAt)
        // Anything unusual in the incremental read (a key twice, a broken file) is decoded in full.
        if let previous, let (image, delta) = try? previous.changes(to: bytes) {
            return .loaded(.changes(delta), version, image)
        }
        do {
            let (values, image) = try PropertyListFormat.decodeSuite(bytes)
            return .loaded(.full(values), version, image)
        } catch {
            if PropertyListFormat.looksLikePropertyList(bytes) {
                return .corrupt(
                    PreferenceError(
                        code: .corruptFile,
                        message: "The suite file \(path) is not a valid property list (\(error)).",
                        path: path),
                    looksLikePropertyList: true, stamp: FileStamp(st))
            }
            return .corrupt(
                PreferenceError(
                    code: .notPropertyList,
                    message: "\(path) is not a property list (it starts with \(Self.describe(bytes.prefix(16)))), so SharedPrefs leaves it exactly as it is and writes nothing there. Move it away, or choose another suite name.",
                    path: path),
                looksLikePropertyList: false, stamp: FileStamp(st))
        }
    }

    /// How long a file that does not parse must stay unchanged before it is called corrupt, where
    /// no lease tells whether a program still has it open for writing.
    static let settleQuiet: Duration = .milliseconds(500)

    /// ``read(in:previous:)``, but a file that looks like a property list and does not parse is
    /// read again, with growing pauses, while a program rewrites it in place: while it changes,
    /// and while some process holds it open for writing (a read lease is refused then; where
    /// none can be taken, until it has stayed unchanged for ``settleQuiet``). It is called
    /// corrupt once nobody is writing it, at once for a file no writer holds. A good file costs
    /// one read and no pause.
    /// - Throws: ``PreferenceError/Code/corruptFile`` when a writer still holds it at `deadline`.
    func readSettled(in dir: OpenDirectory, previous: SuiteImage?, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> SuiteFileContents {
        var contents = try read(in: dir, previous: previous)
        guard case .corrupt(let error, true, var stamp) = contents else { return contents }
        let clock = ContinuousClock()
        var quietSince = clock.now
        var pause = Duration.milliseconds(1)
        while true {
            let writing = isOpenForWriting(in: dir)
            // Read again if it changed, also when its writer closed it in the meantime.
            if case .success(let st) = Syscall.lstatat(dir.fd, fileName), FileStamp(st) != stamp {
                contents = try read(in: dir, previous: previous)
                guard case .corrupt(_, true, let current) = contents else { return contents }
                (stamp, quietSince) = (current, clock.now)
                continue
            }
            if writing == false || (writing == nil && clock.now - quietSince >= Self.settleQuiet) { return contents }
            guard clock.now < deadline else {
                throw PreferenceError(
                    code: .corruptFile,
                    message: "\(error.message) Another program kept it open for writing while this write waited, so nothing was written; the values stay pending. Try again once that program is done with it.",
                    path: path)
            }
            Thread.sleep(forTimeInterval: pause / .seconds(1))
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Whether some process has the suite file open for writing (`nil`: cannot tell).
    private func isOpenForWriting(in dir: OpenDirectory) -> Bool? {
        guard case .success(let fd) = Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return nil }
        defer { Syscall.close(fd) }
        guard case .success(let st) = Syscall.fstat(fd), st.st_mode & S_IFMT == S_IFREG else { return nil }
        return Syscall.isOpenForWriting(fd)
    }

    // MARK: Locking

    /// The lock file's mode: the mode the suite file gets in `dir` (``PreferenceSuite/Options/filePermissions``,
    /// less the umask outside a group container) less read access for whoever may not write,
    /// since `flock` needs only read access, and a reader holding the lock would block every
    /// writer. From the first write on: under umask 022 a new suite is `0640`, and its lock `0600`.
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

        /// Whether the file at `name` in `dir` is still this one: a lock taken on a file that was
        /// deleted or replaced since excludes nobody who opens the name now.
        func isCurrent(_ name: String, in dir: OpenDirectory) -> Bool {
            guard case .success(let st) = Syscall.lstatat(dir.fd, name) else { return false }
            return FileIdentity(st) == identity
        }

        /// Lets the lock go (closing the only descriptor of its open file description).
        func unlock() { Syscall.close(fd) }
    }

    /// Takes the suite's exclusive lock, waiting until `deadline` at most (a lock timeout after
    /// the caller began to wait, see ``PreferenceSuite/Options/lockTimeout``). Once `flock` returns, the lock file must still be the one at its name (the pattern
    /// lock files use): if another process deleted or replaced it meanwhile, it is let go and the
    /// name opened and locked again. The kernel releases the lock when the process dies, so a
    /// crashed writer never blocks the others.
    /// - Throws: ``PreferenceError/Code/lockTimedOut`` naming the holder where `/proc/locks` tells.
    func lock(in dir: OpenDirectory, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> LockFile {
        while true {
            let lock = try lockOnce(in: dir, until: deadline)
            if lock.isCurrent(lockName, in: dir) { return lock }
            lock.unlock()
        }
    }

    /// Locks the suite file itself (`flock`), once ``lock(in:until:)`` holds the lock file: a
    /// lock file can be deleted while it is locked, and a writer that comes then locks a new one,
    /// so the lock file alone cannot keep two writers of this library apart; the suite file is
    /// replaced only by a writer, which holds its lock until then. Once `flock` returns, the file
    /// must still be the one at the suite's name (another writer may have replaced it while this
    /// one waited), or else the new one is locked. `nil` when there is no suite file yet, or
    /// something other than a regular file stands there (the read reports it).
    ///
    /// Held until the write ends, the descriptor also keeps the file the write replaces from being
    /// freed inside the rename: where freeing is slow (ext4 without a journal, mounted with
    /// `discard`, discards the blocks at once; tmpfs frees its pages), the rename's watchers are
    /// woken first.
    func lockSuiteFile(in dir: OpenDirectory, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> LockFile? {
        while true {
            guard case .success(let fd) = Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return nil }
            guard case .success(let st) = Syscall.fstat(fd), st.st_mode & S_IFMT == S_IFREG else {
                Syscall.close(fd)
                return nil
            }
            let lock = LockFile(fd: fd, identity: FileIdentity(st))
            do throws(PreferenceError) {
                try acquire(fd, lock.identity, of: path, until: deadline)
            } catch {
                lock.unlock()
                throw error
            }
            if lock.isCurrent(fileName, in: dir) { return lock }
            lock.unlock()
        }
    }

    private func lockOnce(in dir: OpenDirectory, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> LockFile {
        // Read-only: flock needs no write access, and closing a descriptor opened for writing
        // would be an IN_CLOSE_WRITE that wakes every watcher of the directory. Non-blocking: a
        // FIFO planted here must not hang the open.
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
        return st.st_uid == geteuid() && (dir.isGroupContainer ? mode != wanted : mode & ~wanted != 0)
    }

    /// Creates the lock file with its final mode in one step: unnamed, given its mode, then linked
    /// in (a lost race with another creator is `EEXIST`, and fine). Created by `open`, it would
    /// have the umask's mode (`0600` under `umask 077`) until the `fchmod` after it, and a group
    /// member opening it then would get `EACCES`. Where unnamed files are not available, `open`
    /// creates it.
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

    // MARK: Writing

    /// Whether this machine can name an unnamed file through `/proc/self/fd` (for `O_TMPFILE`).
    private static let canLinkUnnamedFiles = access("/proc/self/fd", X_OK) == 0

    /// Writes `bytes` to a new temporary file and renames it over the suite file, with the fsyncs
    /// that `durability` asks for, and returns the new file's version. Nothing stays open.
    ///
    /// The temporary file is `tempName` (``newTemporaryName()``), created `O_EXCL`; one that a
    /// writer killed mid-write leaves behind is removed by a later writer
    /// (``removeStaleTemporaryFiles(in:)``). Call it holding both locks (``lock(in:until:)``,
    /// ``lockSuiteFile(in:until:)``).
    func write(_ bytes: [UInt8], in dir: OpenDirectory, as tempName: String) throws(PreferenceError) -> FileVersion {
        if bytes.count > options.maximumFileSize {
            throw PreferenceError(
                code: .fileTooLarge,
                message: "Not written: the suite \(path) would be \(bytes.count) bytes, more than PreferenceSuite.Options.maximumFileSize (\(options.maximumFileSize)), so its readers would refuse it. Remove large values, or raise the limit in every process that uses the suite.",
                path: path)
        }
        let tempPath = directory + "/" + tempName
        let fd = try Syscall.openat(dir.fd, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options.filePermissions)
            .get("openat", path: tempPath, doing: "create the temporary file")
        let version: FileVersion
        _Stages.mark("O")
        do throws(PreferenceError) {
            if dir.isGroupContainer {
                try Syscall.fchmod(fd, options.filePermissions & 0o777).get("fchmod", path: tempPath, doing: "set the mode of the temporary file")
            }
            let fileSystem = try? Syscall.fileSystemType(of: fd).get()
            // On ext4, blocks allocated before the data is written: it would otherwise allocate
            // them, and start writing them back, inside the rename that replaces a file
            // (`auto_da_alloc`). (Elsewhere this would only cost: tmpfs would zero the pages.)
            if fileSystem == FileVersion.Proof.ext4 { _ = sharedprefs_allocate(fd, bytes.count) }
            try Syscall.writeAll(fd, bytes).get("write", path: tempPath, doing: "write")
            _Stages.mark("w")
            if options.durability == .full {
                try Syscall.fsync(fd).get("fsync", path: tempPath, doing: "flush to disk")
            }
            TestingHooks.willRename(tempPath)
            _Stages.mark("B")
            try Syscall.renameat(dir.fd, tempName, fileName).get("renameat", path: path, doing: "replace")
            _Stages.mark("A")
            // After the rename, which sets the file's ctime.
            let takenAt = FileVersion.now()
            let st = try Syscall.fstat(fd).get("fstat", path: path, doing: "inspect")
            version = FileVersion(stamp: FileStamp(st), content: bytes, takenAt: takenAt, proof: .of(fd, on: fileSystem))
        } catch {
            _ = Syscall.unlinkat(dir.fd, tempName)
            Syscall.close(fd)
            throw error
        }
        // Closed before the directory's sync: the IN_CLOSE_WRITE it sends the directory's
        // watchers comes with the rename's events, not as a wake-up of its own.
        Syscall.close(fd)
        if options.durability == .full {
            // The new file is in place; a failed directory sync only weakens crash durability.
            if case .failure(let errno) = Syscall.fsync(dir.fd) {
                logger.warning("fsync of \(directory) failed: \(errno); the last write may not survive a power loss")
            }
        }
        return version
    }

    /// A new name for a temporary file of this suite: `.<suite>.plist.<random>.tmp`.
    func newTemporaryName() -> String {
        "." + fileName + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".tmp"
    }

    /// Whether `name` is one of this suite's temporary files, `.<suite>.plist.<base-36>.tmp`, and
    /// not another suite's (suite `a`'s prefix `.a.plist.` also begins suite `a.plist.b`'s).
    func isTemporaryFile(_ name: String) -> Bool {
        let prefix = "." + fileName + "."
        guard name.hasPrefix(prefix), name.hasSuffix(".tmp"), name.utf8.count > prefix.utf8.count + 4 else { return false }
        let middle = name.utf8.dropFirst(prefix.utf8.count).dropLast(4)
        return middle.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
    }

    /// Names in each suite directory, listed at most once a minute per process and shared by its
    /// suites: ten thousand suites in one directory must not list it ten thousand times.
    private static let listings = Lock<[String: (taken: ContinuousClock.Instant, names: [String])]>([:])

    /// Deletes temporary files a writer left when it died between writing and renaming. Call it
    /// only while holding the lock: every live writer creates and renames its temporary file
    /// under the lock, so any of this suite's temporary files that exists now is stale, even when
    /// the listing that named it is up to a minute old. Lists and unlinks through the directory's
    /// descriptor. Returns how many were removed.
    func removeStaleTemporaryFiles(in dir: OpenDirectory) -> Int {
        let now = ContinuousClock.now
        var names = Self.listings.withLock { $0[directory].flatMap { now - $0.taken < .seconds(60) ? $0.names : nil } }
        if names == nil {
            names = (try? Syscall.directoryEntries(dir.fd).get()) ?? []
            Self.listings.withLock { $0[directory] = (now, names!) }
        }
        return names!.filter(isTemporaryFile)
            .filter { if case .success = Syscall.unlinkat(dir.fd, $0) { true } else { false } }.count
    }

    /// Renames a corrupt suite file to `<suite>.plist.corrupt-<time>` so that it is never overwritten.
    func moveAside(in dir: OpenDirectory) throws(PreferenceError) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let stamp = XMLPropertyList.iso8601(Date(timeIntervalSince1970: TimeInterval(now.tv_sec)))
            .replacingOccurrences(of: ":", with: "").replacingOccurrences(of: "-", with: "")
        let name = "\(fileName).corrupt-\(stamp.dropLast())-\(now.tv_nsec)"
        try Syscall.renameat(dir.fd, fileName, name).get("renameat", path: path, doing: "move the corrupt file aside")
        return directory + "/" + name
    }

    // MARK: Checks

    /// In a directory every user can write, refuses a file owned by someone other than this
    /// user or root: anyone could have planted it there, with values of their choosing.
    private func checkOwner(_ st: stat, of filePath: String, in dir: OpenDirectory) throws(PreferenceError) {
        guard !isTrusted(st, in: dir) else { return }
        throw PreferenceError(
            code: .untrustedFile,
            message: "Refusing to use \(filePath): it is owned by uid \(st.st_uid), and \(directory) is writable by every user, so that user may have planted it. Remove the file if you do not trust its owner, or keep shared suites in a group container (mode 02770) instead.",
            path: filePath)
    }

    /// Whether a file may be used: owned by this user or root, or in a directory that not every
    /// user can write.
    private func isTrusted(_ st: stat, in dir: OpenDirectory) -> Bool {
        !dir.isWritableByEveryone || st.st_uid == geteuid() || st.st_uid == 0
    }

    private func notRegular(_ st: stat, path: String) -> PreferenceError {
        let kind: String
        switch st.st_mode & S_IFMT {
        case S_IFLNK:
            return PreferenceError(
                code: .symbolicLink,
                message: "\(path) is a symbolic link; SharedPrefs never follows links in a container. Remove the link.",
                path: path)
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFDIR: kind = "a directory"
        case S_IFCHR, S_IFBLK: kind = "a device"
        default: kind = "not a regular file"
        }
        return PreferenceError(
            code: .notRegularFile,
            message: "\(path) is \(kind), where SharedPrefs keeps a regular file; nothing was read or written. Remove it (rm \(path)) if you did not put it there.",
            path: path)
    }

    private func tooLarge(_ size: Int64) -> PreferenceError {
        PreferenceError(
            code: .fileTooLarge,
            message: "The suite file \(path) is \(size) bytes, more than PreferenceSuite.Options.maximumFileSize (\(options.maximumFileSize)); it was not read, and the last good values are kept. Remove or shrink the file, or raise the limit.",
            path: path)
    }

    /// The first bytes of a file, for a message: printable ASCII as text, the rest as hex.
    private static func describe(_ bytes: ArraySlice<UInt8>) -> String {
        if bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) { return "\"" + String(decoding: bytes, as: UTF8.self) + "\"" }
        return "0x" + bytes.map { String(format: "%02x", $0) }.joined()
    }
}
