import Foundation
import SharedPrefsObservation
import SharedPrefsTestSupport
import Testing

/// ObservableDefaults' README examples, unchanged but for the import (and a namespace, so that
/// their names do not collide with this target's): a plain `enum Theme: String`, a plain
/// `struct People: Codable` and the marker-protocol spelling all compile and store what they hold.
enum ObservableDefaultsReadme {
    @ObservableDefaults
    class Settings {
        var name: String = "Fatbobman"
        var age: Int = 20
    }

    @ObservableDefaults
    public class LocalSettings {
        @DefaultsKey(userDefaultsKey: "firstName")
        public var name: String = "fat"

        public var age = 109  // Automatically backed by UserDefaults

        @ObservableOnly
        public var height = 190  // Observable only, not persisted

        @Ignore
        public var weight = 10  // Neither observable nor persisted
    }

    @ObservableDefaults(autoInit: false, ignoreExternalChanges: true, prefix: "myApp_")
    class PrefixedSettings {
        @DefaultsKey(userDefaultsKey: "fullName")
        var name: String = "Fatbobman"

        init() {
            observerStarter()  // Start listening for UserDefaults changes
        }
    }

    @ObservableDefaults(observeFirst: true)
    public class ObserveFirstSettings {
        public var name: String = "fat"  // Observable only
        public var age = 109  // Observable only

        @DefaultsBacked(userDefaultsKey: "myHeight")
        public var height = 190  // Observable and persisted to UserDefaults

        @Ignore
        public var weight = 10  // Neither observable nor persisted
    }

    @ObservableDefaults
    class LocalStore {
        var people: People = .init(name: "fat", age: 10)
    }

    struct People: CodableUserDefaultsPropertyListValue {
        var name: String
        var age: Int
    }

    // The same, with no marker at all.
    enum Theme: String { case light, dark }
    struct Person: Codable, Equatable { var name: String; var age: Int }

    @ObservableDefaults
    class PlainTypes {
        var theme: Theme = .light
        var person: Person = .init(name: "fat", age: 10)
        var lastTheme: Theme? = nil
        var lastPerson: Person? = nil
    }
}

/// What ObservableDefaults' test models declare and this macro used to refuse: observers on a
/// persisted property, an optional without `= nil`, a prefix with white space around it.
@ObservableDefaults(prefix: " compat. ")
final class CompatibilityModel {
    var theme: String = "light" {
        willSet { log.append("will \(theme) -> \(newValue)") }
        didSet(previous) { log.append("did \(previous) -> \(theme)") }
    }
    var nickname: String?
    @Ignore var log: [String] = []
}

// Safe in these tests: one task touches the model at a time.
extension CompatibilityModel: @unchecked Sendable {}

/// The opt-in asked for in ObservableDefaults' tracker: `didSet` runs on other processes' changes too.
@ObservablePrefs(prefix: "echo.", didSetRunsOnExternalChanges: true)
final class EchoingModel: Sendable {
    var theme: String = "light" {
        didSet(previous) { log.record("theme \(previous) -> \(theme)") }
    }
    var volume = 5 {
        didSet { log.record("volume \(oldValue) -> \(volume)") }
    }
    @Ignore let log = Recorder<String>()
}

