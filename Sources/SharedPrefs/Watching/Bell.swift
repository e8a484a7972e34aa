#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import SharedPrefsLocking

/// This user's bells: one futex word per watched directory in a small file of the user's own,
/// mapped shared by each process of the user that observes or writes suites, so that one process
/// per directory holds an inotify watch (Linux gives a user 128 instances).
///
/// That process has the directory's *duty*: an open file description lock on a byte chosen by the
/// directory's device and inode, which the kernel lets go when it dies. It rings the bell
/// (`FUTEX_WAKE_OP`) for what no writer rang for; the others wait with `futex_waitv`, each with
/// a thread blocked on the lock to take the duty over (``InotifyWatcher``). A writer rings itself
/// after its rename and records the file's inode, so the process on duty does not ring again.
///
/// The file is `$SHAREDPREFS_BELLS` (`off`: none), else `$XDG_RUNTIME_DIR/sharedprefs.bells`,
/// else `/dev/shm/sharedprefs-<uid>.bells`; used only as a regular file of this user's nobody else
/// may read or write. Without one, or without `futex_waitv`, each process watches itself.
/// ManyProcesses.md has the whole.
final class Bell: Sendable {
    /// Words in the file (64 KiB), followed by as many records of 8 bytes (128 KiB).
    static let slots = 16_384
    private static let size = slots * (4 + 8)
    /// The process's bells (`nil` where there are none), opened anew in a child forked without exec:
    /// its locks must be its own.
    static var shared: Bell? {
        let forks = sharedprefs_fork_count()
        return current.withLock { current in
            if let current, current.forks == forks { return current.bell }
            let bell = Bell.open(replacing: current?.bell)
            current = (forks, bell)
            return bell
        }
    }
    private static let current = Lock<(forks: UInt, bell: Bell?)?>(nil)

    /// The file's descriptor, open for reading and writing (a write lock needs it).
    private let fd: CInt
    /// The file, mapped shared.
    nonisolated(unsafe) private let words: UnsafeMutablePointer<UInt32>
    /// Where it is, for messages.
    let path: String

    private init(fd: CInt, words: UnsafeMutablePointer<UInt32>, path: String) {
        self.fd = fd
        self.words = words
        self.path = path
    }

    /// Whether the kernel has `futex_waitv` (Linux 5.16): a process that observes uses bells only
    /// then. (A writer rings them whatever the kernel: nobody waits where none can.)
    static let canWait: Bool = {
        // futex_waitv with no waiters: EINVAL where the call exists, ENOSYS before.
        sharedprefs_futex_waitv(nil, 0) == 0 || errno != ENOSYS
    }()

    /// Where the bells of `user` (this process's effective user) are, or `nil` when they are switched off.
    private static func location(of user: uid_t) -> String? {
        if let set = getenv("SHAREDPREFS_BELLS").map({ String(cString: $0) }), !set.isEmpty {
            return set == "off" ? nil : set
        }
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/"),
           case .success(let st) = Syscall.stat(runtime), st.st_mode & S_IFMT == S_IFDIR, st.st_uid == user {
            return runtime + "/sharedprefs.bells"
        }
        return "/dev/shm/sharedprefs-\(user).bells"
    }

