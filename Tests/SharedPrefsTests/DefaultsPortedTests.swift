import Foundation
import SharedPrefsLocking
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

// sindresorhus/Defaults' Tests/DefaultsTests/DefaultsTests.swift (its Swift Testing version),
// ported as written: `suite_` is an in-memory suite; `Defaults.Key(…, suite: suite_)` is
// `PreferenceKey(…, suite: suite_)`; `Defaults[key]` and `suite_[key]` are `suite_[key]`, and
// for a key of another suite that suite's subscript. Its Combine publishers are `observe(key)`,
// `observe(.keys(…))` and `updates`, with the same expected changes, and a last change that shows
// none came between, where upstream sleeps 100 ms and counts. Not ported: testValidKeyName
// (Defaults refuses `.` and `@` for KVO; there is no KVO here) and the two
// `withoutPropagation` tests (no such API).

private let suite_ = PreferenceSuite.inMemory(name: "defaults-tests")

private let fixtureURL = URL(string: "https://sindresorhus.com")!
private let fixtureFileURL = URL(string: "file://~/icon.png")!
private let fixtureURL2 = URL(string: "https://example.com")!
private let fixtureDate = Date()

extension PreferenceKey where Value == Bool {
    fileprivate static let key = PreferenceKey("key", default: false, suite: suite_)
}
extension PreferenceKey where Value == URL {
    fileprivate static let url = PreferenceKey("url", default: fixtureURL, suite: suite_)
    fileprivate static let file = PreferenceKey("fileURL", default: fixtureFileURL, suite: suite_)
}
extension PreferenceKey where Value == Data {
    fileprivate static let data = PreferenceKey("data", default: Data([]), suite: suite_)
}
extension PreferenceKey where Value == Date {
    fileprivate static let date = PreferenceKey("date", default: fixtureDate, suite: suite_)
    fileprivate static let defaultDynamicDate = PreferenceKey("defaultDynamicOptionalDate", suite: suite_) { Date(timeIntervalSince1970: 0) }
}
extension PreferenceKey where Value == UUID? {
    fileprivate static let uuid = PreferenceKey("uuid", suite: suite_)
}
extension PreferenceKey where Value == Date? {
    fileprivate static let defaultDynamicOptionalDate = PreferenceKey("defaultDynamicOptionalDate", suite: suite_) { Date(timeIntervalSince1970: 1) }
}

@Suite("Defaults' own tests, ported", .serialized)
final class DefaultsPortedTests {
    init() {
        suite_.removeAll()
    }

    deinit {
        suite_.removeAll()
    }

    @Test func key() {
        let key = PreferenceKey<Bool>("independentKey", default: false, suite: suite_)
        #expect(!suite_[key])
        suite_[key] = true
        #expect(suite_[key])
    }

    @Test func optionalKey() {
        let key = PreferenceKey<Bool?>("independentOptionalKey", suite: suite_)
        let url = PreferenceKey<URL?>("independentOptionalURLKey", suite: suite_)
        #expect(suite_[key] == nil)
        #expect(suite_[url] == nil)
        suite_[key] = true
        suite_[url] = fixtureURL
        #expect(suite_[key] == true)
        #expect(suite_[url] == fixtureURL)
        suite_[key] = nil
        suite_[url] = nil
        #expect(suite_[key] == nil)
        #expect(suite_[url] == nil)
        suite_[key] = false
        suite_[url] = fixtureURL2
        #expect(suite_[key] == false)
        #expect(suite_[url] == fixtureURL2)
    }

    @Test func initializeDynamicDateKey() {
        _ = PreferenceKey<Date>("independentInitializeDynamicDateKey", suite: suite_) {
            Issue.record("Init dynamic key should not trigger getter")
            return Date()
        }
        _ = PreferenceKey<Date?>("independentInitializeDynamicOptionalDateKey", suite: suite_) {
            Issue.record("Init dynamic optional key should not trigger getter")
            return Date()
        }
    }

    @Test func keyRegistersDefault() {
        let keyName = "registersDefault"
        #expect(!suite_.bool(forKey: keyName))
        _ = PreferenceKey<Bool>(keyName, default: true, suite: suite_)
        #expect(suite_.bool(forKey: keyName))

        let keyName2 = "registersDefault2"
        _ = PreferenceKey<String>(keyName2, default: keyName2, suite: suite_)
        #expect(suite_.string(forKey: keyName2) == keyName2)
    }

    @Test func keyWithUserDefaultSubscript() {
        let key = PreferenceKey<Bool>("keyWithUserDeaultSubscript", default: false, suite: suite_)
        #expect(!suite_[key])
        suite_[key] = true
        #expect(suite_[key])
    }

    @Test func keys() {
        #expect(!suite_[.key])
        suite_[.key] = true
        #expect(suite_[.key])
    }

    @Test func urlType() {
        #expect(suite_[.url] == fixtureURL)
        let newUrl = URL(string: "https://twitter.com")!
        suite_[.url] = newUrl
        #expect(suite_[.url] == newUrl)
    }

    @Test func dataType() {
        #expect(suite_[.data] == Data([]))
        let newData = Data([0xFF])
        suite_[.data] = newData
        #expect(suite_[.data] == newData)
    }

    @Test func dateType() {
        #expect(suite_[.date] == fixtureDate)
        let newDate = Date()
        suite_[.date] = newDate
        #expect(suite_[.date] == newDate)
    }

    @Test func dynamicDateType() {
        #expect(suite_[.defaultDynamicDate] == Date(timeIntervalSince1970: 0))
        let next = Date(timeIntervalSince1970: 1)
        suite_[.defaultDynamicDate] = next
        #expect(suite_[.defaultDynamicDate] == next)
        #expect(suite_.object(forKey: PreferenceKey<Date>.defaultDynamicDate.name) as! Date == next)
        PreferenceKey<Date>.defaultDynamicDate.reset()
        #expect(suite_[.defaultDynamicDate] == Date(timeIntervalSince1970: 0))
    }

    @Test func dynamicOptionalDateType() {
        #expect(suite_[.defaultDynamicOptionalDate] == Date(timeIntervalSince1970: 1))
        let next = Date(timeIntervalSince1970: 2)
        suite_[.defaultDynamicOptionalDate] = next
        #expect(suite_[.defaultDynamicOptionalDate] == next)
        #expect(suite_.object(forKey: PreferenceKey<Date?>.defaultDynamicOptionalDate.name) as! Date == next)
        suite_[.defaultDynamicOptionalDate] = nil
        #expect(suite_[.defaultDynamicOptionalDate] == Date(timeIntervalSince1970: 1))
        #expect(suite_.object(forKey: PreferenceKey<Date?>.defaultDynamicOptionalDate.name) == nil)
    }

    @Test func fileURLType() {
        #expect(suite_[.file] == fixtureFileURL)
    }

    @Test func uuidType() {
        let fixture = UUID()
        suite_[.uuid] = fixture
        #expect(suite_[.uuid] == fixture)
    }

    @Test func removeAll() {
        let key = PreferenceKey<Bool>("removeAll", default: false, suite: suite_)
        let key2 = PreferenceKey<Bool>("removeAll2", default: false, suite: suite_)
        suite_[key] = true
        suite_[key2] = true
        #expect(suite_[key])
        #expect(suite_[key2])
        suite_.removeAll()
        #expect(!suite_[key])
        #expect(!suite_[key2])
    }

    @Test func customSuite() {
        let customSuite = PreferenceSuite.inMemory(name: "com.sindresorhus.customSuite")
        let key = PreferenceKey<Bool>("customSuite", default: false, suite: customSuite)
        #expect(!customSuite[key])
        #expect(!customSuite[key])
        customSuite[key] = true
        #expect(customSuite[key])
        #expect(customSuite[key])
        #expect(!suite_[key])  // and not in another suite
        customSuite.removeAll()
    }

    @Test func isDefaultValue() {
        let key = PreferenceKey<Bool>("isDefaultValue", default: false, suite: suite_)
        #expect(key.isDefaultValue)
        suite_[key].toggle()
        #expect(!key.isDefaultValue)
    }

    @Test func observeKeyCombine() async throws {
        let key = PreferenceKey<Bool>("observeKey", default: false, suite: suite_)
        let results = Recorder<[Bool]>()
        let observation = suite_.observe(key) { results.record([$0.oldValue, $0.newValue]) }
        defer { observation.cancel() }

        suite_[key] = true
        suite_.reset(key)
        suite_[key] = true  // the last change: nothing came between

        let expectedValues = [[false, true], [true, false]]
        #expect(try await results.wait(for: 3) == expectedValues + [[false, true]])
    }

    @Test func observeOptionalKeyCombine() async throws {
        let key = PreferenceKey<Bool?>("observeOptionalKey", suite: suite_)
        let results = Recorder<[Bool?]>()
        let observation = suite_.observe(key) { results.record([$0.oldValue, $0.newValue]) }
        defer { observation.cancel() }

        suite_[key] = true
        suite_[key] = false
        suite_.reset(key)
        suite_[key] = true

        let expectedValues: [[Bool?]] = [[nil, true], [true, false], [false, nil]]
        #expect(try await results.wait(for: 4) == expectedValues + [[nil, true]])
    }

    @Test func dynamicOptionalDateTypeCombine() async throws {
        let first = Date(timeIntervalSince1970: 0)
        let second = Date(timeIntervalSince1970: 1)
        let third = Date(timeIntervalSince1970: 2)
        let key = PreferenceKey<Date?>("combineDynamicOptionalDateKey", suite: suite_) { first }
        let results = Recorder<[Date?]>()
        let observation = suite_.observe(key) { results.record([$0.oldValue, $0.newValue]) }
        defer { observation.cancel() }

        suite_[key] = second
        suite_[key] = third
        suite_.reset(key)
        suite_[key] = second

        let expectedValues: [[Date?]] = [[first, second], [second, third], [third, first]]
        #expect(try await results.wait(for: 4) == expectedValues + [[first, second]])
    }

    @Test func observeMultipleKeysCombine() async throws {
        let key1 = PreferenceKey<String>("observeKey1", default: "x", suite: suite_)
        let key2 = PreferenceKey<Bool>("observeKey2", default: true, suite: suite_)
        let count = Recorder<String>()
        let observation = suite_.observe(.keys([key1.name, key2.name])) { count.record($0.key) }
        defer { observation.cancel() }

        suite_[key1] = "y"
        suite_[key2] = false
        suite_[key1] = "z"

        #expect(try await count.wait(for: 3) == [key1.name, key2.name, key1.name])
    }

    @Test func observeMultipleOptionalKeysCombine() async throws {
        let key1 = PreferenceKey<String?>("observeOptionalKey1", suite: suite_)
        let key2 = PreferenceKey<Bool?>("observeOptionalKey2", suite: suite_)
        let count = Recorder<String>()
        let observation = suite_.observe(.keys([key1.name, key2.name])) { count.record($0.key) }
        defer { observation.cancel() }

        suite_[key1] = "x"
        suite_[key2] = false
        suite_[key1] = "y"

        #expect(try await count.wait(for: 3) == [key1.name, key2.name, key1.name])
    }

    @Test func receiveValueBeforeSubscriptionCombine() async throws {
        let key = PreferenceKey<String>("receiveValueBeforeSubscription", default: "hello", suite: suite_)
        let values = Recorder<String>()
        let observation = suite_.observe(key, options: .initial) { values.record($0.newValue) }
        defer { observation.cancel() }

        suite_[key] = "world"
        suite_[key] = "end"

        #expect(try await values.wait(for: 3) == ["hello", "world", "end"])
    }

    @Test func resetKey() {
        let defaultFixture1 = "foo1"
        let defaultFixture2 = 0
        let newFixture1 = "bar1"
        let newFixture2 = 1
        let key1 = PreferenceKey<String>("key1", default: defaultFixture1, suite: suite_)
        let key2 = PreferenceKey<Int>("key2", default: defaultFixture2, suite: suite_)
        suite_[key1] = newFixture1
        suite_[key2] = newFixture2
        suite_.reset(key1)
        #expect(suite_[key1] == defaultFixture1)
        #expect(suite_[key2] == newFixture2)
    }

    @Test func resetMultipleKeys() {
        let defaultFxiture1 = "foo1"
        let defaultFixture2 = 0
        let defaultFixture3 = "foo3"
        let newFixture1 = "bar1"
        let newFixture2 = 1
        let newFixture3 = "bar3"
        let key1 = PreferenceKey<String>("akey1", default: defaultFxiture1, suite: suite_)
        let key2 = PreferenceKey<Int>("akey2", default: defaultFixture2, suite: suite_)
        let key3 = PreferenceKey<String>("akey3", default: defaultFixture3, suite: suite_)
        suite_[key1] = newFixture1
        suite_[key2] = newFixture2
        suite_[key3] = newFixture3
        suite_.reset(key1, key2)
        #expect(suite_[key1] == defaultFxiture1)
        #expect(suite_[key2] == defaultFixture2)
        #expect(suite_[key3] == newFixture3)
    }

    @Test func resetMultipleOptionalKeys() {
        let newFixture1 = "bar1"
        let newFixture2 = 1
        let newFixture3 = "bar3"
        let key1 = PreferenceKey<String?>("aoptionalKey1", suite: suite_)
        let key2 = PreferenceKey<Int?>("aoptionalKey2", suite: suite_)
        let key3 = PreferenceKey<String?>("aoptionalKey3", suite: suite_)
        suite_[key1] = newFixture1
        suite_[key2] = newFixture2
        suite_[key3] = newFixture3
        suite_.reset(key1, key2)
        #expect(suite_[key1] == nil)
        #expect(suite_[key2] == nil)
        #expect(suite_[key3] == newFixture3)
    }

    @Test func immediatelyFinishingPublisherCombine() async throws {
        let key = PreferenceKey<Bool>("observeKey", default: false, suite: suite_)
        var received = false
        for await _ in suite_.values(for: key, initial: true) {
            received = true
            break
        }
        #expect(received)
    }

    @Test func immediatelyFinishingMultiplePublisherCombine() async throws {
        let key1 = PreferenceKey<Bool>("observeKey1", default: false, suite: suite_)
        let key2 = PreferenceKey<String>("observeKey2", default: "🦄", suite: suite_)
        var received = false
        for await _ in suite_.updates([key1, key2], initial: true) {
            received = true
            break
        }
        #expect(received)
    }

    @Test func keyEquatable() {
        #expect(PreferenceKey<Bool>("equatableKeyTest", default: false, suite: suite_) == PreferenceKey<Bool>("equatableKeyTest", default: false, suite: suite_))
    }

    @Test func keyHashable() {
        _ = Set([PreferenceKey<Bool>("hashableKeyTest", default: false, suite: suite_)])
    }

    /// Created before the set, so that it sees it: upstream sleeps 100 ms for the same.
    @Test func updates() async {
        let key = PreferenceKey<Bool>("updatesKey", default: false, suite: suite_)
        let updates = suite_.updates(key, initial: false)

        suite_[key] = true

        guard let result = await updates.first(where: { $0 }) else {
            Issue.record("Failed to get result")
            return
        }

        #expect(result)
    }

