import Foundation
import SharedPrefsObservation
import SharedPrefsTestSupport
import Testing

// The peers' README code as written, but for the import and the documented mappings
// (`UserDefaults` → `PreferenceSuite`, `Defaults[key]` → `suite[key]`, `Defaults.Key` →
// `PreferenceKey`, `Defaults.AnySerializable` → `PlistValue`, `Defaults.Serializable` →
// `PreferenceValue`). Forms that name the standard suite are compiled, not run: the tests give
// suites in temporary directories instead.

/// ObservableDefaults' README, "Initializer and Parameters".
enum ObservableDefaultsInitializerForm {
    @ObservableDefaults
    class Settings {
        var name: String = "Fatbobman"
        var age: Int = 20
    }

    @ObservableCloud
    class CloudSettings {
        var username: String = "Fatbobman"
    }

    static func asWritten() -> (Settings, CloudSettings) {
        // UserDefaults-backed settings
        let settings = Settings(
            userDefaults: .standard,
            ignoreExternalChanges: false,
            prefix: "myApp_"
        )

        // Cloud-backed settings
        let cloudSettings = CloudSettings(
            prefix: "myApp_",
            syncImmediately: true,
            developmentMode: false
        )
        return (settings, cloudSettings)
    }
}

// Safe in these tests: one task touches the model at a time.
extension ObservableDefaultsInitializerForm.Settings: @unchecked Sendable {}

/// Defaults' README, "Dynamic value" → "Using `get` and `set`".
enum DefaultsTypedValuesForm {
    enum mime: String, PreferenceValue {
        case JSON = "application/json"
        case STREAM = "application/octet-stream"
    }

    static func asWritten(_ suite: PreferenceSuite) -> [mime?] {
        var printed: [mime?] = []
        let any = PreferenceKey<PlistValue>("anyKey", default: [PlistValue(mime.JSON)])

        if let mimeType: mime = suite[any].get() {
            printed.append(mimeType)
        }

        suite[any].set(mime.STREAM)

        if let mimeType: mime = suite[any].get() {
            printed.append(mimeType)
        }
        return printed
    }
}

@Suite("The peers' README forms, as written")
struct PeerReadmeFormsTests {
    @Test func observableDefaultsGeneratedInitializerTakesItsLabelsInItsOrder() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("settings.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let settings = ObservableDefaultsInitializerForm.Settings(userDefaults: suite, ignoreExternalChanges: false, prefix: "myApp_")
        settings.age = 21
        #expect(suite.storedValues == ["myApp_age": 21])
        // ignoreExternalChanges: false hears another process's write.
        let tracker = Tracker("name") { _ = settings.name }
        try await child("set", file.path, "myApp_name=Ada")
        _ = try await tracker.fired.wait(for: 1)
        #expect(settings.name == "Ada")
        // Every argument has a default, as the README says.
        let ignoring = ObservableDefaultsInitializerForm.Settings(userDefaults: suite, ignoreExternalChanges: true)
        #expect(ignoring.age == 20)
    }

    @Test func observableCloudInitializerInDevelopmentModeKeepsValuesInMemory() {
        let first = ObservableDefaultsInitializerForm.CloudSettings(prefix: "myApp_", syncImmediately: true, developmentMode: true)
        first.username = "Linus"
        #expect(first.username == "Linus")
        #expect(ObservableDefaultsInitializerForm.CloudSettings(prefix: "myApp_", developmentMode: true).username == "Fatbobman")
    }

    /// The wrapper's init is not failable, `set` takes its value unlabelled, and `get()` takes
    /// its type from the context. The key's default is an array holding the value, as the README
    /// writes it, so the first `get()` finds no `mime` (it would not in Defaults either).
    @Test func defaultsTypedValuesExampleRunsAsWritten() {
        let suite = PreferenceSuite.inMemory()
        #expect(DefaultsTypedValuesForm.asWritten(suite) == [.STREAM])
        let single = PreferenceKey<PlistValue>("single", default: PlistValue(DefaultsTypedValuesForm.mime.JSON))
        let mime: DefaultsTypedValuesForm.mime? = suite[single].get()
        #expect(mime == .JSON)
        #expect(PlistValue(Int?.none) == [:] && PlistValue(Int?.none).get(Int.self) == nil)
    }
}
