import Foundation

/// Who holds a lock, as `/proc/locks` tells: "PID 1234 (prefs-watch)".
enum LockHolder {
    /// The holder of the `flock` on the file `device`/`inode`, or `nil` when `/proc/locks` does
    /// not say (no procfs, another PID namespace, or the lock was just released).
    static func find(device: UInt64, inode: UInt64, locks: String? = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) -> String? {
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" after the number.
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        let file = String(format: "%02x:%02x:%llu", major, minor, inode)
        for line in (locks ?? "").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] != "->", fields[1] == "FLOCK", fields[5] == file, let pid = Int32(fields[4]), pid > 0 else { continue }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            return "PID \(pid)" + (name.map { " (\($0))" } ?? "")
        }
        return nil
    }
}
