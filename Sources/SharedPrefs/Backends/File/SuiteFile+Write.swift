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
            #if SHAREDPREFS_TESTING
            TestingHooks.willRename(tempPath)
            #endif
            _Stages.mark("B")
            try Syscall.renameat(dir.fd, tempName, fileName).get("renameat", path: path, doing: "replace")
            _Stages.mark("A")
            // After the rename, which sets the file's ctime.
            let takenAt = FileVersion.now()
            let st = try Syscall.fstat(fd).get("fstat", path: path, doing: "inspect")
            version = FileVersion(stamp: FileStamp(st), content: bytes, takenAt: takenAt, proof: .of(fd, st, on: fileSystem))
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
            .filter { $0 != ":" && $0 != "-" }
        let name = "\(fileName).corrupt-\(stamp.dropLast())-\(now.tv_nsec)"
        try Syscall.renameat(dir.fd, fileName, name).get("renameat", path: path, doing: "move the corrupt file aside")
        return directory + "/" + name
    }
}
