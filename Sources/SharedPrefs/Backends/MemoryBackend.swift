import Synchronization

/// A suite in memory only: nothing to read, nothing to watch; a write stores what the plan says.
final class MemoryBackend: SuiteBackend {
    var location: String? { nil }
    /// The last write's number.
    private let sequence = Atomic<UInt64>(0)

    /// Nothing to wait for but an update body running in another thread.
    var timeout: Duration { .seconds(5) }

    func load() -> Loaded { Loaded() }

    func commit(since start: ContinuousClock.Instant, _ plan: (Loaded) throws -> WritePlan) throws -> Committed {
        var committed = Committed(wrote: try plan(Loaded()).changesSomething)
        if committed.wrote { committed.sequence = sequence.add(1, ordering: .relaxed).newValue }
        return committed
    }

    func subscribe(_ sink: @escaping @Sendable (BackendEvent) -> Void) -> Subscription { Subscription() }

    func retryDelay(after error: PreferenceError) -> Duration? { nil }
}
