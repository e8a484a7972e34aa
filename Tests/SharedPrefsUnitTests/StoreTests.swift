import Foundation
import SharedPrefs
import SharedPrefsTestSupport
import Testing

/// The store's logic on a backend in memory: per-key diffing, observers, transactions, failures
/// and subscriptions, in milliseconds, without files or processes. What crosses real processes
/// and file systems is in `SharedPrefsTests`.
@Suite("Store")
struct StoreTests {
    private func number(_ value: PlistValue?) -> Int64 {
        if case .integer(let n)? = value { return n }
        return 0
    }

    private func suite(_ backend: ScriptedBackend) -> PreferenceSuite {
        PreferenceSuite(store: SuiteStore(name: "unit", backend: backend, loaded: backend.load()))
    }

    @Test func anExternalChangeReachesExactlyTheObserversOfItsKeyWithOldAndNewValue() async throws {
        let backend = ScriptedBackend(["a": 1, "b.x": 1, "c": 1])
        let suite = suite(backend)
        // One serial queue: what one observer heard before another's later change is all it hears.
        let queue = DispatchQueue(label: "observers")
        let (a, tokenA) = suite.record(.key("a"), queue: queue)
        let (b, tokenB) = suite.record(.prefix("b."), queue: queue)
        let (all, tokenAll) = suite.record(.all, queue: queue)
        defer { _ = (tokenA, tokenB, tokenAll) }

        backend.external(["a": 2])
        backend.external(["b.x": 3, "c": nil])
        backend.external(["a": 4])

        let seenByA = try await a.wait(for: 2)
        #expect(seenByA.map { "\($0.key) \($0.oldValue!) \($0.newValue!) \($0.origin)" } == ["a 1 2 external", "a 2 4 external"])
        let seenByB = try await b.wait(for: 1)
        #expect(seenByB.map(\.key) == ["b.x"] && seenByB[0].newValue == 3)
        let seenByAll = try await all.wait(for: 4)
        #expect(Set(seenByAll.map(\.key)) == ["a", "b.x", "c"] && seenByAll.count == 4)
        #expect(seenByAll.first { $0.key == "c" }?.newValue == nil)
        // Nothing more came: the next change is the next item of each of its observers. (The
        // observers of one change are handed it in no set order, so `b` is waited for too.)
        backend.external(["b.y": 5])
        #expect(try await all.wait(for: 5).last?.key == "b.y")
        #expect(try await b.wait(for: 2).map(\.key) == ["b.x", "b.y"] && a.items.count == 2)
    }

    @Test func aLocalChangeReachesObserversAsLocalBeforeItIsWritten() async throws {
        let backend = ScriptedBackend(["a": 1])
        let suite = suite(backend)
        let (a, token) = suite.record(.key("a"))
        defer { _ = token }
        suite.set(2, forKey: "a")
        #expect(suite.integer(forKey: "a") == 2)
        let change = try #require(try await a.wait(for: 1).first)
        #expect(change.origin == .local && change.oldValue == 1 && change.newValue == 2)
        #expect(suite.synchronize())
        #expect(backend.stored["a"] == 2)
        // Written, it is not told again.
        suite.set(3, forKey: "a")
        #expect(try await a.wait(for: 2).map(\.newValue) == [2, 3])
    }

    @Test func anUpdateRunsOnTheStoredValuesEvenWhenNobodyToldTheStore() throws {
        let backend = ScriptedBackend(["counter": 1])
        let suite = suite(backend)
        // Nothing read yet: nothing subscribed, so nothing hears of this change.
        backend.external(["counter": 5])
        #expect(backend.subscribers == 0)
        let result = try suite.update { tx in
            let next = number(tx["counter"]) + 1
            tx["counter"] = .integer(next)
            return next
        }
        #expect(result == 6)
        #expect(backend.stored["counter"] == 6)
        #expect(suite.integer(forKey: "counter") == 6)
    }

    @Test func aTransactionWhoseReadsChangedMeanwhileRunsAgainOnACompareAndSwapBackend() throws {
        let backend = ScriptedBackend(["counter": 1, "other": 1], comparesAndSwaps: true)
        let suite = suite(backend)
        backend.interfere(["counter": 10])
        var runs = 0
        let result = try suite.update { tx in
            runs += 1
            let next = number(tx["counter"]) + 1
            tx["counter"] = .integer(next)
            return next
        }
        #expect(runs == 2)
        #expect(result == 11)
        #expect(backend.stored["counter"] == 11)
        // A change to a key the body did not read does not make it run again.
        backend.interfere(["other": 2])
        runs = 0
        try suite.update { tx in
            runs += 1
            tx["counter"] = .integer(number(tx["counter"]) + 1)
        }
        #expect(runs == 1)
        #expect(backend.stored["counter"] == 12 && backend.stored["other"] == 2)
    }

