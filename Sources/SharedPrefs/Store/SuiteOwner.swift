#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import Dispatch
import SharedPrefsLocking

/// The one owner of a suite's I/O and delivery order: a serial executor whose jobs (`update`,
/// `synchronize`, flushes, re-reads) run one at a time, in order, each on one thread:
///
/// - a job that comes while none runs or waits runs at once on the thread that brings it;
/// - a caller's job otherwise waits for its turn until its deadline, then runs on the caller's
/// thread; it waits past the deadline for the library's own jobs (bounded where they wait),
/// and its deadline counts from when they ended;
/// - a background flush runs on the owner's queue, made at the first one.
///
/// A job that calls back into the suite for I/O is told (``isCurrent``) instead of waiting for
/// itself. Nothing waits under the owner's lock.
final class SuiteOwner: Sendable {
    private final class Waiter: Sendable {
        let thread: UInt
        let isBounded: Bool
        let turn = DispatchSemaphore(value: 0)
        init(thread: UInt, isBounded: Bool) {
            self.thread = thread
            self.isBounded = isBounded
        }
    }

    private enum Job {
        case background(@Sendable () -> Void, isBounded: Bool)
        case caller(Waiter)

        /// Whether it is the library's own work, which ends by itself (no code of the app's).
        var isBounded: Bool {
            switch self {
            case .background(_, let isBounded): isBounded
            case .caller(let waiter): waiter.isBounded
            }
        }
    }

    private struct State {
        /// The thread running a job (`pthread_self`); 0 while none runs; ``handedToQueue`` while
        /// the queue is about to.
        var runner: UInt = 0
        /// Whether the job running is the library's own work (``Job/isBounded``).
        var runnerIsBounded = true
        /// The jobs waiting, in order.
        var jobs: [Job] = []
        var queue: DispatchQueue? = nil
        /// The process whose threads these are (``sharedprefs_fork_count()``).
        var process = sharedprefs_fork_count()

        /// In a child forked since, only the forking thread goes on: jobs and callers of the others are
        /// forgotten; background jobs stay for the child's threads.
        mutating func settleAfterFork() {
            let forks = sharedprefs_fork_count()
            guard process != forks else { return }
            process = forks
            let forker = UInt(sharedprefs_forking_thread())
            if runner != forker { runner = 0 }
            jobs.removeAll { if case .caller(let waiter) = $0 { waiter.thread != forker } else { false } }
        }
    }

    private static let handedToQueue = UInt.max
    private let state = Lock(State())
    private let label: String

    init(label: String) {
        self.label = label
    }

    private static var thisThread: UInt { UInt(pthread_self()) }

    /// Whether this thread runs a job of this owner: what it would wait for is itself.
    var isCurrent: Bool {
        state.withLock { s in
            s.settleAfterFork()
            return s.runner == Self.thisThread
        }
    }

    /// Runs `work` on this thread now, if no job runs or waits; returns whether it ran. Never waits.
    func runIfIdle(_ work: () -> Void) -> Bool {
        let me = Self.thisThread
        let idle = state.withLock { s -> Bool in
            s.settleAfterFork()
            guard s.runner == 0 else { return false }
            (s.runner, s.runnerIsBounded) = (me, true)
            return true
        }
        guard idle else { return false }
        work()
        handOn()
        return true
    }

    /// Runs `work` on the owner's queue after the jobs before it; `isBounded` when it runs no code
    /// of the app's (``Job/isBounded``).
    func async(isBounded: Bool = true, _ work: @escaping @Sendable () -> Void) {
        let queue = state.withLock { s -> DispatchQueue?? in
            s.settleAfterFork()
            s.jobs.append(.background(work, isBounded: isBounded))
            guard s.runner == 0 else { return nil }
            s.runner = Self.handedToQueue
            return queueLocked(&s)
        }
        if let queue { drainLater(on: queue) }
    }

    /// Runs `work` on the owner's queue after the jobs before it, or `expired` at `deadline` if its
    /// turn has not come by then. For callers that must not block a thread (async code).
    func async(until deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () -> Void, expired: @escaping @Sendable () -> Void) {
        let taken = Lock(false)
        let take: @Sendable () -> Bool = { taken.withLock { was in defer { was = true }; return !was } }
        let timer = Deadlines.at(deadline) { if take() { expired() } }
        async(isBounded: false) {
            guard take() else { return }
            Deadlines.cancel(timer)
            work()
        }
    }

