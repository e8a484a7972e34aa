import Dispatch
import Foundation
import SharedPrefs
import SharedPrefsTestSupport
import Testing

// The documented examples of SwiftVault (docs/UserDefaultWrappers.md), PDefaults (README) and
// SwiftDefaults (README), each as a Linux user ports it (the mapping in "Coming from SwiftVault,
// PDefaults or SwiftDefaults"), with the outcome its documentation promises. Combine's `sink`
// becomes `$x.observe { … }`, which subscribes on the line that asks as `sink` does.

/// SwiftVault's types, as its documentation declares them.
enum SwiftVaultPort {
    enum UserDefaultsKeys: String {
        case username = "user_name"
        case loginCount = "login_count"
        case isFirstLaunch = "is_first_launch"
    }

    struct UserProfile: Codable, Equatable, PreferenceValue {
        let name: String
        let age: Int
        let preferences: [String: String]
    }

    enum Theme: Codable, Equatable, PreferenceValue {
        case light
        case dark
        case custom(primaryColor: String, secondaryColor: String)
    }

    struct TodoItem: Codable, Equatable, PreferenceValue {
        let id: UUID
        let title: String
        let isCompleted: Bool
    }
}

/// SwiftDefaults' types, as its README declares them.
enum SwiftDefaultsPort {
    enum Foo: String, PreferenceValue { case foo, bar }
    struct Pair: Codable, Equatable, PreferenceValue {
        let a: Int
        let b: String
    }
    /// A custom converter's type: stored as its `"x,y"` text, as SwiftDefaults' encoder and
    /// decoder closures would store it.
    struct Point: Equatable, PreferenceValue {
        var x: Int, y: Int
        var plistValue: PlistValue? { .string("\(x),\(y)") }
        init(x: Int, y: Int) { (self.x, self.y) = (x, y) }
        init?(plistValue: PlistValue) {
            guard case .string(let text) = plistValue else { return nil }
            let parts = text.split(separator: ",").compactMap { Int($0) }
            guard parts.count == 2 else { return nil }
            (x, y) = (parts[0], parts[1])
        }
    }
}

@Suite("Ported: SwiftVault, PDefaults and SwiftDefaults")
struct ParityIIIPortedTests {
    // MARK: SwiftVault

    @Test func swiftVaultUserDefaultWithStringAndTypeSafeKeysOptionalsAndCollections() throws {
        let directory = try TemporaryDirectory()
        let suite = try PreferenceSuite(fileURL: directory.file("settings.plist"))
        @Preference("username", suite: suite) var username: String = "guest"
        @Preference(SwiftVaultPort.UserDefaultsKeys.loginCount, suite: suite) var loginCount: Int = 0
        @Preference(SwiftVaultPort.UserDefaultsKeys.isFirstLaunch, suite: suite) var isFirstLaunch: Bool = true
        @Preference("lastLoginDate", suite: suite) var lastLoginDate: Date?
        @Preference("favoriteColors", suite: suite) var favoriteColors: [String] = ["blue", "green"]
        #expect(username == "guest" && loginCount == 0 && isFirstLaunch && lastLoginDate == nil && favoriteColors == ["blue", "green"])
        username = "ada"
        loginCount += 1
        isFirstLaunch = false
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        lastLoginDate = now
        favoriteColors.append("red")
        #expect(suite.synchronize())
        // Under the enum's raw values, in the file.
        let file = try readSuiteFile(directory.file("settings.plist"))
        #expect(file["username"] == "ada" && file["login_count"] == 1 && file["is_first_launch"] == false)
        #expect(file["lastLoginDate"] == .date(now) && file["favoriteColors"] == ["blue", "green", "red"])
    }

    @Test func swiftVaultResetReturnsTheDefault() throws {
        @Preference("counter", suite: .inMemory()) var counter: Int = 0
        counter = 42
        #expect(counter == 42)
        $counter.reset()
        #expect(counter == 0)
    }

    @Test func swiftVaultCodableValuesRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let suite = try PreferenceSuite(fileURL: directory.file("settings.plist"))
        typealias Port = SwiftVaultPort
        @Preference("userProfile", suite: suite) var profile = Port.UserProfile(name: "Guest", age: 0, preferences: [:])
        @Preference("appTheme", suite: suite) var theme: Port.Theme = .light
        @Preference("todoItems", suite: suite) var todoItems: [Port.TodoItem] = []
        @Preference("currentProject", suite: suite) var currentProject: Port.UserProfile?
        profile = Port.UserProfile(name: "Ada", age: 36, preferences: ["lang": "en"])
        theme = .custom(primaryColor: "#fff", secondaryColor: "#000")
        let item = Port.TodoItem(id: UUID(), title: "Port SwiftVault", isCompleted: true)
        todoItems = [item]
        currentProject = profile
        #expect(suite.synchronize())
        // What the file holds reads back as the same values.
        let reread = PreferenceSuite.inMemory()
        for (key, value) in try readSuiteFile(directory.file("settings.plist")) { reread.set(value, forKey: key) }
        #expect(reread[PreferenceKey("userProfile", default: Port.UserProfile(name: "", age: 0, preferences: [:]))] == profile)
        #expect(reread[PreferenceKey("appTheme", default: Port.Theme.light)] == .custom(primaryColor: "#fff", secondaryColor: "#000"))
        #expect(reread[PreferenceKey("todoItems", default: [Port.TodoItem]())] == [item])
        #expect(reread[PreferenceKey<Port.UserProfile?>("currentProject")] == profile)
    }

    /// SwiftVault removes a value that does not decode and uses the default. A suite other
    /// processes share keeps it: another process (a newer version of the type) may read it. The
    /// reader gets the default, and the mismatch is reported once, to the log and to failure
    /// observers.
    @Test func aCorruptCodableValueFallsBackToTheDefaultIsReportedAndIsKept() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("settings.plist")
        try await child("set", file.path, "complexData=str:not a profile")
        let suite = try PreferenceSuite(fileURL: file)
        let failures = Recorder<PreferenceError>()
        let token = suite.observeFailures { failures.record($0) }
        defer { token.cancel() }
        let fallback = SwiftVaultPort.UserProfile(name: "Guest", age: 0, preferences: [:])
        @Preference("complexData", suite: suite) var complexData = fallback
        #expect(complexData == fallback)
        let reported = try await failures.wait(for: 1)
        #expect(reported[0].code == .unsupportedValue && reported[0].message.contains("complexData"))
        #expect(suite.value(forKey: "complexData") == "not a profile")
        #expect(try readSuiteFile(file)["complexData"] == "not a profile")
    }

    @Test func swiftVaultMockStoreIsAnInMemorySuite() {
        @Preference("testKey", suite: .inMemory()) var testValue: String = "default"
        #expect(testValue == "default")
        testValue = "set"
        #expect(testValue == "set")
    }

    @Test func swiftVaultClearAndRemoveByPrefix() throws {
        let suite = PreferenceSuite.inMemory()
        for key in ["temp_a", "temp_b", "user_7_theme", "kept"] { suite.set(1, forKey: key) }
        suite.removeValues(withPrefix: "temp_")
        #expect(Set(suite.storedValues.keys) == ["user_7_theme", "kept"])
        suite.removeValues(withPrefix: "user_\(7)_")
        #expect(Set(suite.storedValues.keys) == ["kept"])
        suite.removeAll()
        #expect(suite.storedValues.isEmpty)
    }

    /// `isFirstLaunch()` for a suite processes share: of four processes asking at once, exactly
    /// one sees the first launch, and later ones do not.
    @Test func exactlyOneProcessSeesTheFirstLaunch() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("group.plist")
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<4 { group.addTask { try await run(childExecutable, ["first-launch", file.path]).output } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.filter { $0.contains("first true") }.count == 1, "\(answers)")
        #expect(answers.filter { $0.contains("first false") }.count == 3, "\(answers)")
        #expect(try PreferenceSuite(fileURL: file).isFirstLaunch() == false)
    }

    /// `$apiEndpoint.sink { … }` and `Publishers.CombineLatest`: `observe` and `updates`.
    @Test func swiftVaultPublishedWrappersHearTheirChanges() async throws {
        let suite = PreferenceSuite.inMemory()
        @Preference("apiEndpoint", suite: suite) var apiEndpoint: String = "https://api.example.com"
        @Preference("refreshInterval", suite: suite) var refreshInterval: Double = 60
        let endpoints = Recorder<String>()
        let token = $apiEndpoint.observe { endpoints.record($0) }
        defer { token.cancel() }
        let both = suite.updates(PreferenceKey<String>("apiEndpoint", default: ""), PreferenceKey<Double>("refreshInterval", default: 0))
        apiEndpoint = "https://eu.example.com"
        refreshInterval = 30
        #expect(try await endpoints.wait(for: 2) == ["https://api.example.com", "https://eu.example.com"])
        for await (endpoint, interval) in both where endpoint == "https://eu.example.com" && interval == 30 { break }
    }

    @Test func swiftVaultWrapperHearsAnotherProcess() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("shared.plist")
        let suite = try PreferenceSuite(fileURL: file)
        @Preference("sharedSetting", suite: suite) var sharedSetting: String = "default"
        let heard = Recorder<String>()
        let token = $sharedSetting.observe { heard.record($0) }
        defer { token.cancel() }
        try await child("set", file.path, "sharedSetting=str:from the helper")
        #expect(try await heard.wait(for: 2) == ["default", "from the helper"])
        #expect(sharedSetting == "from the helper")
    }

    // MARK: PDefaults

    /// "Use": `$name.sink { print("Name: \($0)") }`, then `name = "François"`.
    @Test func pDefaultsFirstExamplePrintsBothNames() async throws {
        @Preference("user.name", suite: .inMemory()) var name = "Pitt"
        let printed = Recorder<String>()
        let cancellable = $name.observe { printed.record("Name: \($0)") }
        defer { cancellable.cancel() }
        name = "François"
        #expect(try await printed.wait(for: 2) == ["Name: Pitt", "Name: François"])
    }

    /// The same with a sequence: `values()` subscribes on its line, however late the loop starts.
    @Test func aSequenceSubscribedBeforeASetHearsIt() async throws {
        @Preference("user.name", suite: .inMemory()) var name = "Pitt"
        let names = $name.values()
        name = "François"
        var heard: [String] = []
        for await value in names {
            heard.append(value)
            if value == "François" { break }
        }
        #expect(heard == ["Pitt", "François"])
    }

    /// "Default value and nil": `nil` reads the default again.
    @Test func pDefaultsNilFallsBackToTheDefault() async throws {
        @Preference("user.name", suite: .inMemory()) var name: String? = "Pitt"
        let printed = Recorder<String?>()
        let cancellable = $name.observe { printed.record($0) }
        defer { cancellable.cancel() }
        name = "François"
        name = nil
        #expect(try await printed.wait(for: 3) == ["Pitt", "François", "Pitt"])
        #expect(name == "Pitt")
    }

    /// "`@Published` like behavior", PDefaults' default: a set through the property is published
    /// before the property holds it. Other changes (the suite's setter, another process) are
    /// heard once held.
    @Test func pDefaultsPublishedOrder() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("order.plist")
        let suite = try PreferenceSuite(fileURL: file)
        @Preference("user.name", suite: suite) var name = "Pitt"
        let printed = Recorder<String>()
        let property = $name
        let cancellable = $name.observe(order: .willSet) { printed.record("Published: \($0) - Property: \(property.wrappedValue)") }
        name = "François"
        name = "Hubert"
        #expect(printed.items == ["Published: Pitt - Property: Pitt", "Published: François - Property: Pitt", "Published: Hubert - Property: François"])
        suite.set("Ada", forKey: "user.name")
        #expect(printed.items.last == "Published: Ada - Property: Ada")
        try await child("set", file.path, "user.name=str:Grace")
        #expect(try await printed.wait(for: 5).last == "Published: Grace - Property: Grace")
        // Told once each, and no more once cancelled.
        cancellable.cancel()
        name = "Linus"
        #expect(printed.items.count == 5)
    }

    /// "CurrentValueSubject like behavior" (`behavior: .didSet`): the property holds the value
    /// published. With `.synchronousLocalChanges` the handler runs before the set returns, so the
    /// property it reads is exactly the value it was given.
    @Test func pDefaultsDidSetOrder() throws {
        let suite = PreferenceSuite.inMemory()
        @Preference("user.name", suite: suite) var name = "Pitt"
        let printed = Recorder<String>()
        let property = $name
        let cancellable = $name.observe(options: [.initial, .synchronousLocalChanges]) { printed.record("Published: \($0) - Property: \(property.wrappedValue)") }
        defer { cancellable.cancel() }
        name = "François"
        name = "Hubert"
        #expect(printed.items == ["Published: Pitt - Property: Pitt", "Published: François - Property: François", "Published: Hubert - Property: Hubert"])
    }

    /// "App group sharing": a change in app B reaches app A's publisher.
    @Test func pDefaultsAppGroupSharingAcrossProcesses() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("com.company.appgroup.plist")
        @Preference("user.name", suite: try PreferenceSuite(fileURL: file)) var name = "Pitt"
        let printed = Recorder<String>()
        let cancellable = $name.observe(options: []) { printed.record("Published: \($0)") }
        defer { cancellable.cancel() }
        try await child("set", file.path, "user.name=str:François")
        #expect(try await printed.wait(for: 1) == ["Published: François"])
    }

    /// "Multiple instances": a change through one reaches the other's publisher, and both read it.
    @Test func pDefaultsMultipleInstancesAgree() async throws {
        let suite = PreferenceSuite.inMemory()
        @Preference("user.name", suite: suite) var name = "Pitt"
        @Preference("user.name", suite: suite) var otherName = "Pitt"
        let heard = Recorder<String>()
        let cancellable = $otherName.observe(options: []) { heard.record($0) }
        defer { cancellable.cancel() }
        name = "François"
        #expect(try await heard.wait(for: 1) == ["François"])
        #expect(otherName == "François")
    }

    /// "Mock": an in-memory suite is never read or written.
    @Test func pDefaultsMockIsAnInMemorySuite() {
        @Preference("user.name", suite: .inMemory()) var name = "Pitt"
        name = "Mocked"
        #expect(name == "Mocked" && $name.suite.fileURL == nil)
    }

    /// "Migration": `_name.migrate(.from(_legacyName))`, by hand: once, only when the source
    /// holds a value, which is then removed.
    @Test func pDefaultsMigrationByHand() throws {
        let standard = PreferenceSuite.inMemory(name: "standard")
        let appGroupSuite = PreferenceSuite.inMemory(name: "group")
        standard.set("Legacy", forKey: "user.name")
        @Preference("user.name", suite: standard) var legacyName = "Pitt"
        @Preference("user.first-name", suite: appGroupSuite) var name = "Pete"
        for _ in 0..<2 where standard.storedValues["user.name"] != nil {
            name = legacyName
            $legacyName.reset()
        }
        #expect(name == "Legacy" && legacyName == "Pitt" && standard.storedValues.isEmpty)
        // With a mapping: `_legacyCount.migrate(to: _index, { $0 - 1 })`.
        standard.set(5, forKey: "count")
        @Preference("count", suite: standard) var legacyCount = 1
        @Preference("index", suite: appGroupSuite) var index = 0
        for _ in 0..<2 where standard.storedValues["count"] != nil {
            index = legacyCount - 1
            $legacyCount.reset()
        }
        #expect(index == 4 && legacyCount == 1)
    }

    /// "How to expose the publisher through a protocol": the values as a sequence.
    @Test func pDefaultsPublisherThroughAProtocol() async throws {
        final class Service: ServiceProtocol {
            @Preference("user.name", suite: .inMemory()) var name: String = "Pitt"
            var nameValues: AsyncStream<String> { $name.values() }
        }
        let service = Service()
        var iterator = service.nameValues.makeAsyncIterator()
        service.name = "François"
        #expect(await iterator.next() == "Pitt")
        #expect(await iterator.next() == "François")
    }

    // MARK: SwiftDefaults

    /// "Native types", "Accessing and modifying the values": `value(for: Int.self, key:)` is a
    /// key of an optional type; `nil` and `remove()` remove the key.
    @Test func swiftDefaultsValueSetNilAndRemove() throws {
        let defaults = PreferenceSuite.inMemory()
        let myValue = PreferenceKey<Int?>("key", suite: defaults)
        defaults[myValue] = 3
        #expect(defaults.storedValues == ["key": 3])
        defaults[myValue] = nil
        #expect(defaults.storedValues.isEmpty)
        defaults[myValue] = 3
        myValue.reset()  // remove()
        #expect(defaults[myValue] == nil)
        // A stored value of another type reads as nil.
        defaults.set("foo", forKey: "key")
        #expect(defaults[myValue] == nil)
    }

    /// "Observers": called for every change of the key however it happens (a value object, the
    /// suite's untyped API, another process), on the queue given (SwiftDefaults: the main queue).
    @Test func swiftDefaultsObserverHearsEveryChangeOnItsQueue() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("defaults.plist")
        let defaults = try PreferenceSuite(fileURL: file)
        let key = PreferenceKey<Int?>("key", suite: defaults)
        let queue = DispatchQueue(label: "observer")
        let onQueue = Recorder<Bool>()
        let changes = Recorder<String>()
        var observation: PreferenceObservation? = defaults.observe(key, queue: queue) { change in
            onQueue.record(DispatchQueue.getSpecific(key: ParityIIIPortedTests.queueKey) == "observer")
            changes.record("key -> \(change.newValue.map(String.init) ?? "nil")")
        }
        queue.setSpecific(key: Self.queueKey, value: "observer")
        defaults[key] = 1
        defaults.set(2, forKey: "key")
        try await child("set", file.path, "key=int:3")
        #expect(try await changes.wait(for: 3) == ["key -> 1", "key -> 2", "key -> 3"])
        #expect(onQueue.items.allSatisfy { $0 })
        observation = nil  // `invalidate()`
        // Another observer on the same serial queue hears the next change after anything the
        // first one could still have been handed.
        let after = Recorder<Int?>()
        let later = defaults.observe(key, queue: queue) { after.record($0.newValue) }
        defer { later.cancel() }
        defaults[key] = 4
        #expect(try await after.wait(for: 1) == [4])
        #expect(observation == nil && changes.items.count == 3)
    }

    static let queueKey = DispatchSpecificKey<String>()

    /// "Shadow values": two value objects of one key and type see the same value.
    @Test func swiftDefaultsShadowValuesAgree() {
        let defaults = PreferenceSuite.inMemory()
        let value1 = PreferenceKey<Int?>("key", suite: defaults)
        let value2 = PreferenceKey<Int?>("key", suite: defaults)
        defaults[value1] = 5
        #expect(defaults[value2] == 5 && value1 == value2)
    }

    /// "Default Values": `defaultValue("My string", for: "key")`, whose value is not optional,
    /// beside a plain value object of the same key that still reads `nil` when nothing is
    /// stored (a closure default is not registered for every reader of the key).
    @Test func swiftDefaultsDefaultedValueLeavesOtherReadersAlone() {
        let defaults = PreferenceSuite.inMemory()
        let myDefaultValue = PreferenceKey<String>("key", suite: defaults, default: { "My string" })
        let plain = PreferenceKey<String?>("key", suite: defaults)
        let foo: String = defaults[myDefaultValue]
        #expect(foo == "My string" && defaults[plain] == nil)
        defaults.set(3, forKey: "key")  // not a String: the default
        #expect(defaults[myDefaultValue] == "My string")
    }

    /// "Debugging": a readable description.
    @Test func swiftDefaultsDescription() {
        #expect("\(PreferenceKey<Int?>("key"))" == "PreferenceKey<Optional<Int>>(\"key\")")
        #expect("\(PreferenceKey<Int>("volume", default: 0, suite: .inMemory(name: "player")))" == "PreferenceKey<Int>(\"volume\", suite: player)")
    }

    /// "Converters": an enum by raw value, a Codable value (SwiftDefaults stores JSON data, which
    /// is read too), arrays of enums, and a custom converter.
    @Test func swiftDefaultsConverters() throws {
        typealias Port = SwiftDefaultsPort
        let defaults = PreferenceSuite.inMemory()
        let myValue = PreferenceKey<Port.Foo?>("key", suite: defaults)
        defaults[myValue] = .bar
        #expect(defaults[myValue] == .bar && defaults.value(forKey: "key") == "bar")
        let codable = PreferenceKey<Port.Pair?>("codable", suite: defaults)
        defaults.set(PlistValue.data(Data(#"{"a":2,"b":"Two!"}"#.utf8)), forKey: "codable")  // as SwiftDefaults wrote it
        #expect(defaults[codable] == Port.Pair(a: 2, b: "Two!"))
        let array = PreferenceKey<[Port.Foo]?>("array", suite: defaults)
        defaults[array] = [.bar, .foo]
        #expect(defaults[array] == [.bar, .foo] && defaults.value(forKey: "array") == ["bar", "foo"])
        let custom = PreferenceKey<Port.Point?>("point", suite: defaults)
        defaults[custom] = Port.Point(x: 3, y: 4)
        #expect(defaults.value(forKey: "point") == "3,4" && defaults[custom] == Port.Point(x: 3, y: 4))
    }
}

/// PDefaults' "How to expose the publisher through a protocol", with a sequence for the publisher.
protocol ServiceProtocol {
    var name: String { get set }
    var nameValues: AsyncStream<String> { get }
}
