#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import SharedPrefsLocking

/// What ``PreferenceSuite/changes(since:)`` yields: one event per numbered write, or a gap with
/// the whole stored content, so that a consumer applies each event whole, then saves its number.
public enum ChangeStreamEvent: Sendable, Hashable {
    /// One numbered write: its number and each key it changed, with the value before and after
    /// (``PreferenceChange/sequence`` is `sequence`), in key order.
    case write(sequence: UInt64, changes: [PreferenceChange])
    /// The writes after `from` up to `to` cannot be told one by one: the journal no longer
    /// reaches back so far, a program that does not number its writes changed the suite, a
    /// backup was restored, or the stream began at `0`. `contents` is the suite's whole stored
    /// content at `to`: replace what you hold with it.
    case gap(from: UInt64, to: UInt64, contents: PlistDictionary)

    /// The number of the write, or the number the gap reaches: what to save once the event is applied.
    public var sequence: UInt64 {
        switch self {
        case .write(let sequence, _), .gap(_, let sequence, _): sequence
        }
    }
}

extension PreferenceSuite {
    /// Every write after the one numbered `sequence`, in order and each once, then every write
    /// to come; an async sequence that ends when the task iterating it is cancelled.
    ///
    /// The writes are read from the suite's journal (<doc:ChangeStream>), so a process that
    /// saves the number of the last event it applied resumes where it stopped, across restarts:
    /// nothing missed, nothing twice. Where the journal cannot tell every write since (it keeps
    /// at least the last 10,000; a program that does not number its writes changed the suite), a
    /// ``ChangeStreamEvent/gap(from:to:contents:)`` brings the whole stored content, so what you
    /// hold is right again. From `0`, that is how the stream begins. Only stored values: system
    /// layers and registered defaults are not in it. Use `observe(_:options:queue:_:)` where
    /// the latest value is what counts, and this where every step counts (an audit, a
    /// migration, a cache kept in step).
    ///
    /// ```swift
    /// for await event in suite.changes(since: saved) {
    ///     apply(event)            // a write's changes, or a gap's whole content
    ///     saved = event.sequence  // then its number
    /// }
    /// ```
    public func changes(since sequence: UInt64) -> some AsyncSequence<ChangeStreamEvent, Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChangeStreamEvent.self)
        let following = followChanges(since: sequence) { continuation.yield($0) }
        continuation.onTermination = { _ in following.cancel() }
        return stream
    }

    /// ``changes(since:)`` as calls of `handler`, one at a time and in order, on a thread of the
    /// library's, until the observation is cancelled (for `prefs-watch`, which runs no tasks).
    package func followChanges(since sequence: UInt64, _ handler: @escaping @Sendable (ChangeStreamEvent) -> Void) -> PreferenceObservation {
        let follower = ChangeFollower(store: store, after: sequence, deliver: handler)
        let store = self.store
        // Followed before the suite is read again, so that nothing read since is passed by.
        let id = store.addFollower { follower.advance() }
        store.watch()
        follower.advance()
        return PreferenceObservation { store.removeFollower(id) }
    }
}

/// Brings one ``PreferenceSuite/changes(since:)`` stream from the number it delivered last to
/// the stored version's, on a thread of its own while there is something to deliver (what it
/// reads, the journal, is never read where the suite's lock or a reader thread waits for it).
final class ChangeFollower: Sendable {
    private struct State {
        /// The number delivered last, and the store's ``SuiteStore/State/generation`` then (`nil`
        /// before the first delivery).
        var delivered: UInt64
        var generation: UInt64? = nil
        /// Whether a thread delivers, and the process it runs in (``sharedprefs_fork_count()``):
        /// in a child forked while the parent's thread delivered, none does.
        var delivering: UInt? = nil
        var again = false
    }

    private let state: Lock<State>
    private let store: SuiteStore
    private let deliver: @Sendable (ChangeStreamEvent) -> Void

    init(store: SuiteStore, after sequence: UInt64, deliver: @escaping @Sendable (ChangeStreamEvent) -> Void) {
        self.store = store
        self.deliver = deliver
        state = Lock(State(delivered: sequence))
    }

    /// The stored version may have changed: delivers what is new, on a thread of its own.
    func advance() {
        let start = state.withLock { s -> Bool in
            s.again = true
            let process = sharedprefs_fork_count()
            defer { s.delivering = process }
            return s.delivering != process
        }
        if start { Threads.start(named: "prefs.changes") { [self] in deliverAll() } }
    }

    private func deliverAll() {
        while let (from, generation) = state.withLock({ s -> (UInt64, UInt64?)? in
            guard s.again else {
                s.delivering = nil
                return nil
            }
            s.again = false
            return (s.delivered, s.generation)
        }) {
            let reached = deliver(after: from, since: generation)
            state.withLock { s in (s.delivered, s.generation) = reached }
        }
    }

    /// What is new since `generation`: the writes after `from` up to the stored version from the
    /// journal, or a gap and the whole stored content; returns the number and generation reached.
    private func deliver(after from: UInt64, since generation: UInt64?) -> (UInt64, UInt64?) {
        let now = store.version
        if now.generation == generation { return (from, generation) }
        // A change no number accounts for since the last delivery, or a stored version older
        // than the number delivered (a backup restored, another program's file), or a stream
        // from 0, which holds nothing yet.
        let gap = now.unnumberedGeneration > (generation ?? now.generation) || now.sequence < from || (from == 0 && generation == nil)
        if !gap, now.sequence == from { return (from, now.generation) }
        if !gap, let records = store.history(after: from, through: now.sequence) {
            let pid = sharedprefs_pid()
            for record in records {
                deliver(.write(sequence: record.sequence, changes: record.changes.map { change in
                    PreferenceChange(
                        suite: store.name, key: change.key, oldValue: change.old, newValue: change.kept ? change.new : store.storedValue(PlistKey(change.key)),
                        origin: record.pid == pid ? .local : .external, sequence: record.sequence)
                }))
            }
            return (now.sequence, now.generation)
        }
        let contents = store.numberedContents
        let to = contents.sequence == 0 ? from : contents.sequence
        deliver(.gap(from: from, to: to, contents: contents.values))
        return (to, contents.generation)
    }
}

extension SuiteStore {
    /// Adds a ``State/followers`` entry.
    func addFollower(_ follower: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { s in
            s.nextObserverID += 1
            s.followers[s.nextObserverID] = follower
            return s.nextObserverID
        }
    }

    func removeFollower(_ id: UInt64) {
        _ = state.withLock { $0.followers.removeValue(forKey: id) }
    }

    /// The writes after `start` through `end`, from the journal; `nil` when it cannot tell them all.
    func history(after start: UInt64, through end: UInt64) -> [NumberedWrite]? {
        backend.history(after: start, through: end)
    }

    /// The stored version: its number (`0`: one without a number), its generation, and the
    /// generation of the last one no number accounts for (``State/generation``).
    var version: (sequence: UInt64, generation: UInt64, unnumberedGeneration: UInt64) {
        state.withLock { ($0.fileSequence, $0.generation, $0.unnumberedGeneration) }
    }

    /// The stored version's number and generation, with its values.
    var numberedContents: (sequence: UInt64, generation: UInt64, values: PlistDictionary) {
        state.withLock { ($0.fileSequence, $0.generation, $0.stored) }
    }

    /// One key's stored value as last read or written.
    func storedValue(_ key: PlistKey) -> PlistValue? {
        state.withLock { $0.storedValue(key) }
    }
}
