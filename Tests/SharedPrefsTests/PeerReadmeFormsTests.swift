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

/// ObservableDefaults' README, its `@ObservableCloud` sections, each class in a namespace of its own.
enum ObservableCloudReadmeForms {
    enum Colors: String { case red, green }
    typealias FontStyle = ObservableDefaultsPort.FontStyle

    /// "Cloud Storage Integration with @ObservableCloud".
    enum Integration {
        @ObservableCloud
        class CloudSettings {
            var number = 1
            var color: Colors = .red
            var style: FontStyle = .style1
        }
    }

    /// "For @ObservableCloud (iCloud Storage)".
    enum Macros {
        @ObservableCloud
        public class CloudSettings {
            @CloudKey(keyValueStoreKey: "user_display_name")
            public var username: String = "Fatbobman"

            public var theme: String = "light"  // Automatically cloud-backed

            @ObservableOnly
            public var localCache: String = ""  // Observable only, not synced to cloud

            @Ignore
            public var temporaryData: String = ""  // Neither observable nor persisted
        }
    }

    /// "@ObservableCloud Macro Parameters".
    enum Parameters {
        @ObservableCloud(
            autoInit: true,
            prefix: "myApp_",
            observeFirst: false,
            syncImmediately: true,
            developmentMode: false
        )
        class CloudSettings {
            @CloudKey(keyValueStoreKey: "user_theme")
            var theme: String = "light"
        }
    }

    /// "Development Mode for Cloud Storage".
    enum Development {
        @ObservableCloud(developmentMode: true)
        class CloudSettings {
            var setting1: String = "value1"  // Uses memory storage
            var setting2: Int = 42           // Uses memory storage
        }
    }

    /// "Custom Initializer", the `@ObservableCloud` one, in a class of each mode.
    enum CustomInitializer {
        @ObservableCloud(autoInit: false)
        class CloudSettings {
            var username = "Fatbobman"

            // For @ObservableCloud
            init() {
                // Start Cloud Observation only in production mode
                if !_developmentMode_ {
                    _cloudObserver = CloudObservation(host: self, prefix: _prefix)
                }
            }
        }

        @ObservableCloud(autoInit: false, prefix: "dev_", developmentMode: true)
        class DevelopmentSettings {
            var username = "Fatbobman"

            init() {
                if !_developmentMode_ {
                    _cloudObserver = CloudObservation(host: self, prefix: _prefix)
                }
            }
        }
    }

    /// "Cloud Observe First Mode".
    enum ObserveFirst {
        @ObservableCloud(observeFirst: true)
        public class CloudSettings {
            public var localSetting: String = "local"     // Observable only
            public var tempData = "temp"                  // Observable only

            @CloudBacked(keyValueStoreKey: "user_theme")
            public var theme: String = "light"            // Observable and synced to iCloud

            @Ignore
            public var cache = "cache"                    // Neither observable nor persisted
        }
    }

    /// "Cloud Storage with Codable".
    enum CodableStorage {
        @ObservableCloud
        class CloudStore {
            var userProfile: UserProfile = .init(name: "fat", preferences: .init())
        }

        struct UserProfile: CodableCloudPropertyListValue {
            var name: String
            var preferences: UserPreferences
        }

        struct UserPreferences: Codable {
            var theme: String = "light"
            var fontSize: Int = 14
        }
    }
}

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

    /// The README's cloud classes, given suites (as an etcd suite would be) or in development
    /// mode: keys, prefixes, observe-first and Codable values land where the README says.
    @Test func observableCloudReadmeClassesStoreWhereTheReadmeSays() {
        typealias R = ObservableCloudReadmeForms
        let suite = PreferenceSuite.inMemory()
        let integration = R.Integration.CloudSettings(suite: suite)
        integration.number = 2
        integration.color = .green
        let macros = R.Macros.CloudSettings(suite: suite)
        macros.username = "Ada"
        macros.localCache = "x"
        let parameters = R.Parameters.CloudSettings(suite: suite)
        parameters.theme = "dark"
        let observeFirst = R.ObserveFirst.CloudSettings(suite: suite, prefix: "first_")
        observeFirst.localSetting = "changed"
        observeFirst.theme = "blue"
        let store = R.CodableStorage.CloudStore(suite: suite)
        store.userProfile.preferences.fontSize = 16
        #expect(suite.storedValues == [
            "number": 2, "color": "green", "user_display_name": "Ada", "myApp_user_theme": "dark",
            "first_user_theme": "blue", "userProfile": ["name": "fat", "preferences": ["theme": "light", "fontSize": 16]],
        ])

        let development = R.Development.CloudSettings()
        development.setting2 = 43
        #expect(development.setting2 == 43 && R.Development.CloudSettings().setting2 == 42)

        // The custom initializer: development mode starts no observer and keeps values in memory.
        let custom = R.CustomInitializer.DevelopmentSettings()
        #expect(custom._developmentMode_ && custom._prefix == "dev_" && custom._cloudObserver == nil)
        custom.username = "Linus"
        #expect(custom.username == "Linus" && R.CustomInitializer.DevelopmentSettings().username == "Fatbobman")
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
