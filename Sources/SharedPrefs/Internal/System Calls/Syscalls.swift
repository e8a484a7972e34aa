#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSharedPrefsShims
import SystemPackage
import Synchronization

// Thin typed wrappers over C calls: each returns `Result<_, Errno>`, retries `EINTR` and reads
// `errno` in the closure that made the call (swift-system's `valueOrErrno(retryOnInterrupt:)`).

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
    static func openat(_ dirfd: CInt, _ path: String, _ flags: CInt, _ mode: mode_t = 0) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.openat(dirfd, path, flags, mode) }
    }

    static func open(_ path: String, _ flags: CInt) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.open(path, flags) }
    }

    /// `EINTR` is not retried: Linux always frees the descriptor. A descriptor not open stops a debug
    /// build: the number may have been another file's.
    static func close(_ fd: CInt) {
        let result = Glibc.close(fd)
        assert(result == 0 || errno != EBADF, "close(\(fd)): not an open descriptor")
    }

    static func fstat(_ fd: CInt) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return valueOrErrno { Glibc.fstat(fd, &st) }.map { _ in st }
    }

    /// `fstatat` with `AT_SYMLINK_NOFOLLOW`.
    static func lstatat(_ dirfd: CInt, _ name: String) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return valueOrErrno { Glibc.fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) }.map { _ in st }
    }

    static func stat(_ path: String) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return valueOrErrno { Glibc.fstatat(AT_FDCWD, path, &st, 0) }.map { _ in st }
    }

    static func mkdir(_ path: String, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.mkdir(path, mode) }.map { _ in }
    }

    static func mkdirat(_ dirfd: CInt, _ name: String, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.mkdirat(dirfd, name, mode) }.map { _ in }
    }

    /// Names the unnamed file `fd` (``O_TMPFILE``) `name` in `dirfd`: by descriptor (`AT_EMPTY_PATH`,
    /// allowed to its opener since Linux 6.10), else through `/proc/self/fd` (twice the lookup cost).
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

    /// The names in `dirfd` but `.` and `..`, by `getdents64` on `dirfd` itself (two system calls where
    /// `fdopendir` took seven). `dirfd` must be just opened, and the caller's alone meanwhile.
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

    /// The file mode creation mask at first use, from `/proc/self/status` (`umask(2)` reads it only by
    /// setting it, for every thread); `0` where the line is missing.
    static let umask: mode_t = currentUmask()

    private static func currentUmask() -> mode_t {
        guard let status = procFile("/proc/self/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let mask = mode_t(line.dropFirst(6).trimmed, radix: 8)
        else { return 0 }
        return mask
    }

    /// The whole of a file in /proc (up to 16 MiB), or `nil`. Read to its end: Foundation's
    /// `String(contentsOfFile:)` stops at 4,095 bytes of /proc files.
    package static func procFile(_ path: String) -> String? {
        guard case .success(let fd) = open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { close(fd) }
        return (try? readAll(fd, sizeHint: 4096, limit: 16 << 20).get()).map { String(decoding: $0, as: UTF8.self) }
    }

    static func fchmod(_ fd: CInt, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.fchmod(fd, mode) }.map { _ in }
    }

    static func chmod(_ path: String, _ mode: mode_t) -> Result<Void, Errno> {
        valueOrErrno { Glibc.chmod(path, mode) }.map { _ in }
    }

    static func lock(_ fd: CInt, _ operation: CInt) -> Result<Void, Errno> {
        // `flock` names both a struct and the function; the type picks the function.
        let flock: (CInt, CInt) -> CInt = Glibc.flock(_:_:)
        return valueOrErrno { flock(fd, operation) }.map { _ in }
    }

    static func duplicate(_ fd: CInt) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.fcntl(fd, F_DUPFD_CLOEXEC, 0) }
    }

    /// Whether some process has `fd` (open read-only) open for writing: a read lease is refused with
    /// `EAGAIN` exactly then, and is given back at once. `nil` where no lease can be taken.
    static func isOpenForWriting(_ fd: CInt) -> Bool? {
        // An opener for writing signals the lease holder: SIGURG, ignored, where SIGIO would end it.
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

    static func fsync(_ fd: CInt) -> Result<Void, Errno> {
        valueOrErrno { Glibc.fsync(fd) }.map { _ in }
    }

    static func renameat(_ dirfd: CInt, _ from: String, _ to: String, in toDirfd: CInt? = nil) -> Result<Void, Errno> {
        valueOrErrno { Glibc.renameat(dirfd, from, toDirfd ?? dirfd, to) }.map { _ in }
    }

    static func unlinkat(_ dirfd: CInt, _ name: String) -> Result<Void, Errno> {
        valueOrErrno { Glibc.unlinkat(dirfd, name, 0) }.map { _ in }
    }

    /// Writes all of `bytes`, retrying short writes.
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

    /// Writes all of `vectors` (at most `IOV_MAX`) in order, retrying short writes.
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

    /// Reads from the file's start to its end, or `limit + 1` bytes when it is longer. `sizeHint`
    /// (the `fstat` size) sizes the first buffer, never past `limit + 1`. A `limit` of `Int.max`
    /// (an app's "no limit") reads to the end.
    /// - Parameter sizeIsExact: `sizeHint` is a replaced regular file's size: a read ending there is its end.
    package static func readAll(_ fd: CInt, sizeHint: Int, limit: Int, sizeIsExact: Bool = false) -> Result<[UInt8], Errno> {
        let cap = limit < .max ? max(limit, 0) + 1 : .max
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

    /// Whether the regular file `fd` holds exactly `bytes`, compared a piece at a time in one small
    /// buffer: no allocation of the file's size.
    static func holds(_ fd: CInt, _ bytes: [UInt8]) -> Result<Bool, Errno> {
        // One byte past `bytes` tells a longer file; a small file's buffer is on the stack (no brk calls).
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

    static func inotifyInit(_ flags: CInt) -> Result<CInt, Errno> {
        valueOrErrno { Glibc.inotify_init1(flags) }
    }

    /// Fails with the errno a test injected through ``TestingHooks/failWatches(errno:)``, if any.
    static func inotifyAddWatch(_ fd: CInt, _ path: String, _ mask: UInt32) -> Result<CInt, Errno> {
        #if SHAREDPREFS_TESTING
        let injected = TestingHooks.failingWatchErrno.load(ordering: .relaxed)
        if injected != 0 { return .failure(Errno(rawValue: injected)) }
        #endif
        return valueOrErrno { Glibc.inotify_add_watch(fd, path, mask) }
    }

    /// A non-blocking `eventfd` that counts as a semaphore: each read takes one.
    static func semaphoreDescriptor() -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_eventfd_semaphore() }
    }

    /// Adds `n` to the eventfd `fd`.
    static func post(_ fd: CInt, _ n: UInt64) {
        var n = n
        _ = valueOrErrno { Glibc.write(fd, &n, 8) }
    }

    /// Takes one from the semaphore eventfd `fd` (or a timerfd's expiries); whether there was one.
    static func take(_ fd: CInt) -> Bool {
        var value: UInt64 = 0
        return (try? valueOrErrno { Glibc.read(fd, &value, 8) }.get()) == 8
    }

    /// An epoll instance.
    static func epollCreate() -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_epoll_create() }
    }

    /// Adds `fd` to `epfd` for reading (`once`: one wake-up until ``epollRearm(_:_:)``).
    static func epollAdd(_ epfd: CInt, _ fd: CInt, once: Bool) -> Result<Void, Errno> {
        valueOrErrno { sharedprefs_epoll_arm(epfd, fd, once ? 1 : 0, 0) }.map { _ in }
    }

    /// Arms a one-shot descriptor of `epfd` again.
    static func epollRearm(_ epfd: CInt, _ fd: CInt) {
        _ = valueOrErrno { sharedprefs_epoll_arm(epfd, fd, 1, 1) }
    }

    /// Waits, without a timeout, for one descriptor of `epfd` to be ready; returns it.
    static func epollWaitOne(_ epfd: CInt) -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_epoll_wait_one(epfd) }
    }

    /// A non-blocking timer on the monotonic clock.
    static func timerDescriptor() -> Result<CInt, Errno> {
        valueOrErrno { sharedprefs_timerfd() }
    }

    /// Makes the timer `fd` expire every `milliseconds` (0: never).
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

    /// The inode generation of `fd` (`FS_IOC_GETVERSION`), where the file system keeps one.
    static func generation(_ fd: CInt) -> Result<Int, Errno> {
        valueOrErrno { sharedprefs_generation(fd) }
    }

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

/// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`): an unnamed file, no inotify event until linked in.
/// Glibc's module hides it behind `_GNU_SOURCE`, as `O_PATH`.
let O_TMPFILE: CInt = 0o20000000 | O_DIRECTORY

/// `O_PATH`: a descriptor that only names a file, and sends no `IN_CLOSE_WRITE`.
let O_PATH: CInt = 0o10000000
