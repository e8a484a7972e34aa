// This target is built with `-default-isolation MainActor`, as a module with
// `.defaultIsolation(MainActor.self)` is: its classes are main-actor isolated without the attribute.
import Foundation
import SharedPrefsObservation
import SharedPrefsTestSupport
import Testing

/// ObservableDefaults' fixture for its README section "Swift 6.2 and Default Actor Isolation", as written.
@ObservableDefaults(defaultIsolationIsMainActor: true)
final class DefaultsDefaultIsolationFixture {
    var name: String = "fat"
}

@ObservablePrefs(prefix: "app.", defaultIsolationIsMainActor: true)
final class MainActorByDefaultSettings {
    var volume = 5
}

@Suite("A module whose default isolation is the main actor")
struct DefaultIsolationTests {
    /// Another instance's write reaches the class on the main queue, where its isolation says it
    /// runs (delivered anywhere else, `MainActor.assumeIsolated` would stop the process).
    @Test func changesFromElsewhereArriveOnTheMainActor() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-mainactor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "settings.plist")
        let fixture = DefaultsDefaultIsolationFixture(userDefaults: try PreferenceSuite(fileURL: file))
        let settings = MainActorByDefaultSettings(suite: try PreferenceSuite(fileURL: file))
        #expect(fixture.name == "fat" && settings.volume == 5)

        let heard = Recorder<String>()
        withObservationTracking { _ = fixture.name } onChange: { heard.record("name") }
        withObservationTracking { _ = settings.volume } onChange: { heard.record("volume") }
        let elsewhere = try PreferenceSuite(fileURL: file)
        elsewhere.set("thin", forKey: "name")
        elsewhere.set(7, forKey: "app.volume")
        #expect(Set(try await heard.wait(for: 2)) == ["name", "volume"])
        try await elsewhere.flush()
        #expect(fixture.name == "thin" && settings.volume == 7)
    }
}
