import Foundation
import SharedPrefsObservation
import SharedPrefsTestSupport
import Testing

// fatbobman/ObservableDefaults' @ObservableCloud tests, ported: ObservableCloudTests.swift (with
// the cloud models of Utils/MockObject.swift), CloudOptionalCodableTest.swift, and the cloud half
// of CompatibilityTests.swift. Their development mode is an in-memory suite here, as their memory
// storage is. Their `.testMode` trait backs a model with a mock store and posts
// NSUbiquitousKeyValueStore's change notification; here the model is given a suite file
// (`init(suite:)`, where an etcd suite goes across machines) and another process writes the
// change. Their three production-mode tests, which they build only without DEBUG, run here in
// every build. `tracking(model, \.x, .direct)` is a `Tracker` of `x`.

enum ObservableCloudPort {
    typealias FontStyle = ObservableDefaultsPort.FontStyle

    @ObservableCloud
    class MockModelCloud {
        var name: String = "Test" {
            willSet {
                setResult.append("willSet: \(newValue)")
            }
            didSet {
                setResult.append("didSet: \(oldValue)")
            }
        }

        @ObservableOnly
        var observableOnly: String = "ObservableOnly" {
            willSet {
                setResult.append("willSet: \(newValue)")
            }
            didSet {
                setResult.append("didSet: \(oldValue)")
            }
        }

        @Ignore
        var ignore: String = "Ignore" {
            willSet {
                setResult.append("willSet: \(newValue)")
            }
            didSet {
                setResult.append("didSet: \(oldValue)")
            }
        }

        @Ignore
        var setResult: [String] = []
    }

    @ObservableCloud(observeFirst: true)
    class MockModelCloudObserveFirst {
        @CloudBacked
        var name: String = "Test"

        var observableOnly: String = "ObservableOnly"

        @Ignore
        var ignore: String = "Ignore"
    }

    @ObservableCloud(observeFirst: true)
    class MockModelCloudObserveFirstWithObservers {
        @CloudBacked
        var name: String = "Test"

        var observableOnly: String = "ObservableOnly" {
            willSet {
                setResult.append("willSet: \(newValue)")
            }
            didSet {
                setResult.append("didSet: \(oldValue)")
            }
        }

        @Ignore
        var setResult: [String] = []
    }

    @ObservableCloud
    class MockModelCloudKeyName {
        @CloudBacked(keyValueStoreKey: "rename-by-backed-key")
        var renameByBackedKey: String = "Test"

        @CloudKey(keyValueStoreKey: "rename-by-defaults-key")
        var renameByDefaultsKey: String = "Test"

        @CloudKey(keyValueStoreKey: "mix-key-defaults-key")
        @CloudBacked(keyValueStoreKey: "mix-key-backed-key")
        var mixKey: String = "Test"
    }

    @ObservableCloud
    class MockModelCloudCodable {
        var style: FontStyle = .style1
        var explicitStyle: FontStyle = FontStyle.style2

        @Ignore
        var setResult: [String] = []
    }

    @ObservableCloud
    class MockModelCloudOptional {
        var name: String?
        var optionalName: String? = nil {
            willSet {
                setResult.append("willSet: \(String(describing: newValue))")
            }
            didSet {
                setResult.append("didSet: \(String(describing: oldValue))")
            }
        }

        var optionalAge: Int? = 30

        var optionalWithoutInitializer: Double?

        @CloudKey(keyValueStoreKey: "cloud-custom-optional-key")
        var optionalWithCustomKey: Bool? = false

        var optionalInt64: Int64? = Int64(9223372036854775807)

        var optionalFloat: Float? = Float(3.14)
        var optionalBool: Bool? = true
        var optionalData: Data? = "CloudTest".data(using: .utf8)
        var optionalDate: Date? = Date(timeIntervalSince1970: 1640995200)  // 2022-01-01

        @Ignore
        var setResult: [String] = []
    }

    @MainActor
    @ObservableCloud
    class MockModelCloudMainActor {
        var name: String = "Test" {
            willSet {
                setResult.append("willSet: \(newValue)")
            }
            didSet {
                setResult.append("didSet: \(oldValue)")
            }
        }

        var count: Int = 0

        @CloudKey(keyValueStoreKey: "main-actor-custom-key")
        var customKey: String = "CustomValue"

