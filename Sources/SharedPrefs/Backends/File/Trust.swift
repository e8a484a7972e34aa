#if canImport(Glibc)
import Glibc
#endif

/// Whom the library lets write what it writes through or believes: one function,
/// ``refusal(of:as:)``, decides whether a directory or file may be used, and why not.
enum Trust {
    /// What the library would use a directory or file as.
    enum Use {
        /// The trusted directory a suite's path starts from: only its mode counts (it is the
        /// caller's choice).
        case trustedDirectory
        /// A suite directory, or a directory on the way to one below the trusted directory.
        case suiteDirectory
        /// The directory of writes of the suite directory `dir`.
        case writesDirectory(of: OpenDirectory)
        /// A suite, lock or temporary file in `dir`.
        case sharedFile(in: OpenDirectory)
        /// A system layer's directory or file; `trustsUser`: this user stands in for root (a test
        /// root).
        case systemLayer(directory: Bool, trustsUser: Bool)
    }

    /// Why a use is refused.
    enum Refusal {
        /// A directory every user may write without the sticky bit: anyone could replace the
        /// entries in it.
        case everyoneMayReplaceEntries
        /// Owned by someone this user does not share the directory or file with (for a shared
        /// file: in a directory every user may write, where anyone could have planted it).
        case foreignOwner
        /// A directory of writes that admits a writer its suite directory does not admit.
        case admitsMore
        /// A system layer that does not count, and why.
        case systemLayer(String)
    }

    /// The one trust rule: why `st` may not be used as `use`, or `nil` when it may.
    ///
    /// - A suite directory and each one below the trusted one: owned by this user or root, or by a
    /// group of this user's that others may not write; never world-writable without the sticky bit
    /// (the trusted directory: only the latter).
    /// - The directory of writes: on the suite directory's device, admitting no writer it does not
    /// admit: nobody else may write it, its group only where that group may write the suite
    /// directory, its owner this user, the suite directory's owner or root.
    /// - A suite, lock or temporary file in a world-writable directory: this user's or root's.
    /// - A system layer's directory or file: of the kind expected, root's (or this user's under a test
    /// root), writable by nobody else.
    static func refusal(of st: stat, as use: Use) -> Refusal? {
        // Asked only where it decides (a system call each time: the effective user may change).
        func mine() -> Bool { st.st_uid == 0 || st.st_uid == geteuid() }
        switch use {
        case .trustedDirectory, .suiteDirectory:
            if st.st_mode & S_IWOTH != 0 && st.st_mode & S_ISVTX == 0 { return .everyoneMayReplaceEntries }
            if case .suiteDirectory = use, !mine(), st.st_mode & S_IWOTH != 0 || !isMember(of: st.st_gid) { return .foreignOwner }
            return nil
        case .writesDirectory(let dir):
            guard st.st_mode & S_IFMT == S_IFDIR, st.st_dev == dir.identity.device, st.st_mode & S_IWOTH == 0 else { return .admitsMore }
            if st.st_mode & S_IWGRP != 0, dir.mode & S_IWGRP == 0 || st.st_gid != dir.group { return .admitsMore }
            return st.st_uid == dir.owner || mine() ? nil : .admitsMore
        case .sharedFile(let dir):
            return !dir.isWritableByEveryone || mine() ? nil : .foreignOwner
        case .systemLayer(let directory, let trustsUser):
            if st.st_mode & S_IFMT != (directory ? S_IFDIR : S_IFREG) { return .systemLayer(directory ? "it is not a directory" : "it is not a regular file (a FIFO, a device or a directory)") }
            if st.st_uid != 0 && !(trustsUser && st.st_uid == geteuid()) { return .systemLayer("it belongs to uid \(st.st_uid), not to root") }
            if st.st_mode & 0o022 != 0 { return .systemLayer("it is writable by \(st.st_mode & 0o002 != 0 ? "every user" : "its group") (mode \(String(st.st_mode & 0o7777, radix: 8)))") }
            return nil
        }
    }

    /// Whether this process is in group `gid` (its effective or a supplementary group).
    static func isMember(of gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        return getgroups(count, &groups) > 0 && groups.contains(gid)
    }
}