    /// `updates([keys])` yields once for the changes a consumer did not take yet (documented), so
    /// each set here waits for its yield, where upstream sleeps 100 ms before setting both.
    @Test func updatesMultipleKeys() async throws {
        let key1 = PreferenceKey<Bool>("updatesMultipleKey1", default: false, suite: suite_)
        let key2 = PreferenceKey<Bool>("updatesMultipleKey2", default: false, suite: suite_)
        let counter = Recorder<Int>()
        let updates = suite_.updates([key1, key2], initial: false)
        let waiter = Task {
            var count = 0
            for await _ in updates {
                count += 1
                counter.record(count)
                if count == 2 {
                    break
                }
            }
        }

        suite_[key1] = true
        _ = try await counter.wait(for: 1)
        suite_[key2] = true

        await waiter.value
        #expect(counter.items == [1, 2])
    }

    @Test func updatesMultipleKeysVariadic() async {
        let key1 = PreferenceKey<Bool>("updatesMultipleKeyVariadic1", default: false, suite: suite_)
        let key2 = PreferenceKey<Bool>("updatesMultipleKeyVariadic2", default: false, suite: suite_)
        let updates = suite_.updates(key1, key2, initial: false)

        suite_[key1] = true
        suite_[key2] = true

        var count = 0
        for await (_, _) in updates {
            count += 1
            if count == 2 {
                break
            }
        }
        #expect(count == 2)
    }

    /// Not upstream: a key made without a suite registers in the standard one, as
    /// `Defaults.Key(…)` does, without opening it, before it is opened and after (a process of
    /// its own, rooted in a temporary directory).
    @Test func keyWithoutSuiteRegistersDefaultInTheStandardSuite() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(childExecutable, ["standard-key", "quality"], environment: ["SHAREDPREFS_ROOT": directory.url.path])
        #expect(result.status == 0 && result.output.contains("7 later 0"), "\(result.output)")
    }
}

// Defaults' DefaultsDictionaryTests, DefaultsArrayTests and DefaultsSetTests, ported from their
// current files; DefaultsArrayTests' Combine observations as `observe(key)`.

private let fixtureDictionary = ["0": "Hank"]
private let fixtureArray = ["Hank", "Chen"]
private let fixtureSet = Set(1...5)

/// Defaults' `User` with a custom `Defaults.Bridge`: here a `PreferenceValue` conformance that
/// stores it as a dictionary of its two fields.
private struct User: PreferenceValue, Hashable {
    let username: String
    let password: String
    var plistValue: PlistValue? { ["username": .string(username), "password": .string(password)] }
    init(username: String, password: String) { (self.username, self.password) = (username, password) }
    init?(plistValue: PlistValue) {
        guard case .dictionary(let fields) = plistValue, case .string(let username)? = fields["username"],
            case .string(let password)? = fields["password"]
        else { return nil }
        self.init(username: username, password: password)
    }
}

private let fixtureCustomBridge = User(username: "hank121314", password: "123456")

extension PreferenceKey where Value == [String: String] {
    fileprivate static let dictionary = PreferenceKey("dictionary", default: fixtureDictionary)
}
extension PreferenceKey where Value == [String] {
    fileprivate static let array = PreferenceKey("array", default: fixtureArray)
}
extension PreferenceKey where Value == Set<Int> {
    fileprivate static let set = PreferenceKey("setInt", default: fixtureSet)
}

@Suite("Defaults' dictionary, array and set tests, ported")
struct DefaultsCollectionPortedTests {
    let suite = PreferenceSuite.inMemory()

    // MARK: DefaultsDictionaryTests

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: String]>("independentDictionaryStringKey", default: fixtureDictionary)
        #expect(suite[key]["0"] == fixtureDictionary["0"])
        suite[key]["0"] = "John"
        #expect(suite[key]["0"] == "John")
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: String]?>("independentDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = fixtureDictionary
        #expect(suite[key]?["0"] == fixtureDictionary["0"])
        suite[key] = nil
        #expect(suite[key] == nil)
        suite[key] = ["0": "Chen"]
        #expect(suite[key]?["0"] == "Chen")
    }

    @Test func dictionaryNestedKey() {
        let key = PreferenceKey<[String: [String: String]]>("independentDictionaryNestedKey", default: ["0": fixtureDictionary])
        #expect(suite[key]["0"]?["0"] == "Hank")
        suite[key]["0"]?["0"] = "Chen"
        #expect(suite[key]["0"]?["0"] == "Chen")
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [String]]>("independentDictionaryArrayKey", default: ["0": fixtureArray])
        #expect(suite[key]["0"] == fixtureArray)
        suite[key]["0"]?[0] = "Chen"
        #expect(suite[key]["0"] == ["Chen", fixtureArray[1]])
    }

    @Test func dictionaryIntKey() {
        let key = PreferenceKey<[Int: String]>("independentDictionaryIntKey", default: [1: "x"])
        #expect(suite[key][1] == "x")
        suite[key][1] = "John"
        #expect(suite[key][1] == "John")
    }

    @Test func dictionaryType() {
        #expect(suite[.dictionary]["0"] == fixtureDictionary["0"])
        suite[.dictionary]["0"] = "Chen"
        #expect(suite[.dictionary]["0"] == "Chen")
    }

    // MARK: DefaultsArrayTests (its current file, as written)

    @Test func arrayKey() {
        let key = PreferenceKey<[String]>("independentArrayStringKey", default: fixtureArray)
        #expect(suite[key][0] == fixtureArray[0])
        let newValue = "John"
        suite[key][0] = newValue
        #expect(suite[key][0] == newValue)
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[String]?>("independentArrayOptionalStringKey")
        #expect(suite[key] == nil)
        suite[key] = fixtureArray
        #expect(suite[key]?[0] == fixtureArray[0])
        suite[key] = nil
        #expect(suite[key] == nil)
        let newValue = ["John", "Chen"]
        suite[key] = newValue
        #expect(suite[key]?[0] == newValue[0])
    }

    @Test func arrayNestedKey() {
        let defaultValue = ["Hank", "Chen"]
        let key = PreferenceKey<[[String]]>("independentArrayNestedKey", default: [defaultValue])
        #expect(suite[key][0][0] == "Hank")
        let newValue = ["Sindre", "Sorhus"]
        suite[key][0] = newValue
        suite[key].append(defaultValue)
        #expect(suite[key][0][0] == newValue[0])
        #expect(suite[key][0][1] == newValue[1])
        #expect(suite[key][1][0] == defaultValue[0])
        #expect(suite[key][1][1] == defaultValue[1])
    }

    @Test func arrayDictionaryKey() {
        let defaultValue = ["0": "HankChen"]
        let key = PreferenceKey<[[String: String]]>("independentArrayDictionaryKey", default: [defaultValue])
        #expect(suite[key][0]["0"] == defaultValue["0"])
        let newValue = ["0": "SindreSorhus"]
        suite[key][0] = newValue
        suite[key].append(defaultValue)
        #expect(suite[key][0]["0"] == newValue["0"])
        #expect(suite[key][1]["0"] == defaultValue["0"])
    }

    @Test func arrayNestedDictionaryKey() {
        let defaultValue = ["0": [["0": 0]]]
        let key = PreferenceKey<[[String: [[String: Int]]]]>("independentArrayNestedDictionaryKey", default: [defaultValue])
        #expect(suite[key][0]["0"]?[0]["0"] == 0)
        let newValue = 1
        suite[key][0]["0"]?[0]["0"] = newValue
        suite[key].append(defaultValue)
        #expect(suite[key][1]["0"]?[0]["0"] == 0)
        #expect(suite[key][0]["0"]?[0]["0"] == newValue)
    }

    @Test func arrayType() {
        #expect(suite[.array][0] == fixtureArray[0])
        let newName = "Hank121314"
        suite[.array][0] = newName
        #expect(suite[.array][0] == newName)
    }

    /// Its Combine observation: every expected change, the reset included, then one more change
    /// that shows none came between.
    @Test func arrayObserveKeyCombine() async throws {
        let key = PreferenceKey<[String]>("observeArrayKeyCombine", default: fixtureArray)
        let newName = "Chen"
        let changes = Recorder<[String]>()
        let observation = suite.observe(key) { changes.record([$0.oldValue[0], $0.newValue[0]]) }
        defer { observation.cancel() }

        let expectedValues = [[fixtureArray[0], newName], [newName, fixtureArray[0]]]

        suite[key][0] = newName
        suite.reset(key)
        suite[key][0] = "end"

        #expect(try await changes.wait(for: 3) == expectedValues + [[fixtureArray[0], "end"]])
    }

    @Test func arrayObserveOptionalKeyCombine() async throws {
        let key = PreferenceKey<[String]?>("observeArrayOptionalKeyCombine")
        let newName = ["Chen"]
        let changes = Recorder<[[String]?]>()
        let observation = suite.observe(key) { changes.record([$0.oldValue, $0.newValue]) }
        defer { observation.cancel() }

        let expectedValues: [[[String]?]] = [[nil, fixtureArray], [fixtureArray, newName], [newName, nil]]

        suite[key] = fixtureArray
        suite[key] = newName
        suite.reset(key)
        suite[key] = ["end"]

        #expect(try await changes.wait(for: 4) == expectedValues + [[nil, ["end"]]])
    }

    // MARK: DefaultsSetTests

    @Test func setKey() {
        let key = PreferenceKey<Set<Int>>("independentSetKey", default: fixtureSet)
        #expect(suite[key].count == fixtureSet.count)
        suite[key].insert(6)
        #expect(suite[key] == Set(1...6))
        #expect(suite[.set] == fixtureSet)
    }

    @Test func setOptionalKey() {
        let key = PreferenceKey<Set<Int>?>("independentSetOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = fixtureSet
        #expect(suite[key]?.count == fixtureSet.count)
        suite[key]?.insert(6)
        #expect(suite[key] == Set(1...6))
    }

    @Test func setArrayKey() {
        let key = PreferenceKey<[Set<Int>]>("independentSetArrayKey", default: [fixtureSet])
        #expect(suite[key][0].count == fixtureSet.count)
        suite[key][0].insert(6)
        #expect(suite[key][0] == Set(1...6))
        suite[key].append(Set(1...4))
        #expect(suite[key][1] == Set(1...4))
    }

    @Test func setDictionaryKey() {
        let key = PreferenceKey<[String: Set<Int>]>("independentSetDictionaryKey", default: ["0": fixtureSet])
        #expect(suite[key]["0"]?.count == fixtureSet.count)
        suite[key]["0"]?.insert(6)
        #expect(suite[key]["0"] == Set(1...6))
        suite[key]["1"] = Set(1...4)
        #expect(suite[key]["1"] == Set(1...4))
    }
}

// Defaults' DefaultsCodableTests, ported from its current file (not: the two NSSecureCoding tests).

private struct Unicorn: Codable, PreferenceValue, Equatable {
    var isUnicorn: Bool
}

private let fixtureCodable = Unicorn(isUnicorn: true)

extension PreferenceKey where Value == Unicorn {
    fileprivate static let codable = PreferenceKey("codable", default: fixtureCodable)
}
extension PreferenceKey where Value == [Unicorn] {
    fileprivate static let codableArray = PreferenceKey("codable", default: [fixtureCodable])
}
extension PreferenceKey where Value == [String: Unicorn] {
    fileprivate static let codableDictionary = PreferenceKey("codable", default: ["0": fixtureCodable])
}

@Suite("Defaults' Codable tests, ported")
struct DefaultsCodablePortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func key() {
        let key = PreferenceKey<Unicorn>("independentCodableKey", default: fixtureCodable)
        #expect(suite[key].isUnicorn)
        suite[key].isUnicorn = false
        #expect(!suite[key].isUnicorn)
    }

    @Test func optionalKey() {
        let key = PreferenceKey<Unicorn?>("independentCodableOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = Unicorn(isUnicorn: true)
        #expect(suite[key]?.isUnicorn ?? false)
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[Unicorn]>("independentCodableArrayKey", default: [fixtureCodable])
        #expect(suite[key][0].isUnicorn)
        suite[key].append(Unicorn(isUnicorn: false))
        #expect(suite[key][0].isUnicorn && !suite[key][1].isUnicorn)
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[Unicorn]?>("independentCodableArrayOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = [fixtureCodable]
        suite[key]?.append(Unicorn(isUnicorn: false))
        #expect(suite[key]?[0].isUnicorn == true && suite[key]?[1].isUnicorn == false)
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[Unicorn]]>("independentCodableNestedArrayKey", default: [[fixtureCodable]])
        #expect(suite[key][0][0].isUnicorn)
        suite[key].append([fixtureCodable])
        suite[key][0].append(Unicorn(isUnicorn: false))
        #expect(suite[key][0][0].isUnicorn && suite[key][1][0].isUnicorn && !suite[key][0][1].isUnicorn)
    }

    @Test func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: Unicorn]]>("independentCodableArrayDictionaryKey", default: [["0": fixtureCodable]])
        #expect(suite[key][0]["0"]?.isUnicorn == true)
        suite[key].append(["0": fixtureCodable])
        suite[key][0]["1"] = Unicorn(isUnicorn: false)
        #expect(suite[key][0]["0"]?.isUnicorn == true && suite[key][1]["0"]?.isUnicorn == true && suite[key][0]["1"]?.isUnicorn == false)
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: Unicorn]>("independentCodableDictionaryKey", default: ["0": fixtureCodable])
        #expect(suite[key]["0"]?.isUnicorn == true)
        suite[key]["1"] = Unicorn(isUnicorn: false)
        #expect(suite[key]["0"]?.isUnicorn == true && suite[key]["1"]?.isUnicorn == false)
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: Unicorn]?>("independentCodableDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = ["0": fixtureCodable]
        suite[key]?["1"] = Unicorn(isUnicorn: false)
        #expect(suite[key]?["0"]?.isUnicorn == true && suite[key]?["1"]?.isUnicorn == false)
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [Unicorn]]>("independentCodableDictionaryArrayKey", default: ["0": [fixtureCodable]])
        #expect(suite[key]["0"]?[0].isUnicorn == true)
        suite[key]["1"] = [fixtureCodable]
        suite[key]["0"]?.append(Unicorn(isUnicorn: false))
        #expect(suite[key]["1"]?[0].isUnicorn == true && suite[key]["0"]?[1].isUnicorn == false)
    }

    @Test func type() {
        #expect(suite[.codable].isUnicorn)
        suite[.codable] = Unicorn(isUnicorn: false)
        #expect(!suite[.codable].isUnicorn)
    }

    @Test func arrayType() {
        #expect(suite[.codableArray][0].isUnicorn)
        suite[.codableArray][0] = Unicorn(isUnicorn: false)
        #expect(!suite[.codableArray][0].isUnicorn)
    }

    @Test func dictionaryType() {
        #expect(suite[.codableDictionary]["0"]?.isUnicorn == true)
        suite[.codableDictionary]["0"] = Unicorn(isUnicorn: false)
        #expect(suite[.codableDictionary]["0"]?.isUnicorn == false)
    }

    /// A documented difference: Defaults stores a `Codable & RawRepresentable` type as JSON
    /// (`"\"x\""`); here it is its raw value (`x`), readable by any property-list tool.
    @Test func codableAndRawRepresentable() {
        struct Unicorn: Codable, RawRepresentable, PreferenceValue {
            var rawValue: String
        }

        let fixture = Unicorn(rawValue: "x")

        let key = PreferenceKey<Unicorn?>("independentKey_codableAndRawRepresentable", suite: suite)
        suite[key] = fixture
        #expect(suite[key]?.rawValue == fixture.rawValue)
        #expect(suite.string(forKey: key.name) != #""\#(fixture.rawValue)""#)
        #expect(suite.string(forKey: key.name) == fixture.rawValue)
    }

}

