import Foundation
import SharedPrefsLocking
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// sindresorhus/Defaults' typed-key behaviour beyond its own tests (ported in
/// DefaultsPortedTests.swift): stored forms other programs read, peers' stored forms read here,
/// and the observation options that stand in for its Combine publishers.
@Suite("Defaults parity")
struct DefaultsParityTests {
    /// The range ports (DefaultsRangePortedTests) cover the round trips; this, the stored form.
    @Test func aRangeIsStoredAsItsBoundsAndAnInvertedPairReadsTheDefault() {
        let suite = PreferenceSuite.inMemory()
        let range = PreferenceKey<Range>("range", default: 0..<10)
        suite[range] = 1..<20
        #expect(suite.value(forKey: "range") == [1, 20])
        suite[PreferenceKey<ClosedRange<Int>>("closed", default: 0...1)] = 2...3
        #expect(suite.value(forKey: "closed") == [2, 3])
        // An inverted pair is not a range: it reads as the default, never a crash.
        suite.set(PlistValue.array([5, 1]), forKey: "range")
        #expect(suite[range] == 0..<10)
    }

    @Test func setsUUIDsAndDictionariesWithNonStringKeys() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("types.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let tags = PreferenceKey<Set<String>>("tags", default: [])
        suite[tags].insert("a")
        suite[tags].insert("b")
        #expect(suite[tags] == ["a", "b"])
        let id = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let owner = PreferenceKey<UUID?>("owner")
        suite[owner] = id
        #expect(suite[owner] == id)
        let names = PreferenceKey<[Int: String]>("names", default: [:])
        suite[names][1] = "one"
        suite[names][20] = "twenty"
        #expect(suite[names] == [1: "one", 20: "twenty"])
        try await suite.flush()
        // The stored forms are plain property-list values another program reads.
        let check = try await python(
            "import plistlib, sys; d = plistlib.load(open(sys.argv[1], 'rb')); print(sorted(d['tags']), d['owner'], sorted(d['names'].items()))", file.path)
        #expect(check.output == "['a', 'b'] E621E1F8-C36C-495A-93FC-0C247A3E6E5F [('1', 'one'), ('20', 'twenty')]\n", "\(check.output)")
        // A key that does not parse as the key type makes the value unreadable as that type.
        suite.set(PlistValue.dictionary(["x": "bad"]), forKey: "names")
        #expect(suite[names] == [:])
        #expect(suite.synchronize())  // now, not at exit once the directory is gone (made again)
    }

    @Test func keysAreHashableByNameAndKnowWhetherTheyHoldTheirDefault() {
        let a = PreferenceKey<Int>("a", default: 1)
        #expect(a == PreferenceKey<Int>("a", default: 2) && a != PreferenceKey<Int>("b", default: 1))
        #expect(Set([a, PreferenceKey<Int>("a", default: 3)]).count == 1)
        let suite = PreferenceSuite.inMemory()
        #expect(suite.isDefaultValue(a))
        suite[a] = 5
        #expect(!suite.isDefaultValue(a))
        suite[a] = 1  // stored, but equal to the default
        #expect(suite.isDefaultValue(a))
    }

    @Test func aDynamicDefaultIsComputedAtEachReadAndNeverRegistered() {
        let counter = Counter()
        let key = PreferenceKey<Int>("dynamic") { counter.next() }
        let suite = PreferenceSuite.inMemory()
        #expect(suite[key] == 1 && suite[key] == 2)
        #expect(suite.object(forKey: "dynamic") == nil)
        suite[key] = 10
        #expect(suite[key] == 10)
    }

    /// Defaults registers a key's default: untyped reads see it once the key has been used.
    @Test func aTypedKeysDefaultIsVisibleToUntypedReadsOnceUsed() {
        let suite = PreferenceSuite.inMemory()
        let theme = PreferenceKey<String>("theme", default: "light")
        #expect(suite.string(forKey: "theme") == nil)
        _ = suite[theme]
        #expect(suite.string(forKey: "theme") == "light")
        #expect(suite.dictionaryRepresentation()["theme"] as? String == "light")
        #expect(suite.storedValues.isEmpty)
        // An explicitly registered default is kept.
        suite.register(defaults: ["volume": 3])
        _ = suite[PreferenceKey<Int>("volume", default: 5)]
        #expect(suite.integer(forKey: "volume") == 3)
    }

    struct Profile: Codable, PreferenceValue, Equatable { var name: String; var age: Int }

