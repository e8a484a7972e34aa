#if canImport(Glibc)
import Glibc
#endif
import SharedPrefsLocking

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
///
/// Except for a file this process wrote and still holds open (so that its inode cannot be
/// reused), on a file system that gives every change made after a `stat` a new `ctime`
/// (``FineTimestamps``): there an equal stamp is proof, and the writer never reads its own file
/// back. See ``untouched``.
struct FileVersion: Sendable {
    /// `nil` when there is no file.
    var stamp: FileStamp?
    /// The file's bytes (empty when there is no file), shared with the store's ``SuiteImage``.
    var content: [UInt8]
    /// `CLOCK_REALTIME` in nanoseconds just before `stamp` was taken.
    var takenAt: Int64
    /// Written by this process through an unnamed file whose modification time did not change
    /// between a `stat` right after its data was written and the `stat` of `stamp` after its
    /// rename: nobody wrote to it in between, so it holds `content` for as long as `stamp` stays,
    /// where ``FineTimestamps`` trusts its file system.
    var untouched = false

    /// The coarsest timestamp step of the file systems suites live on: ext4 with 128-byte inodes
    /// and NFS servers keep whole seconds, FAT two.
    static let granularity: Int64 = 2_000_000_000

    static let missing = FileVersion(stamp: nil, content: [], takenAt: 0)

    var isRacy: Bool {
        guard let stamp else { return false }
        return stamp.changed >= takenAt - Self.granularity
    }

    /// Whether an equal stamp proves this version, content unseen: not racy, or ``untouched``
    /// and held open (`heldOpen`) on a file system ``FineTimestamps`` trusts.
    func isProvenByStamp(heldOpen: Bool) -> Bool {
        guard let stamp, isRacy else { return true }
        return untouched && heldOpen && FineTimestamps.trusts(device: stamp.device)
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

/// The file systems on which every change of a file made after a `stat` of it gets a new `ctime`,
/// however soon: Linux 6.13's multigrain timestamps (ext4, XFS, Btrfs, tmpfs), or a clock as fine
/// as the kernel's. Elsewhere a change within the same clock tick (4 ms at `HZ=250`) can keep the
/// `ctime` it had.
///
/// Learnt from this process's own writes, each of which takes a `stat` of its data and then links
/// and renames the file, two changes of its `ctime`: a device is trusted after ``required``
/// writes in a row whose `ctime` moved (a tick boundary falls between the two in about 1 write
/// of 50 where the clock is coarse), and never again once one did not. Network and FUSE file
/// systems (``InotifyWatcher/fileSystemsWithoutRemoteEvents``), whose attributes a client may
/// cache, are never trusted.
enum FineTimestamps {
    /// Per device: the writes in a row seen to move the `ctime`, or -1 for a device never to trust.
    private static let seen = Lock<[UInt64: Int]>([:])
    static let required = 8

    /// Counts a write on `device` (in `directory`) whose link and rename moved its `ctime` or not.
    static func record(device: UInt64, moved: Bool, in directory: String) {
        let isNew = seen.withLock { $0[device] == nil }
        let remote = isNew && (try? Syscall.fileSystemType(directory).get()).map { InotifyWatcher.fileSystemsWithoutRemoteEvents[$0] != nil } ?? true
        seen.withLock { seen in
            let count = seen[device] ?? 0
            seen[device] = remote || count < 0 || !moved ? -1 : count + 1
        }
    }

    static func trusts(device: UInt64) -> Bool {
        seen.withLock { ($0[device] ?? 0) >= required }
    }
}