    @Test func pendingSetsAreMergedPerKeyOverAnotherWritersChanges() throws {
        let backend = ScriptedBackend(["mine": 1, "theirs": 1])
        let suite = suite(backend)
        suite.set(2, forKey: "mine")
        backend.external(["theirs": 7])
        #expect(suite.synchronize())
        #expect(backend.stored["mine"] == 2 && backend.stored["theirs"] == 7)
        #expect(suite.integer(forKey: "theirs") == 7)
    }

    @Test func aFailedTransactionBodyWritesNothingOfItsOwnButThePendingSetsStillGo() throws {
        struct Refused: Error {}
        let backend = ScriptedBackend()
        let suite = suite(backend)
        suite.set(1, forKey: "pending")
        #expect(throws: Refused.self) {
            try suite.update { tx in
                tx["mine"] = 1
                throw Refused()
            }
        }
        #expect(suite.synchronize())
        #expect(backend.stored["pending"] == 1 && backend.stored["mine"] == nil)
        #expect(suite.value(forKey: "mine") == nil)
    }

    @Test func aProcessThatOnlyWritesSubscribesToNothingAndAReleasedSuiteUnsubscribes() async throws {
        let backend = ScriptedBackend()
        do {
            let suite = suite(backend)
            suite.set(1, forKey: "a")
            #expect(suite.synchronize())
            #expect(backend.subscribers == 0)
            #expect(suite.integer(forKey: "a") == 1)
            #expect(backend.subscribers == 1)
        }
        try await backend.released.wait(for: 1)
        #expect(backend.subscribers == 0)
    }

    @Test func writingValuesTheSuiteHoldsWritesNothing() throws {
        let backend = ScriptedBackend(["a": 1])
        let suite = suite(backend)
        suite.set(1, forKey: "a")
        #expect(suite.synchronize())
        #expect(suite.statistics.fileWrites == 0)
        suite.set(2, forKey: "a")
        #expect(suite.synchronize())
        #expect(suite.statistics.fileWrites == 1)
    }

    @Test func whatABackendMetOnTheSideReachesFailureObserversOnce() async throws {
        let backend = ScriptedBackend()
        let suite = suite(backend)
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        _ = suite.value(forKey: "a")  // subscribes

        backend.fail(PreferenceError(code: .watchFailed, message: "the watch broke"))
        backend.addNotice(PreferenceError(code: .corruptFile, message: "a value left out"))
        backend.external(["a": 1])
        backend.failNextCommit(with: PreferenceError(code: .corruptFile, message: "moved aside"))
        #expect(throws: PreferenceError.self) { try suite.update { $0["a"] = 2 } }
        #expect(backend.stored["a"] == 2)
        let seen = try await failures.wait(for: 3)
        #expect(seen.map(\.message) == ["the watch broke", "a value left out", "moved aside"])
        // Each once: a marker after them comes next.
        backend.fail(PreferenceError(code: .watchFailed, message: "marker"))
        #expect(try await failures.wait(for: 4).last?.message == "marker")
    }

    @Test func anInMemorySuiteTellsItsObserversAndRunsTransactions() async throws {
        let suite = PreferenceSuite.inMemory()
        let (all, token) = suite.record(.all)
        defer { _ = token }
        suite.set(1, forKey: "a")
        let total = try await suite.update { tx in
            let next = number(tx["a"]) + 1
            tx["a"] = .integer(next)
            return next
        }
        #expect(total == 2)
        let seen = try await all.wait(for: 2)
        #expect(seen.map(\.newValue) == [1, 2] && seen.allSatisfy { $0.origin == .local })
        #expect(suite.synchronize())
    }

    @Test func aFailedWriteReachesFailureObserversOncePerAttempt() async throws {
        let backend = ScriptedBackend()
        let suite = suite(backend)
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        backend.refuseCommits(PreferenceError(code: .ioFailure, message: "disk full"))
        suite.set(1, forKey: "a")
        // Behind the background flush the set scheduled: each attempt is done when it returns.
        await #expect(throws: PreferenceError.self) { try await suite.flush() }
        #expect(!suite.synchronize())
        let attempts = backend.counts.commits
        #expect(attempts >= 1)
        try await failures.wait(for: attempts)
        backend.refuseCommits(nil)
        #expect(suite.synchronize())
        #expect(backend.stored["a"] == 1)
        _ = suite.value(forKey: "a")  // subscribes
        backend.fail(PreferenceError(code: .watchFailed, message: "marker"))
        let seen = try await failures.wait(for: attempts + 1)
        #expect(seen.map(\.message) == Array(repeating: "disk full", count: attempts) + ["marker"])
    }
}
