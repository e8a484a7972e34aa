#if canImport(Glibc)
import Glibc
#endif

// What the library needs of Foundation's string API beyond FoundationEssentials (which carries
// no ICU data): trimming, zero-padded numbers, dates and times, and path components.

extension StringProtocol {
    /// Without leading and trailing whitespace, newlines included.
    package var trimmed: SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return self[endIndex...] }
        return self[first...last]
    }
}

extension BinaryInteger {
    /// In `radix` (lowercase), padded with zeros to `width` digits: `7.padded(2, radix: 16)` is `07`.
    package func padded(_ width: Int, radix: Int = 10) -> String {
        let digits = String(magnitude, radix: radix)
        return (self < 0 ? "-" : "") + String(repeating: "0", count: max(width - digits.count, 0)) + digits
    }
}

extension tm {
    /// `HH:MM:SS`.
    package var timeOfDay: String { "\(tm_hour.padded(2)):\(tm_min.padded(2)):\(tm_sec.padded(2))" }

    /// `YYYY-MM-DDTHH:MM:SS`, as ISO 8601 writes a date and a time.
    package var dateAndTime: String { "\((Int(tm_year) + 1900).padded(4))-\((tm_mon + 1).padded(2))-\(tm_mday.padded(2))T" + timeOfDay }
}

/// Path components as `NSString`'s path methods give them, for absolute and relative paths.
/// (Not swift-system's `FilePath`: in a debug build its invariant checks made opening 2,000
/// suites take 19 s under ThreadSanitizer, against 4.7 s with these.)
package enum Path {
    /// The path without its last component: `/a/b` → `/a`, `/a` → `/`, `a` → ``.
    package static func parent(_ path: String) -> String {
        let trimmed = trailingSlashesRemoved(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = trailingSlashesRemoved(String(trimmed[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// The last component: `/a/b/` → `b`, `/` → `/`.
    package static func lastComponent(_ path: String) -> String {
        let trimmed = trailingSlashesRemoved(path)
        guard trimmed != "/" else { return trimmed }
        return trimmed.lastIndex(of: "/").map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
    }

    /// `~` and `~/…` with the home directory (`$HOME`, else the password database's), `~user/…`
    /// with that user's; anything else, or a user not known, unchanged.
    package static func expandingTilde(_ path: String) -> String {
        guard path.hasPrefix("~") else { return path }
        let user = path.dropFirst().prefix { $0 != "/" }
        let rest = path.dropFirst(1 + user.count)
        guard let home = user.isEmpty ? home : homeDirectory(of: String(user)) else { return path }
        return trailingSlashesRemoved(rest.isEmpty ? home : trailingSlashesRemoved(home) + rest)
    }

    /// This user's home directory as Foundation finds it: `$HOME` when it is an absolute path
    /// (`sudo -E`, containers, CI and tests set it), else the password database's.
    package static var home: String? {
        if let variable = getenv("HOME"), variable.pointee == CChar(bitPattern: UInt8(ascii: "/")) { return String(cString: variable) }
        return homeDirectory(of: nil)
    }

    /// The home directory of `user` (this process's effective user when `nil`), from the user
    /// database with the reentrant calls: `getpwnam` and `getpwuid` hand every thread of the
    /// process one buffer, which another thread's look-up overwrites (`~root` read as the home of
    /// another user, once, in a test run).
    private static func homeDirectory(of user: String?) -> String? {
        var size = 4096
        while true {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            var entry = passwd()
            var found: UnsafeMutablePointer<passwd>? = nil
            let status = user.map { getpwnam_r($0, &entry, buffer, size, &found) } ?? getpwuid_r(geteuid(), &entry, buffer, size, &found)
            if status == ERANGE, size < 1 << 20 {
                size *= 4
                continue
            }
            return status == 0 && found != nil ? String(cString: entry.pw_dir) : nil
        }
    }

    private static func trailingSlashesRemoved(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
