#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import Dispatch
import SharedPrefsLocking
import Synchronization

/// Runs work on an observer's queue, in order.
typealias Enqueue = @Sendable (_ work: @escaping @Sendable () -> Void) -> Void

/// Handlers that run on the thread that read a change (``OrderedDelivery``'s, failure observers'):
/// while there are none, ``InotifyWatcher``'s bells need no guard against one that blocks.
enum InlineHandlers {
    static let count = Atomic(0)
}

/// The changes for one observer with ``ObservationOptions/synchronousExternalChanges``, in the
/// store's order, handed to its handler one batch at a time: on the reader thread right after the
/// re-read, or else on the observer's queue. Whichever comes first delivers everything posted.
final class OrderedDelivery: Sendable {
    private let enqueue: Enqueue
    private let handler: @Sendable ([PreferenceChange]) -> Void
    /// The changes posted and not delivered; while a thread delivers, the process it delivers
    /// in (``sharedprefs_fork_count()``: a child forked meanwhile has no such thread).
    private let state = Lock<(pending: [PreferenceChange], delivering: UInt?)>(([], nil))

    init(enqueue: @escaping Enqueue, _ handler: @escaping @Sendable ([PreferenceChange]) -> Void) {
        self.enqueue = enqueue
        self.handler = handler
        InlineHandlers.count.add(1, ordering: .relaxed)
    }

    deinit {
        InlineHandlers.count.subtract(1, ordering: .relaxed)
    }

    /// Adds changes to deliver; called in the store's state order.
    func post(_ changes: [PreferenceChange]) {
        state.withLock { $0.pending += changes }
    }

    /// Delivers what is pending on this thread, unless another thread is delivering (it then delivers
    /// this too). A handler that blocks holds this delivery and its thread, nothing else.
    func deliverPending() {
        while let batch = state.withLock({ s -> [PreferenceChange]? in
            let process = sharedprefs_fork_count()
            guard s.delivering != process, !s.pending.isEmpty else { return nil }
            s.delivering = process
            defer { s.pending = [] }
            return s.pending
        }) {
            handler(batch)
            state.withLock { $0.delivering = nil }
        }
    }

    /// ``deliverPending()`` on the observer's queue.
    func deliverPendingOnQueue() {
        enqueue { [self] in deliverPending() }
    }
}

/// The first values of an observer with both ``ObservationOptions/initial`` and
/// ``ObservationOptions/synchronousLocalChanges``: its queue delivers them, unless this process's
/// change comes first, whose thread delivers them before it. Whoever comes second waits, so they
/// always come first.
final class FirstDelivery: Sendable {
    /// The first values until taken; then the thread delivering them, and the process it does so
    /// in (``sharedprefs_fork_count()``: a child forked meanwhile has no such thread to wait for).
    private let state = Lock<(changes: [PreferenceChange]?, deliverer: pthread_t?, process: UInt)>((nil, nil, 0))
    private let delivered = DispatchGroup()

    init() {
        delivered.enter()
    }

    /// The first values; called once, under the store's state lock, as the observer is added.
    func post(_ changes: [PreferenceChange]) {
        state.withLock { $0.changes = changes }
    }

    /// Delivers the first values on this thread, unless another took them: then waits until they are
    /// delivered (at once when it is this thread, or the parent's in a forked child).
    func deliver(to handler: (PreferenceChange) -> Void) {
        let taken = state.withLock { s -> [PreferenceChange]? in
            guard let changes = s.changes else { return nil }
            (s.changes, s.deliverer, s.process) = (nil, pthread_self(), sharedprefs_fork_count())
            return changes
        }
        if let taken {
            taken.forEach(handler)
            state.withLock { $0.deliverer = nil }
            delivered.leave()
        } else if !state.withLock({ s in s.deliverer.map { pthread_equal($0, pthread_self()) != 0 || s.process != sharedprefs_fork_count() } ?? false }) {
            delivered.wait()
        }
    }
}