// Defaults' DefaultsEnumTests, ported from its current file. Its `FixtureEnum` is named
// `EnumFixture` here.

private enum EnumFixture: String, PreferenceValue {
    case tenMinutes = "10 Minutes"
    case halfHour = "30 Minutes"
    case oneHour = "1 Hour"
}

extension PreferenceKey where Value == EnumFixture {
    fileprivate static let enumFixture = PreferenceKey("enum", default: .tenMinutes)
}
extension PreferenceKey where Value == [EnumFixture] {
    fileprivate static let enumArray = PreferenceKey("array_enum", default: [.tenMinutes])
}
extension PreferenceKey where Value == [String: EnumFixture] {
    fileprivate static let enumDictionary = PreferenceKey("dictionary_enum", default: ["0": .tenMinutes])
}

@Suite("Defaults' enum tests, ported")
struct DefaultsEnumPortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func key() {
        let key = PreferenceKey<EnumFixture>("independentEnumKey", default: .tenMinutes)
        #expect(suite[key] == .tenMinutes)
        suite[key] = .halfHour
        #expect(suite[key] == .halfHour)
        #expect(suite.value(forKey: "independentEnumKey") == "30 Minutes")
    }

    @Test func optionalKey() {
        let key = PreferenceKey<EnumFixture?>("independentEnumOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = .tenMinutes
        #expect(suite[key] == .tenMinutes)
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[EnumFixture]>("independentEnumArrayKey", default: [.tenMinutes])
        #expect(suite[key][0] == .tenMinutes)
        suite[key].append(.halfHour)
        #expect(suite[key] == [.tenMinutes, .halfHour])
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[EnumFixture]?>("independentEnumArrayOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = [.tenMinutes]
        suite[key]?.append(.halfHour)
        #expect(suite[key] == [.tenMinutes, .halfHour])
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[EnumFixture]]>("independentEnumNestedArrayKey", default: [[.tenMinutes]])
        #expect(suite[key][0][0] == .tenMinutes)
        suite[key][0].append(.halfHour)
        suite[key].append([.oneHour])
        #expect(suite[key][0][1] == .halfHour && suite[key][1][0] == .oneHour)
    }

    @Test func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: EnumFixture]]>("independentEnumArrayDictionaryKey", default: [["0": .tenMinutes]])
        #expect(suite[key][0]["0"] == .tenMinutes)
        suite[key][0]["1"] = .halfHour
        suite[key].append(["0": .oneHour])
        #expect(suite[key][0]["1"] == .halfHour && suite[key][1]["0"] == .oneHour)
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: EnumFixture]>("independentEnumDictionaryKey", default: ["0": .tenMinutes])
        #expect(suite[key]["0"] == .tenMinutes)
        suite[key]["1"] = .halfHour
        #expect(suite[key]["0"] == .tenMinutes && suite[key]["1"] == .halfHour)
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: EnumFixture]?>("independentEnumDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = ["0": .tenMinutes]
        #expect(suite[key]?["0"] == .tenMinutes)
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [EnumFixture]]>("independentEnumDictionaryKey", default: ["0": [.tenMinutes]])
        #expect(suite[key]["0"]?[0] == .tenMinutes)
        suite[key]["0"]?.append(.halfHour)
        suite[key]["1"] = [.oneHour]
        #expect(suite[key]["0"]?[1] == .halfHour && suite[key]["1"]?[0] == .oneHour)
    }

    @Test func type() {
        #expect(suite[.enumFixture] == .tenMinutes)
        suite[.enumFixture] = .halfHour
        #expect(suite[.enumFixture] == .halfHour)
    }

    @Test func arrayType() {
        #expect(suite[.enumArray][0] == .tenMinutes)
        suite[.enumArray][0] = .oneHour
        #expect(suite[.enumArray][0] == .oneHour)
    }

    @Test func dictionaryType() {
        #expect(suite[.enumDictionary]["0"] == .tenMinutes)
        suite[.enumDictionary]["0"] = .halfHour
        #expect(suite[.enumDictionary]["0"] == .halfHour)
    }

}

// Defaults' DefaultsCollectionTests, ported from its current file. `Defaults.CollectionSerializable`
// is `PreferenceCollection` here.

struct Bag<Element: PreferenceValue>: Collection {
    var items: [Element]
    init(items: [Element]) { self.items = items }
    var startIndex: Int { items.startIndex }
    var endIndex: Int { items.endIndex }
    mutating func insert(element: Element, at: Int) { items.insert(element, at: at) }
    func index(after index: Int) -> Int { items.index(after: index) }
    subscript(position: Int) -> Element { items[position] }
}

extension Bag: PreferenceCollection {
    init(_ elements: [Element]) { self.items = elements }
}

extension Bag: Sendable where Element: Sendable {}

private let fixtureCollection = ["Juice", "Apple", "Banana"]

extension PreferenceKey where Value == Bag<String> {
    fileprivate static let collection = PreferenceKey("collection", default: Bag(items: fixtureCollection))
}
extension PreferenceKey where Value == [Bag<String>] {
    fileprivate static let collectionArray = PreferenceKey("collectionArray", default: [Bag(items: fixtureCollection)])
}
extension PreferenceKey where Value == [String: Bag<String>] {
    fileprivate static let collectionDictionary = PreferenceKey("collectionDictionary", default: ["0": Bag(items: fixtureCollection)])
}

@Suite("Defaults' custom-collection tests, ported")
struct DefaultsCollectionTypePortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func key() {
        let key = PreferenceKey<Bag<String>>("independentCollectionKey", default: Bag(items: fixtureCollection))
        suite[key].insert(element: "123", at: 0)
        #expect(suite[key][0] == "123")
        #expect(suite.value(forKey: "independentCollectionKey") == ["123", "Juice", "Apple", "Banana"])
    }

    @Test func optionalKey() {
        let key = PreferenceKey<Bag<String>?>("independentCollectionOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = Bag(items: [])
        suite[key]?.insert(element: fixtureCollection[0], at: 0)
        #expect(suite[key]?[0] == fixtureCollection[0])
        suite[key]?.insert(element: fixtureCollection[1], at: 1)
        #expect(suite[key]?[1] == fixtureCollection[1])
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[Bag<String>]>("independentCollectionArrayKey", default: [Bag(items: [fixtureCollection[0]])])
        suite[key].append(Bag(items: [fixtureCollection[1]]))
        #expect(suite[key][1][0] == fixtureCollection[1])
        suite[key][0].insert(element: fixtureCollection[2], at: 1)
        #expect(suite[key][0][1] == fixtureCollection[2])
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[Bag<String>]?>("independentCollectionArrayOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = [Bag(items: [fixtureCollection[0]])]
        suite[key]?.append(Bag(items: [fixtureCollection[1]]))
        #expect(suite[key]?[1][0] == fixtureCollection[1])
        suite[key]?[0].insert(element: fixtureCollection[2], at: 1)
        #expect(suite[key]?[0][1] == fixtureCollection[2])
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[Bag<String>]]>("independentCollectionNestedArrayKey", default: [[Bag(items: [fixtureCollection[0]])]])
        suite[key][0].append(Bag(items: [fixtureCollection[1]]))
        suite[key].append([Bag(items: [fixtureCollection[2]])])
        #expect(suite[key][0][0][0] == fixtureCollection[0] && suite[key][0][1][0] == fixtureCollection[1] && suite[key][1][0][0] == fixtureCollection[2])
    }

    @Test func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: Bag<String>]]>("independentCollectionArrayDictionaryKey", default: [["0": Bag(items: [fixtureCollection[0]])]])
        suite[key][0]["1"] = Bag(items: [fixtureCollection[1]])
        suite[key].append(["0": Bag(items: [fixtureCollection[2]])])
        #expect(suite[key][0]["0"]?[0] == fixtureCollection[0] && suite[key][0]["1"]?[0] == fixtureCollection[1] && suite[key][1]["0"]?[0] == fixtureCollection[2])
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: Bag<String>]>("independentCollectionDictionaryKey", default: ["0": Bag(items: [fixtureCollection[0]])])
        suite[key]["0"]?.insert(element: fixtureCollection[1], at: 1)
        suite[key]["1"] = Bag(items: [fixtureCollection[2]])
        #expect(suite[key]["0"]?[0] == fixtureCollection[0] && suite[key]["0"]?[1] == fixtureCollection[1] && suite[key]["1"]?[0] == fixtureCollection[2])
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: Bag<String>]?>("independentCollectionDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = ["0": Bag(items: [fixtureCollection[0]])]
        suite[key]?["0"]?.insert(element: fixtureCollection[1], at: 1)
        suite[key]?["1"] = Bag(items: [fixtureCollection[2]])
        #expect(suite[key]?["0"]?[0] == fixtureCollection[0] && suite[key]?["0"]?[1] == fixtureCollection[1] && suite[key]?["1"]?[0] == fixtureCollection[2])
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [Bag<String>]]>("independentCollectionDictionaryArrayKey", default: ["0": [Bag(items: [fixtureCollection[0]])]])
        suite[key]["0"]?[0].insert(element: fixtureCollection[1], at: 1)
        suite[key]["1"] = [Bag(items: [fixtureCollection[2]])]
        #expect(suite[key]["0"]?[0][0] == fixtureCollection[0] && suite[key]["0"]?[0][1] == fixtureCollection[1] && suite[key]["1"]?[0][0] == fixtureCollection[2])
    }

    @Test func type() {
        suite[.collection].insert(element: "123", at: 0)
        #expect(suite[.collection][0] == "123")
    }

    @Test func arrayType() {
        suite[.collectionArray].append(Bag(items: [fixtureCollection[0]]))
        suite[.collectionArray][0].insert(element: "123", at: 0)
        #expect(suite[.collectionArray][0][0] == "123" && suite[.collectionArray][1][0] == fixtureCollection[0])
    }

    @Test func dictionaryType() {
        suite[.collectionDictionary]["1"] = Bag(items: [fixtureCollection[0]])
        suite[.collectionDictionary]["0"]?.insert(element: "123", at: 0)
        #expect(suite[.collectionDictionary]["0"]?[0] == "123" && suite[.collectionDictionary]["1"]?[0] == fixtureCollection[0])
    }

}

// Defaults' DefaultsSetAlgebraTests and DefaultsSetAlgebraCustomElementTests, ported from their
// current files. `SetAlgebraSerializable` is `PreferenceSetAlgebra` here. The two files are
// the same checks with another element type, so they run one generic set of checks.

struct DefaultsSetAlgebra<Element: PreferenceValue & Hashable>: SetAlgebra {
    var store = Set<Element>()
    init() {}
    init(_ sequence: __owned some Sequence<Element>) { self.store = Set(sequence) }
    init(_ store: Set<Element>) { self.store = store }
    func contains(_ member: Element) -> Bool { store.contains(member) }
    func union(_ other: Self) -> Self { Self(store.union(other.store)) }
    func intersection(_ other: Self) -> Self { Self(store.intersection(other.store)) }
    func symmetricDifference(_ other: Self) -> Self { Self(store.symmetricDifference(other.store)) }
    @discardableResult
    mutating func insert(_ newMember: Element) -> (inserted: Bool, memberAfterInsert: Element) { store.insert(newMember) }
    mutating func remove(_ member: Element) -> Element? { store.remove(member) }
    mutating func update(with newMember: Element) -> Element? { store.update(with: newMember) }
    mutating func formUnion(_ other: Self) { store.formUnion(other.store) }
    mutating func formSymmetricDifference(_ other: Self) { store.formSymmetricDifference(other.store) }
    mutating func formIntersection(_ other: Self) { store.formIntersection(other.store) }
}

extension DefaultsSetAlgebra: PreferenceSetAlgebra {
    func toArray() -> [Element] { Array(store) }
}

extension DefaultsSetAlgebra: Sendable where Element: Sendable {}

/// The checks of DefaultsSetAlgebraTests, for any element type: its
/// DefaultsSetAlgebraCustomElementTests runs the same with a custom element.
struct SetAlgebraChecks<Element: PreferenceValue & Hashable & Sendable> {
    typealias Algebra = DefaultsSetAlgebra<Element>
    let suite = PreferenceSuite.inMemory()
    /// Four distinct elements, and the three typed keys' names (`setAlgebra…`).
    let e0: Element, e1: Element, e2: Element, e3: Element
    let names: (single: String, array: String, dictionary: String)

    var single: PreferenceKey<Algebra> { PreferenceKey(names.single, default: .init([e0])) }
    var array: PreferenceKey<[Algebra]> { PreferenceKey(names.array, default: [.init([e0])]) }
    var dictionary: PreferenceKey<[String: Algebra]> { PreferenceKey(names.dictionary, default: ["0": .init([e0])]) }

    func key() {
        let key = PreferenceKey<Algebra>("independentSetAlgebraKey", default: .init([e0]))
        suite[key].insert(e0)
        #expect(suite[key] == .init([e0]))
        suite[key].insert(e1)
        #expect(suite[key] == .init([e0, e1]))
    }

    func optionalKey() {
        let key = PreferenceKey<Algebra?>("independentSetAlgebraOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = .init([e0])
        suite[key]?.insert(e0)
        #expect(suite[key] == .init([e0]))
        suite[key]?.insert(e1)
        #expect(suite[key] == .init([e0, e1]))
    }

    func arrayKey() {
        let key = PreferenceKey<[Algebra]>("independentSetAlgebraArrayKey", default: [.init([e0])])
        suite[key][0].insert(e1)
        suite[key].append(.init([e2]))
        suite[key][1].insert(e3)
        #expect(suite[key][0] == .init([e0, e1]) && suite[key][1] == .init([e2, e3]))
    }

    func arrayOptionalKey() {
        let key = PreferenceKey<[Algebra]?>("independentSetAlgebraArrayOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = [.init([e0])]
        suite[key]?[0].insert(e1)
        suite[key]?.append(.init([e2]))
        suite[key]?[1].insert(e3)
        #expect(suite[key]?[0] == .init([e0, e1]) && suite[key]?[1] == .init([e2, e3]))
    }

    func nestedArrayKey() {
        let key = PreferenceKey<[[Algebra]]>("independentSetAlgebraNestedArrayKey", default: [[.init([e0])]])
        suite[key][0][0].insert(e1)
        suite[key][0].append(.init([e1]))
        suite[key][0][1].insert(e2)
        suite[key].append([.init([e3])])
        suite[key][1][0].insert(e2)
        #expect(suite[key][0][0] == .init([e0, e1]) && suite[key][0][1] == .init([e1, e2]) && suite[key][1][0] == .init([e2, e3]))
    }

    func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: Algebra]]>("independentSetAlgebraArrayDictionaryKey", default: [["0": .init([e0])]])
        suite[key][0]["0"]?.insert(e1)
        suite[key][0]["1"] = .init([e1])
        suite[key][0]["1"]?.insert(e2)
        suite[key].append(["0": .init([e3])])
        suite[key][1]["0"]?.insert(e2)
        #expect(suite[key][0]["0"] == .init([e0, e1]) && suite[key][0]["1"] == .init([e1, e2]) && suite[key][1]["0"] == .init([e2, e3]))
    }

    func dictionaryKey() {
        let key = PreferenceKey<[String: Algebra]>("independentSetAlgebraDictionaryKey", default: ["0": .init([e0])])
        suite[key]["0"]?.insert(e1)
        suite[key]["1"] = .init([e2])
        suite[key]["1"]?.insert(e3)
        #expect(suite[key]["0"] == .init([e0, e1]) && suite[key]["1"] == .init([e2, e3]))
    }

    func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: Algebra]?>("independentSetAlgebraDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = ["0": .init([e0])]
        suite[key]?["0"]?.insert(e1)
        suite[key]?["1"] = .init([e2])
        suite[key]?["1"]?.insert(e3)
        #expect(suite[key]?["0"] == .init([e0, e1]) && suite[key]?["1"] == .init([e2, e3]))
    }

    func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [Algebra]]>("independentSetAlgebraDictionaryArrayKey", default: ["0": [.init([e0])]])
        suite[key]["0"]?[0].insert(e1)
        suite[key]["0"]?.append(.init([e1]))
        suite[key]["0"]?[1].insert(e2)
        suite[key]["1"] = [.init([e3])]
        suite[key]["1"]?[0].insert(e2)
        #expect(suite[key]["0"]?[0] == .init([e0, e1]) && suite[key]["0"]?[1] == .init([e1, e2]) && suite[key]["1"]?[0] == .init([e2, e3]))
    }

    func type() {
        let (inserted, _) = suite[single].insert(e0)
        #expect(!inserted)
        suite[single].insert(e1)
        #expect(suite[single] == .init([e0, e1]))
    }

    func arrayType() {
        suite[array][0].insert(e1)
        suite[array].append(.init([e2]))
        suite[array][1].insert(e3)
        #expect(suite[array][0] == .init([e0, e1]) && suite[array][1] == .init([e2, e3]))
    }

    func dictionaryType() {
        suite[dictionary]["0"]?.insert(e1)
        suite[dictionary]["1"] = .init([e2])
        suite[dictionary]["1"]?.insert(e3)
        #expect(suite[dictionary]["0"] == .init([e0, e1]) && suite[dictionary]["1"] == .init([e2, e3]))
    }
}