    /// Defaults writes `Codable` values as JSON text and ObservableDefaults as JSON data; both are
    /// read. This library writes a nested property list.
    @Test func codableValuesWrittenAsJSONTextOrDataByPeersAreRead() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("peers.plist")
        let write = try await python(
            "import plistlib, sys, json; p = {'name': 'fat', 'age': 10}; plistlib.dump({'defaults': json.dumps(p), 'observable': json.dumps(p).encode()}, open(sys.argv[1], 'wb'))",
            file.path)
        #expect(write.status == 0, "\(write.output)")
        let suite = try PreferenceSuite(fileURL: file)
        let none = Profile(name: "", age: 0)
        #expect(suite[PreferenceKey("defaults", default: none)] == Profile(name: "fat", age: 10))
        #expect(suite[PreferenceKey("observable", default: none)] == Profile(name: "fat", age: 10))
        suite[PreferenceKey("defaults", default: none)] = Profile(name: "ada", age: 36)
        #expect(suite.value(forKey: "defaults") == ["name": "ada", "age": 36])
        #expect(suite.synchronize())  // now, not at exit once the directory is gone (made again)
    }

    /// Defaults' `.initial`: the current value first, then the changes.
    @Test func anObserverCanGetTheCurrentValuesFirst() async throws {
        let suite = PreferenceSuite.inMemory()
        suite.set(1, forKey: "a")
        suite.set(2, forKey: "b")
        let heard = Recorder<String>()
        let token = suite.observe(.key("a"), options: .initial) { heard.record("\($0.key) \($0.oldValue?.description ?? "-") \($0.newValue?.description ?? "-")") }
        defer { token.cancel() }
        suite.set(3, forKey: "a")
        #expect(try await heard.wait(for: 2) == ["a - 1", "a 1 3"])
    }

    /// This process's own changes reach a synchronous observer before `set` returns (and it may
    /// read the suite); another process's change still arrives on its queue.
    @Test func ownChangesCanBeDeliveredBeforeSetReturns() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("sync.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let heard = Recorder<String>()
        let token = suite.observe(.key("a"), options: .synchronousLocalChanges) { change in
            heard.record("\(change.newValue?.description ?? "-") read \(suite.value(forKey: "a")?.description ?? "-") \(change.origin)")
        }
        defer { token.cancel() }
        suite.set(5, forKey: "a")
        #expect(heard.items == ["5 read 5 local"])
        try await suite.update { $0["a"] = 6 }
        #expect(heard.items.count == 2)
        try await child("set", file.path, "a=int:7")
        #expect(try await heard.wait(for: 3).last == "7 read 7 external")
    }
}

final class Counter: Sendable {
    private let value = Lock(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}

/// A value type that is not `Sendable` (a class with mutable state), as apps have them.
final class ParityProfile: Codable, PreferenceValue {
    var name: String
    init(name: String) { self.name = name }
}

/// Keys as Defaults' README declares them: `static let` in an extension, for any value type. This
/// compiles under Swift 6 only because `PreferenceKey` is `Sendable` whatever its value.
extension PreferenceKey where Value == ParityProfile {
    static let parityProfile = PreferenceKey("parityProfile", default: ParityProfile(name: "none"))
}

@Suite("Defaults parity: keys of any value type")
struct DefaultsKeySendabilityTests {
    @Test func aStaticKeyOfANonSendableTypeIsUsedFromAnotherTask() async throws {
        let suite = PreferenceSuite.inMemory()
        suite[.parityProfile] = ParityProfile(name: "Ada")
        let name = await Task.detached { suite[.parityProfile].name }.value
        #expect(name == "Ada")
        #expect(PreferenceKey<ParityProfile>.parityProfile.name == "parityProfile")
    }
}

@Suite("Defaults parity: every value, in order")
struct DefaultsUpdatesCarryTheirValuesTests {
    /// `for await (a, b) in suite.updates(k1, k2)`, as the docs write it (with Swift 6.3 it did
    /// not compile: a parameter pack's tuple cannot be taken apart there), and with three keys.
    @Test func updatesOfTwoOrThreeKeysComeApartInAForAwaitLoop() async throws {
        let suite = PreferenceSuite.inMemory()
        let count = PreferenceKey<Int>("count", default: 0)
        let label = PreferenceKey<String>("label", default: "none")
        let on = PreferenceKey<Bool>("on", default: false)
        suite[count] = 2
        for await (n, text) in suite.updates(count, label) {
            #expect(n == 2 && text == "none")
            break
        }
        for await (n, text, flag) in suite.updates(count, label, on) {
            #expect(n == 2 && text == "none" && !flag)
            break
        }
    }

    /// Three quick sets in one process: `updates(key1, key2)` yields each with the values right
    /// after it (it yielded the first and the last only in 4 of 10 runs when it read the suite at
    /// delivery), and `values(for:)` too.
    @Test func quickSetsReachUpdatesAndValuesEachWithItsValue() async throws {
        let suite = PreferenceSuite.inMemory()
        let count = PreferenceKey<Int>("count", default: 0)
        let label = PreferenceKey<String>("label", default: "none")
        let pairs = Recorder<String>()
        let singles = Recorder<Int>()
        let stream = suite.updates(count, label)
        let updates = Task {
            for await (n, text) in stream {
                pairs.record("\(n) \(text)")
                if n == 3 { break }
            }
        }
        let values = Task {
            for await n in suite.values(for: count) {
                singles.record(n)
                if n == 3 { break }
            }
        }
        _ = try await pairs.wait(for: 1)
        _ = try await singles.wait(for: 1)
        suite[count] = 1
        suite[label] = "one"
        suite[count] = 2
        suite[count] = 3
        await updates.value
        await values.value
        #expect(pairs.items == ["0 none", "1 none", "1 one", "2 one", "3 one"])
        #expect(singles.items == [0, 1, 2, 3])
    }
}
