#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Reading a suite file: confirming the version known, reading and decoding it, and waiting, until a
/// deadline, for a file being written in place to settle.
extension SuiteFile {
    // MARK: Reading

    /// The version (its stamp retaken) when the suite file is still `version`, `nil` when it changed:
    /// one `fstatat`, plus an open and a ``FileVersion/Proof`` or a read where the stamp is racy.
    /// - Parameter locked: The suite file, open and locked (``lockSuiteFile(in:until:)``): used instead.
    func confirm(_ version: FileVersion, in dir: OpenDirectory, locked: LockFile? = nil) throws(PreferenceError) -> FileVersion? {
        var size: Int64 = 0
        return try confirm(version, in: dir, locked: locked, size: &size)
    }

    /// ``confirm(_:in:locked:)``, which also gives the size the file has (0 if there is none).
    func confirm(_ version: FileVersion, in dir: OpenDirectory, locked: LockFile? = nil, size: inout Int64) throws(PreferenceError) -> FileVersion? {
        // Under the lock, the status taken as the lock was (no writer of the library replaces it since).
        let takenAt = locked?.status?.takenAt ?? FileVersion.now()
        let st: stat
        switch locked.map({ $0.status.map { .success($0.0) } ?? Syscall.fstat($0.fd) }) ?? Syscall.lstatat(dir.fd, fileName) {
        case .success(let status): st = status
        case .failure(.noSuchFileOrDirectory): return version.stamp == nil ? version : nil
        case .failure(let errno): throw PreferenceError.system("fstatat", errno, path: path, doing: "inspect")
        }
        guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st, path: path) }
        size = Int64(st.st_size)
        guard FileStamp(st) == version.stamp else { return nil }
        if !version.isRacy { return version }
        // A racy stamp: the file must hold the bytes last read or written.
        let fd: CInt
        if let locked {
            fd = locked.fd
        } else {
            guard case .success(let opened) = Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return nil }
            fd = opened
        }
        defer { if locked == nil { Syscall.close(fd) } }
        guard case .success(let opened) = locked == nil ? Syscall.fstat(fd) : .success(st), FileStamp(opened) == version.stamp,
            version.proof.holds(fd) || Syscall.holds(fd, version.content) == .success(true)
        else { return nil }
        var confirmed = version
        confirmed.takenAt = takenAt
        return confirmed
    }

    /// The suite file's number, from its header and trailer alone, when it is a binary property
    /// list of at least `minimumSize` bytes that the trust rule admits; `nil` otherwise.
    func sequence(in dir: OpenDirectory, minimumSize: Int) -> UInt64? {
        guard case .success(let fd) = Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) else { return nil }
        defer { Syscall.close(fd) }
        guard case .success(let st) = Syscall.fstat(fd), st.st_mode & S_IFMT == S_IFREG, st.st_size >= max(40, minimumSize),
            (try? checkOwner(st, of: path, in: dir)) != nil,
            case .success(let head) = Syscall.read(fd, at: 0, 8), head == BinaryPropertyList.magic,
            case .success(let trailer) = Syscall.read(fd, at: Int(st.st_size) - 32, 32), trailer.count == 32
        else { return nil }
        return trailer.prefix(6).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Reads and decodes the suite file; never follows a link, blocks, or reads more than
    /// ``PreferenceSuite/Options/maximumFileSize`` bytes.
    /// - Parameters:
    /// - previous: The file's image as last read or written: a binary file is decoded where it differs.
    /// - whole: Only a file that ends as a whole property list is decoded
    /// (``PropertyListFormat/looksWhole(_:)``); one being appended to is corrupt at once.
    /// - locked: The suite file, open and locked, read through this descriptor.
    func read(in dir: OpenDirectory, previous: SuiteImage? = nil, whole: Bool = false, locked: LockFile? = nil) throws(PreferenceError) -> SuiteFileContents {
        let fd: CInt
        switch locked.map({ .success($0.fd) }) ?? Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) {
        case .success(let descriptor): fd = descriptor
        case .failure(.noSuchFileOrDirectory): return .missing
        case .failure(let errno): throw PreferenceError.system("openat", errno, path: path, doing: "open the suite file")
        }
        defer { if locked == nil { Syscall.close(fd) } }
        let takenAt = FileVersion.now()
        let st = try Syscall.fstat(fd).get("fstat", path: path, doing: "inspect")
        guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st, path: path) }
        try checkOwner(st, of: path, in: dir)
        let limit = options.maximumFileSize
        if Int64(st.st_size) > Int64(limit) { throw tooLarge(Int64(st.st_size)) }
        _Stages.mark("X")
        let bytes = try Syscall.readAll(fd, sizeHint: Int(st.st_size), limit: limit, sizeIsExact: true).get("read", path: path, doing: "read")
        _Stages.mark("Y")
        if bytes.count > limit { throw tooLarge(Int64(bytes.count)) }
        if whole, !PropertyListFormat.looksWhole(bytes) {
            return .corrupt(
                PreferenceError(code: .corruptFile, message: "The suite file \(path) is not a valid property list (it does not end as one: it is cut short, or still being written).", path: path),
                looksLikePropertyList: true, stamp: FileStamp(st))
        }
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

    /// ``read(in:previous:)``, but a file that looks like a property list and does not parse is read
    /// again, with growing pauses, while a program rewrites it in place (while it changes, and while a
    /// process holds it open for writing: a read lease is refused then). Where no lease can be taken
    /// (another member's file), it is corrupt only if unchanged until `deadline`. A good file costs one read.
    /// - Throws: ``PreferenceError/Code/corruptFile`` when a writer still holds it at `deadline`.
    /// - Parameter locked: The suite file, open and locked: read through it the first time.
    func readSettled(in dir: OpenDirectory, previous: SuiteImage?, locked: LockFile?, until deadline: ContinuousClock.Instant) throws(PreferenceError) -> SuiteFileContents {
        var contents = try read(in: dir, previous: previous, whole: true, locked: locked)
        guard case .corrupt(let error, true, var stamp) = contents else { return contents }
        let clock = ContinuousClock()
        var pause = Duration.milliseconds(1)
        let gaveUp = PreferenceError(
            code: .corruptFile,
            message: "\(error.message) Another program kept writing it while this write waited, so nothing was written; the values stay pending. Try again once that program is done with it.",
            path: path)
        while true {
            let writing = isOpenForWriting(in: dir)
            // Read again if it changed, also when its writer closed it in the meantime: not past
            // the deadline, which a file rewritten without end would otherwise never reach.
            if case .success(let st) = Syscall.lstatat(dir.fd, fileName), FileStamp(st) != stamp {
                guard clock.now < deadline else { throw gaveUp }
                contents = try read(in: dir, previous: previous, whole: true)
                guard case .corrupt(_, true, let current) = contents else { return contents }
                stamp = current
                continue
            }
            if writing == false { return contents }
            // Without a lease, unchanged until the deadline: no writer paused for less holds it.
            guard clock.now < deadline else {
                if writing == nil { return contents }
                throw gaveUp
            }
            Threads.sleep(for: pause)
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
}
