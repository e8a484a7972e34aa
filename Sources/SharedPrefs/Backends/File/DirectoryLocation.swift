#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefsLocking

/// A suite's directory, open, and its mode, which decides how files in it are created and trusted.
struct OpenDirectory {
    let fd: CInt
    let mode: mode_t
    /// The directory's device and inode, as opened.
    let identity: FileIdentity
    /// The directory's owner and group.
    let owner: uid_t
    let group: gid_t

    init(fd: CInt, status st: stat) {
        self.fd = fd
        mode = st.st_mode
        identity = FileIdentity(st)
        owner = st.st_uid
        group = st.st_gid
    }

    /// A set-group-ID directory is a group container: new files get exactly the suite's
    /// `filePermissions`, whatever the umask, so every member of the group can use them.
    var isGroupContainer: Bool { mode & S_ISGID != 0 }
    /// Writable by every user (only with the sticky bit: other such directories are refused), so
    /// a file in it may have been planted by anyone.
    var isWritableByEveryone: Bool { mode & S_IWOTH != 0 }

    /// A path the kernel resolves to exactly this directory, whatever has been renamed or linked
    /// since it was opened (for `inotify_add_watch`, which takes only paths).
    var procPath: String { "/proc/self/fd/\(fd)" }

    func close() { Syscall.close(fd) }
}

/// Where a suite directory is: a trusted directory the caller named (a group's container, the root,
/// a file URL's directory), and components below it opened one at a time by descriptor
/// (`openat(O_NOFOLLOW | O_DIRECTORY)`), each owned by this user or root, or by a group of this
/// user's and not writable by others. Links in the trusted path are followed, as any program follows
/// the paths it is given; a link below it is an error, so no write lands outside it however the
/// components are swapped. With components, the trusted directory must pass ``Trust`` too (another
/// user could have made a container in a sticky root).
struct DirectoryLocation: Sendable, Hashable {
    /// The directory the caller named, without a trailing slash.
    let trusted: String
    /// Components below it, such as `["Library", "Preferences"]`; empty when the trusted directory
    /// holds the suites itself.
    let components: [String]
    /// Mode for the last directory when this library creates it (`02770` in a group container).
    let mode: mode_t
    /// The path of the suite directory, for messages and as a key (never opened by this path).
    let path: String

    init(trusted: String, components: [String] = [], mode: mode_t = 0o700) {
        self.trusted = trusted.count > 1 && trusted.hasSuffix("/") ? String(trusted.dropLast()) : trusted
        self.components = components
        self.mode = mode
        path = ([self.trusted == "/" ? "" : self.trusted] + components).joined(separator: "/")
    }

    /// By its path alone (equal locations have equal paths): one string hashed per re-read.
    func hash(into hasher: inout Hasher) {
        hasher.combine(path)
    }

    /// The suite directories this process walked to, by identity: one opened again that is still the
    /// same (device and inode) needs only its own checks, two system calls where the walk takes three
    /// a component.
    private static let walked = Lock<[DirectoryLocation: FileIdentity]>([:])

    /// Opens the directory, walking from the trusted directory without following links.
    /// - Parameter creating: Create missing directories (parents of the trusted directory 0755,
    ///   the last directory `mode`, exactly when it is set-group-ID).
    /// - Returns: `nil` when a directory is missing and `creating` is `false`.
    func open(creating: Bool) throws(PreferenceError) -> OpenDirectory? {
        if !components.isEmpty, let walked = Self.walked.withLock({ $0[self] }),
            case .success(let fd) = Syscall.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        {
            if case .success(let st) = Syscall.fstat(fd), FileIdentity(st) == walked, Trust.refusal(of: st, as: .suiteDirectory) == nil {
                return OpenDirectory(fd: fd, status: st)
            }
            Syscall.close(fd)
        }
        var fd: CInt
        switch Syscall.open(trusted, O_RDONLY | O_DIRECTORY | O_CLOEXEC) {
        case .success(let descriptor): fd = descriptor
        case .failure(.noSuchFileOrDirectory) where creating:
            try createTrusted()
            fd = try Syscall.open(trusted, O_RDONLY | O_DIRECTORY | O_CLOEXEC).get("open", path: trusted, doing: "open the directory")
        case .failure(.noSuchFileOrDirectory): return nil
        case .failure(let errno): throw PreferenceError.system("open", errno, path: trusted, doing: "open the directory")
        }
        do throws(PreferenceError) {
            var st = try Syscall.fstat(fd).get("fstat", path: trusted, doing: "inspect the directory")
            try Self.check(st, path: trusted, as: components.isEmpty ? .trustedDirectory : .suiteDirectory)
            var path = trusted == "/" ? "" : trusted
            for (index, component) in components.enumerated() {
                path += "/" + component
                let isLast = index == components.count - 1
                guard let next = try openComponent(component, in: fd, path: path, creating: creating, mode: isLast ? mode : 0o755) else {
                    Syscall.close(fd)
                    return nil
                }
                Syscall.close(fd)
                fd = next
                st = try Syscall.fstat(fd).get("fstat", path: path, doing: "inspect the directory")
                try Self.check(st, path: path, as: .suiteDirectory)
            }
            if !components.isEmpty { Self.walked.withLock { $0[self] = FileIdentity(st) } }
            return OpenDirectory(fd: fd, status: st)
        } catch {
            Syscall.close(fd)
            throw error
        }
    }

