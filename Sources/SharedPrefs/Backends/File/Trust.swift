#if canImport(Glibc)
import Glibc
#endif

/// Whom the library lets write what it writes through or believes: the rules by which a
/// directory or file is used, in one place.
///
/// - A suite directory, and every directory below the trusted one: owned by this user or root,
///   or by a group of this user's that others may not write (``directoryOwner(_:)``); never
///   writable by every user without the sticky bit (``everyoneMayReplaceEntries(_:)``).
/// - The directory of writes: admits no writer the suite directory does not admit
///   (``writesDirectory(_:of:)``).
/// - A suite, lock or temporary file in a directory every user may write: owned by this user or
///   root (``file(_:in:)``).
/// - A system layer's directory or file: owned by root, writable by nobody else
///   (``systemLayerProblem(_:directory:trustsUser:)``).
enum Trust {
    /// Whether a directory of this mode is writable by every user without the sticky bit, where
    /// anyone could replace the entries in it: never used.
    static func everyoneMayReplaceEntries(_ mode: mode_t) -> Bool {
        mode & S_IWOTH != 0 && mode & S_ISVTX == 0
    }

    /// Whether a directory's owner may be trusted with the suites in it: this user or root, or a
    /// group of this user's that others may not write (a group container is shared with its
    /// group, and with nobody else).
    static func directoryOwner(_ st: stat) -> Bool {
        st.st_uid == geteuid() || st.st_uid == 0 || (st.st_mode & S_IWOTH == 0 && isMember(of: st.st_gid))
    }

    /// Whether a suite, lock or temporary file may be used: owned by this user or root, or in a
    /// directory that not every user can write (where anyone could have planted it).
    static func file(_ st: stat, in dir: OpenDirectory) -> Bool {
        !dir.isWritableByEveryone || st.st_uid == geteuid() || st.st_uid == 0
    }

    /// Whether the directory of writes `st` may carry the temporary files of the suite directory
    /// `dir`: a directory on the same device that admits no writer `dir` does not admit. Nobody
    /// else may write it; its group only where that group may write `dir`; its owner is this
    /// user (who writes `dir` through it, or fails to), `dir`'s owner, or root. (A directory of
    /// writes made 0770 before its suite directory was tightened to 0750 let a group member
    /// swap the temporary files of a suite it may not write.)
    static func writesDirectory(_ st: stat, of dir: OpenDirectory) -> Bool {
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_dev == dir.identity.device, st.st_mode & S_IWOTH == 0 else { return false }
        if st.st_mode & S_IWGRP != 0, dir.mode & S_IWGRP == 0 || st.st_gid != dir.group { return false }
        return st.st_uid == dir.owner || st.st_uid == 0 || st.st_uid == geteuid()
    }

    /// Why a system layer's directory or file `st` does not count, or `nil` when it does: it is
    /// of the kind expected, root owns it (or this user, under a test root) and nobody else may
    /// write it.
    static func systemLayerProblem(_ st: stat, directory: Bool, trustsUser: Bool) -> String? {
        if st.st_mode & S_IFMT != (directory ? S_IFDIR : S_IFREG) { return directory ? "it is not a directory" : "it is not a regular file (a FIFO, a device or a directory)" }
        if st.st_uid != 0 && !(trustsUser && st.st_uid == geteuid()) { return "it belongs to uid \(st.st_uid), not to root" }
        if st.st_mode & 0o022 != 0 { return "it is writable by \(st.st_mode & 0o002 != 0 ? "every user" : "its group") (mode \(String(st.st_mode & 0o7777, radix: 8)))" }
        return nil
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