@Suite("ObservableDefaults README examples")
struct ObservableDefaultsReadmeTests {
    @Test func plainRawRepresentableAndCodableTypesStoreTheirRawValueAndANestedPropertyList() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("plain.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let plain = ObservableDefaultsReadme.PlainTypes(userDefaults: suite)
        #expect(plain.theme == .light && plain.person == .init(name: "fat", age: 10) && plain.lastTheme == nil)
        plain.theme = .dark
        plain.person.age = 11
        plain.lastTheme = .light
        plain.lastPerson = .init(name: "ada", age: 36)
        try await suite.flush()
        #expect(
            try readSuiteFile(file) == [
                "theme": "dark", "person": ["name": "fat", "age": 11], "lastTheme": "light", "lastPerson": ["name": "ada", "age": 36],
            ])
        // Another process's value reaches the property (once it has arrived); nil removes the key.
        let (themes, token) = suite.record(.key("theme"))
        defer { token.cancel() }
        try await child("set", file.path, "theme=light")
        _ = try await themes.wait(until: { $0.last?.newValue == "light" })
        let otherSuite = try PreferenceSuite(fileURL: file)
        let again = ObservableDefaultsReadme.PlainTypes(userDefaults: otherSuite)
        #expect(again.theme == .light && again.person.age == 11 && again.lastPerson?.name == "ada")
        again.lastTheme = nil
        try await otherSuite.flush()
        #expect(again.lastTheme == nil)
        #expect(try readSuiteFile(file)["lastTheme"] == nil)
    }

    @Test func theREADMEModelsStoreUnderTheirKeys() {
        let suite = PreferenceSuite.inMemory()
        let local = ObservableDefaultsReadme.LocalSettings(userDefaults: suite)
        local.name = "Ada"
        local.height = 180
        let store = ObservableDefaultsReadme.LocalStore(userDefaults: suite)
        store.people.age = 11
        let first = ObservableDefaultsReadme.ObserveFirstSettings(userDefaults: suite)
        first.name = "x"
        first.height = 200
        // PrefixedSettings (autoInit: false, its own init calling observerStarter()) is only
        // compiled: it uses the standard suite, outside this test's temporary directories.
        #expect(suite.storedValues == ["firstName": "Ada", "people": ["name": "fat", "age": 11], "myHeight": 200])
    }

    @Test func settingAPropertyToTheValueItReadsAsStoresNothing() {
        let suite = PreferenceSuite.inMemory()
        let settings = ObservableDefaultsReadme.Settings(userDefaults: suite)
        settings.name = "Fatbobman"  // the default, never stored
        #expect(suite.storedValues.isEmpty)
        settings.age = 21
        #expect(suite.storedValues == ["age": 21])
    }

    @Test func settingAnObservableOnlyPropertyToItsValueNotifiesNobody() {
        let settings = ObservableDefaultsReadme.LocalSettings(userDefaults: .inMemory())
        let fired = Recorder<String>()
        withObservationTracking { _ = settings.height } onChange: { fired.record("height") }
        settings.height = 190  // what it holds
        #expect(fired.items.isEmpty)
        settings.height = 191
        #expect(fired.items == ["height"])
    }

    @Test func willSetAndDidSetRunOnLocalSetsNotOnAnotherProcesssChange() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("compat.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let model = CompatibilityModel(userDefaults: suite)
        #expect(model.nickname == nil)
        model.nickname = "ada"
        model.theme = "dark"
        model.theme = "dark"  // the same value: no set, no observer
        #expect(model.log == ["will light -> dark", "did light -> dark"])
        #expect(model.theme == "dark" && suite.storedValues == ["compat.theme": "dark", "compat.nickname": "ada"])
        // Another process's change reaches the property, and runs no observer. (This process's
        // sets written first: a background write of "dark" after the other process's "blue"
        // would be the last writer, and nothing would change here; on a loaded machine it was.)
        try await suite.flush()
        let tracker = Tracker("theme") { _ = model.theme }
        try await child("set", file.path, "compat.theme=blue")
        _ = try await tracker.fired.wait(for: 1)
        #expect(model.theme == "blue" && model.log.count == 2)
    }

    /// With `didSetRunsOnExternalChanges`, another process's change runs `didSet` once, after the
    /// property reads the new value, with what it read before; a local set runs it once, not again
    /// when it is heard back; a removed key runs it back to the default; an ignored property, never.
    @Test func didSetRunsOnAnotherProcesssChangesWhenAskedTo() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("echo.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let model = EchoingModel(suite: suite)
        model.theme = "dark"
        try await suite.flush()
        #expect(model.log.items == ["theme light -> dark"])
        try await child("set", file.path, "echo.theme=blue", "echo.volume=int:7")
        let heard = try await model.log.wait(for: 3)
        #expect(heard.sorted() == ["theme dark -> blue", "theme light -> dark", "volume 5 -> 7"])
        #expect(model.theme == "blue" && model.volume == 7)
        try await child("set", file.path, "echo.volume=-")
        #expect(try await model.log.wait(for: 4).last == "volume 7 -> 5")

        let ignoring = EchoingModel(suite: try PreferenceSuite(fileURL: file), ignoredKeyPathsForExternalUpdates: [\.volume])
        try await child("set", file.path, "echo.volume=int:9", "echo.theme=red")
        #expect(try await ignoring.log.wait(for: 1) == ["theme blue -> red"])
        #expect(ignoring.log.items.count == 1)
    }

    /// Other processes' changes of an ignored property, and changes that leave what a property
    /// reads as unchanged (its default written out), mutate nothing.
    @Test func ignoredPropertiesAndUnchangedValuesHearNothingFromOtherProcesses() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("ignored.plist")
        let model = CompatibilityModel(userDefaults: try PreferenceSuite(fileURL: file), ignoredKeyPathsForExternalUpdates: [\.nickname])
        let nickname = Tracker("nickname") { _ = model.nickname }
        let seen = Recorder<String>()
        withObservationTracking { _ = model.theme } onChange: { seen.record(model.theme) }
        try await child("set", file.path, "compat.nickname=x", "compat.theme=light")  // ignored; the default
        try await child("set", file.path, "compat.theme=dark")
        #expect(try await seen.wait(for: 1) == ["dark"])
        #expect(nickname.fired.items.isEmpty && model.nickname == "x")
    }
}
