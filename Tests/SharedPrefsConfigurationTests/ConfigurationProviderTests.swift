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
