#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import FoundationEssentials
import SharedPrefsLocking

/// Writing a suite file: a new temporary file renamed over it, the stale temporary files of dead
/// writers, and a corrupt file moved aside.
extension SuiteFile {
    // MARK: Writing

    /// Writes `bytes` to the new temporary file `tempName` (``temporaryName(_:)``) and renames it over
    /// the suite file (`fsync`ed first for `.full`, then ``syncDirectory(_:)`` after the lock), and
    /// returns the new file's version. Nothing stays open.
    ///
    /// The file is made `O_EXCL` in the directory of writes (``openWritesDirectory(in:creating:)``), or
    /// in the suite directory where that one refuses the file, cannot rename across (`EXDEV`) or had the
    /// file replaced before its rename: each said once and remembered. The suite file is checked after
    /// the rename to be the one written. Call it holding both locks; `removingStale` sweeps first.
    func write(_ bytes: FileBytes, in dir: OpenDirectory, through writes: CInt?, as tempName: String, removingStale sweep: StaleSweep? = nil) throws(PreferenceError) -> FileVersion {
        if let sweep {
            let removed = removeStaleTemporaryFiles(in: dir, writes: writes, listingAnew: sweep == .listingAnew)
            if removed > 0 { logger.notice("Removed \(removed) temporary file(s) left in \(directory) by a writer that died mid-write") }
        }
        if let writes {
            if let version = try publish(bytes, in: dir, through: writes, as: tempName) { return version }
        }
        return try publish(bytes, in: dir, through: nil, as: tempName)!
    }

    /// ``write(_:in:as:)`` through `writes` (the suite directory when `nil`); `nil` where the directory
    /// of writes failed in a way the suite directory serves. Throws ``PreferenceError/Code/fileTooLarge``
    /// for `count` bytes its readers would refuse.
    func checkSize(_ count: Int) throws(PreferenceError) {
        guard count > options.maximumFileSize else { return }
        throw PreferenceError(
            code: .fileTooLarge,
            message: "Not written: the suite \(path) would be \(count) bytes, more than PreferenceSuite.Options.maximumFileSize (\(options.maximumFileSize)), so its readers would refuse it. Remove large values, or raise the limit in every process that uses the suite.",
            path: path)
    }

