import Dispatch
import SharedPrefs
import SharedPrefsTestSupport
import Testing

/// One resolved view: every reader of a suite (subscripts, typed getters, transactions, the first
/// values of observers and sequences, `resolvedValues`) reads the value the layers give, for every
/// combination of layers, on sources in memory.
@Suite("Resolved view")
struct ResolvedViewTests {
    private func first<S: AsyncSequence<Int, Never>>(_ sequence: S) async -> Int? {
        for await element in sequence { return element }
        return nil
    }

    /// The suite's file holds 1, an administrator default 2, a vendor default 3, a launch argument
    /// 4; the declared default is 5. A locked key reads the administrator's, else the vendor's,
    /// else the declared default; any other key the argument, the file, the administrator's, the
    /// vendor's, the declared default, in that order.
    @Test(arguments: [false, true])
    func everyReaderReadsTheValueTheLayersGive(locked: Bool) async throws {
        for mask in 0..<16 {
            let (file, admin, vendor, argument) = (mask & 1 != 0, mask & 2 != 0, mask & 4 != 0, mask & 8 != 0)
            let what = "locked \(locked), file \(file), administrator \(admin), vendor \(vendor), argument \(argument)"
            let expected: Int64? =
                locked ? (admin ? 2 : vendor ? 3 : nil) : (argument ? 4 : file ? 1 : admin ? 2 : vendor ? 3 : nil)
            let typed = Int(expected ?? 5)
            let backend = ScriptedBackend(file ? ["k": 1, "other": 0] : ["other": 0])
            let store = SuiteStore(name: "unit", backend: backend, loaded: backend.load())
            store.adoptLayers(SystemLayers(
                administrator: admin ? ["k": 2] : [:], vendor: vendor ? ["k": 3] : [:], locked: locked ? ["k"] : [],
                arguments: argument ? ["k": 4] : [:]))
            let suite = PreferenceSuite(store: store)
            let key = PreferenceKey<Int>("k", default: 5)

            #expect(suite.value(forKey: "k") == expected.map(PlistValue.integer), "\(what)")
            #expect(suite[key] == typed, "\(what)")
            // (The typed read registered the declared default.)
            #expect(suite.resolvedValues["k"] == .integer(expected ?? 5), "\(what)")
            let inTransaction = try await suite.update { $0[key] }
            #expect(inTransaction == typed, "\(what): the transaction")

            let untyped = Recorder<PreferenceChange>()
            let all = Recorder<PreferenceChange>()
            let typedFirst = Recorder<Int>()
            let tokens = [
                suite.observe(.key("k"), options: .initial) { untyped.record($0) },
                suite.observe(.all, options: .initial) { all.record($0) },
                suite.observe(key, options: .initial) { typedFirst.record($0.newValue) },
            ]
            defer { withExtendedLifetime(tokens) {} }
            #expect(try await untyped.wait(for: 1).first?.newValue == expected.map(PlistValue.integer), "\(what): observe(.key, .initial)")
            let allFirst = try await all.wait(until: { $0.contains { $0.key == "other" } })
            #expect(allFirst.first { $0.key == "k" }?.newValue == expected.map(PlistValue.integer), "\(what): observe(.all, .initial)")
            #expect(try await typedFirst.wait(for: 1).first == typed, "\(what): a typed observe(.initial)")
            #expect(await first(suite.values(for: key)) == typed, "\(what): values(for:)")
            let other = PreferenceKey<Int>("other", default: 5)
            let updates = suite.updates(key, other)
            for await (a, b) in updates {
                #expect(a == typed && b == 0, "\(what): updates(_:_:)")
                break
            }
        }
    }

    /// A layer's change reaches an observer as the change of the value read, and not at all where
    /// the value read stays: a vendor default under the file's value changes nothing.
    @Test func aLayerChangeIsAChangeOnlyWhereTheValueReadChanges() async throws {
        let backend = ScriptedBackend(["k": 1])
        let store = SuiteStore(name: "unit", backend: backend, loaded: backend.load())
        let suite = PreferenceSuite(store: store)
        let (seen, token) = suite.record(.all)
        defer { withExtendedLifetime(token) {} }
        store.adoptLayers(SystemLayers(vendor: ["k": 3, "v": 3]))
        store.adoptLayers(SystemLayers(vendor: ["k": 3, "v": 3], locked: ["k"]))
        let changes = try await seen.wait(for: 2)
        #expect(changes.map { "\($0.key) \($0.oldValue.map { "\($0)" } ?? "-") \($0.newValue.map { "\($0)" } ?? "-") \($0.origin)" } == [
            "v - 3 layer(vendor)", "k 1 3 layer(locked)",
        ])
    }

    /// With `.initial` and `.synchronousLocalChanges`, the first value comes before a change made
    /// right after `observe` returns, however the observer's queue and the setter's thread race.
    @Test func theFirstValueComesFirstEvenBeforeASynchronousLocalChange() async throws {
        for round in 0..<300 {
            let backend = ScriptedBackend(["k": 0])
            let suite = PreferenceSuite(store: SuiteStore(name: "unit", backend: backend, loaded: backend.load()))
            let seen = Recorder<String>()
            let token = suite.observe(.key("k"), options: [.initial, .synchronousLocalChanges]) { change in
                seen.record("\(change.newValue.map { "\($0)" } ?? "-")")
            }
            DispatchQueue.global().async { suite.set(1, forKey: "k") }
            suite.set(2, forKey: "k")
            let items = try await seen.wait(for: 3)
            withExtendedLifetime(token) {}
            #expect(items.first == "0", "round \(round): \(items)")
        }
    }

    /// A handler that sets a value while it takes the first values gets that change after them,
    /// on its own thread, without waiting for itself.
    @Test func aHandlerThatSetsWhileItTakesTheFirstValueDoesNotWaitForItself() async throws {
        let backend = ScriptedBackend(["k": 0])
        let suite = PreferenceSuite(store: SuiteStore(name: "unit", backend: backend, loaded: backend.load()))
        let seen = Recorder<String>()
        let token = suite.observe(.key("k"), options: [.initial, .synchronousLocalChanges]) { change in
            seen.record("\(change.newValue.map { "\($0)" } ?? "-")")
            if change.newValue == 0 { suite.set(1, forKey: "k") }
        }
        #expect(try await seen.wait(for: 2) == ["0", "1"])
        withExtendedLifetime(token) {}
    }
}