    /// Runs `work` on the owner's queue after `delay`, after the jobs before it then.
    func async(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        guard let queue = state.withLock({ queueLocked(&$0) }) else {
            return Threads.start(named: "prefs.owner") { [self] in
                Threads.sleep(for: delay)
                async(work)
            }
        }
        queue.asyncAfter(deadline: .after(delay)) { [self] in async(work) }
    }

    /// Runs `work` on this thread once the jobs before it are done, waiting until `deadline` at most,
    /// and past it while every job ahead is the library's own (``Job/isBounded``); `work` is given how
    /// long the wait went past the deadline. `isBounded`: `work` runs no code of the app's.
    /// `pastDeadline`: whether waiting on still waits for work, not for a job ahead that gave up.
    /// - Throws: ``Busy`` when the deadline passed before its turn came; what `work` throws.
    func sync<T>(until deadline: ContinuousClock.Instant, isBounded: Bool, pastDeadline: () -> Bool = { true }, _ work: (_ overtime: Duration) throws -> T) throws -> T {
        let me = Self.thisThread
        let waiter = state.withLock { s -> Waiter? in
            s.settleAfterFork()
            if s.runner == 0 {
                (s.runner, s.runnerIsBounded) = (me, isBounded)
                return nil
            }
            let waiter = Waiter(thread: me, isBounded: isBounded)
            s.jobs.append(.caller(waiter))
            return waiter
        }
        var overtime = Duration.zero
        if let waiter, waiter.turn.wait(timeout: .after(deadline - .now)) == .timedOut {
            while true {
                let worthWaiting = pastDeadline()
                let verdict = state.withLock { s -> Bool? in
                    s.settleAfterFork()
                    guard let index = s.jobs.firstIndex(where: { if case .caller(let other) = $0 { other === waiter } else { false } }) else { return nil }
                    if worthWaiting, s.runnerIsBounded, s.jobs[..<index].allSatisfy(\.isBounded) { return false }
                    s.jobs.remove(at: index)
                    return true
                }
                if verdict == true { throw Busy() }
                // Handed over as it timed out (signalled already, or about to be); or the suite's
                // own reading and writing is ahead: looked at again every 50 ms until its turn.
                if verdict == nil { waiter.turn.wait() } else if waiter.turn.wait(timeout: .now() + .milliseconds(50)) == .timedOut { continue }
                overtime = .now - deadline
                break
            }
        }
        defer { handOn() }
        return try work(overtime)
    }

    /// Thrown by ``sync(until:_:)`` when the jobs before it did not end before its deadline.
    struct Busy: Error {}

    /// After a job: the next one gets the suite, or nobody.
    private func handOn() {
        let next = state.withLock { s -> Job? in
            guard let job = s.jobs.first else {
                s.runner = 0
                return nil
            }
            switch job {
            case .caller(let waiter):
                s.jobs.removeFirst()
                (s.runner, s.runnerIsBounded) = (waiter.thread, waiter.isBounded)
            case .background:
                s.runner = Self.handedToQueue
            }
            return job
        }
        switch next {
        case .caller(let waiter)?: waiter.turn.signal()
        case .background?: drainLater(on: state.withLock { queueLocked(&$0) })
        case nil: break
        }
    }

    /// On the owner's queue: runs background jobs until a caller's comes or none is left.
    private func drain() {
        let me = Self.thisThread
        while let work = state.withLock({ s -> (@Sendable () -> Void)? in
            guard case .background(let work, let isBounded)? = s.jobs.first else { return nil }
            s.jobs.removeFirst()
            (s.runner, s.runnerIsBounded) = (me, isBounded)
            return work
        }) {
            work()
        }
        handOn()
    }

    /// The owner's queue, made at its first use; `nil` in a forked child, where libdispatch's
    /// pool does not run (a queue made before or after the fork never runs what it is given).
    private func queueLocked(_ s: inout State) -> DispatchQueue? {
        guard sharedprefs_fork_count() == 0 else { return nil }
        if let queue = s.queue { return queue }
        let queue = DispatchQueue(label: label)
        s.queue = queue
        return queue
    }

    /// Runs ``drain()`` on `queue`, or on a thread of the library's own where there is none.
    private func drainLater(on queue: DispatchQueue?) {
        if let queue { queue.async { [self] in drain() } } else { Threads.start(named: "prefs.owner") { [self] in drain() } }
    }
}