    /// Opens one component below `parent`, never following a link; creates it when asked, with
    /// exactly `mode` when that is set-group-ID.
    func openComponent(_ name: String, in parent: CInt, path: String, creating: Bool, mode: mode_t) throws(PreferenceError) -> CInt? {
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        for _ in 0..<2 {
            switch Syscall.openat(parent, name, flags) {
            case .success(let fd): return fd
            case .failure(.noSuchFileOrDirectory) where creating:
                switch Syscall.mkdirat(parent, name, mode & 0o777) {
                case .success, .failure(.fileExists): break
                case .failure(let errno): throw PreferenceError.system("mkdirat", errno, path: path, doing: "create the directory")
                }
                guard case .success(let fd) = Syscall.openat(parent, name, flags) else { continue }
                // A group container gets exactly its mode, whatever the umask (mkdir drops S_ISGID).
                if mode & S_ISGID != 0, case .success(let st) = Syscall.fstat(fd), st.st_uid == geteuid() {
                    _ = Syscall.fchmod(fd, mode)
                }
                return fd
            case .failure(.noSuchFileOrDirectory): return nil
            case .failure(.tooManySymbolicLinkLevels), .failure(.notDirectory):
                let isLink = if case .success(let st) = Syscall.lstatat(parent, name) { st.st_mode & S_IFMT == S_IFLNK } else { false }
                throw PreferenceError(
                    code: isLink ? .symbolicLink : .ioFailure,
                    message: isLink
                        ? "\(path) is a symbolic link; SharedPrefs never follows links below \(trusted), so that no write can leave it. Remove the link (and put a real directory there)."
                        : "\(path) is not a directory; remove the file that stands in its place.",
                    path: path)
            case .failure(let errno): throw PreferenceError.system("openat", errno, path: path, doing: "open the directory")
            }
        }
        throw PreferenceError(code: .ioFailure, message: "\(path) keeps disappearing while it is being created; check what else removes it.", path: path)
    }

    /// Creates the trusted directory and its missing parents by path (0755 each; the trusted
    /// directory itself gets `mode` when it holds the suites).
    private func createTrusted() throws(PreferenceError) {
        var missing: [String] = []
        var path = trusted
        while !path.isEmpty, path != "/" {
            if case .success = Syscall.stat(path) { break }
            missing.append(path)
            path = Path.parent(path)
        }
        for dir in missing.reversed() {
            let dirMode: mode_t = dir == trusted && components.isEmpty ? mode : 0o755
            switch Syscall.mkdir(dir, dirMode & 0o777) {
            case .success: if dirMode & S_ISGID != 0 { _ = Syscall.chmod(dir, dirMode) }
            case .failure(.fileExists): continue
            case .failure(let errno): throw PreferenceError.system("mkdir", errno, path: dir, doing: "create the directory")
            }
        }
    }

    /// Refuses a directory ``Trust/refusal(of:as:)`` refuses, saying why and what to do.
    private static func check(_ st: stat, path: String, as use: Trust.Use) throws(PreferenceError) {
        switch Trust.refusal(of: st, as: use) {
        case nil: return
        case .everyoneMayReplaceEntries?:
            throw PreferenceError(
                code: .insecureDirectory,
                message: "Refusing to use \(path): it is writable by every user and has no sticky bit, so anyone could replace the suites in it. Run chmod o-w \(path) (or chmod +t to keep it shared).",
                path: path)
        case _?:
            throw PreferenceError(
                code: .untrustedFile,
                message: "Refusing to use \(path): it is owned by uid \(st.st_uid) and group \(st.st_gid) (mode \(String(st.st_mode & 0o7777, radix: 8))), neither this user nor root, and \(st.st_mode & S_IWOTH != 0 ? "others may write it" : "its group is none of this user's"), so someone else may have put it there. Remove it, or have it owned by you or by a group you share (chown, chmod o-w), if you trust its owner.",
                path: path)
        }
    }
}
