#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemPackage

/// Identifies one version of a suite file. The store keeps the file it last read or wrote open,
/// so that inode cannot be freed and handed to a newer file: an equal stamp is the same file.
struct FileStamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64
    var changed: Int64

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = st.modificationNanoseconds
        changed = st.changeNanoseconds
    }
}

/// The result of reading a suite file.
enum SuiteFileContents {
    /// No file: the suite is empty.
    case missing
    /// A good file; `descriptor` stays open to pin its inode (see ``FileStamp``).
    case loaded([String: PlistValue], FileStamp, descriptor: CInt)
    /// A file that does not parse (a foreign writer mid-write, or garbage).
    case corrupt(PreferenceError)
}

/// A suite's directory, open, and its mode, which decides how files in it are created and trusted.
struct OpenDirectory {
    let fd: CInt
    let mode: mode_t

    /// A set-group-ID directory is a group container: new files get exactly the suite's
    /// `filePermissions`, whatever the umask, so every member of the group can use them.
    var isGroupContainer: Bool { mode & S_ISGID != 0 }
    /// Writable by every user (only with the sticky bit: other such directories are refused), so
    /// a file in it may have been planted by anyone.
    var isWritableByEveryone: Bool { mode & S_IWOTH != 0 }

    func close() { Syscall.close(fd) }
}

/// The on-disk protocol of one suite: `<directory>/<suite>.plist`, the lock file
/// `.<suite>.plist.lock` and temporary files `.<suite>.plist.<random>.tmp`, all opened relative
/// to the directory's descriptor with `O_NOFOLLOW | O_CLOEXEC`.
struct SuiteFile: Sendable {
    let directory: String
    let fileName: String
    let options: PreferenceSuite.Options
    /// Mode for directories this suite creates (`02770` in a group container, else `0700`).
    let directoryMode: mode_t

    var path: String { directory + "/" + fileName }
    var lockName: String { "." + fileName + ".lock" }

    /// Creates the directory (and missing parents) if needed. A new group container gets exactly
    /// `directoryMode` (`mkdir` ignores the set-group-ID bit and applies the umask); other new
    /// directories get it less the umask.
    func createDirectory() throws(PreferenceError) {
        var missing: [String] = []
        var path = directory
        while !path.isEmpty, path != "/" {
            if case .success = Syscall.stat(path) { break }
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for (index, dir) in missing.reversed().enumerated() {
            // Parents above the suite's own directory are plain traversable directories.
            let mode: mode_t = index == missing.count - 1 ? directoryMode : 0o755
            switch Syscall.mkdir(dir, mode & 0o777) {
            case .success:
                // A group container gets exactly its mode, whatever the umask.
                if mode & S_ISGID != 0 { _ = Syscall.chmod(dir, mode) }
            case .failure(.fileExists): continue
            case .failure(let errno): throw PreferenceError.system("mkdir", errno, path: dir, doing: "create the directory")
            }
        }
    }

    /// Opens the suite's directory and refuses one that others may write without the sticky bit.
    func openDirectory() throws(PreferenceError) -> OpenDirectory {
        let fd = try Syscall.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC).get("open", path: directory, doing: "open the directory")
        do throws(PreferenceError) {
            let st = try Syscall.fstat(fd).get("fstat", path: directory, doing: "inspect the directory")
            if st.st_mode & S_IWOTH != 0 && st.st_mode & S_ISVTX == 0 {
                throw PreferenceError(
                    code: .insecureDirectory,
                    message: "Refusing to use \(directory): it is writable by every user and has no sticky bit, so anyone could replace the suites in it. Run chmod o-w \(directory) (or chmod +t to keep it shared).",
                    path: directory)
            }
            return OpenDirectory(fd: fd, mode: st.st_mode)
        } catch {
            Syscall.close(fd)
            throw error
        }
    }

