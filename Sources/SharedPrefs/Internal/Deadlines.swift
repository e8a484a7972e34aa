import CSharedPrefsShims
import Dispatch
import FoundationEssentials
import SharedPrefsLocking

/// Runs actions at their deadlines (those of async calls that wait for a suite's earlier work) on a
/// thread of the library's own: a shared pool may be blocked exactly when a deadline matters.
enum Deadlines {
    private struct State {
        var pending: [UInt64: (deadline: ContinuousClock.Instant, action: @Sendable () -> Void)] = [:]
        var nextID: UInt64 = 0
        /// The process the thread was started in (``sharedprefs_fork_count()``); `nil` before
        /// the first deadline. A child forked since has no such thread: it starts its own.
        var started: UInt? = nil
    }
    private static let state = Lock(State())
    private static let wake = DispatchSemaphore(value: 0)

    /// Runs `action` at `deadline`, unless ``cancel(_:)`` comes first; an identifier for that.
    static func at(_ deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, start) = state.withLock { s in
            s.nextID += 1
            s.pending[s.nextID] = (deadline, action)
            let process = sharedprefs_fork_count()
            defer { s.started = process }
            return (s.nextID, s.started != process)
        }
        if start { Threads.start(named: "prefs.deadlines") { run() } }
        wake.signal()
        return id
    }

    /// Forgets the action of ``at(_:_:)`` `id`, if it has not run.
    static func cancel(_ id: UInt64) {
        _ = state.withLock { $0.pending.removeValue(forKey: id) }
    }

    private static func run() {
        while true {
            let (due, next) = state.withLock { s in
                let now = ContinuousClock.now
                let due = s.pending.filter { $0.value.deadline <= now }
                for id in due.keys { s.pending[id] = nil }
                return (due.values.map(\.action), s.pending.values.map(\.deadline).min())
            }
            for action in due { action() }
            if let next {
                _ = wake.wait(timeout: .after(next - .now))
            } else {
                wake.wait()
            }
        }
    }
}

extension DispatchTime {
    /// `duration` from now (now when it is negative). One too long to count in nanoseconds (over
    /// a century: a timeout meant as "for ever") never comes, rather than stopping the process.
    static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = max(.zero, duration).components
        guard seconds < 1 << 32 else { return .distantFuture }
        return .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