@Suite("Defaults' set-algebra tests, ported")
struct DefaultsSetAlgebraPortedTests {
    let checks = SetAlgebraChecks(e0: 0, e1: 1, e2: 2, e3: 3, names: ("setAlgebra", "setAlgebraArray", "setAlgebraDictionary"))
    @Test func key() { checks.key() }
    @Test func optionalKey() { checks.optionalKey() }
    @Test func arrayKey() { checks.arrayKey() }
    @Test func arrayOptionalKey() { checks.arrayOptionalKey() }
    @Test func nestedArrayKey() { checks.nestedArrayKey() }
    @Test func arrayDictionaryKey() { checks.arrayDictionaryKey() }
    @Test func dictionaryKey() { checks.dictionaryKey() }
    @Test func dictionaryOptionalKey() { checks.dictionaryOptionalKey() }
    @Test func dictionaryArrayKey() { checks.dictionaryArrayKey() }
    @Test func type() { checks.type() }
    @Test func arrayType() { checks.arrayType() }
    @Test func dictionaryType() { checks.dictionaryType() }
}

/// DefaultsSetAlgebraCustomElementTests' element: its `ItemBridge` (a dictionary of two strings)
/// is this conformance.
struct SetItem: Hashable, Sendable, PreferenceValue {
    let name: String
    let count: UInt
    var plistValue: PlistValue? { ["name": .string(name), "count": .string(String(count))] }
    init(name: String, count: UInt) { (self.name, self.count) = (name, count) }
    init?(plistValue: PlistValue) {
        guard let object = [String: String](plistValue: plistValue), let name = object["name"], let count = UInt(object["count"] ?? "0") else { return nil }
        self.init(name: name, count: count)
    }
}

@Suite("Defaults' custom-element set-algebra tests, ported")
struct DefaultsSetAlgebraCustomElementPortedTests {
    let checks = SetAlgebraChecks(
        e0: SetItem(name: "Apple", count: 10), e1: SetItem(name: "Banana", count: 20), e2: SetItem(name: "Grape", count: 30),
        e3: SetItem(name: "Guava", count: 40), names: ("setAlgebraCustomElement", "setAlgebraArrayCustomElement", "setAlgebraDictionaryCustomElement"))
    @Test func key() { checks.key() }
    @Test func optionalKey() { checks.optionalKey() }
    @Test func arrayKey() { checks.arrayKey() }
    @Test func arrayOptionalKey() { checks.arrayOptionalKey() }
    @Test func nestedArrayKey() { checks.nestedArrayKey() }
    @Test func arrayDictionaryKey() { checks.arrayDictionaryKey() }
    @Test func dictionaryKey() { checks.dictionaryKey() }
    @Test func dictionaryOptionalKey() { checks.dictionaryOptionalKey() }
    @Test func dictionaryArrayKey() { checks.dictionaryArrayKey() }
    @Test func type() { checks.type() }
    @Test func arrayType() { checks.arrayType() }
    @Test func dictionaryType() { checks.dictionaryType() }
}

// Defaults' DefaultsCodableEnumTests, ported from its current file. A type both
// RawRepresentable and Codable stores its raw value here; Defaults stores JSON unless the type
// declares `PreferRawRepresentable`. Its last test reads the default its key registered in
// `suite_` from `UserDefaults.standard` (Apple's registration domain is one per process); here it
// is read from the suite the key registered it in.

private enum FixtureCodableEnum: String, Hashable, Codable, PreferenceValue {
    case tenMinutes = "10 Minutes"
    case halfHour = "30 Minutes"
    case oneHour = "1 Hour"
}

private enum FixtureCodableEnumPreferRawRepresentable: Int, Hashable, Codable, PreferenceValue {
    case tenMinutes = 10
    case halfHour = 30
    case oneHour = 60
}

extension PreferenceKey where Value == FixtureCodableEnum {
    fileprivate static let codableEnum = PreferenceKey("codable_enum", default: .oneHour)
}
extension PreferenceKey where Value == [FixtureCodableEnum] {
    fileprivate static let codableEnumArray = PreferenceKey("codable_enum", default: [.oneHour])
}
extension PreferenceKey where Value == [String: FixtureCodableEnum] {
    fileprivate static let codableEnumDictionary = PreferenceKey("codable_enum", default: ["0": .oneHour])
}

@Suite("Defaults' Codable-enum tests, ported")
struct DefaultsCodableEnumPortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func key() {
        let key = PreferenceKey<FixtureCodableEnum>("independentCodableEnumKey", default: .tenMinutes)
        #expect(suite[key] == .tenMinutes)
        suite[key] = .halfHour
        #expect(suite[key] == .halfHour && suite.value(forKey: "independentCodableEnumKey") == "30 Minutes")
    }

    @Test func optionalKey() {
        let key = PreferenceKey<FixtureCodableEnum?>("independentCodableEnumOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = .tenMinutes
        #expect(suite[key] == .tenMinutes)
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[FixtureCodableEnum]>("independentCodableEnumArrayKey", default: [.tenMinutes])
        #expect(suite[key][0] == .tenMinutes)
        suite[key][0] = .halfHour
        #expect(suite[key][0] == .halfHour)
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[FixtureCodableEnum]?>("independentCodableEnumArrayOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = [.halfHour]
        #expect(suite[key] == [.halfHour])
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[FixtureCodableEnum]]>("independentCodableEnumNestedArrayKey", default: [[.tenMinutes]])
        #expect(suite[key][0][0] == .tenMinutes)
        suite[key].append([.halfHour])
        suite[key][0].append(.oneHour)
        #expect(suite[key][1][0] == .halfHour && suite[key][0][1] == .oneHour)
    }

    @Test func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: FixtureCodableEnum]]>("independentCodableEnumArrayDictionaryKey", default: [["0": .tenMinutes]])
        #expect(suite[key][0]["0"] == .tenMinutes)
        suite[key][0]["1"] = .halfHour
        suite[key].append(["0": .oneHour])
        #expect(suite[key][0]["1"] == .halfHour && suite[key][1]["0"] == .oneHour)
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: FixtureCodableEnum]>("independentCodableEnumDictionaryKey", default: ["0": .tenMinutes])
        #expect(suite[key]["0"] == .tenMinutes)
        suite[key]["1"] = .halfHour
        suite[key]["0"] = .oneHour
        #expect(suite[key]["0"] == .oneHour && suite[key]["1"] == .halfHour)
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: FixtureCodableEnum]?>("independentCodableEnumDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = ["0": .tenMinutes]
        suite[key]?["1"] = .halfHour
        #expect(suite[key]?["0"] == .tenMinutes && suite[key]?["1"] == .halfHour)
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [FixtureCodableEnum]]>("independentCodableEnumDictionaryArrayKey", default: ["0": [.tenMinutes]])
        #expect(suite[key]["0"]?[0] == .tenMinutes)
        suite[key]["0"]?.append(.halfHour)
        suite[key]["1"] = [.oneHour]
        #expect(suite[key]["0"] == [.tenMinutes, .halfHour] && suite[key]["1"]?[0] == .oneHour)
    }

    @Test func type() {
        #expect(suite[.codableEnum] == .oneHour)
        suite[.codableEnum] = .tenMinutes
        #expect(suite[.codableEnum] == .tenMinutes)
    }

    @Test func arrayType() {
        #expect(suite[.codableEnumArray][0] == .oneHour)
        suite[.codableEnumArray].append(.halfHour)
        #expect(suite[.codableEnumArray] == [.oneHour, .halfHour])
    }

    @Test func dictionaryType() {
        #expect(suite[.codableEnumDictionary]["0"] == .oneHour)
        suite[.codableEnumDictionary]["1"] = .halfHour
        #expect(suite[.codableEnumDictionary]["0"] == .oneHour && suite[.codableEnumDictionary]["1"] == .halfHour)
    }

    @Test func fixtureCodableEnumPreferRawRepresentable() {
        let fixture: FixtureCodableEnumPreferRawRepresentable = .tenMinutes
        let keyName = "testFixtureCodableEnumPreferRawRepresentable"
        _ = PreferenceKey<FixtureCodableEnumPreferRawRepresentable>(keyName, default: fixture, suite: suite)
        #expect(suite.integer(forKey: keyName) != 0)
        #expect(suite.integer(forKey: keyName) == 10)
    }

}

// Defaults' DefaultsCollectionCustomElementTests, ported from its current file. Its
// `ItemBridge` (a dictionary of two strings) is the `PreferenceValue` conformance here.

private struct Item: Equatable {
    let name: String
    let count: UInt
}

extension Item: PreferenceValue {
    var plistValue: PlistValue? { ["name": .string(name), "count": .string(String(count))] }
    init?(plistValue: PlistValue) {
        guard let object = [String: String](plistValue: plistValue), let name = object["name"], let count = UInt(object["count"] ?? "0") else { return nil }
        self.init(name: name, count: count)
    }
}

private let fixtureCustomCollection = Item(name: "Apple", count: 10)
private let fixtureCustomCollection1 = Item(name: "Banana", count: 20)
private let fixtureCustomCollection2 = Item(name: "Grape", count: 30)

extension PreferenceKey where Value == Bag<Item> {
    fileprivate static let collectionCustomElement = PreferenceKey("collectionCustomElement", default: .init(items: [fixtureCustomCollection]))
}
extension PreferenceKey where Value == [Bag<Item>] {
    fileprivate static let collectionCustomElementArray = PreferenceKey("collectionCustomElementArray", default: [.init(items: [fixtureCustomCollection])])
}
extension PreferenceKey where Value == [String: Bag<Item>] {
    fileprivate static let collectionCustomElementDictionary = PreferenceKey("collectionCustomElementDictionary", default: ["0": .init(items: [fixtureCustomCollection])])
}

@Suite("Defaults' custom-element collection tests, ported")
struct DefaultsCollectionCustomElementPortedTests {
    let suite = PreferenceSuite.inMemory()
    fileprivate let a = fixtureCustomCollection, b = fixtureCustomCollection1, c = fixtureCustomCollection2

    @Test func key() {
        let key = PreferenceKey<Bag<Item>>("independentCollectionCustomElementKey", default: .init(items: [a]))
        suite[key].insert(element: b, at: 1)
        suite[key].insert(element: c, at: 2)
        #expect(suite[key].items == [a, b, c])
        #expect(suite.value(forKey: "independentCollectionCustomElementKey") == [["name": "Apple", "count": "10"], ["name": "Banana", "count": "20"], ["name": "Grape", "count": "30"]])
    }

    @Test func optionalKey() {
        let key = PreferenceKey<Bag<Item>?>("independentCollectionCustomElementOptionalKey")
        suite[key] = .init(items: [a])
        suite[key]?.insert(element: b, at: 1)
        suite[key]?.insert(element: c, at: 2)
        #expect(suite[key]?.items == [a, b, c])
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[Bag<Item>]>("independentCollectionCustomElementArrayKey", default: [.init(items: [a])])
        suite[key][0].insert(element: b, at: 1)
        suite[key].append(.init(items: [c]))
        #expect(suite[key][0].items == [a, b] && suite[key][1][0] == c)
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[Bag<Item>]?>("independentCollectionCustomElementArrayOptionalKey")
        suite[key] = [.init(items: [a])]
        suite[key]?[0].insert(element: b, at: 1)
        suite[key]?.append(Bag(items: [c]))
        #expect(suite[key]?[0].items == [a, b] && suite[key]?[1][0] == c)
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[Bag<Item>]]>("independentCollectionCustomElementNestedArrayKey", default: [[.init(items: [a])]])
        suite[key][0][0].insert(element: a, at: 1)
        suite[key][0].append(.init(items: [b]))
        suite[key].append([.init(items: [c])])
        #expect(suite[key][0][0].items == [a, a] && suite[key][0][1][0] == b && suite[key][1][0][0] == c)
    }

    @Test func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: Bag<Item>]]>("independentCollectionCustomElementArrayDictionaryKey", default: [["0": .init(items: [a])]])
        suite[key][0]["0"]?.insert(element: a, at: 1)
        suite[key][0]["1"] = .init(items: [b])
        suite[key].append(["0": .init(items: [c])])
        #expect(suite[key][0]["0"]?.items == [a, a] && suite[key][0]["1"]?[0] == b && suite[key][1]["0"]?[0] == c)
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: Bag<Item>]>("independentCollectionCustomElementDictionaryKey", default: ["0": .init(items: [a])])
        suite[key]["0"]?.insert(element: b, at: 1)
        suite[key]["1"] = .init(items: [c])
        #expect(suite[key]["0"]?.items == [a, b] && suite[key]["1"]?[0] == c)
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: Bag<Item>]?>("independentCollectionCustomElementDictionaryOptionalKey")
        suite[key] = ["0": .init(items: [a])]
        suite[key]?["0"]?.insert(element: b, at: 1)
        suite[key]?["1"] = .init(items: [c])
        #expect(suite[key]?["0"]?.items == [a, b] && suite[key]?["1"]?[0] == c)
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [Bag<Item>]]>("independentCollectionCustomElementDictionaryArrayKey", default: ["0": [.init(items: [a])]])
        suite[key]["0"]?[0].insert(element: a, at: 1)
        suite[key]["0"]?.append(.init(items: [b]))
        suite[key]["1"] = [.init(items: [c])]
        #expect(suite[key]["0"]?[0].items == [a, a] && suite[key]["0"]?[1][0] == b && suite[key]["1"]?[0][0] == c)
    }

    @Test func type() {
        suite[.collectionCustomElement].insert(element: b, at: 1)
        suite[.collectionCustomElement].insert(element: c, at: 2)
        #expect(suite[.collectionCustomElement].items == [a, b, c])
    }

    @Test func arrayType() {
        suite[.collectionCustomElementArray][0].insert(element: b, at: 1)
        suite[.collectionCustomElementArray].append(.init(items: [c]))
        #expect(suite[.collectionCustomElementArray][0].items == [a, b] && suite[.collectionCustomElementArray][1][0] == c)
    }

    @Test func dictionaryType() {
        suite[.collectionCustomElementDictionary]["0"]?.insert(element: b, at: 1)
        suite[.collectionCustomElementDictionary]["1"] = .init(items: [c])
        #expect(suite[.collectionCustomElementDictionary]["0"]?.items == [a, b] && suite[.collectionCustomElementDictionary]["1"]?[0] == c)
    }

}

