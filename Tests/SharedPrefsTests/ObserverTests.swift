import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

@Suite("Observers in one process")
struct ObserverTests {
    @Test func localChangesReachExactlyTheMatchingObservers() async throws {
        let suite = PreferenceSuite.inMemory(name: "local")
        let (key, t1) = suite.record(.key("window.width"))
        let (prefix, t2) = suite.record(.prefix("window."))
        let (keys, t3) = suite.record(.keys(["a", "b"]))
        let (all, t4) = suite.record(.all)
        defer { _ = (t1, t2, t3, t4) }
        suite.set(800, forKey: "window.width")
        suite.set("x", forKey: "windows")
        suite.set(1, forKey: "b")
        suite.set(1, forKey: "b")  // unchanged: no change
        suite.removeObject(forKey: "b")
        let everything = try await all.wait(for: 4)
        #expect(everything.map(\.key) == ["window.width", "windows", "b", "b"])
        #expect(everything.allSatisfy { $0.origin == .local && $0.suite == "local" })
        #expect(everything[3].oldValue == 1 && everything[3].isRemoval)
        #expect(try await key.wait(for: 1).map(\.newValue) == [800])
        #expect(try await prefix.wait(for: 1).map(\.key) == ["window.width"])
        #expect(try await keys.wait(for: 2).map(\.key) == ["b", "b"])
        // Each observer has its own queue: a later change it matches, heard, proves nothing else
        // came before it.
        suite.set(801, forKey: "window.width")
        suite.set(1, forKey: "a")
        #expect(try await key.wait(for: 2).map(\.newValue) == [800, 801])
        #expect(try await prefix.wait(for: 2).map(\.key) == ["window.width", "window.width"])
        #expect(try await keys.wait(for: 3).map(\.key) == ["b", "b", "a"])
        #expect(try await all.wait(for: 6).count == 6)
    }

    @Test func cancelledObserversHearNothingMore() async throws {
        let suite = PreferenceSuite.inMemory()
        // One serial queue: a change is handed to both observers at once, so once the witness
        // heard 3, whatever the cancelled one was handed for 2 has run.
        let queue = DispatchQueue(label: "both observers")
        let (cancelled, token) = suite.record(.all, queue: queue)
        let (witness, witnessToken) = suite.record(.all, queue: queue)
        defer { _ = witnessToken }
        suite.set(1, forKey: "a")
        try await cancelled.wait(for: 1)
        token.cancel()
        suite.set(2, forKey: "a")
        suite.set(3, forKey: "a")
        try await witness.wait(for: 3)
        #expect(cancelled.items.count == 1)
    }

    @Test func asyncSequencesDeliverChangesAndTypedValues() async throws {
        let suite = PreferenceSuite.inMemory()
        suite[.volume] = 1
        let values = suite.values(for: .volume)
        let changes = suite.changes(prefix: "vol")
        async let firstValues: [Int] = {
            var seen: [Int] = []
            for await value in values {
                seen.append(value)
                if seen.count == 3 { break }
            }
            return seen
        }()
        async let firstChange: PreferenceChange? = {
            for await change in changes { return change }
            return nil
        }()
        // Both sequences subscribed when they were made, so nothing below can be missed.
        suite[.volume] = 2
        suite.reset(.volume)
        #expect(await firstValues == [1, 2, 5])
        #expect(await firstChange?.newValue == 2)
    }

    @Test func updateIsAReadModifyWriteThatReturnsItsResult() throws {
        let suite = PreferenceSuite.inMemory()
        let counter = PreferenceKey<Int>("counter", default: 0)
        for _ in 0..<10 { try suite.update { $0[counter] += 1 } }
        let last = try suite.update { tx -> Int in
            tx["list"] = .array([1])
            return tx[counter]
        }
        #expect(last == 10 && suite[counter] == 10 && suite.value(forKey: "list") == [1])
    }

    @Test func nestedUpdateIsRefusedNotADeadlock() throws {
        let directory = try TemporaryDirectory()
        let suite = try PreferenceSuite(fileURL: directory.file("nested.plist"))
        let error = #expect(throws: PreferenceError.self) {
            try suite.update { _ in try suite.update { _ in } }
        }
        #expect(error?.code == .unsupportedOperation)
    }
}
