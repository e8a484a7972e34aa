#if Configuration
import Configuration
import ConfigurationTesting
import Foundation
import SharedPrefs
import SharedPrefsConfiguration
import SharedPrefsTestSupport
import Testing

/// A suite in a `ConfigReader` beside `EnvironmentVariablesProvider`: it reads the suite's keys,
/// and its watches hear another process's writes (swift test --traits Configuration).
@Suite("swift-configuration")
struct ConfigurationProviderTests {
    /// The test child, built next to the test bundle by `swift test`.
    let child: URL = {
        let bundle = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        return bundle.deletingLastPathComponent().appending(path: "prefs-test-child")
    }()

    /// Runs the test child to set keys of `file`, as another process; its exit status.
    func set(_ file: URL, _ assignments: String...) async throws -> Int32 {
        let process = Process()
        process.executableURL = child
        process.arguments = ["set", file.path] + assignments
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
    }

    @Test func watchValueHearsAnotherProcessAndTheEnvironmentComesFirst() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "server.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(30, forKey: "http.timeout")
        suite.set("8081", forKey: "http.port")
        suite.set(["a", "b"], forKey: "http.hosts")
        #expect(suite.synchronize())
        let config = ConfigReader(providers: [
            EnvironmentVariablesProvider(environmentVariables: ["HTTP_PORT": "8080"]), PreferenceSuiteProvider(suite: suite),
        ])
        #expect(config.int(forKey: "http.port") == 8080)  // the environment first
        #expect(config.int(forKey: "http.timeout") == 30)
        #expect(config.stringArray(forKey: "http.hosts") == ["a", "b"])
        #expect(config.string(forKey: "http.missing") == nil)

        let seen = Recorder<Int?>()
        try await config.watchInt(forKey: "http.timeout") { updates in
            for await value in updates {
                seen.record(value)
                if value == 30 {
                    let status = try await set(file, "http.timeout=int:45")
                    #expect(status == 0)
                }
                if value == 45 { break }
            }
        }
        #expect(seen.items == [30, 45])

        // A snapshot is the values of one moment.
        let snapshot = PreferenceSuiteProvider(suite: suite).snapshot()
        #expect(try snapshot.value(forKey: AbsoluteConfigKey(["http", "timeout"]), type: ConfigType.int).value?.content == ConfigContent.int(45))
        #expect(throws: PreferenceError.self) { _ = try snapshot.value(forKey: AbsoluteConfigKey(["http", "hosts"]), type: ConfigType.int) }
    }

    /// A suite in memory with the values ``ProviderCompatTest`` asks for.
    func memorySuite(_ values: PlistDictionary, layers: SystemLayers? = nil) -> PreferenceSuite {
        let backend = ScriptedBackend(values)
        let store = SuiteStore(name: "compat", backend: backend, loaded: backend.load())
        store.adoptLayers(layers)
        return PreferenceSuite(store: store)
    }

    /// swift-configuration's own checks of a provider: values, fetches, watches, snapshots, for
    /// every type and absent keys.
    @Test func swiftConfigurationsProviderCompatTestPasses() async throws {
        let (magic, magic2) = (Data([0x6d, 0x61, 0x67, 0x69, 0x63]), Data([0x6d, 0x61, 0x67, 0x69, 0x63, 0x32]))
        let suite = memorySuite([
            "string": "Hello", "other.string": "Other Hello", "int": 42, "other.int": 24, "double": 3.14, "other.double": 2.72,
            "bool": true, "other.bool": false, "bytes": .data(magic), "other.bytes": .data(magic2),
            "stringy.array": ["Hello", "World"], "other.stringy.array": ["Hello", "Swift"], "inty.array": [42, 24], "other.inty.array": [16, 32],
            "doubly.array": [3.14, 2.72], "other.doubly.array": [0.9, 1.8], "booly.array": [true, false], "other.booly.array": [false, true, true],
            "byteChunky.array": [.data(magic), .data(magic2)], "other.byteChunky.array": [.data(magic), .data(magic2), .data(magic)],
        ])
        try await ProviderCompatTest(provider: PreferenceSuiteProvider(suite: suite)).runTest()
    }

    /// The provider reads a value as another type by the suite's own rule (`integer(forKey:)` and
    /// its kin, as `UserDefaults` reads): what the suite converts, the provider gives; where the
    /// suite falls back to `0`, `false` or `nil`, the provider says the type does not match.
    /// (Before, it had rules of its own: `true` read as a string, not as an integer.)
    @Test func theProviderConvertsAsTheSuitesAccessorsDo() throws {
        let values: [PlistValue] = [true, 0, 7, 3.7, -2.5, "12", "4.9", "YES", "no", "abc", "", .unsignedInteger(UInt64.max), .data(Data([1]))]
        let suite = memorySuite(PlistDictionary(values.enumerated().map { ("k\($0.offset)", $0.element) }))
        let config = ConfigReader(provider: PreferenceSuiteProvider(suite: suite))
        for (index, value) in values.enumerated() {
            let key = "k\(index)"
            #expect(suite.integer(forKey: key) == value.userDefaultsInteger ?? 0 && config.int(forKey: ConfigKey([key])) == value.userDefaultsInteger, "\(value) as an integer")
            #expect(suite.double(forKey: key) == value.userDefaultsDouble ?? 0 && config.double(forKey: ConfigKey([key])) == value.userDefaultsDouble, "\(value) as a double")
            #expect(suite.bool(forKey: key) == value.userDefaultsBool ?? false && config.bool(forKey: ConfigKey([key])) == value.userDefaultsBool, "\(value) as a boolean")
            #expect(config.string(forKey: ConfigKey([key])) == suite.string(forKey: key), "\(value) as a string")
        }
        #expect(config.int(forKey: "k0") == 1 && config.int(forKey: "k3") == 3 && config.int(forKey: "k4") == -2 && config.int(forKey: "k6") == 4 && config.bool(forKey: "k7") == true && config.bool(forKey: "k1") == false && config.int(forKey: "k9") == nil && config.bool(forKey: "k9") == nil && config.string(forKey: "k0") == nil)
    }

    /// A watch yields the current value at once, as swift-configuration asks, also for a key only
    /// an administrator's default holds (11, as `config.int` reads) and for a key nothing holds
    /// (`nil`). (Before, neither watch yielded anything: the first value came from the file.)
    @Test func aWatchYieldsAtOnceForAKeyOnlyALayerHoldsAndForAnAbsentKey() async throws {
        let suite = memorySuite([:], layers: SystemLayers(administrator: ["http.timeout": 11]))
        let config = ConfigReader(provider: PreferenceSuiteProvider(suite: suite))
        #expect(config.int(forKey: "http.timeout") == 11)
        let first = Recorder<String>()
        try await config.watchInt(forKey: "http.timeout") { updates in
            for await value in updates {
                first.record("\(value.map(String.init) ?? "nil")")
                break
            }
        }
        try await config.watchInt(forKey: "http.absent") { updates in
            for await value in updates {
                first.record("\(value.map(String.init) ?? "nil")")
                break
            }
        }
        #expect(first.items == ["11", "nil"])
    }
}
#endif
