import Dispatch
import Foundation
import SharedPrefs
import SharedPrefsLocking
import SharedPrefsTestSupport
import Testing

/// The suite's owner: its I/O runs one job at a time, each call waits for the earlier ones within
/// its deadline, a job that calls back into its suite is refused, and async code waits without a
/// thread.
///
/// The time limit catches a hang, not slowness: in the whole run on 2 cores, beside 200 observer
/// processes (`ManyProcessesTests`), these tests' 800 blocking updates have taken over a minute.
@Suite("Owner", .timeLimit(.minutes(underThreadSanitizer ? 5 : 3)))
struct OwnerTests {
    private func suite(_ backend: ScriptedBackend) -> PreferenceSuite {
        PreferenceSuite(store: SuiteStore(name: "unit", backend: backend, loaded: backend.load()))
    }

    /// Runs an update of `suite` on a thread of its own (not the cooperative pool's) whose body
    /// holds the suite until `release` is signalled; returns once the body runs, and a task that
    /// ends with the update.
    private func holdSuite(_ suite: PreferenceSuite, until release: DispatchSemaphore) async throws -> Task<Void, any Error> {
        let entered = Recorder<Bool>()
        let done = Recorder<Result<Void, PreferenceError>>()
        Thread {
            done.record(Result {
                try suite.update { transaction in
                    transaction["long"] = .integer(1)
                    entered.record(true)
                    release.wait()  // a wrong owner waits for it: the test's time limit fails it
                }
            }.mapError { $0 as! PreferenceError })
        }.start()
        _ = try await entered.wait(for: 1)
        return Task { try await done.wait(for: 1)[0].get() }
    }

    /// Eight threads' updates of one counter never overlap and lose nothing.
    @Test func updatesFromManyThreadsRunOneAtATime() async throws {
        let suite = suite(ScriptedBackend())
        let counter = PreferenceKey<Int>("counter", default: 0)
        let running = Lock(0)
        let overlaps = Lock(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await Task.detached {
                        for _ in 0..<100 {
                            try? suite.update { transaction in
                                if running.withLock({ $0 += 1; return $0 }) > 1 { overlaps.withLock { $0 += 1 } }
                                transaction[counter] += 1
                                running.withLock { $0 -= 1 }
                            }
                        }
                    }.value
                }
            }
        }
        #expect(overlaps.withLock { $0 } == 0)
        #expect(suite[counter] == 800)
    }

    /// An update body that holds the suite longer than the timeout: another thread's
    /// `synchronize()` and `update` give up one timeout after they were called, saying what they
    /// waited for, and run nothing; once it is done, both go through.
    @Test func aCallBehindALongUpdateGivesUpAtItsDeadline() async throws {
        let suite = suite(ScriptedBackend(timeout: .milliseconds(300)))
        let release = DispatchSemaphore(value: 0)
        let long = try await holdSuite(suite, until: release)
        suite.set(2, forKey: "pending")
        let clock = ContinuousClock()
        let start = clock.now
        #expect(!suite.synchronize())
        #expect(throws: PreferenceError.self) { try suite.update { $0["other"] = .integer(3) } }
        let waited = clock.now - start
        // Not before their deadlines (how soon after them is prefs-bench's row 17).
        #expect(waited >= .milliseconds(550), "\(waited)")
        release.signal()
        try await long.value
        #expect(suite.synchronize())
        try await suite.update { $0["other"] = .integer(3) }
        #expect(suite.storedValues["other"] == 3 && suite.storedValues["pending"] == 2)
    }

    /// `update` or `synchronize()` inside an update body of the same suite would wait for itself:
    /// refused, with what to do.
    @Test func aCallIntoItsOwnSuiteFromAnUpdateBodyIsRefused() throws {
        let suite = suite(ScriptedBackend())
        let refused = try suite.update { _ -> [PreferenceError.Code] in
            var codes: [PreferenceError.Code] = []
            do { try suite.update { _ in } } catch let error as PreferenceError { codes.append(error.code) } catch {}
            suite.set(1, forKey: "x")
            if !suite.synchronize() { codes.append(PreferenceError.Code.unsupportedOperation) }
            return codes
        }
        #expect(refused == [.unsupportedOperation, .unsupportedOperation])
    }

    /// The async `update` runs its body on a thread of the suite's that runs no task (never one
    /// of Swift's cooperative pool, as the caller's is), and returns what it
    /// returns; one that waits behind a long body gives up with `lockTimedOut`, not before its
    /// deadline, while the body still holds the suite (it would have run after it, and succeeded).
    @Test func anAsyncUpdateRunsOffTheCallersThreadAndKeepsItsDeadline() async throws {
        let suite = suite(ScriptedBackend(timeout: .milliseconds(300)))
        let inATask = try await suite.update { transaction -> Bool in
            transaction["n"] = .integer(1)
            return withUnsafeCurrentTask { $0 != nil }
        }
        #expect(!inATask, "the body ran in a task: on a thread of the cooperative pool")
        #expect(suite.storedValues["n"] == 1)
        let release = DispatchSemaphore(value: 0)
        let long = try await holdSuite(suite, until: release)
        let start = ContinuousClock.now
        let error = await #expect(throws: PreferenceError.self) { try await suite.update { $0["late"] = .integer(1) } }
        #expect(error?.code == .lockTimedOut, "\(String(describing: error))")
        #expect(ContinuousClock.now - start >= .milliseconds(300), "gave up before its deadline")
        release.signal()
        try await long.value
        #expect(suite.storedValues["late"] == nil)
    }
}
