#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import SharedPrefsLocking

/// This user's bells: one futex word per watched directory in one small file of the user's own,
/// mapped shared by every process of the user that observes or writes suites.
///
/// Linux allows each user 128 inotify instances (`fs.inotify.max_user_instances`), shared with
/// every other program of the user. So of the processes of one user that observe a directory,
/// one has the *duty* of watching it with inotify: it holds a write lock on one byte of the file,
/// far past its end, chosen by the directory's device and inode (an open file description lock,
/// which the kernel lets go the moment the process dies),
/// and rings the bell (adds 1 to the word and wakes every waiter, in one `FUTEX_WAKE_OP`) for
/// what it hears there that no writer of this user rang for. The others wait on the word with `futex_waitv`, and each keeps
/// one thread blocked on that lock: when the process on duty dies or lets the directory go, one
/// of them gets it at once and takes the duty over (``InotifyWatcher``).
///
/// A writer of this library rings the bell itself once its file is renamed in, and records the
/// file's inode beside the word: the process on duty, which hears the rename too, does not ring
/// again for it. So a write reaches every process as soon as inotify would have brought it.
///
/// A directory's word is chosen by its device and inode: two directories may share one, whose
/// waiters then also wake for the other's changes, find their suites unchanged, and wait again.
///
/// The file is `$SHAREDPREFS_BELLS` if set (`off`: no bells, every process watches with inotify
/// of its own), else `sharedprefs.bells` in `$XDG_RUNTIME_DIR`, else
/// `/dev/shm/sharedprefs-<uid>.bells`; it is used only if it is a regular file of this user's
/// that nobody else may read or write. Where there is none (or the kernel has no `futex_waitv`,
/// before Linux 5.16), every process watches with inotify of its own, as before.
final class Bell: Sendable {
    /// Words in the file (64 KiB), followed by as many records of 8 bytes (128 KiB).
    static let slots = 16_384
    private static let size = slots * (4 + 8)
    /// The process's bells, opened anew in a child forked without exec (whose locks must be its
    /// own: an open file description lock belongs to the description, which a fork shares).
    /// `nil` where there are none.
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

    /// Before a writer of this process renames the file `inode` into the directory `identity`
    /// (and rings its bell once it has): records it, so that the process on duty, woken by the
    /// rename, does not ring again for it.
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

    /// Takes the duty of watching the directory `identity` and ringing its bell if no other
    /// process has it, or, `waiting`, once none has it any more (blocking the calling thread until
    /// then). Whether this process has it.
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
