import SharedPrefs
import SharedPrefsLocking

/// A backend in memory whose stored values a test changes as another process would
/// (``external(_:)``), and that counts what the store asked of it: the store's logic, driven in
/// milliseconds, without files or processes.
///
/// Like the file backend it reads under its "lock" before every write and hands the store only
/// what changed since the store last read or wrote; with ``comparesAndSwaps`` it behaves like the
/// etcd backend instead, where a transaction whose stored values changed meanwhile runs again.
package final class ScriptedBackend: SuiteBackend {
    private struct State {
        /// The stored values, as every process would read them.
        var stored = PlistDictionary()
        /// The stored values as the store last read or wrote them.
        var seen = PlistDictionary()
        var sinks: [Int: @Sendable (BackendEvent) -> Void] = [:]
        var nextSink = 0
        var loads = 0
        var commits = 0
        var notices: [PreferenceError] = []
        var failure: PreferenceError?
        /// Every commit throws it, until it is `nil`.
        var refusal: PreferenceError?
        /// Runs once, between the plan and the write of the next commit: a change another process
        /// makes at the worst moment.
        var interference: PlistDictionary?
    }
    private let state = Lock(State())
    /// Whether a transaction is checked like a compare-and-swap (etcd) rather than run under a lock.
    package let comparesAndSwaps: Bool

    /// The longest a call waits for the suite's earlier work (there is no lock to wait for).
    package let timeout: Duration

    package init(_ stored: PlistDictionary = [:], comparesAndSwaps: Bool = false, timeout: Duration = .seconds(5)) {
        self.comparesAndSwaps = comparesAndSwaps
        self.timeout = timeout
        state.withLock { $0.stored = stored }
    }

    package var location: String? { "scripted" }

    // MARK: What a test does

    /// The stored values now.
    package var stored: PlistDictionary { state.withLock { $0.stored } }
    /// How many loads and commits the store made.
    package var counts: (loads: Int, commits: Int) { state.withLock { ($0.loads, $0.commits) } }
    /// How many subscriptions are live.
    package var subscribers: Int { state.withLock { $0.sinks.count } }
    /// Records each subscription released (a store may go on the thread of its last queued work).
    package let released = Recorder<Int>()

    /// Another process sets (or, with `nil`, removes) keys, and subscribers hear of it.
    package func external(_ changes: [String: PlistValue?]) {
        let sinks = state.withLock { s in
            for (key, value) in changes { s.stored[key] = value }
            return Array(s.sinks.values)
        }
        for sink in sinks { sink(.changed) }
    }

    /// Tells subscribers of a failure, as a broken watch would.
    package func fail(_ error: PreferenceError) {
        for sink in state.withLock({ Array($0.sinks.values) }) { sink(.failed(error)) }
    }

    /// The next load or commit returns `notice` beside what it read.
    package func addNotice(_ notice: PreferenceError) { state.withLock { $0.notices.append(notice) } }
    /// The next commit that writes succeeds, but with `failure` for the caller.
    package func failNextCommit(with failure: PreferenceError) { state.withLock { $0.failure = failure } }
    /// Every commit fails with `error` (a full disk), until called with `nil`.
    package func refuseCommits(_ error: PreferenceError?) { state.withLock { $0.refusal = error } }
    /// Another process writes `changes` right after the next commit's plan.
    package func interfere(_ changes: PlistDictionary) { state.withLock { $0.interference = changes } }

    // MARK: SuiteBackend

    package func load() -> Loaded {
        state.withLock { s in
            s.loads += 1
            return read(&s)
        }
    }

    package func commit(since start: ContinuousClock.Instant, _ plan: (Loaded) throws -> WritePlan) throws -> Committed {
        var loaded = try state.withLock { s throws(PreferenceError) in
            s.commits += 1
            if let refusal = s.refusal { throw refusal }
            return read(&s)
        }
        while true {
            let plan = try plan(loaded)
            let retry = state.withLock { s -> Bool in
                if let interference = s.interference {
                    s.interference = nil
                    for (key, value) in interference.storage { s.stored.storage[key] = value }
                }
                // A compare-and-swap fails when a value the transaction read or writes changed.
                guard comparesAndSwaps, plan.isTransaction else { return false }
                let compared = plan.reads.map { $0.union(plan.operations.keys) } ?? Set(s.stored.storage.keys).union(s.seen.storage.keys)
                return compared.contains { s.stored.storage[$0] != s.seen.storage[$0] }
            }
            if retry {
                loaded = state.withLock { read(&$0) }
                continue
            }
            return state.withLock { s in
                for (key, operation) in plan.operations {
                    s.stored.storage[key] = operation.value
                    s.seen.storage[key] = operation.value
                }
                defer { s.failure = nil }
                return Committed(wrote: plan.changesSomething, notices: take(&s.notices), failure: plan.changesSomething ? s.failure : nil)
            }
        }
    }

    package func subscribe(_ sink: @escaping @Sendable (BackendEvent) -> Void) -> Subscription {
        let id = state.withLock { s in
            s.nextSink += 1
            s.sinks[s.nextSink] = sink
            return s.nextSink
        }
        return Subscription { [self] in
            _ = state.withLock { $0.sinks.removeValue(forKey: id) }
            released.record(id)
        }
    }

    package func retryDelay(after error: PreferenceError) -> Duration? { nil }

    /// What changed since the store last read or wrote, as the keys that changed.
    private func read(_ s: inout State) -> Loaded {
        var delta: FileDelta = s.stored.storage.compactMap { key, value in s.seen.storage[key] == value ? nil : (key, value) }
        delta += s.seen.storage.keys.filter { s.stored.storage[$0] == nil }.map { ($0, nil) }
        s.seen = s.stored
        return Loaded(delta.isEmpty ? nil : .changes(delta), notices: take(&s.notices))
    }

    private func take(_ notices: inout [PreferenceError]) -> [PreferenceError] {
        defer { notices = [] }
        return notices
    }
}