// Defaults' DefaultsAnySerializableTests, ported as written: `Defaults.AnySerializable` is
// `PlistValue` here, with the same init, `get()`, `set(_:)`, `set(_:type:)` and literals, and
// `Defaults[key]` is `suite_[key]`. Its Combine observations are `observe(key)` with the same
// expected changes, reset included, and a last change that shows none came between. Not ported:
// the NSColor/UIColor and CGFloat values (not property-list values on Linux). Assigning `nil` to a
// non-optional key is `reset(key)` here.

private enum mime: String, PreferenceValue {
    case JSON = "application/json"
    case STREAM = "application/octet-stream"
}

private struct CodableUnicorn: PreferenceValue, Codable {
    let is_missing: Bool
}

/// Its `UnicornBridge` (a Bool) is this conformance.
private struct BridgedUnicorn: PreferenceValue, Hashable {
    let is_missing: Bool
    var plistValue: PlistValue? { .bool(is_missing) }
    init(is_missing: Bool) { self.is_missing = is_missing }
    init?(plistValue: PlistValue) {
        guard case .bool(let missing) = plistValue else { return nil }
        self.init(is_missing: missing)
    }
}

extension PreferenceKey where Value == [String: PlistValue] {
    fileprivate static let magic = PreferenceKey("magic", default: [:])
    fileprivate static let anyDictionaryKey = PreferenceKey("anyDictionaryKey", default: ["unicorn": "🦄"])
}
extension PreferenceKey where Value == PlistValue {
    fileprivate static let anyKey = PreferenceKey("anyKey", default: "🦄")
}
extension PreferenceKey where Value == [PlistValue] {
    fileprivate static let anyArrayKey = PreferenceKey("anyArrayKey", default: ["No.1 🦄", "No.2 🦄"])
}

@Suite("Defaults' AnySerializable tests, ported")
struct DefaultsAnySerializablePortedTests {
    let suite_ = PreferenceSuite.inMemory()

    @Test func readMeExample() {
        let any = PreferenceKey<PlistValue>("anyKey", default: PlistValue(mime.JSON), suite: suite_)
        if let mimeType: mime = suite_[any].get() {
            #expect(mimeType == mime.JSON)
        }
        suite_[any].set(mime.STREAM)
        if let mimeType: mime = suite_[any].get() {
            #expect(mimeType == mime.STREAM)
        }
        suite_[any].set(mime.JSON)
        if let mimeType: mime = suite_[any].get() {
            #expect(mimeType == mime.JSON)
        }
        suite_[.magic]["unicorn"] = "🦄"
        suite_[.magic]["number"] = 3
        suite_[.magic]["boolean"] = true
        suite_[.magic]["enum"] = PlistValue(mime.JSON)
        #expect(suite_[.magic]["unicorn"] == "🦄")
        #expect(suite_[.magic]["number"] == 3)
        if let bool: Bool = suite_[.magic]["unicorn"]?.get() {
            #expect(bool)
        }
        #expect(suite_[.magic]["enum"]?.get() == mime.JSON)
        suite_[.magic]["enum"]?.set(mime.STREAM)
        if let value: String = suite_[.magic]["unicorn"]?.get() {
            #expect(value == "🦄")
        }
        if let mimeType: mime = suite_[.magic]["enum"]?.get() {
            #expect(mimeType == mime.STREAM)
        }
        suite_[any].set(mime.JSON)
        if let mimeType: mime = suite_[any].get() {
            #expect(mime.JSON == mimeType)
        }
        suite_[any].set(mime.STREAM)
        if let mimeType: mime = suite_[any].get() {
            #expect(mime.STREAM == mimeType)
        }
    }

    @Test func key() {
        // Test Int
        let any = PreferenceKey<PlistValue>("independentAnyKey", default: 121_314, suite: suite_)
        #expect(suite_[any] == 121_314)
        // Test Int8
        let int8 = Int8.max
        suite_[any].set(int8)
        #expect(suite_[any].get() == int8)
        // Test Int16
        let int16 = Int16.max
        suite_[any].set(int16)
        #expect(suite_[any].get() == int16)
        // Test Int32
        let int32 = Int32.max
        suite_[any].set(int32)
        #expect(suite_[any].get() == int32)
        // Test Int64
        let int64 = Int64.max
        suite_[any].set(int64)
        #expect(suite_[any].get() == int64)
        // Test UInt
        let uint = UInt.max
        suite_[any].set(uint)
        #expect(suite_[any].get() == uint)
        // Test UInt8
        let uint8 = UInt8.max
        suite_[any].set(uint8)
        #expect(suite_[any].get() == uint8)
        // Test UInt16
        let uint16 = UInt16.max
        suite_[any].set(uint16)
        #expect(suite_[any].get() == uint16)
        // Test UInt32
        let uint32 = UInt32.max
        suite_[any].set(uint32)
        #expect(suite_[any].get() == uint32)
        // Test UInt64
        let uint64 = UInt64.max
        suite_[any].set(uint64)
        #expect(suite_[any].get() == uint64)
        // Test Double
        suite_[any] = 12_131.4
        #expect(suite_[any] == 12_131.4)
        // Test Bool
        suite_[any] = true
        #expect(suite_[any].get(Bool.self)!)
        // Test String
        suite_[any] = "121314"
        #expect(suite_[any] == "121314")
        // Test Float
        suite_[any].set(12_131.456, type: Float.self)
        #expect(suite_[any].get(Float.self) == 12_131.456)
        // Test Date
        let date = Date()
        suite_[any].set(date)
        #expect(suite_[any].get(Date.self) == date)
        // Test Data
        let data = "121314".data(using: .utf8)
        suite_[any].set(data)
        #expect(suite_[any].get(Data.self) == data)
        // Test Array
        suite_[any] = [1, 2, 3]
        if let array: [Int] = suite_[any].get() {
            #expect(array[0] == 1)
            #expect(array[1] == 2)
            #expect(array[2] == 3)
        }
        // Test Dictionary
        suite_[any] = ["unicorn": "🦄", "boolean": true, "number": 3]
        if let dictionary = suite_[any].get([String: PlistValue].self) {
            #expect(dictionary["unicorn"] == "🦄")
            #expect(dictionary["boolean"]?.get(Bool.self) == true)
            #expect(dictionary["number"] == 3)
        }
        // Test Set
        suite_[any].set(Set([1]))
        #expect(suite_[any].get(Set<Int>.self)?.first == 1)
        // Test URL
        suite_[any].set(URL(string: "https://example.com")!)
        #expect(suite_[any].get()! == URL(string: "https://example.com")!)
        // (NSColor and UIColor: not on Linux.)
        // Test Codable type
        suite_[any].set(CodableUnicorn(is_missing: false))
        #expect(suite_[any].get(CodableUnicorn.self)!.is_missing == false)
        // Test Custom type
        suite_[any].set(BridgedUnicorn(is_missing: true))
        #expect(suite_[any].get(BridgedUnicorn.self)!.is_missing)
        // Test nil
        suite_.reset(any)
        #expect(suite_[any] == 121_314)
    }

    @Test func optionalKey() {
        let key = PreferenceKey<PlistValue?>("independentOptionalAnyKey", suite: suite_)
        #expect(suite_[key] == nil)
        suite_[key] = 12_131.4
        #expect(suite_[key] == 12_131.4)
        suite_[key]?.set(mime.JSON)
        #expect(suite_[key]?.get(mime.self) == mime.JSON)
        suite_[key] = nil
        #expect(suite_[key] == nil)
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[PlistValue]>("independentArrayAnyKey", default: [123, 456], suite: suite_)
        #expect(suite_[key][0] == 123)
        #expect(suite_[key][1] == 456)
        suite_[key][0] = 12_131.4
        #expect(suite_[key][0] == 12_131.4)
    }

    @Test func setKey() {
        let key = PreferenceKey<Set<PlistValue>>("independentArrayAnyKey", default: [123], suite: suite_)
        #expect(suite_[key].first == 123)
        suite_[key].insert(12_131.4)
        #expect(suite_[key].contains(12_131.4))
        let date = PlistValue(Date())
        suite_[key].insert(date)
        #expect(suite_[key].contains(date))
        let data = PlistValue("Hello World!".data(using: .utf8))
        suite_[key].insert(data)
        #expect(suite_[key].contains(data))
        let int = PlistValue(Int.max)
        suite_[key].insert(int)
        #expect(suite_[key].contains(int))
        let int8 = PlistValue(Int8.max)
        suite_[key].insert(int8)
        #expect(suite_[key].contains(int8))
        let int16 = PlistValue(Int16.max)
        suite_[key].insert(int16)
        #expect(suite_[key].contains(int16))
        let int32 = PlistValue(Int32.max)
        suite_[key].insert(int32)
        #expect(suite_[key].contains(int32))
        let int64 = PlistValue(Int64.max)
        suite_[key].insert(int64)
        #expect(suite_[key].contains(int64))
        let uint = PlistValue(UInt.max)
        suite_[key].insert(uint)
        #expect(suite_[key].contains(uint))
        let uint8 = PlistValue(UInt8.max)
        suite_[key].insert(uint8)
        #expect(suite_[key].contains(uint8))
        let uint16 = PlistValue(UInt16.max)
        suite_[key].insert(uint16)
        #expect(suite_[key].contains(uint16))
        let uint32 = PlistValue(UInt32.max)
        suite_[key].insert(uint32)
        #expect(suite_[key].contains(uint32))
        let uint64 = PlistValue(UInt64.max)
        suite_[key].insert(uint64)
        #expect(suite_[key].contains(uint64))

        let bool: PlistValue = false
        suite_[key].insert(bool)
        #expect(suite_[key].contains(bool))

        let float = PlistValue(Float(1213.14))
        suite_[key].insert(float)
        #expect(suite_[key].contains(float))

        // (CGFloat: not a property-list value on Linux.)

        let string = PlistValue("Hello World!")
        suite_[key].insert(string)
        #expect(suite_[key].contains(string))

        let array: PlistValue = [1, 2, 3, 4]
        suite_[key].insert(array)
        #expect(suite_[key].contains(array))

        let dictionary: PlistValue = ["Hello": "World!"]
        suite_[key].insert(dictionary)
        #expect(suite_[key].contains(dictionary))

        let unicorn = PlistValue(BridgedUnicorn(is_missing: true))
        suite_[key].insert(unicorn)
        #expect(suite_[key].contains(unicorn))
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[PlistValue]?>("testArrayOptionalAnyKey", suite: suite_)
        #expect(suite_[key] == nil)
        suite_[key] = [123]
        suite_[key]?.append(456)
        #expect(suite_[key]![0] == 123)
        #expect(suite_[key]![1] == 456)
        suite_[key]![0] = 12_131.4
        #expect(suite_[key]![0] == 12_131.4)
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[PlistValue]]>("testNestedArrayAnyKey", default: [[123]], suite: suite_)
        suite_[key][0].append(456)
        #expect(suite_[key][0][0] == 123)
        #expect(suite_[key][0][1] == 456)
        suite_[key].append([12_131.4])
        #expect(suite_[key][1][0] == 12_131.4)
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: PlistValue]>("independentDictionaryAnyKey", default: ["unicorn": ""], suite: suite_)
        #expect(suite_[key]["unicorn"] == "")
        suite_[key]["unicorn"] = "🦄"
        #expect(suite_[key]["unicorn"] == "🦄")
        suite_[key]["number"] = 3
        suite_[key]["boolean"] = true
        #expect(suite_[key]["number"] == 3)
        if let bool: Bool = suite_[.magic]["unicorn"]?.get() {
            #expect(bool)
        }
        suite_[key]["set"] = PlistValue(Set([1]))
        #expect(suite_[key]["set"]!.get(Set<Int>.self)!.first == 1)
        suite_[key]["nil"] = nil
        #expect(suite_[key]["nil"] == nil)
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: PlistValue]?>("independentDictionaryOptionalAnyKey", suite: suite_)
        #expect(suite_[key] == nil)
        suite_[key] = ["unicorn": "🦄"]
        #expect(suite_[key]?["unicorn"] == "🦄")
        suite_[key]?["number"] = 3
        suite_[key]?["boolean"] = true
        #expect(suite_[key]?["number"] == 3)
        #expect(suite_[key]?["boolean"] == true)
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [PlistValue]]>("independentDictionaryArrayAnyKey", default: ["number": [1]], suite: suite_)
        #expect(suite_[key]["number"]?[0] == 1)
        suite_[key]["number"]?.append(2)
        suite_[key]["unicorn"] = ["No.1 🦄"]
        suite_[key]["unicorn"]?.append("No.2 🦄")
        suite_[key]["unicorn"]?.append("No.3 🦄")
        suite_[key]["boolean"] = [true]
        suite_[key]["boolean"]?.append(false)
        #expect(suite_[key]["number"]?[1] == 2)
        #expect(suite_[key]["unicorn"]?[0] == "No.1 🦄")
        #expect(suite_[key]["unicorn"]?[1] == "No.2 🦄")
        #expect(suite_[key]["unicorn"]?[2] == "No.3 🦄")
        #expect(suite_[key]["boolean"]?[1].get(Bool.self) == false)
    }

    @Test func type() {
        #expect(suite_[.anyKey] == "🦄")
        suite_[.anyKey] = 123
        #expect(suite_[.anyKey] == 123)
    }

    @Test func arrayType() {
        #expect(suite_[.anyArrayKey][0] == "No.1 🦄")
        #expect(suite_[.anyArrayKey][1] == "No.2 🦄")
        suite_[.anyArrayKey].append(123)
        #expect(suite_[.anyArrayKey][2] == 123)
    }

    @Test func dictionaryType() {
        #expect(suite_[.anyDictionaryKey]["unicorn"] == "🦄")
        suite_[.anyDictionaryKey]["number"] = 3
        #expect(suite_[.anyDictionaryKey]["number"] == 3)
        suite_[.anyDictionaryKey]["boolean"] = true
        #expect(suite_[.anyDictionaryKey]["boolean"]!.get(Bool.self)!)
        suite_[.anyDictionaryKey]["array"] = [1, 2]
        if let array = suite_[.anyDictionaryKey]["array"]?.get([Int].self) {
            #expect(array[0] == 1)
            #expect(array[1] == 2)
        }
    }

    @Test func observeKeyCombine() async throws {
        let key = PreferenceKey<PlistValue>("observeAnyKeyCombine", default: 123, suite: suite_)
        let changes = Recorder<[PlistValue]>()
        let observation = suite_.observe(key) { changes.record([$0.oldValue, $0.newValue]) }
        defer { observation.cancel() }

        let expectedValue: [[PlistValue]] = [[123, "🦄"], ["🦄", 123]]

        suite_[key] = "🦄"
        suite_.reset(key)
        suite_[key] = "end"

        #expect(try await changes.wait(for: 3) == expectedValue + [[123, "end"]])
    }

    @Test func observeOptionalKeyCombine() async throws {
        let key = PreferenceKey<PlistValue?>("observeAnyOptionalKeyCombine", suite: suite_)
        let changes = Recorder<[PlistValue?]>()
        let observation = suite_.observe(key) { changes.record([$0.oldValue, $0.newValue]) }
        defer { observation.cancel() }

        let expectedValue: [[PlistValue?]] = [[nil, 123], [123, "🦄"], ["🦄", nil]]

        suite_[key] = 123
        suite_[key] = "🦄"
        suite_.reset(key)
        suite_[key] = "end"

        #expect(try await changes.wait(for: 4) == expectedValue + [[nil, "end"]])
    }

    @Test func wrongCast() {
        let value = PlistValue(false)
        #expect(value.get(Bool.self) == false)
        #expect(value.get(String.self) == nil)
    }
}

