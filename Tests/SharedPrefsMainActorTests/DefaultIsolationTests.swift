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
    /// Another process's write reaches the class on the main actor, where its isolation says it
    /// runs (delivered anywhere else, `MainActor.assumeIsolated` would stop the process): each
    /// property's observation fires on the main queue.
    @Test func changesFromAnotherProcessArriveOnTheMainActor() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-mainactor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "settings.plist")
        let fixture = DefaultsDefaultIsolationFixture(userDefaults: try PreferenceSuite(fileURL: file))
        let settings = MainActorByDefaultSettings(suite: try PreferenceSuite(fileURL: file))
        #expect(fixture.name == "fat" && settings.volume == 5)

        // The main actor's executor is the main queue (whose thread, under `dispatch_main`, need
        // not be the process's first): a key set on it tells, without stopping the process.
        let onMainQueue = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: onMainQueue, value: true)
        let heard = Recorder<String>()
        withObservationTracking { _ = fixture.name } onChange: { heard.record("name, main queue \(DispatchQueue.getSpecific(key: onMainQueue) == true)") }
        withObservationTracking { _ = settings.volume } onChange: { heard.record("volume, main queue \(DispatchQueue.getSpecific(key: onMainQueue) == true)") }
        let writer = try await run(childExecutable, ["set", file.path, "name=thin", "app.volume=int:7"])
        #expect(writer.status == 0, "\(writer.output)")
        let arrivals = try await heard.wait(for: 2)
        #expect(Set(arrivals) == ["name, main queue true", "volume, main queue true"], "\(arrivals)")
        #expect(fixture.name == "thin" && settings.volume == 7)
    }
}