        @Ignore
        var setResult: [String] = []
    }

    // CloudOptionalCodableTest's types.
    struct CloudUser: Codable, CodableCloudPropertyListValue, Equatable {
        var name: String
        var age: Int
    }

    struct CloudImage: Codable, CodableCloudPropertyListValue, Equatable {
        var raw: Data
    }

    struct CloudUserWithImage: Codable, CodableCloudPropertyListValue, Equatable {
        var name: String
        var image: CloudImage
    }

    @ObservableCloud(developmentMode: true)
    class CloudSettingsWithOptionalCodable {
        var optionalUser: CloudUser? = nil
    }

    @ObservableCloud(developmentMode: true)
    class CloudSettingsWithNullable {
        var user: Nullable<CloudUser> = Nullable.none
        var userWithImage: Nullable<CloudUserWithImage> = nil
    }

    // CompatibilityTests' cloud half.
    struct LegacyCloudValue: CodableCloudPropertyListValue, Equatable {
        var text: String = "legacy"
    }

    @ObservableCloud(developmentMode: true)
    class LegacyCloudStore {
        var value = LegacyCloudValue()
    }
}

// Safe in these tests: one task touches a model at a time; the trackers only read.
extension ObservableCloudPort.MockModelCloud: @unchecked Sendable {}
extension ObservableCloudPort.MockModelCloudObserveFirst: @unchecked Sendable {}
extension ObservableCloudPort.MockModelCloudOptional: @unchecked Sendable {}
extension ObservableCloudPort.MockModelCloudCodable: @unchecked Sendable {}

@Suite("ObservableDefaults' @ObservableCloud tests, ported")
struct ObservableCloudPortedTests {
    typealias OC = ObservableCloudPort

    // MARK: Development mode

    @Test("Property Observable")
    func propertyObservable() {
        let model = OC.MockModelCloud(developmentMode: true)
        let name = Tracker("name") { _ = model.name }
        model.name = "Test2"
        #expect(name.fired.items == ["name"])
    }

    @Test("Ignore Macro")
    func ignoreMacro() {
        let model = OC.MockModelCloud(developmentMode: true)
        let ignore = Tracker("ignore") { _ = model.ignore }
        model.ignore = "Test2"
        #expect(ignore.fired.items.isEmpty)
    }

    @Test("Ignore Same Value")
    func ignoreSameValueForBackedProperty() {
        let model = OC.MockModelCloud(developmentMode: true)
        let name = Tracker("name") { _ = model.name }
        model.name = "Test"  // same value
        #expect(name.fired.items.isEmpty)

        let observableOnly = Tracker("observableOnly") { _ = model.observableOnly }
        model.observableOnly = "ObservableOnly"  // same value
        #expect(observableOnly.fired.items.isEmpty)
    }

    /// Theirs expects willSet/didSet on a backed property not to run; here they run on this
    /// instance's sets (the documented difference, as for `@ObservableDefaults`).
    @Test("WillSet and DidSet run for Backed Property in Development Mode (ObservableDefaults: they do not)")
    func willSetAndDidSetRunForBackedPropertyInDevelopmentMode() {
        let model = OC.MockModelCloud(developmentMode: true)
        model.name = "test1"
        #expect(model.setResult == ["willSet: test1", "didSet: Test"])
    }

    @Test("WillSet and DidSet for Observable Only Property in Development Mode")
    func willSetAndDidSetForObservableOnlyPropertyInDevelopmentMode() {
        let model = OC.MockModelCloud(developmentMode: true)
        model.observableOnly = "test1"
        #expect(model.setResult == ["willSet: test1", "didSet: ObservableOnly"])
    }

    @Test("WillSet and DidSet for Ignore Property")
    func willSetAndDidSetForIgnoreProperty() {
        let model = OC.MockModelCloud(developmentMode: true)
        model.ignore = "test1"
        #expect(model.setResult == ["willSet: test1", "didSet: Ignore"])
    }

