#if canImport(Glibc)
import Glibc
#endif

/// A file or directory as the kernel knows it, whatever its path.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}

/// What `fstat` says of one suite file: enough to tell most new versions from the old at the
/// cost of one `fstatat`.
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

/// The version of a suite file that a store last read or wrote, and how to tell whether the file
/// on disk is still that version without holding a descriptor open.
///
/// An equal stamp alone does not prove the same file: ext4 hands a freed inode number to the next
/// new file at once, and a file of the same size written within the same timestamp tick gets
/// the same times. So a stamp is trusted only when its status-change time lies more than
/// ``granularity`` before the moment it was taken (as git trusts its index only for files not
/// modified in the second it was written): every later change, rename or new file then gets a
/// later `ctime`, which nobody can set by hand. A stamp taken sooner than that is "racy", and an
/// equal racy stamp is confirmed by the content: the file must hold the bytes read or written.
struct FileVersion: Sendable {
    /// `nil` when there is no file.
    var stamp: FileStamp?
    /// The file's bytes (empty when there is no file), shared with the store's ``SuiteImage``.
    var content: [UInt8]
    /// `CLOCK_REALTIME` in nanoseconds just before `stamp` was taken.
    var takenAt: Int64

    /// The coarsest timestamp step of the file systems suites live on: ext4 with 128-byte inodes
    /// and NFS servers keep whole seconds, FAT two.
    static let granularity: Int64 = 2_000_000_000

    static let missing = FileVersion(stamp: nil, content: [], takenAt: 0)

    /// Whether an equal stamp does not prove this version: its `ctime` is too recent.
    var isRacy: Bool {
        guard let stamp else { return false }
        return stamp.changed >= takenAt - Self.granularity
    }

    /// Whether the file holds `bytes`: a `memcmp`, faster than any hash of them.
    func holds(_ bytes: [UInt8]) -> Bool {
        content.count == bytes.count && content.withUnsafeBytes { a in bytes.withUnsafeBytes { b in a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
    }

    /// Now, in nanoseconds since the epoch: take it before the `fstat` whose stamp it goes with.
    static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