    private static func open(replacing old: Bell?) -> Bell? {
        if let old { Syscall.close(old.fd) }
        let user = geteuid()
        guard let path = location(of: user) else { return nil }
        guard case .success(let fd) = Syscall.openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600) else {
            logger.notice("\(path) cannot be opened; each process that observes suites watches with an inotify instance of its own.")
            return nil
        }
        guard case .success(let st) = Syscall.fstat(fd), st.st_mode & S_IFMT == S_IFREG, st.st_uid == user, st.st_mode & 0o077 == 0,
              st.st_size >= size || (try? Syscall.truncate(fd, size).get()) != nil,
              let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED
        else {
            logger.notice("\(path) is not a file of this user's that only this user may read and write; each process that observes suites watches with an inotify instance of its own. Remove it.")
            Syscall.close(fd)
            return nil
        }
        return Bell(fd: fd, words: mapped.assumingMemoryBound(to: UInt32.self), path: path)
    }

    /// The word of the directory `identity` (FNV-1a of its device and inode).
    func slot(of identity: FileIdentity) -> Int {
        Int(Self.hash(identity) % UInt64(Self.slots))
    }

    /// Where the lock of the directory `identity`'s duty is: a byte among 2⁶² (locks need no
    /// data there), so that two directories that share a word never share a duty.
    private static func dutyOffset(_ identity: FileIdentity) -> Int {
        Int(hash(identity) >> 2)
    }

    private static func hash(_ identity: FileIdentity) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in [identity.device, identity.inode] {
            for shift in stride(from: 0, to: 64, by: 8) { hash = (hash ^ (part >> UInt64(shift) & 0xff)) &* 0x100_0000_01b3 }
        }
        return hash
    }

    /// What the word holds now, read from the file (a read of the mapping would raise SIGBUS
    /// if the file were cut short meanwhile). 0 if it cannot be read.
    func value(_ slot: Int) -> UInt32 {
        var value: UInt32 = 0
        _ = withUnsafeMutableBytes(of: &value) { pread(fd, $0.baseAddress, 4, off_t(slot * 4)) }
        return value
    }

    /// Rings the bell: adds 1 to the word (1 << 16 when the directory `moved` or went: the
    /// word's upper half counts those) and wakes every process that waits on it.
    func ring(_ slot: Int, moved: Bool = false) {
        _ = moved ? sharedprefs_futex_ring_shared_moved(words + slot) : sharedprefs_futex_ring_shared(words + slot)
    }

    /// Before a writer renames the file `inode` into the directory `identity`: records it, so that the
    /// process on duty does not ring again for it.
    func willRename(_ inode: UInt64, in identity: FileIdentity) {
        var inode = inode
        _ = withUnsafeBytes(of: &inode) { pwrite(fd, $0.baseAddress, 8, off_t(Self.slots * 4 + slot(of: identity) * 8)) }
    }

    /// Whether `inode` is the file a writer of this user renamed in last (``willRename(_:in:)``) in a
    /// directory of bell `slot`.
    func rang(for inode: UInt64, _ slot: Int) -> Bool {
        var recorded: UInt64 = 0
        let read = withUnsafeMutableBytes(of: &recorded) { pread(fd, $0.baseAddress, 8, off_t(Self.slots * 4 + slot * 8)) }
        return read == 8 && recorded == inode
    }

    /// Whether the bell rang for a move since it held `heard` and now holds `now` (or rang 65,536
    /// times: then a process only looks once more where the directory is).
    static func moved(from heard: UInt32, to now: UInt32) -> Bool {
        heard >> 16 != now >> 16
    }

    /// What ``InotifyWatcher`` waits on for `slot`, expecting `value`.
    func waiter(_ slot: Int, expecting value: UInt32) -> futex_waitv {
        futex_waitv(val: UInt64(value), uaddr: UInt64(UInt(bitPattern: words + slot)), flags: UInt32(FUTEX_32), __reserved: 0)
    }

    /// Takes the duty of the directory `identity` if no other process has it, or, `waiting`, blocks
    /// until none has. Whether this process has it.
    func takeDuty(_ identity: FileIdentity, waiting: Bool = false) -> Bool {
        while true {
            if sharedprefs_byte_lock(fd, Int16(F_WRLCK), Self.dutyOffset(identity), waiting ? 1 : 0) == 0 { return true }
            if !(waiting && errno == EINTR) { return false }
        }
    }

    /// Gives up the duty of the directory `identity`.
    func releaseDuty(_ identity: FileIdentity) {
        _ = sharedprefs_byte_lock(fd, Int16(F_UNLCK), Self.dutyOffset(identity), 0)
    }
}
