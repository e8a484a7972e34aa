#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import SharedPrefsLocking
import SystemPackage

/// A blocking `flock(LOCK_EX)` the caller can stop waiting for. Polling with `LOCK_NB` starves under
/// contention (eight writers made one wait over five seconds), so the wait runs on a thread of its
/// own on a duplicate descriptor, and the caller waits for it with a timeout. An abandoned wait
/// releases the lock it gets at once; at most one exists per lock file (later callers poll).
final class LockWait: Sendable {
    private enum Outcome { case waiting, acquired, failed(Errno), abandoned }
    private let outcome = Lock(Outcome.waiting)
    private let done = DispatchSemaphore(value: 0)
    private let fd: CInt
    private let path: String

    /// Lock files with an abandoned wait still blocked in `flock`.
    private static let outstanding = Lock<Set<String>>([])

    private init(fd: CInt, path: String) {
        self.fd = fd
        self.path = path
    }

    /// How long a wait goes on before it is said (``lock(_:path:timeout:saying:)``).
    static let quietWait: Duration = .seconds(1)

    /// Locks `fd` exclusively, waiting at most `timeout`; `saying` is called once if the wait
    /// lasts ``quietWait``.
    /// - Returns: `.success(true)` when locked, `.success(false)` when the timeout passed.
    static func lock(_ fd: CInt, path: String, timeout: Duration, saying: () -> Void = {}) -> Result<Bool, Errno> {
        switch Syscall.lock(fd, LOCK_EX | LOCK_NB) {
        case .success: return .success(true)
        case .failure(let errno) where errno.rawValue == EWOULDBLOCK: break
        case .failure(let errno): return .failure(errno)
        }
        let deadline = ContinuousClock.now + timeout
        let isFirst = outstanding.withLock { $0.insert(path).inserted }
        guard isFirst else { return poll(fd, until: deadline, saying: saying) }
        let duplicate: CInt
        switch Syscall.duplicate(fd) {
        case .success(let descriptor): duplicate = descriptor
        case .failure(let errno):
            _ = outstanding.withLock { $0.remove(path) }
            return .failure(errno)
        }
        let wait = LockWait(fd: duplicate, path: path)
        Threads.start(named: "prefs.lock-wait") { wait.block() }
        return wait.result(until: deadline, saying: saying)
    }

    /// `LOCK_NB` tries with pauses growing from 50 µs to 2 ms: only while an abandoned wait for
    /// the same lock file is still blocked, that is, while something holds the lock for long.
    private static func poll(_ fd: CInt, until deadline: ContinuousClock.Instant, saying: () -> Void) -> Result<Bool, Errno> {
        var pause: UInt32 = 50
        var said = ContinuousClock.now + quietWait
        while true {
            switch Syscall.lock(fd, LOCK_EX | LOCK_NB) {
            case .success: return .success(true)
            case .failure(let errno) where errno.rawValue == EWOULDBLOCK:
                if ContinuousClock.now >= deadline { return .success(false) }
                if ContinuousClock.now >= said {
                    saying()
                    said = deadline
                }
                usleep(pause)
                pause = min(pause * 2, 2_000)
            case .failure(let errno): return .failure(errno)
            }
        }
    }

    /// On the wait's own thread: blocks in `flock` until the lock is free.
    private func block() {
        let result = Syscall.lock(fd, LOCK_EX)
        let abandoned = outcome.withLock { outcome -> Bool in
            if case .abandoned = outcome { return true }
            switch result {
            case .success: outcome = .acquired
            case .failure(let errno): outcome = .failed(errno)
            }
            return false
        }
        if abandoned {
            // Nobody waits for this lock any more: give it back at once.
            _ = Syscall.lock(fd, LOCK_UN)
            finish()
        } else {
            done.signal()
        }
    }

    /// On the caller's thread: waits for the lock until `deadline`.
    private func result(until deadline: ContinuousClock.Instant, saying: () -> Void) -> Result<Bool, Errno> {
        func wait(until end: ContinuousClock.Instant) -> DispatchTimeoutResult {
            done.wait(timeout: .after(end - ContinuousClock.now))
        }
        let quietEnd = min(ContinuousClock.now + Self.quietWait, deadline)
        if wait(until: quietEnd) == .timedOut, quietEnd < deadline {
            saying()
            _ = wait(until: deadline)
        }
        let final = outcome.withLock { outcome -> Outcome in
            if case .waiting = outcome { outcome = .abandoned; return .abandoned }
            return outcome
        }
        switch final {
        case .acquired:
            // The caller's descriptor shares the locked description; the duplicate can go.
            finish()
            return .success(true)
        case .failed(let errno):
            finish()
            return .failure(errno)
        default:
            return .success(false)
        }
    }

    private func finish() {
        Syscall.close(fd)
        _ = Self.outstanding.withLock { $0.remove(path) }
    }
}
