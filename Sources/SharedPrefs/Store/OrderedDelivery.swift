import Dispatch
import SharedPrefsLocking

/// The changes for one observer with ``ObservationOptions/synchronousExternalChanges``, kept in
/// the order the store went through them and handed to its handler one batch at a time, never
/// two at once: on the watcher thread right after the re-read that found them, or else on the
/// observer's queue (this process's changes, and other processes' found elsewhere, as by a
/// re-read queued behind this process's write). Whichever thread comes first delivers everything
/// posted so far; the other finds nothing left.
final class OrderedDelivery: Sendable {
    private let queue: DispatchQueue
    private let handler: @Sendable ([PreferenceChange]) -> Void
    private let state = Lock<(pending: [PreferenceChange], delivering: Bool)>(([], false))

    init(queue: DispatchQueue, _ handler: @escaping @Sendable ([PreferenceChange]) -> Void) {
        self.queue = queue
        self.handler = handler
    }

    /// Adds changes to deliver; called in the store's state order.
    func post(_ changes: [PreferenceChange]) {
        state.withLock { $0.pending += changes }
    }

    /// Delivers what is pending, on this thread, unless another thread is delivering (it then
    /// delivers this too, after what it has). A handler that blocks holds this delivery and the
    /// thread, nothing else: the reader threads stay enough for the process's other suites.
    func deliverPending() {
        while let batch = state.withLock({ s -> [PreferenceChange]? in
            guard !s.delivering, !s.pending.isEmpty else { return nil }
            s.delivering = true
            defer { s.pending = [] }
            return s.pending
        }) {
            handler(batch)
            state.withLock { $0.delivering = false }
        }
    }

    /// ``deliverPending()`` on the observer's queue.
    func deliverPendingOnQueue() {
        queue.async { [self] in deliverPending() }
    }
}