// Defaults' DefaultsCustomBridgeTests, ported from its current file. Its `User` bridge is
// the `User` conformance above (the same fields and fixture); its `PlainHourMinuteTimeRange`
// bridge, an array of two times, is the conformance below.

struct PlainHourMinuteTime: Hashable, Codable, PreferenceValue {
    var hour: Int
    var minute: Int
}

struct PlainHourMinuteTimeRange: Hashable, Codable {
    var start: PlainHourMinuteTime
    var end: PlainHourMinuteTime
}

extension PlainHourMinuteTimeRange: PreferenceValue {
    var plistValue: PlistValue? { [start, end].plistValue }
    init?(plistValue: PlistValue) {
        guard let times = [PlainHourMinuteTime](plistValue: plistValue), times.count == 2 else { return nil }
        self.init(start: times[0], end: times[1])
    }
}

extension PreferenceKey where Value == User {
    fileprivate static let customBridge = PreferenceKey("customBridge", default: fixtureCustomBridge)
}
extension PreferenceKey where Value == [User] {
    fileprivate static let customBridgeArray = PreferenceKey("array_customBridge", default: [fixtureCustomBridge])
}
extension PreferenceKey where Value == [String: User] {
    fileprivate static let customBridgeDictionary = PreferenceKey("dictionary_customBridge", default: ["0": fixtureCustomBridge])
}

@Suite("Defaults' custom-bridge tests, ported")
struct DefaultsCustomBridgePortedTests {
    let suite = PreferenceSuite.inMemory()
    fileprivate let newUser = User(username: "sindresorhus", password: "123456789")

    @Test func key() {
        let key = PreferenceKey<User>("independentCustomBridgeKey", default: fixtureCustomBridge)
        #expect(suite[key] == fixtureCustomBridge)
        suite[key] = newUser
        #expect(suite[key] == newUser)
    }

    @Test func optionalKey() {
        let key = PreferenceKey<User?>("independentCustomBridgeOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = fixtureCustomBridge
        #expect(suite[key] == fixtureCustomBridge)
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[User]>("independentCustomBridgeArrayKey", default: [fixtureCustomBridge])
        #expect(suite[key][0] == fixtureCustomBridge)
        suite[key][0] = newUser
        #expect(suite[key][0] == newUser)
    }

    @Test func arrayOptionalKey() {
        let key = PreferenceKey<[User]?>("independentCustomBridgeArrayOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = [fixtureCustomBridge]
        #expect(suite[key]?[0] == fixtureCustomBridge)
        suite[key] = nil
        #expect(suite[key] == nil)
    }

    @Test func nestedArrayKey() {
        let key = PreferenceKey<[[User]]>("independentCustomBridgeNestedArrayKey", default: [[fixtureCustomBridge], [fixtureCustomBridge]])
        #expect(suite[key][0][0].username == fixtureCustomBridge.username)
        suite[key][0][0] = User(username: "John", password: "7891011")
        #expect(suite[key][0][0] == User(username: "John", password: "7891011") && suite[key][1][0] == fixtureCustomBridge)
    }

    @Test func arrayDictionaryKey() {
        let key = PreferenceKey<[[String: User]]>("independentCustomBridgeArrayDictionaryKey", default: [["0": fixtureCustomBridge], ["0": fixtureCustomBridge]])
        #expect(suite[key][0]["0"]?.username == fixtureCustomBridge.username)
        suite[key][0]["0"] = newUser
        #expect(suite[key][0]["0"] == newUser && suite[key][1]["0"] == fixtureCustomBridge)
    }

    @Test func setKey() {
        let key = PreferenceKey<Set<User>>("independentCustomBridgeSetKey", default: [fixtureCustomBridge])
        #expect(suite[key].first == fixtureCustomBridge)
        suite[key].insert(fixtureCustomBridge)
        #expect(suite[key].count == 1)
        suite[key].insert(newUser)
        #expect(suite[key].contains(newUser))
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: User]>("independentCustomBridgeDictionaryKey", default: ["0": fixtureCustomBridge])
        #expect(suite[key]["0"] == fixtureCustomBridge)
        suite[key]["0"] = newUser
        #expect(suite[key]["0"] == newUser)
    }

    @Test func dictionaryOptionalKey() {
        let key = PreferenceKey<[String: User]?>("independentCustomBridgeDictionaryOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = ["0": fixtureCustomBridge]
        #expect(suite[key]?["0"] == fixtureCustomBridge)
    }

    @Test func dictionaryArrayKey() {
        let key = PreferenceKey<[String: [User]]>("independentCustomBridgeDictionaryArrayKey", default: ["0": [fixtureCustomBridge]])
        #expect(suite[key]["0"]?[0] == fixtureCustomBridge)
        suite[key]["0"]?[0] = newUser
        suite[key]["0"]?.append(fixtureCustomBridge)
        #expect(suite[key]["0"] == [newUser, fixtureCustomBridge])
    }

    /// A documented difference: theirs checks the stored form, JSON text per time
    /// (`{"hour":1,"minute":0}`); here each time is a nested dictionary, which any property-list
    /// tool reads as one. The default is registered when the key is made, as theirs is.
    @Test func recursiveKey() {
        let range = PlainHourMinuteTimeRange(start: .init(hour: 1, minute: 0), end: .init(hour: 2, minute: 0))
        let key = PreferenceKey<PlainHourMinuteTimeRange>("independentCustomBridgeRecursiveKey", default: range, suite: suite)
        #expect(suite[key] == range)
        #expect(suite.value(forKey: key.name) == [["hour": 1, "minute": 0], ["hour": 2, "minute": 0]])
        let next = PlainHourMinuteTimeRange(start: .init(hour: 3, minute: 58), end: .init(hour: 4, minute: 59))
        suite[key] = next
        #expect(suite[key] == next)
        #expect(suite.value(forKey: key.name) == [["hour": 3, "minute": 58], ["hour": 4, "minute": 59]])
    }

    @Test func type() {
        #expect(suite[.customBridge] == fixtureCustomBridge)
        suite[.customBridge] = newUser
        #expect(suite[.customBridge] == newUser)
    }

    @Test func arrayType() {
        #expect(suite[.customBridgeArray][0] == fixtureCustomBridge)
        suite[.customBridgeArray][0] = newUser
        #expect(suite[.customBridgeArray][0] == newUser)
    }

    @Test func dictionaryType() {
        #expect(suite[.customBridgeDictionary]["0"] == fixtureCustomBridge)
        suite[.customBridgeDictionary]["0"] = newUser
        #expect(suite[.customBridgeDictionary]["0"] == newUser)
    }
}

// Defaults' DefaultsBridgeTests, ported from its current file. Not ported: testSerializableTypeConversions and
// testNativeTypeSupportFlags, which test Defaults' internals (`toValue`, `toSerializable`,
// `isNativelySupportedType`).

private struct CodableStruct: Codable, PreferenceValue {
    let name: String
    let value: Int
}

/// Its `CustomCodableStructBridge` (stored as the string) is this conformance.
private struct CodableStructWithCustomBridge: PreferenceValue {
    let data: String
    var plistValue: PlistValue? { .string(data) }
    init(data: String) { self.data = data }
    init?(plistValue: PlistValue) {
        guard case .string(let data) = plistValue else { return nil }
        self.init(data: data)
    }
}

private enum TestEnum: String, Codable, PreferenceValue {
    case first = "first_value"
    case second = "second_value"
}

private enum TestEnumCodable: String, Codable, PreferenceValue {
    case alpha = "alpha_value"
    case beta = "beta_value"
}

private enum Category: String, CodingKeyRepresentable {
    case electronics
    case books
    case clothing
}

private enum Priority: Int, CodingKeyRepresentable {
    case low = 1
    case medium = 5
    case high = 10
}

private struct BundleIdentifier: RawRepresentable, Hashable, Codable, CodingKeyRepresentable {
    let rawValue: String
    init(rawValue: String) { self.rawValue = rawValue }
    init(_ value: String) { self.init(rawValue: value) }
}

private struct UserID: RawRepresentable, Hashable, Codable, CodingKeyRepresentable {
    let rawValue: Int
    init(rawValue: Int) { self.rawValue = rawValue }
}

@Suite("Defaults' bridge tests, ported")
struct DefaultsBridgePortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func codableBridge() {
        let key = PreferenceKey<CodableStruct>("codableStruct", default: CodableStruct(name: "default", value: 0))
        #expect(suite[key].name == "default" && suite[key].value == 0)
        suite[key] = CodableStruct(name: "test", value: 42)
        #expect(suite[key].name == "test" && suite[key].value == 42)
        let anotherKey = PreferenceKey<CodableStruct>("codableStruct", default: CodableStruct(name: "fallback", value: -1))
        #expect(suite[anotherKey].name == "test" && suite[anotherKey].value == 42)
    }

    @Test func customBridge() {
        let key = PreferenceKey<CodableStructWithCustomBridge>("customBridge", default: CodableStructWithCustomBridge(data: "default"))
        #expect(suite[key].data == "default")
        suite[key] = CodableStructWithCustomBridge(data: "custom_test")
        #expect(suite[key].data == "custom_test")
        #expect(suite.string(forKey: "customBridge") == "custom_test")
    }

    @Test func rawRepresentablePreference() {
        let key = PreferenceKey<TestEnum>("enumPreferRaw", default: .first)
        #expect(suite[key] == .first)
        suite[key] = .second
        #expect(suite[key] == .second && suite.string(forKey: "enumPreferRaw") == "second_value")
    }

    /// Theirs stores JSON for a Codable enum without PreferRawRepresentable; here it is the raw value.
    @Test func codableEnum() {
        let key = PreferenceKey<TestEnumCodable>("enumCodable", default: .alpha)
        #expect(suite[key] == .alpha)
        suite[key] = .beta
        #expect(suite[key] == .beta && suite.string(forKey: "enumCodable") == "beta_value")
    }

    @Test func optionalBridge() {
        let key = PreferenceKey<CodableStruct?>("optionalCodable")
        #expect(suite[key] == nil)
        suite[key] = CodableStruct(name: "optional", value: 99)
        #expect(suite[key]?.name == "optional" && suite[key]?.value == 99)
        suite[key] = nil
        #expect(suite[key] == nil && suite.object(forKey: "optionalCodable") == nil)
    }

    @Test func arrayBridge() {
        let key = PreferenceKey<[CodableStruct]>("arrayOfStructs", default: [])
        #expect(suite[key].isEmpty)
        suite[key] = [CodableStruct(name: "first", value: 1), CodableStruct(name: "second", value: 2)]
        #expect(suite[key].count == 2 && suite[key][0].name == "first" && suite[key][1].value == 2)
        var current = suite[key]
        current.append(CodableStruct(name: "third", value: 3))
        suite[key] = current
        #expect(suite[key].count == 3 && suite[key][2].name == "third")
    }

    @Test func dictionaryBridge() {
        let key = PreferenceKey<[String: CodableStruct]>("dictOfStructs", default: [:])
        #expect(suite[key].isEmpty)
        suite[key] = ["key1": CodableStruct(name: "value1", value: 1), "key2": CodableStruct(name: "value2", value: 2)]
        #expect(suite[key].count == 2 && suite[key]["key1"]?.name == "value1" && suite[key]["key2"]?.value == 2)
        var current = suite[key]
        current["key3"] = CodableStruct(name: "value3", value: 3)
        suite[key] = current
        #expect(suite[key].count == 3 && suite[key]["key3"]?.name == "value3")
    }

    @Test func setBridge() {
        let key = PreferenceKey<Set<String>>("setOfStrings", default: [])
        #expect(suite[key].isEmpty)
        suite[key] = ["apple", "banana", "cherry"]
        #expect(suite[key] == ["apple", "banana", "cherry"])
        var current = suite[key]
        current.insert("date")
        suite[key] = current
        #expect(suite[key].count == 4 && suite[key].contains("date"))
    }

    @Test func urlBridge() {
        let defaultURL = URL(string: "https://example.com")!
        let key = PreferenceKey<URL>("urlTest", default: defaultURL)
        #expect(suite[key] == defaultURL)
        let newURL = URL(string: "https://test.com/path?query=value")!
        suite[key] = newURL
        #expect(suite[key] == newURL && suite[key].absoluteString == "https://test.com/path?query=value")
        let fileURL = URL(fileURLWithPath: "/tmp/test.txt")
        suite[key] = fileURL
        #expect(suite[key] == fileURL && suite[key].isFileURL)
    }

    @Test func uuidBridge() {
        let defaultUUID = UUID()
        let key = PreferenceKey<UUID>("uuidTest", default: defaultUUID)
        #expect(suite[key] == defaultUUID)
        let newUUID = UUID()
        suite[key] = newUUID
        #expect(suite[key] == newUUID && suite[key].uuidString == newUUID.uuidString)
        let specificUUID = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        suite[key] = specificUUID
        #expect(suite[key] == specificUUID)
    }

    @Test func rangeBridge() {
        let key = PreferenceKey<Range<Int>>("rangeTest", default: 0..<10)
        #expect(suite[key] == 0..<10 && suite[key].lowerBound == 0 && suite[key].upperBound == 10)
        suite[key] = 5..<15
        #expect(suite[key] == 5..<15 && suite[key].contains(10) && !suite[key].contains(15))
    }

    @Test func closedRangeBridge() {
        let key = PreferenceKey<ClosedRange<Int>>("closedRangeTest", default: 0...10)
        #expect(suite[key] == 0...10 && suite[key].lowerBound == 0 && suite[key].upperBound == 10)
        suite[key] = 5...15
        #expect(suite[key] == 5...15 && suite[key].contains(15))
    }

    @Test func invalidSerializationHandling() {
        let key = PreferenceKey<CodableStruct>("invalidData", default: CodableStruct(name: "fallback", value: -1))
        suite.set("invalid_json_data", forKey: "invalidData")
        let result = suite[key]
        #expect(result.name == "fallback" && result.value == -1)
        // Said once, as a warning naming the key and the type.
        #expect(capturedLogs.items.contains { $0.hasPrefix("warning ") && $0.contains(#"key "invalidData", not a CodableStruct"#) })
    }

    @Test func enumStringKeys() {
        let key = PreferenceKey<[Category: String]>("categoryDict", default: [:])
        suite[key] = [.electronics: "Laptop", .books: "Guide"]
        #expect(suite[key][.electronics] == "Laptop")
        #expect(suite[key][.books] == "Guide")
        #expect(suite.value(forKey: "categoryDict") == ["electronics": "Laptop", "books": "Guide"])
    }

    @Test func enumIntKeys() {
        enum Temperature: Int, Codable, Hashable, CodingKeyRepresentable {
            case freezing = -10
            case zero = 0
            case boiling = 100
        }

        let key = PreferenceKey<[Temperature: String]>("tempDict", default: [:])
        suite[key] = [.freezing: "Cold", .zero: "Freezing", .boiling: "Hot"]
        #expect(suite[key][.freezing] == "Cold")
        #expect(suite[key][.zero] == "Freezing")
        #expect(suite[key][.boiling] == "Hot")
        #expect(suite.value(forKey: "tempDict") == ["-10": "Cold", "0": "Freezing", "100": "Hot"])
    }

    @Test func rawRepresentableKeys() {
        let key = PreferenceKey<[BundleIdentifier: String]>("bundleDict", default: [:])
        suite[key] = [BundleIdentifier("com.app"): "App"]
        #expect(suite[key][BundleIdentifier("com.app")] == "App")
        let users = PreferenceKey<[UserID: String]>("userDict", default: [:])
        suite[users] = [UserID(rawValue: 7): "seven"]
        #expect(suite[users][UserID(rawValue: 7)] == "seven")
    }

    @Test func nestedDictionaries() {
        let key = PreferenceKey<[Category: [Priority: String]]>("nestedDict", default: [:])
        suite[key] = [.electronics: [.high: "Urgent", .low: "Later"]]
        #expect(suite[key][.electronics]?[.high] == "Urgent")
        #expect(suite[key][.electronics]?[.low] == "Later")
    }

    @Test func dictionaryPersistence() {
        let key1 = PreferenceKey<[Category: String]>("persistDict", default: [:])
        suite[key1] = [.books: "Novel"]
        let key2 = PreferenceKey<[Category: String]>("persistDict", default: [:])
        #expect(suite[key2][.books] == "Novel")
    }

    @Test func dictionaryRemoval() {
        let key = PreferenceKey<[Priority: String]>("removeDict", default: [:])
        suite[key] = [.low: "A", .high: "B"]
        var updated = suite[key]
        updated[.low] = nil
        suite[key] = updated
        #expect(suite[key][.low] == nil)
        #expect(suite[key][.high] == "B")
    }
}

// Defaults' DefaultsValidationTests, ported: its `suite_` is an in-memory suite here, keys are made with
// `suite:` it, and `Defaults[key]` and `suite_[key]` are its subscript. Not ported:
// testKeyNameValidation (Defaults refuses `.` and `@` in names because KVO does; keys here may
// hold dots, and there is no KVO) and testIsDefaultValueNonEquatable (Defaults' internal
// `_isDefaultValue`).

private let validationSuite_ = PreferenceSuite.inMemory(name: "validation")

@Suite("Defaults' validation tests, ported", .serialized)
final class DefaultsValidationPortedTests {
    init() {
        validationSuite_.removeAll()
    }

