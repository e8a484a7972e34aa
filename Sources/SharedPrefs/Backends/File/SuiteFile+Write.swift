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
    /// The temporary file is `tempName` (``newTemporaryName()``), created `O_EXCL` in the
    /// directory of writes (``openWritesDirectory(in:creating:)``), or in the suite directory where
    /// that cannot be used; one that a writer killed mid-write leaves behind is removed by a later
    /// writer (``removeStaleTemporaryFiles(in:)``). Call it holding both locks
    /// (``lock(in:until:)``, ``lockSuiteFile(in:until:)``).
    func write(_ bytes: [UInt8], in dir: OpenDirectory, as tempName: String) throws(PreferenceError) -> FileVersion {
        if bytes.count > options.maximumFileSize {
            throw PreferenceError(
                code: .fileTooLarge,
                message: "Not written: the suite \(path) would be \(bytes.count) bytes, more than PreferenceSuite.Options.maximumFileSize (\(options.maximumFileSize)), so its readers would refuse it. Remove large values, or raise the limit in every process that uses the suite.",
                path: path)
        }
        let writes = openWritesDirectory(in: dir)
        defer { if let writes { Syscall.close(writes) } }
        let tempDirectory = writes ?? dir.fd
        let tempPath = directory + (writes == nil ? "/" : "/" + Self.writesDirectoryName + "/") + tempName
        let fd = try Syscall.openat(tempDirectory, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options.filePermissions)
            .get("openat", path: tempPath, doing: "create the temporary file")
        // Open until it is closed before the rename (in the directory of writes).
        var writing: CInt? = fd
        // The file's inode held after that (`O_PATH`), for the stamp the rename changes (its ctime).
        var held: CInt? = nil
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
            let written = try Syscall.fstat(fd).get("fstat", path: tempPath, doing: "inspect")
            let proof = FileVersion.Proof.of(fd, written, on: fileSystem)
            if writes != nil {
                // Closed before the rename, where no observer watches: the rename is the write's
                // only event in the suite directory. Its inode is held for the stamp.
                held = try Syscall.openat(tempDirectory, tempName, O_PATH | O_NOFOLLOW | O_CLOEXEC)
                    .get("openat", path: tempPath, doing: "open the temporary file")
                Syscall.close(fd)
                writing = nil
            }
            #if SHAREDPREFS_TESTING
            TestingHooks.willRename(tempPath)
            #endif
            _Stages.mark("B")
            try Syscall.renameat(tempDirectory, tempName, fileName, in: dir.fd).get("renameat", path: path, doing: "replace")
            _Stages.mark("A")
            let takenAt = FileVersion.now()
            let st = try Syscall.fstat(held ?? fd).get("fstat", path: path, doing: "inspect")
            // Another name swapped in under the temporary one: a stamp that no file has.
            let stamp = FileIdentity(st) == FileIdentity(written) ? FileStamp(st) : FileStamp(written)
            version = FileVersion(stamp: stamp, content: bytes, takenAt: takenAt, proof: proof)
        } catch {
            _ = Syscall.unlinkat(tempDirectory, tempName)
            for open in [writing, held].compactMap({ $0 }) { Syscall.close(open) }
            throw error
        }
        // In the suite directory (no directory of writes), the file is closed right after the
        // rename, whose wake-up its IN_CLOSE_WRITE shares when the two are read together.
        Syscall.close(held ?? fd)
        if options.durability == .full {
            // The new file is in place; a failed directory sync only weakens crash durability.
            if case .failure(let errno) = Syscall.fsync(dir.fd) {
                logger.warning("fsync of \(directory) failed: \(errno); the last write may not survive a power loss")
            }
        }
        return version
    }

    /// Where writes make their temporary files: this directory in the suite directory, shared
    /// by its suites and made at the first write.
    static let writesDirectoryName = ".sharedprefs-writes"

    /// Opens the directory of writes (made first when missing and `creating`): a temporary file
    /// is created and closed there, where no observer watches, so that the rename that publishes
    /// a write is its only event in the suite directory, and each observer wakes once per write
    /// instead of three times. `nil` where it cannot be used: not a directory (a link, a file), on
    /// another file system, writable by others, or owned by another user (unless it has the group
    /// of a group container): the suite directory serves then, as it always may.
    func openWritesDirectory(in dir: OpenDirectory, creating: Bool = true) -> CInt? {
        // Group members write it in a group container.
        let mode = 0o700 | (dir.mode & 0o070) | (dir.isGroupContainer ? S_ISGID : 0)
        let name = Self.writesDirectoryName
        guard let fd = try? location.openComponent(name, in: dir.fd, path: directory + "/" + name, creating: creating, mode: mode) else { return nil }
        guard case .success(let st) = Syscall.fstat(fd), st.st_dev == dir.identity.device, st.st_mode & S_IWOTH == 0,
            st.st_uid == geteuid() || (dir.isGroupContainer && st.st_gid == dir.group)
        else {
            Syscall.close(fd)
            return nil
        }
        return fd
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

    /// Deletes temporary files a writer left when it died between writing and renaming, in the
    /// directory of writes and in the suite directory. Call it only while holding the lock: every
    /// live writer creates and renames its temporary file under the lock, so any of this suite's
    /// temporary files that exists now is stale, even when the listing that named it is up to a
    /// minute old. Lists and unlinks through the directories' descriptors. Returns how many were
    /// removed.
    func removeStaleTemporaryFiles(in dir: OpenDirectory) -> Int {
        let writes = openWritesDirectory(in: dir, creating: false)
        defer { if let writes { Syscall.close(writes) } }
        let now = ContinuousClock.now
        var removed = 0
        for (fd, path) in [(dir.fd, directory)] + (writes.map { [($0, directory + "/" + Self.writesDirectoryName)] } ?? []) {
            var names = Self.listings.withLock { $0[path].flatMap { now - $0.taken < .seconds(60) ? $0.names : nil } }
            if names == nil {
                names = (try? Syscall.directoryEntries(fd).get()) ?? []
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
