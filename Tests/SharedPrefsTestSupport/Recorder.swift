import Foundation
import SharedPrefs
import SharedPrefsLocking

package struct TimeoutError: Error, CustomStringConvertible {
    package var description: String
}

/// Whether this test process runs under ThreadSanitizer (`swift test --sanitize=thread`), whose
/// runtime is linked into the test binary. Every process, child processes too, is several times
/// slower there: work that is quadratic by nature (every contended update re-reads and rewrites a
/// suite that grows by a key) is scaled down to a quarter, and time limits meant to catch a
/// deadlock give more room.
package let underThreadSanitizer = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil

/// How long a test waits for one event before it fails. Generous: under ThreadSanitizer, beside
/// the eight busy writers of the contention test on two cores, a child process took over 20 s to
/// start. Only a failing test ever waits this long.
package let defaultTimeout: Duration = .seconds(60)

/// Collects values delivered on other threads and lets a test await the n-th one with a timeout,
/// instead of sleeping.
package final class Recorder<Element: Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        var count: Int
        var continuation: CheckedContinuation<[Element], any Error>
    }
    private struct State {
        var items: [Element] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }
    private let state = Lock(State())

    package init() {}

    package var items: [Element] { state.withLock { $0.items } }

    package func record(_ item: Element) {
        let ready = state.withLock { s -> [(CheckedContinuation<[Element], any Error>, [Element])] in
            s.items.append(item)
            let done = s.waiters.filter { s.items.count >= $0.count }
            s.waiters.removeAll { s.items.count >= $0.count }
            return done.map { ($0.continuation, s.items) }
        }
        for (continuation, items) in ready { continuation.resume(returning: items) }
    }

    /// Waits until at least `count` items arrived; returns all of them.
    @discardableResult
    package func wait(for count: Int, timeout: Duration = defaultTimeout) async throws -> [Element] {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        return try await withCheckedThrowingContinuation { continuation in
            let immediate = state.withLock { s -> [Element]? in
                if s.items.count >= count { return s.items }
                s.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                return nil
            }
            if let immediate { return continuation.resume(returning: immediate) }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = state.withLock { s -> (CheckedContinuation<[Element], any Error>, [Element])? in
                    guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return (s.waiters.remove(at: index).continuation, s.items)
                }
                if let (continuation, got) = expired {
                    // What came, the last 20 of it: what a failure needs to be understood.
                    continuation.resume(throwing: TimeoutError(description: "waited \(timeout) for \(count) items, got \(got.count)\(got.isEmpty ? "" : ", the last: \(got.suffix(20))")"))
                }
            }
        }
    }
}

extension Recorder {
    /// Waits until the items recorded so far satisfy `done` (each new item within `timeout`).
    @discardableResult
    package func wait(until done: ([Element]) -> Bool, timeout: Duration = defaultTimeout) async throws -> [Element] {
        var items = self.items
        while !done(items) { items = try await wait(for: items.count + 1, timeout: timeout) }
        return items
    }
}

extension PreferenceSuite {
    /// Records every change that passes `filter`; keep the token alive for as long as you record.
    /// Observers given one serial `queue` hear each change in turn: what one of them heard before
    /// another's later change is then done.
    package func record(_ filter: KeyFilter, queue: DispatchQueue? = nil) -> (Recorder<PreferenceChange>, PreferenceObservation) {
        let recorder = Recorder<PreferenceChange>()
        let token = observe(filter, queue: queue) { recorder.record($0) }
        return (recorder, token)
    }

    package func recordFailures() -> (Recorder<PreferenceError>, Task<Void, Never>) {
        let recorder = Recorder<PreferenceError>()
        let stream = failures()
        let task = Task {
            for await failure in stream { recorder.record(failure) }
        }
        return (recorder, task)
    }
}
