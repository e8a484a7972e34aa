#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Who holds a lock, as `/proc/locks` tells: "PID 1234 (prefs-watch)".
enum LockHolder {
    /// The holder of the `flock` on the file `device`/`inode`, or `nil` when `/proc/locks` does
    /// not say (no procfs, another PID namespace, or the lock was just released).
    static func find(device: UInt64, inode: UInt64, locks: String? = nil) -> String? {
        guard let pid = pids(device: device, inode: inode, locks: locks).first else { return nil }
        let name = Syscall.procFile("/proc/\(pid)/comm").map { String($0.trimmed) }
        return "PID \(pid)" + (name.map { " (\($0))" } ?? "")
    }

    /// The processes holding a `flock` on the file `device`/`inode` (several for a shared lock);
    /// empty when `/proc/locks` does not say. Read from `locks`, or from `/proc/locks` up to
    /// three times: a read of it longer than a page is several walks of the kernel's list, and a
    /// lock let go between two of them shifts the next past a line (the holder's, say).
    static func pids(device: UInt64, inode: UInt64, locks: String? = nil) -> [Int32] {
        guard locks == nil else { return pids(device: device, inode: inode, in: locks!) }
        for _ in 0..<3 {
            let found = pids(device: device, inode: inode, in: Syscall.procFile("/proc/locks") ?? "")
            if !found.isEmpty { return found }
        }
        return []
    }

    private static func pids(device: UInt64, inode: UInt64, in locks: String) -> [Int32] {
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" after the number.
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        let file = "\(major.padded(2, radix: 16)):\(minor.padded(2, radix: 16)):\(inode)"
        return locks.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == file, let pid = Int32(fields[4]), pid > 0 else { return nil }
            return pid
        }
    }

    /// Whether process `pid` may write a directory of owner, group and mode `st`, by the file
    /// system uid, gid and groups `/proc/<pid>/status` shows (root may); `nil` when it shows
    /// none (the process ended, or procfs hides it).
    static func mayWrite(pid: Int32, _ st: stat, status: String? = nil) -> Bool? {
        guard let status = status ?? Syscall.procFile("/proc/\(pid)/status") else { return nil }
        func ids(_ field: String) -> [UInt32]? {
            status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
                .map { $0.dropFirst(field.count + 1).split(whereSeparator: \.isWhitespace).compactMap { UInt32($0) } }
        }
        // Uid and Gid: real, effective, saved, file system.
        guard let uids = ids("Uid"), uids.count == 4, let gids = ids("Gid"), gids.count == 4 else { return nil }
        let (uid, groups) = (uids[3], [gids[3]] + (ids("Groups") ?? []))
        if uid == 0 { return true }
        let write: mode_t = uid == st.st_uid ? 0o300 : groups.contains(st.st_gid) ? 0o030 : 0o003
        return st.st_mode & write == write
    }
}