    /// Theirs reads nil after `optionalAge = nil` and the like, because their memory storage keeps
    /// a nil; here nil removes the key in every mode, so an optional with a default reads its
    /// default again, as `@ObservableDefaults` properties do in both libraries.
    @Test("Optional Property Support in Development Mode")
    func optionalPropertySupportInDevelopmentMode() {
        let model = OC.MockModelCloudOptional(developmentMode: true)
        #expect(model.name == nil && model.optionalName == nil && model.optionalAge == 30)
        #expect(model.optionalWithoutInitializer == nil && model.optionalWithCustomKey == false)
        #expect(model.optionalInt64 == Int64(9223372036854775807) && model.optionalFloat == Float(3.14))
        #expect(model.optionalBool == true && model.optionalData == "CloudTest".data(using: .utf8))
        #expect(model.optionalDate == Date(timeIntervalSince1970: 1640995200))

        let optionalName = Tracker("optionalName") { _ = model.optionalName }
        model.optionalName = "CloudTestName"
        #expect(model.optionalName == "CloudTestName" && optionalName.fired.items == ["optionalName"])

        model.optionalAge = nil
        #expect(model.optionalAge == 30, "nil removes the key: the default again")
        model.optionalAge = 30
        #expect(model.optionalAge == 30)

        model.optionalWithoutInitializer = 2.718
        #expect(model.optionalWithoutInitializer == 2.718)

        model.optionalInt64 = nil
        model.optionalFloat = nil
        model.optionalBool = nil
        model.optionalData = nil
        model.optionalDate = nil
        #expect(model.optionalInt64 == Int64(9223372036854775807) && model.optionalFloat == Float(3.14) && model.optionalBool == true)
        #expect(model.optionalData == "CloudTest".data(using: .utf8) && model.optionalDate == Date(timeIntervalSince1970: 1640995200))

        model.optionalInt64 = 12345
        #expect(model.optionalInt64 == 12345)
        model.optionalFloat = Float(2.718)
        #expect(model.optionalFloat == Float(2.718))
        model.optionalBool = false
        #expect(model.optionalBool == false)
        let newData = "NewCloudTest".data(using: .utf8)
        model.optionalData = newData
        #expect(model.optionalData == newData)
        let newDate = Date(timeIntervalSince1970: 1672531200)  // 2023-01-01
        model.optionalDate = newDate
        #expect(model.optionalDate == newDate)
    }

    @Test("Codable Type with Static Properties Support in Development Mode")
    func codableTypeWithStaticPropertiesSupportInDevelopmentMode() {
        let model = OC.MockModelCloudCodable(developmentMode: true)
        #expect(model.style == .style1 && model.explicitStyle == .style2)

        let style = Tracker("style") { _ = model.style }
        model.style = .style3
        #expect(model.style == .style3 && style.fired.items == ["style"])

        model.explicitStyle = .style1
        #expect(model.explicitStyle == .style1)

        let newStyle = OC.FontStyle(size: 50, weight: .bold, id: 4)
        model.style = newStyle
        #expect(model.style == newStyle)
    }

    /// Theirs expects `setResult` to stay empty (backed properties run no willSet/didSet there).
    @MainActor
    @Test("MainActor Support in Development Mode")
    func mainActorSupportInDevelopmentMode() {
        let model = OC.MockModelCloudMainActor(developmentMode: true)
        #expect(model.name == "Test" && model.count == 0 && model.customKey == "CustomValue")
        model.name = "MainActorTest"
        model.count = 42
        model.customKey = "UpdatedValue"
        #expect(model.name == "MainActorTest" && model.count == 42 && model.customKey == "UpdatedValue")
        #expect(model.setResult == ["willSet: MainActorTest", "didSet: Test"])
    }

    // MARK: Their test mode: a store shared with another process

