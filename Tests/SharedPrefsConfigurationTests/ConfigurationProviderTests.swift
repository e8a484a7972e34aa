#if Configuration
import Configuration
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
}
#endif
