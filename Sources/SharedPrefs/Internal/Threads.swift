#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import Dispatch

/// Threads of the library's own (readers, lock waits, the exit flush, deadlines), started with
/// `pthread_create`: FoundationEssentials has no `Thread`.
package enum Threads {
    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts a detached thread that runs `body` under `name` (its first 15 bytes), as debuggers,
    /// `top -H` and /proc show it. Where no thread can be started (`EAGAIN`: the process or user
    /// is at its thread limit), `body` runs on a Dispatch queue instead.
    package static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(Start(name, body))
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            sharedprefs_name_thread(start.name)
            start.body()
            return nil
        }, start.toOpaque())
        if result == 0 {
            pthread_detach(thread)
        } else {
            start.release()
            DispatchQueue.global().async(execute: body)
        }
    }

    /// Sleeps for `duration` (rounded down to the microsecond).
    static func sleep(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var time = timespec(tv_sec: Int(max(seconds, 0)), tv_nsec: Int(max(attoseconds / 1_000_000_000, 0)))
        var left = timespec()
        while nanosleep(&time, &left) != 0 && errno == EINTR { time = left }
    }
}