    @Test("Response to NSUbiquitousKeyValueStore changes from Notification")
    func responseToExternalChanges() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("cloud.plist")
        let model = OC.MockModelCloud(suite: try PreferenceSuite(fileURL: file), developmentMode: false)
        let name = Tracker("name") { _ = model.name }
        try await child("set", file.path, "name=Test2")
        _ = try await name.fired.wait(for: 1)
        #expect(model.name == "Test2")
    }

    @Test("Prefix")
    func prefix() {
        let suite = PreferenceSuite.inMemory()
        let model = OC.MockModelCloud(suite: suite, prefix: "test_")
        model.name = "Test2"
        #expect(suite.string(forKey: "test_name") == "Test2")
    }

    @Test("Observe First")
    func observeFirst() {
        let suite = PreferenceSuite.inMemory()
        let model = OC.MockModelCloudObserveFirst(suite: suite, developmentMode: false)
        model.observableOnly = "Test2"
        #expect(suite.string(forKey: "observableOnly") == nil)
    }

    @Test("Observe First ObservableOnly supports WillSet and DidSet")
    func observeFirstObservableOnlySupportsWillSetAndDidSet() {
        let model = OC.MockModelCloudObserveFirstWithObservers(suite: .inMemory(), developmentMode: false)
        model.observableOnly = "Test2"
        #expect(model.setResult == ["willSet: Test2", "didSet: ObservableOnly"])
    }

    @Test("Specify Key Name")
    func specifyKeyName() {
        let suite = PreferenceSuite.inMemory()
        let model = OC.MockModelCloudKeyName(suite: suite, developmentMode: false)
        model.renameByBackedKey = "Test2"
        #expect(suite.string(forKey: "rename-by-backed-key") == "Test2")
        model.renameByDefaultsKey = "Test3"
        #expect(suite.string(forKey: "rename-by-defaults-key") == "Test3")
        model.mixKey = "Test4"
        #expect(suite.string(forKey: "mix-key-backed-key") == "Test4")
    }

    @Test("WillSet and DidSet run for Backed Property (ObservableDefaults: they do not)")
    func willSetAndDidSetRunForBackedProperty() {
        let model = OC.MockModelCloud(suite: .inMemory(), developmentMode: false)
        model.name = "test1"
        #expect(model.setResult == ["willSet: test1", "didSet: Test"])
    }

    @Test("Default value never change after initialization even remove from NSUbiquitousKeyValueStore")
    func defaultValueNeverChange() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("cloud.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let model = OC.MockModelCloud(suite: suite, developmentMode: false)
        model.name = "Test2"
        try await suite.flush()
        let name = Tracker("name") { _ = model.name }
        try await child("set", file.path, "name=-")
        _ = try await name.fired.wait(for: 1)
        #expect(model.name == "Test", "initial value never change after initialization")
    }

    @Test("Optional Property Support in Production Mode")
    func optionalPropertySupportInProductionMode() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("cloud.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let model = OC.MockModelCloudOptional(suite: suite, developmentMode: false)
        #expect(model.name == nil && model.optionalName == nil && model.optionalAge == 30)
        #expect(model.optionalWithoutInitializer == nil && model.optionalWithCustomKey == false)

        model.optionalName = "ProductionCloudName"
        #expect(model.optionalName == "ProductionCloudName")
        model.optionalAge = 25
        #expect(model.optionalAge == 25)
        #expect(suite.object(forKey: "optionalName") as? String == "ProductionCloudName")
        #expect(suite.object(forKey: "optionalAge") as? Int == 25)

        model.optionalWithCustomKey = true
        #expect(suite.object(forKey: "cloud-custom-optional-key") as? Bool == true)
        try await suite.flush()

        let optionalName = Tracker("optionalName") { _ = model.optionalName }
        try await child("set", file.path, "optionalName=ExternalCloudName")
        _ = try await optionalName.fired.wait(for: 1)
        #expect(model.optionalName == "ExternalCloudName")

        let removedName = Tracker("optionalName") { _ = model.optionalName }
        try await child("set", file.path, "optionalName=-")
        _ = try await removedName.fired.wait(for: 1)
        #expect(model.optionalName == nil)

        let removedAge = Tracker("optionalAge") { _ = model.optionalAge }
        try await child("set", file.path, "optionalAge=-")
        _ = try await removedAge.fired.wait(for: 1)
        #expect(model.optionalAge == 30)
    }

    /// Theirs stores a Codable value as JSON data; here it is a nested property list (the
    /// documented difference), and JSON data written by another program is read.
    @Test("Codable Type with Static Properties Support in Production Mode")
    func codableTypeWithStaticPropertiesSupportInProductionMode() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("cloud.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let model = OC.MockModelCloudCodable(suite: suite, developmentMode: false)
        #expect(model.style == .style1 && model.explicitStyle == .style2)

        model.style = .style3
        #expect(model.style == .style3)
        #expect(suite.value(forKey: "style") == ["size": 40.0, "weight": 2, "id": 3])
        try await suite.flush()

        let style = Tracker("style") { _ = model.style }
        let json = String(decoding: try JSONEncoder().encode(OC.FontStyle.style1), as: UTF8.self)
        let write = try await python(
            "import plistlib, sys, os; d = plistlib.load(open(sys.argv[1], 'rb')); d['style'] = sys.argv[2].encode(); plistlib.dump(d, open(sys.argv[1] + '.new', 'wb')); os.replace(sys.argv[1] + '.new', sys.argv[1])",
            file.path, json)
        #expect(write.status == 0, "\(write.output)")
        _ = try await style.fired.wait(for: 1)
        #expect(model.style == .style1)

        model.style = .style2
        try await suite.flush()
        let removed = Tracker("style") { _ = model.style }
        try await child("set", file.path, "style=-")
        _ = try await removed.fired.wait(for: 1)
        #expect(model.style == .style1, "style should revert to default (.style1) when removed")
    }

    @MainActor
    @Test("MainActor Support in Production Mode")
    func mainActorSupportInProductionMode() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("cloud.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let model = OC.MockModelCloudMainActor(suite: suite, developmentMode: false)
        #expect(model.name == "Test" && model.count == 0 && model.customKey == "CustomValue")

        model.name = "MainActorProductionTest"
        model.count = 100
        #expect(model.name == "MainActorProductionTest" && model.count == 100)
        #expect(suite.string(forKey: "name") == "MainActorProductionTest" && suite.integer(forKey: "count") == 100)

        model.customKey = "MainActorCustom"
        #expect(suite.string(forKey: "main-actor-custom-key") == "MainActorCustom")

        // Their test sleeps 0.1 s here; this one waits for the notification, on the main actor.
        let changed = Recorder<String>()
        withObservationTracking { _ = model.name } onChange: { changed.record("name") }
        try await child("set", file.path, "name=ExternalMainActorName")
        _ = try await changed.wait(for: 1)
        #expect(model.name == "ExternalMainActorName")
    }

    // MARK: CloudOptionalCodableTest and CompatibilityTests

    /// Theirs prints what it reads; this checks it.
    @Test("ObservableCloud optional Codable types assignment behavior")
    func observableCloudOptionalCodableIssue() {
        let settings = OC.CloudSettingsWithOptionalCodable()
        #expect(settings.optionalUser == nil)
        let testUser = OC.CloudUser(name: "John", age: 30)
        settings.optionalUser = testUser
        #expect(settings.optionalUser == testUser)
        settings.optionalUser = nil
        #expect(settings.optionalUser == nil)
    }

    /// Theirs prints what it reads; this checks it.
    @Test("Nullable<T> assignment behavior with ObservableCloud")
    func nullableWithObservableCloud() {
        let settings = OC.CloudSettingsWithNullable()
        #expect(settings.user.value == nil)
        #expect(settings.userWithImage.value == nil)
        #expect(!settings.user.hasValue)
        #expect(!settings.userWithImage.hasValue)

        let user = OC.CloudUser(name: "Alice", age: 25)
        settings.user = Nullable.from(value: user)
        let imageData = Data("cloud test image".utf8)
        let userWithImage = OC.CloudUserWithImage(name: "Bob", image: OC.CloudImage(raw: imageData))
        settings.userWithImage = Nullable.some(userWithImage)
        #expect(settings.user.value == user && settings.userWithImage.value == userWithImage)

        settings.user = Nullable.none
        settings.userWithImage = nil
        #expect(!settings.user.hasValue && !settings.userWithImage.hasValue)
    }

    @Test("Basic demonstration that Nullable works for Cloud")
    func nullableConformsToCodableCloudPropertyListValue() {
        let user = OC.CloudUser(name: "Test", age: 30)
        let nullable: Nullable<OC.CloudUser> = Nullable.from(value: user)

        let _: CodableCloudPropertyListValue = nullable

        #expect(nullable.value?.name == "Test")
        #expect(nullable.hasValue)

        let nilNullable: Nullable<OC.CloudUser> = Nullable.none
        #expect(nilNullable.value == nil)
        #expect(!nilNullable.hasValue)
    }

    @Test
    func cloudCodableCompatibility() {
        let store = OC.LegacyCloudStore()
        store.value = OC.LegacyCloudValue(text: "updated")
        #expect(store.value.text == "updated")
    }
}
