#if canImport(Glibc)
import Glibc
#endif
/// The store's observers of changes and of failures.
extension SuiteStore {
    // MARK: Observers

    /// Hands changes to matching observers. Called with the state locked, so every observer gets
    /// changes in the order the state went through them; delivery itself is asynchronous.
    /// Returns the deliveries to synchronous observers, for the caller to make once the state is
    /// unlocked (they may call back into the suite).
    func publish(_ changes: [PreferenceChange], in s: inout State) -> [() -> Void] {
        guard !changes.isEmpty else { return [] }
        var synchronous: [() -> Void] = []
        for observer in s.observers.values {
            let matching: [PreferenceChange]
            if case .all = observer.filter { matching = changes } else { matching = changes.filter { observer.filter.matches($0.key) } }
            if matching.isEmpty { continue }
            if let now = observer.synchronous, matching.allSatisfy({ $0.origin == .local }) {
                synchronous.append { now(matching) }
            } else if let ordered = observer.ordered {
                ordered.post(matching)
                if s.inlineDeliveries?.thread == UInt(pthread_self()) {
                    s.inlineDeliveries!.deliveries[ObjectIdentifier(ordered)] = ordered
                } else {
                    ordered.deliverPendingOnQueue()
                }
            } else {
                observer.deliver(matching)
            }
        }
        return synchronous
    }

    /// Adds an observer; `initial` runs under the same lock, so no change slips between the two.
    func addObserver(
        _ filter: KeyFilter, deliver: @escaping @Sendable ([PreferenceChange]) -> Void,
        synchronous: (@Sendable ([PreferenceChange]) -> Void)? = nil, ordered: OrderedDelivery? = nil,
        initial: (State) -> Void = { _ in }
    ) -> UInt64 {
        watch()
        return state.withLock { s in
            s.nextObserverID += 1
            s.observers[s.nextObserverID] = Observer(filter: filter, deliver: deliver, synchronous: synchronous, ordered: ordered)
            initial(s)
            return s.nextObserverID
        }
    }

    /// How many change and failure observers are registered.
    var observerCount: Int { state.withLock { $0.observers.count + $0.failureObservers.count } }

    func removeObserver(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// Adds a failure observer, and tells it first the failures that still stand.
    func addFailureObserver(_ deliver: @escaping @Sendable (PreferenceError) -> Void) -> UInt64 {
        watch()
        let (id, standing) = state.withLock { s in
            s.nextObserverID += 1
            s.failureObservers[s.nextObserverID] = deliver
            InlineHandlers.count.add(1, ordering: .relaxed)
            return (s.nextObserverID, s.layerNotices + s.standingNotices)
        }
        for notice in standing { deliver(notice) }
        return id
    }

    func removeFailureObserver(_ id: UInt64) {
        if state.withLock({ $0.failureObservers.removeValue(forKey: id) }) != nil { InlineHandlers.count.subtract(1, ordering: .relaxed) }
    }

    /// Reports a failure that no caller is waiting for (a background write, a corrupt file).
    package func report(_ error: any Error) {
        let failure = error as? PreferenceError ?? PreferenceError(code: .ioFailure, message: "\(error)", path: backend.location)
        for deliver in state.withLock({ Array($0.failureObservers.values) }) { deliver(failure) }
    }
}
