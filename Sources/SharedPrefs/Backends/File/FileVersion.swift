#if canImport(Glibc)
import Glibc
#endif

/// A file or directory as the kernel knows it, whatever its path.
struct FileIdentity: Hashable, Sendable {
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

/// The version of a suite file a store last read or wrote, and how to tell the file on disk is still
/// it without a descriptor. An equal stamp alone proves nothing (ext4 reuses a freed inode number at
/// once; a same-size write in the same tick keeps the times), so a stamp is trusted only when its
/// `ctime` lies more than ``granularity`` before it was taken, as git trusts its index. An equal
/// "racy" stamp is confirmed by the content, or for a file this process wrote of
/// ``Syscall/readChunk`` bytes or more, by its ``proof``.
struct FileVersion: Sendable {
    /// `nil` when there is no file.
    var stamp: FileStamp?
    /// The file's bytes (empty when there is no file), shared with the store's ``SuiteImage``.
    var content: [UInt8]
    /// `CLOCK_REALTIME` in nanoseconds just before `stamp` was taken.
    var takenAt: Int64
    /// What proves an equal racy stamp without reading the file.
    var proof: Proof = .none

    /// How a file this process wrote is known unchanged while its stamp is. With multigrain timestamps
    /// (Linux 6.13+ on ext4, XFS, Btrfs, tmpfs) any later change gets a later `ctime`, so an equal stamp
    /// proves the inode unchanged; the generation (``Syscall/generation(_:)``) proves it is the same
    /// inode, or the file system never reuses numbers soon (tmpfs).
    enum Proof: Sendable, Equatable {
        case none
        case generation(Int)
        case uniqueInodes

        /// ext4's `f_type` (statfs).
        static let ext4 = 0xEF53

        /// File systems with multigrain timestamps (statfs `f_type`), and whether they never
        /// reuse an inode number soon: ext4, XFS, Btrfs, tmpfs.
        private static let multigrain: [Int: Bool] = [ext4: false, 0x5846_5342: false, 0x9123_683E: false, 0x0102_1994: true]

        /// Whether this kernel has multigrain timestamps (6.13 and later).
        private static let kernelHasMultigrain: Bool = {
            var system = utsname()
            guard uname(&system) == 0 else { return false }
            let release = withUnsafeBytes(of: system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
            return numbers.count == 2 && (numbers[0], numbers[1]) >= (6, 13)
        }()

        /// The proof for `fd`, just written and `fstat`ed as `st` on a file system of type `fileSystem`. A
        /// `ctime` of whole seconds means no finer times (ext2/3 share ext4's `f_type`): only content proves.
        static func of(_ fd: CInt, _ st: stat, on fileSystem: Int?) -> Proof {
            guard let fileSystem, let unique = multigrain[fileSystem], st.st_ctim.tv_nsec != 0, kernelHasMultigrain else { return .none }
            if unique { return .uniqueInodes }
            guard case .success(let generation) = Syscall.generation(fd) else { return .none }
            return .generation(generation)
        }

        /// Whether the file open as `fd`, whose stamp equals the version's, is proven the same.
        func holds(_ fd: CInt) -> Bool {
            switch self {
            case .none: false
            case .uniqueInodes: true
            case .generation(let generation): Syscall.generation(fd) == .success(generation)
            }
        }
    }

    /// The coarsest timestamp step of the file systems suites live on: ext4 with 128-byte inodes
    /// and NFS servers keep whole seconds, FAT two.
    static let granularity: Int64 = 2_000_000_000

    static let missing = FileVersion(stamp: nil, content: [], takenAt: 0)

    /// Whether an equal stamp does not prove this version: its `ctime` is too recent.
    var isRacy: Bool {
        guard let stamp else { return false }
        return stamp.changed >= takenAt - Self.granularity
    }

    /// Now, in nanoseconds since the epoch: take it before the `fstat` whose stamp it goes with.
    static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
