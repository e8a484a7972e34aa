import SharedPrefsLocking

/// One line reported by a process (a helper, or the main process's own observers).
struct Event: Sendable {
    /// "main", "helper 1", "helper 2".
    let source: String
    let words: [String]

    /// The CLOCK_MONOTONIC time a report ends with.
    var time: Int64 { words.last.flatMap { Int64($0) } ?? 0 }
}

/// Everything the processes reported, in arrival order; the scenario awaits the one it expects.
final class EventLog: Sendable {
    struct TimeoutError: Error, CustomStringConvertible {
        let description: String
    }

    private struct Waiter {
        let id: Int
        let after: Int
        let matches: @Sendable (Event) -> Bool
        let continuation: CheckedContinuation<Event, any Error>
    }

    private struct State {
        var events: [Event] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = Lock(State())

    var count: Int { state.withLock { $0.events.count } }

    func events(after index: Int) -> ArraySlice<Event> {
        state.withLock { $0.events[index...] }
    }

    func append(_ event: Event) {
        let (ready, failed) = state.withLock { s -> ([CheckedContinuation<Event, any Error>], [CheckedContinuation<Event, any Error>]) in
            s.events.append(event)
            let index = s.events.count - 1
            let done = s.waiters.filter { index >= $0.after && $0.matches(event) }
            s.waiters.removeAll { w in done.contains { $0.id == w.id } }
            guard event.words == ["exited"] else { return (done.map(\.continuation), []) }
            // A process that exited answers nothing more: every wait fails now, not at its timeout.
            defer { s.waiters = [] }
            return (done.map(\.continuation), s.waiters.map(\.continuation))
        }
        for continuation in ready { continuation.resume(returning: event) }
        for continuation in failed { continuation.resume(throwing: Self.exited(event.source)) }
    }

    static func exited(_ source: String) -> TimeoutError {
        TimeoutError(description: "\(source) exited before it reported what the scenario waits for")
    }

    /// The first event at or after `index` that matches, waiting for it up to `timeout`.
    func first(after index: Int, timeout: Duration = .seconds(120), where matches: @escaping @Sendable (Event) -> Bool) async throws -> Event {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        return try await withCheckedThrowingContinuation { continuation in
            let found = state.withLock { s -> Result<Event, TimeoutError>? in
                if let event = s.events[min(index, s.events.count)...].first(where: matches) { return .success(event) }
                if let exit = s.events.first(where: { $0.words == ["exited"] }) { return .failure(Self.exited(exit.source)) }
                s.waiters.append(Waiter(id: id, after: index, matches: matches, continuation: continuation))
                return nil
            }
            if let found { return continuation.resume(with: found.mapError { $0 as any Error }) }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = state.withLock { s -> CheckedContinuation<Event, any Error>? in
                    guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.waiters.remove(at: i).continuation
                }
                expired?.resume(throwing: TimeoutError(description: "no expected report within \(timeout)"))
            }
        }
    }
}
