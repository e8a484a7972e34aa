#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSharedPrefsShims
import SystemPackage
import Synchronization

// Thin typed wrappers over the C calls this package makes. Each returns `Result<_, Errno>`,
// retries `EINTR`, and reads `errno` inside the same closure that made the call (the pattern of
// swift-system's `valueOrErrno(retryOnInterrupt:)`), so nothing in between can clobber it.
// Callers map the `Errno` to a `PreferenceError` naming the path and the call.

@inline(never)
func valueOrErrno<I: FixedWidthInteger>(retryOnInterrupt: Bool = true, _ body: () -> I) -> Result<I, Errno> {
    while true {
        let result = body()
        if result != -1 { return .success(result) }
        let error = Errno(rawValue: errno)
        if retryOnInterrupt && error == .interrupted { continue }
        return .failure(error)
    }
}

package enum Syscall {
    /// The corresponding C function is `openat`.
    static func openat(_ dirfd: CInt, _ path: String, _ flags: CInt, _ mode: mode_t = 0) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.openat(dirfd, path, flags, mode) }
    }

    /// The corresponding C function is `open`.
    static func open(_ path: String, _ flags: CInt) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.open(path, flags) }
    }

    /// The corresponding C function is `close`. `EINTR` is not retried: Linux always frees the descriptor.
    /// In debug builds, a descriptor that was not open is a bug that stops the process: the
    /// number may have been another file's, closed from under its owner.
    static func close(_ fd: CInt) {
        let result = Glibc.close(fd)
        assert(result == 0 || errno != EBADF, "close(\(fd)): not an open descriptor")
    }

    /// The corresponding C function is `fstat`.
    static func fstat(_ fd: CInt) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return valueOrErrno { Glibc.fstat(fd, &st) }.map { _ in st }
    }

    /// The corresponding C function is `fstatat` with `AT_SYMLINK_NOFOLLOW`.
    static func lstatat(_ dirfd: CInt, _ name: String) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return valueOrErrno { Glibc.fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) }.map { _ in st }
    }

    /// The corresponding C function is `stat`.
    static func stat(_ path: String) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return valueOrErrno { Glibc.fstatat(AT_FDCWD, path, &st, 0) }.map { _ in st }
    }

    /// The corresponding C function is `mkdir`.
    static func mkdir(_ path: String, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.mkdir(path, mode) }.map { _ in }
    }

    /// The corresponding C function is `mkdirat`.
    static func mkdirat(_ dirfd: CInt, _ name: String, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.mkdirat(dirfd, name, mode) }.map { _ in }
    }

    /// Gives the unnamed file behind `fd` (opened with ``O_TMPFILE``) the name `name` in `dirfd`:
    /// by the descriptor itself (`linkat` with `AT_EMPTY_PATH`, which Linux 6.10 and later allow
    /// the opener of the file, and root everywhere), or else through `/proc/self/fd` (`linkat`
    /// with `AT_SYMLINK_FOLLOW`), whose path lookup costs about twice as much.
    static func linkUnnamed(_ fd: CInt, _ dirfd: CInt, _ name: String) -> Result<Void, Errno> {
        if linksByDescriptor.load(ordering: .relaxed) {
            switch valueOrErrno({ sharedprefs_link_descriptor(fd, dirfd, name) }) {
            case .success: return .success(())
            case .failure(.noSuchFileOrDirectory), .failure(.permissionDenied), .failure(.notPermitted), .failure(.invalidArgument):
                linksByDescriptor.store(false, ordering: .relaxed)
            case .failure(let errno): return .failure(errno)
            }
        }
        return valueOrErrno { Glibc.linkat(AT_FDCWD, "/proc/self/fd/\(fd)", dirfd, name, AT_SYMLINK_FOLLOW) }.map { _ in }
    }

    /// Whether `linkat(AT_EMPTY_PATH)` has not failed yet in this process.
    private static let linksByDescriptor = Atomic(true)

    /// The names in the directory `dirfd` (without `.` and `..`), read through `dirfd` itself with
    /// `getdents64`: no second descriptor to open, check and close (`fdopendir` on a duplicate took
    /// seven system calls for a small directory, this two). `dirfd` must be just opened, and this
    /// caller's alone meanwhile: the reading position is its open file description's.
    static func directoryEntries(_ dirfd: CInt) -> Result<[String], Errno> {
        withUnsafeTemporaryAllocation(byteCount: 32_768, alignment: 8) { buffer in
            var names: [String] = []
            while true {
                switch valueOrErrno({ sharedprefs_getdents64(dirfd, buffer.baseAddress, UInt(buffer.count)) }) {
                case .failure(let error): return .failure(error)
                case .success(0): return .success(names)
                case .success(let count):
                    // struct linux_dirent64: ino (8 bytes), off (8), reclen (2), type (1), name.
                    var offset = 0
                    while offset < count {
                        let entry = UnsafeRawBufferPointer(rebasing: buffer[offset..<count])
                        let length = Int(entry.loadUnaligned(fromByteOffset: 16, as: UInt16.self))
                        guard length > 19 else { return .failure(.invalidArgument) }
                        let name = String(decoding: entry[19..<min(length, entry.count)].prefix { $0 != 0 }, as: UTF8.self)
                        if name != "." && name != ".." { names.append(name) }
                        offset += length
                    }
                }
            }
        }
    }

    /// The process's file mode creation mask as it was at its first use, from `/proc/self/status`
    /// (`umask(2)` can only read it by setting it, which would change it for every other thread
    /// meanwhile); `0` where that line is missing. Read once: not a file read per write.
    static let umask: mode_t = currentUmask()

    private static func currentUmask() -> mode_t {
        guard let status = procFile("/proc/self/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let mask = mode_t(line.dropFirst(6).trimmed, radix: 8)
        else { return 0 }
        return mask
    }

    /// The whole of a file in /proc (up to 16 MiB), or `nil` where it cannot be read. Read to its
    /// end: Foundation's `String(contentsOfFile:)` stops at 4,095 bytes of a file whose size
    /// says 0, as /proc's do (so /proc/locks past about 65 locks lost the rest).
    package static func procFile(_ path: String) -> String? {
        guard case .success(let fd) = open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { close(fd) }
        return (try? readAll(fd, sizeHint: 4096, limit: 16 << 20).get()).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The corresponding C function is `fchmod`.
    static func fchmod(_ fd: CInt, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.fchmod(fd, mode) }.map { _ in }
    }

    /// The corresponding C function is `chmod`.
    static func chmod(_ path: String, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.chmod(path, mode) }.map { _ in }
    }

    /// The corresponding C function is `flock`.
    static func lock(_ fd: CInt, _ operation: CInt) -> Result<Void, Errno> {
        // `flock` names both a struct and the function; the type picks the function.
        let flock: (CInt, CInt) -> CInt = Glibc.flock(_:_:)
        return valueOrErrno { flock(fd, operation) }.map { _ in }
    }

    /// The corresponding C function is `dup` (with `F_DUPFD_CLOEXEC`).
    static func duplicate(_ fd: CInt) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.fcntl(fd, F_DUPFD_CLOEXEC, 0) }
    }

    /// Whether some process has the file `fd` (open read-only) open for writing: a read lease
    /// (`F_SETLEASE`, `F_RDLCK`) is refused with `EAGAIN` exactly then. The lease is given back
    /// at once. `nil` where no lease can be taken: a file of another user, a file system without
    /// leases, `fs.leases-enable` off.
    static func isOpenForWriting(_ fd: CInt) -> Bool? {
        // Someone opening the file for writing in the instant the lease is held signals its
        // holder: SIGURG, ignored by default, where the default SIGIO would end the process.
        let (setSignal, setLease): (CInt, CInt) = (10, 1024)  // F_SETSIG, F_SETLEASE (_GNU_SOURCE)
        guard Glibc.fcntl(fd, setSignal, SIGURG) == 0 else { return nil }
        switch valueOrErrno({ Glibc.fcntl(fd, setLease, CInt(F_RDLCK)) }) {
        case .success:
            _ = Glibc.fcntl(fd, setLease, CInt(F_UNLCK))
            return false
        case .failure(.resourceTemporarilyUnavailable): return true
        case .failure: return nil
        }
    }

    /// The corresponding C function is `fsync`.
    static func fsync(_ fd: CInt) -> Result<Void, Errno> {
        valueOrErrno { Glibc.fsync(fd) }.map { _ in }
    }

    /// The corresponding C function is `renameat`.
    static func renameat(_ dirfd: CInt, _ from: String, _ to: String, in toDirfd: CInt? = nil) -> Result<Void, Errno> {
        valueOrErrno { Glibc.renameat(dirfd, from, toDirfd ?? dirfd, to) }.map { _ in }
    }

    /// The corresponding C function is `unlinkat`.
    static func unlinkat(_ dirfd: CInt, _ name: String) -> Result<Void, Errno> {
        valueOrErrno { Glibc.unlinkat(dirfd, name, 0) }.map { _ in }
    }

    /// Writes all of `bytes`, retrying short writes. The corresponding C function is `write`.
    package static func writeAll(_ fd: CInt, _ bytes: [UInt8], at position: Int? = nil) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let result = valueOrErrno {
                    position.map { Glibc.pwrite(fd, buffer.baseAddress! + offset, buffer.count - offset, off_t($0 + offset)) }
                        ?? Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                }
                switch result {
                case .success(let written): offset += written
                case .failure(let error): return .failure(error)
                }
            }
            return .success(())
        }
    }

    /// Writes all of `vectors` (at most 1,024, `IOV_MAX`) in order, retrying short writes. The
    /// corresponding C function is `writev`.
    static func writeAll(_ fd: CInt, _ vectors: [iovec]) -> Result<Void, Errno> {
        var vectors = vectors[...]
        while !vectors.isEmpty {
            let result = vectors.withUnsafeBufferPointer { v in valueOrErrno { Glibc.writev(fd, v.baseAddress, CInt(v.count)) } }
            guard case .success(var written) = result else { return result.map { _ in } }
            // Past what was written: whole vectors, then into the one it stopped in.
            while let vector = vectors.first, written >= vector.iov_len {
                written -= vector.iov_len
                vectors = vectors.dropFirst()
            }
            if written > 0, let vector = vectors.first {
                vectors[vectors.startIndex] = iovec(iov_base: vector.iov_base! + written, iov_len: vector.iov_len - written)
            }
        }
        return .success(())
    }

    /// Reads until end of file, or until more than `limit` bytes were read (then it returns
    /// `limit + 1` bytes, so the caller can tell). `sizeHint` (the file's size as `fstat` said) only
    /// sizes the first buffer, never beyond `limit + 1`: whatever size a file claims, no more than
    /// the limit is ever allocated. Reads from the file's start, whatever its offset. The
    /// corresponding C function is `pread`.
    /// - Parameter sizeIsExact: `sizeHint` is the size of a regular file replaced, not changed in
    ///   place: a read that ends there, short of what was asked, is its end (one `pread` less).
    package static func readAll(_ fd: CInt, sizeHint: Int, limit: Int, sizeIsExact: Bool = false) -> Result<[UInt8], Errno> {
        let cap = limit + 1
        var bytes = [UInt8](repeating: 0, count: min(max(sizeHint, 0) + 1, cap))
        var count = 0
        while true {
            if count == bytes.count {
                if count >= cap { return .success(bytes) }
                // A contiguous append (a memcpy, even in a debug build), doubling up to the cap.
                bytes += [UInt8](repeating: 0, count: min(max(bytes.count, 4096), cap - count))
            }
            let result = bytes.withUnsafeMutableBytes { buffer in
                valueOrErrno { Glibc.pread(fd, buffer.baseAddress! + count, buffer.count - count, off_t(count)) }
            }
            switch result {
            case .success(0):
                bytes.removeSubrange(count...)
                return .success(bytes)
            case .success(let n):
                count += n
                if sizeIsExact, count == sizeHint, count < bytes.count {
                    bytes.removeSubrange(count...)
                    return .success(bytes)
                }
            case .failure(let error): return .failure(error)
            }
        }
    }

    /// Up to `count` bytes at `offset` (fewer at the end of the file).
    static func read(_ fd: CInt, at offset: Int, _ count: Int) -> Result<[UInt8], Errno> {
        var bytes = [UInt8](repeating: 0, count: count)
        return bytes.withUnsafeMutableBytes { buffer in
            valueOrErrno { Glibc.pread(fd, buffer.baseAddress!, count, off_t(offset)) }
        }.map { read in Array(bytes.prefix(read)) }
    }

    static func truncate(_ fd: CInt, _ length: Int) -> Result<Void, Errno> {
        valueOrErrno { Glibc.ftruncate(fd, off_t(length)) }.map { _ in }
    }

    /// The most ``holds(_:_:)`` reads at once: a file smaller than this is checked in one read.
    static let readChunk = 65_536

    /// Whether the file open as `fd` holds exactly `bytes`: read from its start a piece at a time
    /// into one small buffer and compared, so that a file of any size costs no allocation of its
    /// size. For a regular file (whose reads are short only at its end). The corresponding C
    /// function is `pread`.
    static func holds(_ fd: CInt, _ bytes: [UInt8]) -> Result<Bool, Errno> {
        // One byte past `bytes` tells a longer file; no larger than that, a small file's buffer
        // is on the stack (64 KiB from the heap would grow it and give it back, two brk calls).
        withUnsafeTemporaryAllocation(byteCount: min(readChunk, bytes.count + 1), alignment: 16) { buffer in
            bytes.withUnsafeBytes { expected in
                var offset = 0
                while true {
                    switch valueOrErrno({ Glibc.pread(fd, buffer.baseAddress!, buffer.count, off_t(offset)) }) {
                    case .failure(let error): return .failure(error)
                    case .success(0): return .success(offset == expected.count)
                    case .success(let n):
                        guard n <= expected.count - offset, memcmp(buffer.baseAddress!, expected.baseAddress! + offset, n) == 0 else { return .success(false) }
                        offset += n
                        // A short read that ends where `bytes` do: the end (a regular file's).
                        if offset == expected.count, n < buffer.count { return .success(true) }
                    }
                }
            }
        }
    }

    /// The corresponding C function is `inotify_init1`.
    static func inotifyInit(_ flags: CInt) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.inotify_init1(flags) }
    }

    /// The corresponding C function is `inotify_add_watch`.
    /// Fails with the errno a test injected through ``TestingHooks/failWatches(errno:)``, if any.
    static func inotifyAddWatch(_ fd: CInt, _ path: String, _ mask: UInt32) -> Result<CInt, Errno> {
        #if SHAREDPREFS_TESTING
        let injected = TestingHooks.failingWatchErrno.load(ordering: .relaxed)
        if injected != 0 { return .failure(Errno(rawValue: injected)) }
        #endif
        return valueOrErrno { Glibc.inotify_add_watch(fd, path, mask) }
    }

    /// A non-blocking `eventfd` that counts as a semaphore: each read takes one.
    /// The corresponding C function is `eventfd`.
    static func semaphoreDescriptor() -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_eventfd_semaphore() }
    }

    /// Adds `n` to the eventfd `fd`. The corresponding C function is `write`.
    static func post(_ fd: CInt, _ n: UInt64) {
        var n = n
        _ = valueOrErrno { Glibc.write(fd, &n, 8) }
    }

    /// Takes one from the semaphore eventfd `fd` (or reads the expiries of the timerfd `fd`);
    /// whether there was one. The corresponding C function is `read`.
    static func take(_ fd: CInt) -> Bool {
        var value: UInt64 = 0
        return (try? valueOrErrno { Glibc.read(fd, &value, 8) }.get()) == 8
    }

    /// An epoll instance. The corresponding C function is `epoll_create1`.
    static func epollCreate() -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_epoll_create() }
    }

    /// Adds `fd` to the epoll instance `epfd` for reading (`once`: until one wake-up, see
    /// ``epollRearm(_:_:)``). The corresponding C function is `epoll_ctl`.
    static func epollAdd(_ epfd: CInt, _ fd: CInt, once: Bool) -> Result<Void, Errno> {
        valueOrErrno { sharedprefs_epoll_arm(epfd, fd, once ? 1 : 0, 0) }.map { _ in }
    }

    /// Arms a one-shot descriptor of `epfd` again. The corresponding C function is `epoll_ctl`.
    static func epollRearm(_ epfd: CInt, _ fd: CInt) {
        _ = valueOrErrno { sharedprefs_epoll_arm(epfd, fd, 1, 1) }
    }

    /// Waits, without a timeout, for one descriptor of `epfd` to be ready; returns it. The
    /// corresponding C function is `epoll_wait`.
    static func epollWaitOne(_ epfd: CInt) -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_epoll_wait_one(epfd) }
    }

    /// A non-blocking timer on the monotonic clock. The corresponding C function is `timerfd_create`.
    static func timerDescriptor() -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_timerfd() }
    }

    /// Makes the timer `fd` expire every `milliseconds` (0: never). The corresponding C function
    /// is `timerfd_settime`.
    static func setTimer(_ fd: CInt, every milliseconds: Int) {
        _ = valueOrErrno { sharedprefs_timerfd_every(fd, milliseconds) }
    }

    /// The `f_type` of `statfs` for the file system holding `path`.
    static func fileSystemType(_ path: String) -> Result<Int, Errno> {
        valueOrErrno { sharedprefs_filesystem_type(path) }
    }

    /// The `f_type` of `fstatfs` for the file system holding the open file `fd`.
    static func fileSystemType(of fd: CInt) -> Result<Int, Errno> {
        valueOrErrno { sharedprefs_filesystem_type_of(fd) }
    }

    /// The inode generation of the open file `fd` (`ioctl(FS_IOC_GETVERSION)`), where the file
    /// system keeps one. The corresponding C function is `ioctl`.
    static func generation(_ fd: CInt) -> Result<Int, Errno> {
        valueOrErrno { sharedprefs_generation(fd) }
    }

    /// The corresponding C function is `inotify_rm_watch`.
    static func inotifyRemoveWatch(_ fd: CInt, _ wd: CInt) {
        _ = Glibc.inotify_rm_watch(fd, wd)
    }
}

extension stat {
    /// Modification time in nanoseconds since the epoch.
    var modificationNanoseconds: Int64 { Int64(st_mtim.tv_sec) * 1_000_000_000 + Int64(st_mtim.tv_nsec) }
    /// Status change time in nanoseconds since the epoch.
    var changeNanoseconds: Int64 { Int64(st_ctim.tv_sec) * 1_000_000_000 + Int64(st_ctim.tv_nsec) }
}

/// `O_TMPFILE` (Linux ≥ 3.11; `__O_TMPFILE | O_DIRECTORY`, the same on x86_64 and arm64): an
/// unnamed file in a directory, which makes no inotify event until it is linked in. Glibc's module
/// hides it behind `_GNU_SOURCE`.
let O_TMPFILE: CInt = 0o20000000 | O_DIRECTORY

/// `O_PATH` (Linux ≥ 2.6.39, the same on x86_64 and arm64): a descriptor that only names a file
/// (for `fstat`), opens nothing, and sends no `IN_CLOSE_WRITE`. Glibc's module hides it behind
/// `_GNU_SOURCE`.
let O_PATH: CInt = 0o10000000