    deinit {
        validationSuite_.removeAll()
    }

    @Test func keyEquality() {
        let key1 = PreferenceKey<String>("testKey", default: "value", suite: validationSuite_)
        let key2 = PreferenceKey<String>("testKey", default: "value", suite: validationSuite_)
        let key3 = PreferenceKey<String>("differentKey", default: "value", suite: validationSuite_)

        let customSuite = PreferenceSuite.inMemory(name: "customSuite")
        let key4 = PreferenceKey<String>("testKey", default: "value", suite: customSuite)

        // Same name and suite should be equal
        #expect(key1 == key2)

        // Different names should not be equal
        #expect(key1 != key3)

        // Same name but different suite should not be equal
        #expect(key1 != key4)

        customSuite.removeAll()
    }

    @Test func keyHashability() {
        let key1 = PreferenceKey<String>("testKey", default: "value", suite: validationSuite_)
        let key2 = PreferenceKey<String>("testKey", default: "value", suite: validationSuite_)
        let key3 = PreferenceKey<String>("differentKey", default: "value", suite: validationSuite_)

        var hashSet = Set<PreferenceKey<String>>()
        hashSet.insert(key1)
        hashSet.insert(key2)  // Should not increase count due to equality
        hashSet.insert(key3)

        #expect(hashSet.count == 2)
        #expect(hashSet.contains(key1))
        #expect(hashSet.contains(key2))
        #expect(hashSet.contains(key3))
    }

    @Test func isDefaultValue() {
        let key = PreferenceKey<String>("defaultValueTest", default: "defaultValue", suite: validationSuite_)

        // Initially should be default value
        #expect(key.isDefaultValue)

        // After setting a different value
        validationSuite_[key] = "newValue"
        #expect(!key.isDefaultValue)

        // After resetting
        key.reset()
        #expect(key.isDefaultValue)

        // After setting the same value as default
        validationSuite_[key] = "defaultValue"
        #expect(key.isDefaultValue)
    }

    @Test func optionalKeyDefaultBehavior() {
        let optionalKey = PreferenceKey<String?>("optionalTest", suite: validationSuite_)

        // Should start as nil
        #expect(validationSuite_[optionalKey] == nil)

        // Set a value
        validationSuite_[optionalKey] = "test"
        #expect(validationSuite_[optionalKey] == "test")

        // Set back to nil
        validationSuite_[optionalKey] = nil
        #expect(validationSuite_[optionalKey] == nil)
    }

    @Test func dynamicDefaultValue() {
        // A `Lock` where Defaults captures a `var`: the default closure is `@Sendable` here.
        let dynamicValue = Lock("initial")
        let dynamicKey = PreferenceKey<String>("dynamicTest", suite: validationSuite_) {
            dynamicValue.withLock { $0 }
        }

        // Should return the dynamic value
        #expect(validationSuite_[dynamicKey] == "initial")

        // Change the dynamic value
        dynamicValue.withLock { $0 = "changed" }

        // Reset to get the new dynamic value
        dynamicKey.reset()
        #expect(validationSuite_[dynamicKey] == "changed")

        // Set a specific value
        validationSuite_[dynamicKey] = "specific"
        #expect(validationSuite_[dynamicKey] == "specific")

        // Reset should go back to dynamic value
        dynamicKey.reset()
        #expect(validationSuite_[dynamicKey] == "changed")
    }

    @Test func dynamicOptionalDefaultValue() {
        let shouldReturnNil = Lock(false)
        let dynamicOptionalKey = PreferenceKey<String?>("dynamicOptionalTest", suite: validationSuite_) {
            shouldReturnNil.withLock { $0 } ? nil : "dynamic"
        }

        // Should return the dynamic value
        #expect(validationSuite_[dynamicOptionalKey] == "dynamic")

        // Change to return nil
        shouldReturnNil.withLock { $0 = true }
        dynamicOptionalKey.reset()
        #expect(validationSuite_[dynamicOptionalKey] == nil)

        // Set a specific value
        validationSuite_[dynamicOptionalKey] = "specific"
        #expect(validationSuite_[dynamicOptionalKey] == "specific")

        // Reset should go back to dynamic value (nil)
        dynamicOptionalKey.reset()
        #expect(validationSuite_[dynamicOptionalKey] == nil)
    }

    @Test func userDefaultsSubscript() {
        let key = PreferenceKey<Int>("subscriptTest", default: 42, suite: validationSuite_)

        // Test UserDefaults subscript directly
        #expect(validationSuite_[key] == 42)

        validationSuite_[key] = 100
        #expect(validationSuite_[key] == 100)
        #expect(validationSuite_[key] == 100)

        // Reset using UserDefaults
        validationSuite_.removeObject(forKey: key.name)
        #expect(validationSuite_[key] == 42)  // Should return default
    }

    @Test func removeAllBehavior() {
        let key1 = PreferenceKey<String>("removeAll1", default: "default1", suite: validationSuite_)
        let key2 = PreferenceKey<Int>("removeAll2", default: 42, suite: validationSuite_)

        // Set some values
        validationSuite_[key1] = "changed1"
        validationSuite_[key2] = 100

        #expect(validationSuite_[key1] == "changed1")
        #expect(validationSuite_[key2] == 100)

        // Remove all
        validationSuite_.removeAll()

        // Should return to defaults
        #expect(validationSuite_[key1] == "default1")
        #expect(validationSuite_[key2] == 42)
    }

    @Test func userDefaultsRemoveAll() {
        let key1 = PreferenceKey<String>("userDefaultsRemoveAll1", default: "default1", suite: validationSuite_)
        let key2 = PreferenceKey<Int>("userDefaultsRemoveAll2", default: 42, suite: validationSuite_)

        // Set some values
        validationSuite_[key1] = "changed1"
        validationSuite_[key2] = 100

        #expect(validationSuite_[key1] == "changed1")
        #expect(validationSuite_[key2] == 100)

        // Remove all using UserDefaults method
        validationSuite_.removeAll()

        // Should return to defaults
        #expect(validationSuite_[key1] == "default1")
        #expect(validationSuite_[key2] == 42)
    }

    @Test func keyRegistersDefaultValues() {
        let keyName = "registrationTest"

        // Verify key doesn't exist before
        #expect(validationSuite_.object(forKey: keyName) == nil)

        // Create key with default value
        let key = PreferenceKey<String>(keyName, default: "registeredDefault", suite: validationSuite_)

        // Should now be registered in UserDefaults
        #expect(validationSuite_.string(forKey: keyName) == "registeredDefault")
        #expect(validationSuite_[key] == "registeredDefault")
    }

    @Test func optionalKeyDoesNotRegisterNil() {
        let keyName = "optionalRegistrationTest"

        // Verify key doesn't exist before
        #expect(validationSuite_.object(forKey: keyName) == nil)

        // Create optional key
        let key = PreferenceKey<String?>(keyName, suite: validationSuite_)

        // Should still not exist in UserDefaults (nil is not registered)
        #expect(validationSuite_.object(forKey: keyName) == nil)
        #expect(validationSuite_[key] == nil)
    }
}

// Defaults' DefaultsRangeTests (its class DefaultsClosedRangeTests), ported from its current file.
// Its `CustomDate` bridge to `[Int]` is the `PreferenceValue` conformance below. Where it compares
// the bounds of each range one by one, these compare the ranges (and arrays of them) whole.

private struct CustomDate: PreferenceValue, Comparable {
    let year: Int
    let month: Int
    let day: Int
    var plistValue: PlistValue? { [year, month, day].plistValue }
    init(year: Int, month: Int, day: Int) { (self.year, self.month, self.day) = (year, month, day) }
    init?(plistValue: PlistValue) {
        guard let object = [Int](plistValue: plistValue), object.count == 3 else { return nil }
        self.init(year: object[0], month: object[1], day: object[2])
    }
    static func < (lhs: CustomDate, rhs: CustomDate) -> Bool { (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day) }
}

private let fixtureRange = 0..<10
private let nextFixtureRange = 1..<20
private let fixtureDateRange = CustomDate(year: 2022, month: 4, day: 0)..<CustomDate(year: 2022, month: 5, day: 0)
private let nextFixtureDateRange = CustomDate(year: 2022, month: 6, day: 1)..<CustomDate(year: 2022, month: 7, day: 1)
private let fixtureClosedRange = 0...10
private let nextFixtureClosedRange = 1...20
private let fixtureDateClosedRange = CustomDate(year: 2022, month: 4, day: 0)...CustomDate(year: 2022, month: 5, day: 0)
private let nextFixtureDateClosedRange = CustomDate(year: 2022, month: 6, day: 1)...CustomDate(year: 2022, month: 7, day: 1)

@Suite("Defaults' range tests, ported")
struct DefaultsRangePortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func key() {
        let key = PreferenceKey<Range>("independentRangeKey", default: fixtureRange)
        #expect(suite[key] == fixtureRange)
        suite[key] = nextFixtureRange
        #expect(suite[key] == nextFixtureRange)
        let dateKey = PreferenceKey<Range<CustomDate>>("independentRangeDateKey", default: fixtureDateRange)
        #expect(suite[dateKey] == fixtureDateRange)
        suite[dateKey] = nextFixtureDateRange
        #expect(suite[dateKey] == nextFixtureDateRange)
        let closedKey = PreferenceKey<ClosedRange>("independentClosedRangeKey", default: fixtureClosedRange)
        #expect(suite[closedKey] == fixtureClosedRange)
        suite[closedKey] = nextFixtureClosedRange
        #expect(suite[closedKey] == nextFixtureClosedRange)
        let closedDateKey = PreferenceKey<ClosedRange<CustomDate>>("independentClosedRangeDateKey", default: fixtureDateClosedRange)
        #expect(suite[closedDateKey] == fixtureDateClosedRange)
        suite[closedDateKey] = nextFixtureDateClosedRange
        #expect(suite[closedDateKey] == nextFixtureDateClosedRange)
    }

    @Test func optionalKey() {
        let key = PreferenceKey<Range<Int>?>("independentRangeOptionalKey")
        #expect(suite[key] == nil)
        suite[key] = fixtureRange
        #expect(suite[key] == fixtureRange)
        let dateKey = PreferenceKey<Range<CustomDate>?>("independentRangeDateOptionalKey")
        #expect(suite[dateKey] == nil)
        suite[dateKey] = fixtureDateRange
        #expect(suite[dateKey] == fixtureDateRange)
        let closedKey = PreferenceKey<ClosedRange<Int>?>("independentClosedRangeOptionalKey")
        #expect(suite[closedKey] == nil)
        suite[closedKey] = fixtureClosedRange
        #expect(suite[closedKey] == fixtureClosedRange)
        let closedDateKey = PreferenceKey<ClosedRange<CustomDate>?>("independentClosedRangeDateOptionalKey")
        #expect(suite[closedDateKey] == nil)
        suite[closedDateKey] = fixtureDateClosedRange
        #expect(suite[closedDateKey] == fixtureDateClosedRange)
    }

    @Test func arrayKey() {
        let key = PreferenceKey<[Range]>("independentRangeArrayKey", default: [fixtureRange])
        suite[key].append(nextFixtureRange)
        #expect(suite[key] == [fixtureRange, nextFixtureRange])
        let dateKey = PreferenceKey<[Range<CustomDate>]>("independentRangeDateArrayKey", default: [fixtureDateRange])
        suite[dateKey].append(nextFixtureDateRange)
        #expect(suite[dateKey] == [fixtureDateRange, nextFixtureDateRange])
        let closedKey = PreferenceKey<[ClosedRange]>("independentClosedRangeArrayKey", default: [fixtureClosedRange])
        suite[closedKey].append(nextFixtureClosedRange)
        #expect(suite[closedKey] == [fixtureClosedRange, nextFixtureClosedRange])
        let closedDateKey = PreferenceKey<[ClosedRange<CustomDate>]>("independentClosedRangeDateArrayKey", default: [fixtureDateClosedRange])
        suite[closedDateKey].append(nextFixtureDateClosedRange)
        #expect(suite[closedDateKey] == [fixtureDateClosedRange, nextFixtureDateClosedRange])
    }