    /// The stamp of the suite file as it is now, or `nil` when there is none.
    func currentStamp(in dir: OpenDirectory) throws(PreferenceError) -> FileStamp? {
        switch Syscall.lstatat(dir.fd, fileName) {
        case .success(let st):
            guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st) }
            return FileStamp(st)
        case .failure(.noSuchFileOrDirectory): return nil
        case .failure(let errno): throw PreferenceError.system("fstatat", errno, path: path, doing: "inspect")
        }
    }

    /// Reads and decodes the suite file. Never follows a symbolic link.
    func read(in dir: OpenDirectory) throws(PreferenceError) -> SuiteFileContents {
        let fd: CInt
        switch Syscall.openat(dir.fd, fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) {
        case .success(let descriptor): fd = descriptor
        case .failure(.noSuchFileOrDirectory): return .missing
        case .failure(let errno): throw PreferenceError.system("openat", errno, path: path, doing: "open the suite file")
        }
        do throws(PreferenceError) {
            let st = try Syscall.fstat(fd).get("fstat", path: path, doing: "inspect")
            guard st.st_mode & S_IFMT == S_IFREG else { throw notRegular(st) }
            try checkOwner(st, of: path, in: dir)
            let bytes = try Syscall.readAll(fd, sizeHint: Int(st.st_size)).get("read", path: path, doing: "read")
            do {
                return .loaded(try PropertyListFormat.decodeSuite(bytes), FileStamp(st), descriptor: fd)
            } catch {
                Syscall.close(fd)
                return .corrupt(
                    PreferenceError(
                        code: .corruptFile,
                        message: "The suite file \(path) is not a valid property list (\(error)). The last good values are kept; the next write moves the file aside as \(fileName).corrupt-<time>.",
                        path: path))
            }
        } catch {
            Syscall.close(fd)
            throw error
        }
    }

    /// Takes the suite's exclusive lock. Closing the returned descriptor releases it, and the
    /// kernel releases it when the process dies, so a crashed writer never blocks the others.
    func lock(in dir: OpenDirectory) throws(PreferenceError) -> CInt {
        let lockPath = directory + "/" + lockName
        // Read-only: flock needs no write access, and closing a descriptor opened for writing
        // would be an IN_CLOSE_WRITE that wakes every watcher of the directory.
        let fd = try Syscall.openat(dir.fd, lockName, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, options.filePermissions)
            .get("openat", path: lockPath, doing: "open the lock file")
        do throws(PreferenceError) {
            let st = try Syscall.fstat(fd).get("fstat", path: lockPath, doing: "inspect the lock file")
            try checkOwner(st, of: lockPath, in: dir)
            if dir.isGroupContainer, st.st_uid == geteuid(), st.st_mode & 0o777 != options.filePermissions & 0o777 {
                try Syscall.fchmod(fd, options.filePermissions & 0o777).get("fchmod", path: lockPath, doing: "set the mode of the lock file")
            }
            try Syscall.lock(fd, LOCK_EX).get("flock", path: lockPath, doing: "lock")
            return fd
        } catch {
            Syscall.close(fd)
            throw error
        }
    }

    /// Writes `bytes` to a new temporary file and renames it over the suite file, with the fsyncs
    /// that `durability` asks for. Returns the new file's stamp and an `O_PATH` descriptor that
    /// pins its inode (it makes no close event later). The write descriptor is closed right after
    /// the rename, so its close event usually reaches watchers in the same read as the rename.
    func write(_ bytes: [UInt8], in dir: OpenDirectory) throws(PreferenceError) -> (FileStamp, CInt) {
        let tempName = "." + fileName + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".tmp"
        let tempPath = directory + "/" + tempName
        let fd = try Syscall.openat(dir.fd, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options.filePermissions)
            .get("openat", path: tempPath, doing: "create the temporary file")
        var pin: CInt = -1
        do throws(PreferenceError) {
            if dir.isGroupContainer {
                try Syscall.fchmod(fd, options.filePermissions & 0o777).get("fchmod", path: tempPath, doing: "set the mode of the temporary file")
            }
            try Syscall.writeAll(fd, bytes).get("write", path: tempPath, doing: "write")
            if options.durability == .full {
                try Syscall.fsync(fd).get("fsync", path: tempPath, doing: "flush to disk")
            }
            pin = try Syscall.openat(dir.fd, tempName, O_PATH | O_NOFOLLOW | O_CLOEXEC).get("openat", path: tempPath, doing: "open")
            _TestingHooks.willRename(tempPath)
            try Syscall.renameat(dir.fd, tempName, fileName).get("renameat", path: path, doing: "replace")
            Syscall.close(fd)
        } catch {
            _ = Syscall.unlinkat(dir.fd, tempName)
            if pin >= 0 { Syscall.close(pin) }
            Syscall.close(fd)
            throw error
        }
        if options.durability == .full {
            // The new file is in place; a failed directory sync only weakens crash durability.
            if case .failure(let errno) = Syscall.fsync(dir.fd) {
                logger.warning("fsync of \(directory) failed: \(errno); the last write may not survive a power loss")
            }
        }
        switch Syscall.fstat(pin) {
        case .success(let st): return (FileStamp(st), pin)
        case .failure(let errno):
            Syscall.close(pin)
            throw PreferenceError.system("fstat", errno, path: path, doing: "inspect")
        }
    }

    /// Deletes temporary files a writer left when it died between writing and renaming. Call it
    /// only while holding the lock: every live writer creates and renames its temporary file
    /// under the lock, so any that exists now is stale. Returns how many were removed.
    func removeStaleTemporaryFiles(in dir: OpenDirectory) -> Int {
        let prefix = "." + fileName + "."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".tmp") }
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

    /// In a directory every user can write, refuses a file owned by someone other than this
    /// user or root: anyone could have planted it there, with values of their choosing.
    private func checkOwner(_ st: stat, of filePath: String, in dir: OpenDirectory) throws(PreferenceError) {
        guard dir.isWritableByEveryone, st.st_uid != geteuid(), st.st_uid != 0 else { return }
        throw PreferenceError(
            code: .untrustedFile,
            message: "Refusing to use \(filePath): it is owned by uid \(st.st_uid), and \(directory) is writable by every user, so that user may have planted it. Remove the file if you do not trust its owner, or keep shared suites in a group container (mode 02770) instead.",
            path: filePath)
    }

    private func notRegular(_ st: stat) -> PreferenceError {
        let isLink = st.st_mode & S_IFMT == S_IFLNK
        return PreferenceError(
            code: isLink ? .symbolicLink : .ioFailure,
            message: isLink
                ? "\(path) is a symbolic link; SharedPrefs never follows links in a container. Remove the link."
                : "\(path) is not a regular file; remove it or choose another suite name.",
            path: path)
    }
}