    private func publish(_ bytes: FileBytes, in dir: OpenDirectory, through writes: CInt?, as tempName: String) throws(PreferenceError) -> FileVersion? {
        let tempDirectory = writes ?? dir.fd
        let tempPath = directory + (writes == nil ? "/" : "/" + Self.writesDirectoryName + "/") + tempName
        let fd: CInt
        let create = { Syscall.openat(tempDirectory, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options.filePermissions) }
        var created = create()
        if case .failure(.fileExists) = created {
            // Under the lock, no live writer makes a temporary file: this one is a dead writer's.
            _ = Syscall.unlinkat(tempDirectory, tempName)
            created = create()
        }
        switch created {
        case .success(let descriptor): fd = descriptor
        case .failure(let errno) where writes != nil:
            return distrustWritesDirectory(in: dir, "it refuses a new file (\(errno))")
        case .failure(let errno): throw PreferenceError.system("openat", errno, path: tempPath, doing: "create the temporary file")
        }
        // Open until the rename in the suite directory; closed before it in the directory of writes.
        var open: CInt? = fd
        var version: FileVersion
        _Stages.mark("O")
        do throws(PreferenceError) {
            if dir.isGroupContainer {
                try Syscall.fchmod(fd, options.filePermissions & 0o777).get("fchmod", path: tempPath, doing: "set the mode of the temporary file")
            }
            // A racy stamp of a file of one read's size is confirmed by that read (``Syscall/holds(_:_:)``),
            // as cheap as a proof's `ioctl`: only a larger file gets a proof.
            let proven = bytes.count >= Syscall.readChunk
            let fileSystem = proven || options.durability == .none ? try? Syscall.fileSystemType(of: fd).get() : nil
            // ext4 without fsync: blocks allocated before the data is written, not inside the rename that
            // replaces a file (`auto_da_alloc`). `.full`'s fsync allocates them anyway.
            if fileSystem == FileVersion.Proof.ext4, options.durability == .none { _ = sharedprefs_allocate(fd, bytes.count) }
            try bytes.write(to: fd).get("write", path: tempPath, doing: "write")
            _Stages.mark("w")
            if options.durability == .full {
                try Syscall.fsync(fd).get("fsync", path: tempPath, doing: "flush to disk")
            }
            let written = try Syscall.fstat(fd).get("fstat", path: tempPath, doing: "inspect")
            let proof = proven ? FileVersion.Proof.of(fd, written, on: fileSystem) : .none
            if writes != nil {
                // Closed before the rename, where no observer watches: the rename is the write's
                // only event in the suite directory.
                Syscall.close(fd)
                open = nil
            }
            Bell.shared?.willRename(UInt64(written.st_ino), in: dir.identity)
            #if SHAREDPREFS_TESTING
            TestingHooks.willRename(tempPath)
            #endif
            _Stages.mark("B")
            switch Syscall.renameat(tempDirectory, tempName, fileName, in: dir.fd) {
            case .success: break
            case .failure(.improperLink) where writes != nil:
                _ = Syscall.unlinkat(tempDirectory, tempName)
                return distrustWritesDirectory(in: dir, "a file renamed from it cannot reach \(directory) (EXDEV: it is another mount)")
            case .failure(let errno): throw PreferenceError.system("renameat", errno, path: path, doing: "replace")
            }
            _Stages.mark("A")
            let takenAt = FileVersion.now()
            // The file now at the suite's name, with the stamp the rename gave it (its ctime).
            let st = try Syscall.lstatat(dir.fd, fileName).get("fstatat", path: path, doing: "inspect")
            guard FileIdentity(st) == FileIdentity(written) else {
                if writes != nil {
                    return distrustWritesDirectory(in: dir, "the file this process wrote there was replaced before its rename, by someone who may write that directory; the suite was written again")
                }
                throw PreferenceError(
                    code: .ioFailure,
                    message: "Not written as this process wrote it: the file renamed over \(path) is not the one written (its temporary file \(tempName) was replaced, or the suite file right after it, by someone who writes \(directory) without its lock). The suite holds what that writer put there. Check which programs write \(directory), and write again.",
                    path: path)
            }
            version = FileVersion(stamp: FileStamp(st), content: [], takenAt: takenAt, proof: proof)
        } catch {
            _ = Syscall.unlinkat(tempDirectory, tempName)
            if let open { Syscall.close(open) }
            throw error
        }
        // In the suite directory (no directory of writes), the file is closed right after the
        // rename, whose wake-up its IN_CLOSE_WRITE shares when the two are read together.
        if let open { Syscall.close(open) }
        // Joined once readers can have the file (``FileBytes``).
        version.content = bytes.joined()
        return version
    }

    /// With `.full`: `fsync`s the suite directory after a rename. Needs no lock: a later rename that
    /// came first is made durable with it, and holds this write's keys.
    func syncDirectory(_ dir: OpenDirectory) {
        guard options.durability == .full else { return }
        // The new file is in place; a failed directory sync only weakens crash durability.
        if case .failure(let errno) = Syscall.fsync(dir.fd) {
            logger.warning("fsync of \(directory) failed: \(errno); the last write may not survive a power loss")
        }
    }

    /// Where writes make their temporary files: this directory in the suite directory, shared
    /// by its suites and made at the first write.
    static let writesDirectoryName = ".sharedprefs-writes"

    /// The suite directories whose directory of writes this process no longer uses, and why
    /// (said once in the log): until the process ends, their writes go through the suite directory.
    private static let distrusted = Lock<[String: String]>([:])

    /// Stops using the directory of writes of `dir` in this process, saying why once; `nil`, for
    /// the write to go through the suite directory instead.
    private func distrustWritesDirectory(in dir: OpenDirectory, _ why: String) -> FileVersion? {
        let isNew = Self.distrusted.withLock { $0.updateValue(why, forKey: directory) == nil }
        if isNew {
            logger.warning("\(directory)/\(Self.writesDirectoryName) is no longer used by this process: \(why). Writes make their temporary files in \(directory) itself (one more event per write for observers). Remove \(Self.writesDirectoryName) to have it made anew.")
        }
        return nil
    }