    @Test func dictionaryKey() {
        let key = PreferenceKey<[String: Range]>("independentRangeDictionaryKey", default: ["0": fixtureRange])
        suite[key]["1"] = nextFixtureRange
        #expect(suite[key] == ["0": fixtureRange, "1": nextFixtureRange])
        let dateKey = PreferenceKey<[String: Range<CustomDate>]>("independentRangeDateDictionaryKey", default: ["0": fixtureDateRange])
        suite[dateKey]["1"] = nextFixtureDateRange
        #expect(suite[dateKey] == ["0": fixtureDateRange, "1": nextFixtureDateRange])
        let closedKey = PreferenceKey<[String: ClosedRange]>("independentClosedRangeDictionaryKey", default: ["0": fixtureClosedRange])
        suite[closedKey]["1"] = nextFixtureClosedRange
        #expect(suite[closedKey] == ["0": fixtureClosedRange, "1": nextFixtureClosedRange])
        let closedDateKey = PreferenceKey<[String: ClosedRange<CustomDate>]>("independentClosedRangeDateDictionaryKey", default: ["0": fixtureDateClosedRange])
        suite[closedDateKey]["1"] = nextFixtureDateClosedRange
        #expect(suite[closedDateKey] == ["0": fixtureDateClosedRange, "1": nextFixtureDateClosedRange])
    }
}

// Defaults' DefaultsObservationAdvancedTests, ported from its current file. Theirs observe with
// `.initial` by default and wait with sleeps; these ask for `.initial` and await each delivery.
// Not ported: testObservationWithoutPropagation, testLifetimeTiedObservation and
// testObservationLifetimeTieRemoval (no `withoutPropagation`, no lifetime ties here).

@Suite("Defaults' observation tests, ported")
struct DefaultsObservationPortedTests {
    let suite = PreferenceSuite.inMemory()
    let observationTest = PreferenceKey<String>("observationTest", default: "initial")

    @Test func multipleObservationsOnSameKey() async throws {
        let heard = Recorder<String>()
        let observation1 = suite.observe(observationTest, options: .initial) { heard.record("1 \($0.newValue)") }
        let observation2 = suite.observe(observationTest, options: .initial) { heard.record("2 \($0.newValue)") }
        defer { observation1.cancel(); observation2.cancel() }
        _ = try await heard.wait(for: 2)
        suite[observationTest] = "changed"
        let all = try await heard.wait(for: 4)
        #expect(all.filter { $0.hasPrefix("1 ") } == ["1 initial", "1 changed"] && all.filter { $0.hasPrefix("2 ") } == ["2 initial", "2 changed"])
    }

    /// Theirs sleeps 50 ms to see that nothing more arrives; here a second observer, told in the
    /// same step as the first would be, is awaited instead.
    @Test func observationInvalidation() async throws {
        let first = Recorder<String>()
        let observation = suite.observe(observationTest) { first.record($0.newValue) }
        suite[observationTest] = "test1"
        #expect(try await first.wait(for: 1) == ["test1"])
        observation.cancel()
        let second = Recorder<String>()
        let witness = suite.observe(observationTest) { second.record($0.newValue) }
        defer { witness.cancel() }
        suite[observationTest] = "test2"
        _ = try await second.wait(for: 1)
        #expect(first.items == ["test1"])
    }

    @Test func concurrentObservation() async throws {
        let key = PreferenceKey<Int>("concurrentObservation", default: 0)
        let count = Recorder<Int>()
        let observation = suite.observe(key) { count.record($0.newValue) }
        defer { observation.cancel() }
        await withTaskGroup(of: Void.self) { group in
            for index in 1...100 { group.addTask { [suite] in suite[key] = index } }
        }
        // Every set changed the value, so each is one change.
        #expect(Set(try await count.wait(for: 100)) == Set(1...100))
    }

    @Test func asyncUpdatesStream() async throws {
        let key = PreferenceKey<String>("asyncUpdates", default: "start")
        let values = suite.values(for: key)
        let received = Recorder<String>()
        let task = Task {
            for await value in values {
                received.record(value)
                if value == "update3" { break }
            }
        }
        _ = try await received.wait(for: 1)
        for update in ["update1", "update2", "update3"] {
            suite[key] = update
            _ = try await received.wait(until: { $0.last == update })
        }
        await task.value
        #expect(received.items == ["start", "update1", "update2", "update3"])
    }

    @Test func asyncUpdatesStreamWithoutInitial() async throws {
        let key = PreferenceKey<String>("asyncUpdatesNoInitial", default: "start")
        let values = suite.values(for: key, initial: false)
        let received = Recorder<String>()
        let task = Task {
            for await value in values {
                received.record(value)
                if value == "update2" { break }
            }
        }
        suite[key] = "update1"
        _ = try await received.wait(for: 1)
        suite[key] = "update2"
        await task.value
        #expect(received.items == ["update1", "update2"])
    }

    @Test func multipleKeysUpdatesStream() async throws {
        let key1 = PreferenceKey<String>("multiKey1", default: "start1")
        let key2 = PreferenceKey<Int>("multiKey2", default: 0)
        let stream = suite.updates(key1, key2)
        let received = Recorder<String>()
        let task = Task {
            for await (value1, value2) in stream {
                received.record("\(value1) \(value2)")
                if value1 == "changed1" && value2 == 42 { break }
            }
        }
        #expect(try await received.wait(for: 1) == ["start1 0"])
        suite[key1] = "changed1"
        _ = try await received.wait(until: { $0.last == "changed1 0" })
        suite[key2] = 42
        await task.value
        #expect(received.items == ["start1 0", "changed1 0", "changed1 42"])
    }

    @Test func arrayKeysUpdatesStream() async throws {
        let key1 = PreferenceKey<String>("arrayKey1", default: "start1")
        let key2 = PreferenceKey<Int>("arrayKey2", default: 0)
        let stream = suite.updates([key1, key2])
        let count = Recorder<Int>()
        let task = Task {
            var updates = 0
            for await _ in stream {
                updates += 1
                count.record(updates)
                if updates >= 3 { break }
            }
        }
        _ = try await count.wait(for: 1)
        suite[key1] = "changed1"
        _ = try await count.wait(for: 2)
        suite[key2] = 42
        await task.value
        #expect(count.items == [1, 2, 3])
    }

    /// Its `observe(keys: key1, key2, options: [])` is `observe(.keys([key1.name, key2.name]))`.
    @Test func compositeObservation() async throws {
        let key1 = PreferenceKey<String>("composite1", default: "start1")
        let key2 = PreferenceKey<Int>("composite2", default: 0)
        let updates = Recorder<String>()
        let observation = suite.observe(.keys([key1.name, key2.name])) { updates.record($0.key) }
        defer { observation.cancel() }
        suite[key1] = "changed"
        _ = try await updates.wait(for: 1)
        suite[key2] = 42
        #expect(try await updates.wait(for: 2) == ["composite1", "composite2"])
    }
}

// Defaults' DefaultsStressTests, ported from its current file (its `autoreleasepool` has no
// meaning on Linux and is left out), and one test of our own: the large values written to a suite
// file and read back.

@Suite("Defaults' stress tests, ported")
struct DefaultsStressPortedTests {
    let suite = PreferenceSuite.inMemory()

    @Test func concurrentReadWrite() async {
        let key = PreferenceKey<Int>("concurrentTest", default: 0)
        await withTaskGroup(of: Void.self) { group in
            for index in 1...1000 { group.addTask { [suite] in suite[key] = index } }
        }
        #expect(suite[key] > 0 && suite[key] <= 1000)
    }

    @Test func concurrentDifferentKeys() async {
        let keys = (0..<100).map { PreferenceKey<Int>("concurrent_\($0)", default: $0) }
        await withTaskGroup(of: Void.self) { group in
            for (index, key) in keys.enumerated() { group.addTask { [suite] in suite[key] = index * 100 } }
        }
        for (index, key) in keys.enumerated() { #expect(suite[key] == index * 100) }
    }

    @Test func rapidKeyUpdates() async {
        let key = PreferenceKey<Int>("rapidUpdate", default: 0)
        for index in 1...100 { suite[key] = index }
        #expect(suite[key] == 100)
        for index in 1...100 {
            suite[key] = index
            await Task.yield()
        }
        #expect(suite[key] == 100)
    }

    @Test func largeDataStorage() {
        let largeString = String(repeating: "A", count: 100_000)
        let key = PreferenceKey<String>("largeString", default: "", suite: suite)
        suite[key] = largeString
        #expect(suite[key] == largeString)
        #expect(suite[key].count == 100_000)
    }

    @Test func largeArrayStorage() {
        let largeArray = Array(0..<10_000)
        let key = PreferenceKey<[Int]>("largeArray", default: [], suite: suite)
        suite[key] = largeArray
        #expect(suite[key] == largeArray)
        #expect(suite[key].count == 10_000)
    }

    @Test func largeDictionaryStorage() {
        let largeDictionary = Dictionary(uniqueKeysWithValues: (0..<1000).map { ("key_\($0)", $0) })
        let key = PreferenceKey<[String: Int]>("largeDictionary", default: [:], suite: suite)
        suite[key] = largeDictionary
        #expect(suite[key] == largeDictionary)
        #expect(suite[key].count == 1000)
    }

    /// Not upstream's: the three large values of the tests above, written to a suite file and
    /// read back from it.
    @Test func largeValuesSurviveAWriteAndARead() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("large.plist")
        let writer = try PreferenceSuite(fileURL: file)
        let largeString = String(repeating: "A", count: 100_000)
        let largeArray = Array(0..<10_000)
        let largeDictionary = Dictionary(uniqueKeysWithValues: (0..<1000).map { ("key_\($0)", $0) })
        writer[PreferenceKey<String>("largeString", default: "")] = largeString
        writer[PreferenceKey<[Int]>("largeArray", default: [])] = largeArray
        writer[PreferenceKey<[String: Int]>("largeDictionary", default: [:])] = largeDictionary
        try await writer.flush()
        let values = try readSuiteFile(file)
        #expect(values["largeString"]?.get(String.self) == largeString)
        #expect(values["largeArray"]?.get([Int].self) == largeArray && values["largeDictionary"]?.get([String: Int].self) == largeDictionary)
    }

    @Test func deepNesting() {
        typealias NestedDict = [String: [String: [String: Int]]]
        let key = PreferenceKey<NestedDict>("deepNesting", default: [:])
        suite[key] = ["level1": ["level2": ["level3": 42]]]
        #expect(suite[key]["level1"]?["level2"]?["level3"] == 42)
    }

    @Test func manyKeys() {
        let keys = (0..<100).map { PreferenceKey<String>("manyKeys_\($0)", default: "default_\($0)", suite: suite) }
        for (index, key) in keys.enumerated() { suite[key] = "value_\(index)" }
        for (index, key) in keys.enumerated() { #expect(suite[key] == "value_\(index)") }
        for key in keys.prefix(50) { key.reset() }
        for (index, key) in keys.prefix(50).enumerated() { #expect(suite[key] == "default_\(index)") }
        for index in 50..<100 { #expect(suite[keys[index]] == "value_\(index)") }
    }

    @Test func concurrentObservations() async throws {
        let key = PreferenceKey<Int>("observationStress", default: 0)
        let count = Recorder<Int>()
        let observations = (0..<10).map { _ in suite.observe(key) { count.record($0.newValue) } }
        defer { observations.forEach { $0.cancel() } }
        for index in 1...10 {
            suite[key] = index
            await Task.yield()
        }
        // Each of 10 observers sees each of 10 updates.
        #expect(try await count.wait(for: 100).count == 100)
    }

    @Test func memoryPressure() async {
        for iteration in 0..<10 {
            let keys = (0..<100).map { PreferenceKey<Data>("memoryTest_\(iteration)_\($0)", default: Data(repeating: 0, count: 1000)) }
            for key in keys { suite[key] = Data(repeating: 0xFF, count: 10_000) }
            suite.removeAll()
            #expect(suite.storedValues.isEmpty)
            await Task.yield()
        }
    }

    @Test func edgeCaseEmptyValues() {
        let stringKey = PreferenceKey<String>("emptyString", default: "default")
        suite[stringKey] = ""
        #expect(suite[stringKey].isEmpty)
        let arrayKey = PreferenceKey<[Int]>("emptyArray", default: [1, 2, 3])
        suite[arrayKey] = []
        #expect(suite[arrayKey].isEmpty)
        let dictKey = PreferenceKey<[String: Int]>("emptyDict", default: ["a": 1])
        suite[dictKey] = [:]
        #expect(suite[dictKey].isEmpty)
        let setKey = PreferenceKey<Set<String>>("emptySet", default: ["a", "b"])
        suite[setKey] = []
        #expect(suite[setKey].isEmpty)
    }

    @Test func unicodeAndSpecialCharacters() {
        let key = PreferenceKey<String>("unicodeTest", default: "")
        let testStrings = [
            "Hello 世界 🌍", "Emoji: 😀😃😄😁😆", "Arabic: مرحبا بالعالم", "Hebrew: שלום עולם", "Math: ∑∏∫∞", "Symbols: ™®©℗",
            "Zero-width: \u{200B}test\u{200C}string\u{200D}", "Control: \n\r\t", String(repeating: "🦄", count: 1000),
        ]
        for testString in testStrings {
            suite[key] = testString
            #expect(suite[key] == testString)
        }
    }

    @Test func numericEdgeCases() {
        let intKey = PreferenceKey<Int>("intLimits", default: 0)
        suite[intKey] = Int.max
        #expect(suite[intKey] == Int.max)
        suite[intKey] = Int.min
        #expect(suite[intKey] == Int.min)
        let doubleKey = PreferenceKey<Double>("doubleLimits", default: 0.0)
        for value in [Double.infinity, -.infinity, .leastNormalMagnitude, .greatestFiniteMagnitude] {
            suite[doubleKey] = value
            #expect(suite[doubleKey] == value)
        }
        suite[doubleKey] = .nan
        #expect(suite[doubleKey].isNaN)
    }

    @Test func rapidResetCycle() async {
        let key = PreferenceKey<Int>("rapidReset", default: 42, suite: suite)
        for index in 0..<100 {
            suite[key] = index * 100
            #expect(suite[key] == index * 100)
            key.reset()
            #expect(suite[key] == 42)
        }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask { [suite] in suite[key] = index }
                group.addTask { key.reset() }
            }
        }
        let finalValue = suite[key]
        #expect(finalValue == 42 || (0..<50).contains(finalValue))
    }

    @Test func suiteInterference() {
        let suite1 = PreferenceSuite.inMemory(name: "stress_suite1")
        let suite2 = PreferenceSuite.inMemory(name: "stress_suite2")
        let key1 = PreferenceKey<String>("suite1_key", default: "default1", suite: suite1)
        let key2 = PreferenceKey<String>("suite2_key", default: "default2", suite: suite2)
        suite1[key1] = "value1"
        suite2[key2] = "value2"
        #expect(suite1[key1] == "value1" && suite2[key2] == "value2")
        key1.reset()
        #expect(suite1[key1] == "default1" && suite2[key2] == "value2")
    }
}
