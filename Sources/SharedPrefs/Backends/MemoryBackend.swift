/// A suite in memory only: nothing to read, nothing to watch; a write stores what the plan says.
struct MemoryBackend: SuiteBackend {
    var location: String? { nil }

    /// Nothing to wait for but an update body running in another thread.
    var timeout: Duration { .seconds(5) }

    func load() -> Loaded { Loaded() }

    func commit(since start: ContinuousClock.Instant, _ plan: (Loaded) throws -> WritePlan) throws -> Committed {
        Committed(wrote: try plan(Loaded()).changesSomething)
    }

    func subscribe(_ sink: @escaping @Sendable (BackendEvent) -> Void) -> Subscription { Subscription() }

    func retryDelay(after error: PreferenceError) -> Duration? { nil }
}