    /// Opens the directory of writes (made when missing and `creating`): temporary files there wake no
    /// observer, so the rename is a write's one event. `nil` where it may not be used
    /// (``Trust/refusal(of:as:)``, or given up on): the suite directory serves then.
    func openWritesDirectory(in dir: OpenDirectory, creating: Bool = true) -> CInt? {
        guard Self.distrusted.withLock({ $0[directory] == nil }) else { return nil }
        // Group members write it in a group container.
        let mode = 0o700 | (dir.mode & 0o070) | (dir.isGroupContainer ? S_ISGID : 0)
        let name = Self.writesDirectoryName
        guard let fd = try? location.openComponent(name, in: dir.fd, path: directory + "/" + name, creating: creating, mode: mode) else { return nil }
        guard case .success(let st) = Syscall.fstat(fd), Trust.refusal(of: st, as: .writesDirectory(of: dir)) == nil else {
            Syscall.close(fd)
            return nil
        }
        return fd
    }

    /// A temporary file's name: `.<suite>.plist.<number>.tmp`, the write's own number in base 36 (made
    /// under the lock: no randomness needed).
    func temporaryName(_ number: UInt64 = .random(in: 0...UInt64.max)) -> String {
        "." + fileName + "." + String(number, radix: 36) + ".tmp"
    }

    /// Whether `name` is one of this suite's temporary files, `.<suite>.plist.<base-36>.tmp`, and
    /// not another suite's (suite `a`'s prefix `.a.plist.` also begins suite `a.plist.b`'s).
    func isTemporaryFile(_ name: String) -> Bool {
        let prefix = "." + fileName + "."
        guard name.hasPrefix(prefix), name.hasSuffix(".tmp"), name.utf8.count > prefix.utf8.count + 4 else { return false }
        let middle = name.utf8.dropFirst(prefix.utf8.count).dropLast(4)
        return middle.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
    }

    /// How a write looks for the temporary files dead writers left (``removeStaleTemporaryFiles(in:writes:listingAnew:)``).
    enum StaleSweep {
        /// Through a listing up to a minute old.
        case listed
        /// Through a listing made now: a writer just died leaving one.
        case listingAnew
    }

    /// Temporary file names per suite directory, listed at most once a minute per process and shared by
    /// its suites (ten thousand suites must not list it ten thousand times).
    private static let listings = Lock<[String: (taken: ContinuousClock.Instant, names: [String])]>([:])

    /// Deletes temporary files of this suite that writers left when they died before their rename, in
    /// both directories. Under the lock only: any such file that exists then is stale, even when the
    /// listing is a minute old (`listingAnew`: listed now). Returns how many were removed.
    func removeStaleTemporaryFiles(in dir: OpenDirectory, writes: CInt?, listingAnew: Bool = false) -> Int {
        let now = ContinuousClock.now
        var removed = 0
        for (fd, path) in [(dir.fd, directory)] + (writes.map { [($0, directory + "/" + Self.writesDirectoryName)] } ?? []) {
            var names = listingAnew ? nil : Self.listings.withLock { $0[path].flatMap { now - $0.taken < .seconds(60) ? $0.names : nil } }
            if names == nil {
                names = ((try? Syscall.directoryEntries(fd).get()) ?? []).filter { $0.hasSuffix(".tmp") }
                Self.listings.withLock { $0[path] = (now, names!) }
            }
            removed += names!.filter(isTemporaryFile).filter { if case .success = Syscall.unlinkat(fd, $0) { true } else { false } }.count
        }
        return removed
    }

    /// Renames a corrupt suite file to `<suite>.plist.corrupt-<time>` so that it is never overwritten.
    func moveAside(in dir: OpenDirectory) throws(PreferenceError) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let stamp = XMLPropertyList.iso8601(Date(timeIntervalSince1970: TimeInterval(now.tv_sec)))
            .filter { $0 != ":" && $0 != "-" }
        let name = "\(fileName).corrupt-\(stamp.dropLast())-\(now.tv_nsec)"
        try Syscall.renameat(dir.fd, fileName, name).get("renameat", path: path, doing: "move the corrupt file aside")
        return directory + "/" + name
    }
}
