import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs
import SharedPrefsObservation

@ObservablePrefs(prefix: "app.")
final class AppSettings {
    var theme: Theme = .system
    var volume = 5
    @PrefsKey("user_name") var name: String? = nil
    var window = Window(width: 800, title: "main", scale: nil)
    var recent: [String] = []
    @ObservableOnly var isEditing = false
    @ObservableOnly var edits = 0 {
        didSet { didSetCalls += 1 }
    }
    @Ignore var didSetCalls = 0
}

@MainActor
@ObservablePrefs(prefix: "main.")
final class MainActorSettings {
    var count = 0
}

@ObservablePrefs(prefix: "first.", observeFirst: true)
final class ObserveFirstSettings {
    var transient = 1
    @PrefsBacked var kept = 2
}

@Suite("@ObservablePrefs")
struct ObservablePrefsTests {
    @Test func propertiesReadAndWriteTheSuiteUnderThePrefix() async throws {
        let suite = PreferenceSuite.inMemory()
        let settings = AppSettings(suite: suite)
        #expect(settings.theme == .system && settings.volume == 5 && settings.name == nil)
        settings.volume = 7
        settings.name = "ada"
        settings.window.width = 1024
        #expect(suite.integer(forKey: "app.volume") == 7)
        #expect(suite.string(forKey: "app.user_name") == "ada")
        #expect(suite.storedValues["app.window"] == ["width": 1024, "title": "main"])
        settings.name = nil
        #expect(suite.value(forKey: "app.user_name") == nil)
        suite.set("dark", forKey: "app.theme")
        #expect(settings.theme == .dark)
        suite.register(defaults: ["app.volume": 9])
        suite.removeObject(forKey: "app.volume")
        #expect(settings.volume == 9)
        settings.isEditing = true
        settings.edits += 1
        #expect(settings.didSetCalls == 1)
        #expect(suite.value(forKey: "app.isEditing") == nil && suite.value(forKey: "app.edits") == nil)
    }

    @Test func observeFirstPersistsOnlyBackedProperties() {
        let suite = PreferenceSuite.inMemory()
        let settings = ObserveFirstSettings(suite: suite)
        settings.transient = 10
        settings.kept = 20
        #expect(suite.storedValues == ["first.kept": 20])
    }
}

/// Records when one `withObservationTracking` of a read fires (it fires once).
final class Tracker: Sendable {
    let fired = Recorder<String>()
    private let read: @Sendable () -> Void
    private let label: String

    init(_ label: String, _ read: @escaping @Sendable () -> Void) {
        self.label = label
        self.read = read
        arm()
    }

    private func arm() {
        withObservationTracking(read) { [self] in fired.record(label) }
    }
}

// Safe in these tests: persisted properties live in the thread-safe suite and registrar; the
// observable-only ones are touched by one task at a time.
extension AppSettings: @unchecked Sendable {}

@Suite("@ObservablePrefs across processes")
struct ObservablePrefsCrossProcessTests {
    @Test func anotherProcessChangingAKeyMutatesExactlyItsProperty() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("observable.plist")
        let settings = AppSettings(suite: try PreferenceSuite(fileURL: file))
        let theme = Tracker("theme") { _ = settings.theme }
        let volume = Tracker("volume") { _ = settings.volume }
        let name = Tracker("name") { _ = settings.name }

        // A child process writes through its own @ObservablePrefs instance.
        try await child("observable", file.path, "theme=dark")
        try await theme.fired.wait(for: 1)
        #expect(settings.theme == .dark)
        // A later change of another key arrives after everything the first change caused,
        // so if it had touched volume, that would show by now.
        try await child("set", file.path, "app.user_name=str:ada")
        try await name.fired.wait(for: 1)
        #expect(volume.fired.items.isEmpty)
        #expect(settings.name == "ada")

        try await child("observable", file.path, "volume=9")
        try await volume.fired.wait(for: 1)
        #expect(settings.volume == 9)
    }

    /// `prefsSequence` is the number of the write the properties read: after another process's
    /// write is heard, the file's number; a model that saved it resumes with `changes(since:)`
    /// at the next write, with nothing before it and no gap.
    @Test func aModelOffersTheNumberItReadsToResumeFrom() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("resume.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let settings = AppSettings(suite: suite)
        #expect(settings.prefsSequence == 0)
        let volume = Tracker("volume") { _ = settings.volume }
        try await child("set", file.path, "app.volume=int:7")
        try await volume.fired.wait(for: 1)
        let saved = settings.prefsSequence
        let stored = try fileSequence(file)
        #expect(saved > 0 && saved == stored)
        try await child("set", file.path, "app.volume=int:8")
        var next: ChangeStreamEvent? = nil
        for await event in suite.changes(since: saved) {
            next = event
            break
        }
        #expect(next == .write(sequence: saved + 1, changes: [PreferenceChange(suite: suite.name, key: "app.volume", oldValue: 7, newValue: 8, origin: .external, sequence: saved + 1)]), "\(String(describing: next))")
    }

    @Test func aKeyRemovedByAnotherProcessRevertsToTheDeclaredDefault() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("revert.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let settings = AppSettings(suite: suite)
        settings.theme = .light
        try await suite.flush()
        let mutations = Recorder<PreferenceChange>()
        let token = suite.observe(.key("app.theme")) { mutations.record($0) }
        defer { _ = token }
        let theme = Tracker("theme") { _ = settings.theme }
        try await child("set", file.path, "app.theme=-")
        try await theme.fired.wait(for: 1)
        #expect(settings.theme == .system)
        // One change, the removal: the next one heard is the sentinel's.
        try await child("set", file.path, "app.theme=str:dark")
        #expect(try await mutations.wait(for: 2).map { $0.newValue?.description ?? "-" } == ["-", #""dark""#])
    }

    @Test func ownWritesMutateOnceAndAreNotHeardBackAsExternal() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("own.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let settings = AppSettings(suite: suite)
        let volume = Tracker("volume") { _ = settings.volume }
        settings.volume = 3
        #expect(volume.fired.items.count == 1)
        let again = Tracker("volume again") { _ = settings.volume }
        let name = Tracker("name") { _ = settings.name }
        try await suite.flush()
        try await child("set", file.path, "app.user_name=str:sentinel")
        try await name.fired.wait(for: 1)
        #expect(again.fired.items.isEmpty)
    }

    @Test func ignoreExternalChangesLeavesThePropertiesAlone() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("ignore.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let ignoring = AppSettings(suite: suite, ignoreExternalChanges: true)
        #expect(suite.store.observerCount == 0)  // it observes nothing, so nothing can reach it
        let listening = AppSettings(suite: suite)
        let ignored = Tracker("ignored") { _ = ignoring.volume }
        let heard = Tracker("heard") { _ = listening.volume }
        try await child("set", file.path, "app.volume=int:11")
        try await heard.fired.wait(for: 1)
        #expect(ignored.fired.items.isEmpty)
        #expect(ignoring.volume == 11)  // reads still see the suite
    }

    /// Off the main actor, the registrar hears another process's change on the watcher thread
    /// that read it, with no hop to a queue (`onChange` runs there). A re-read queued behind this
    /// process's own I/O would hand a change to the queue instead: one of five at least.
    @Test func aClassOffTheMainActorIsUpdatedWhereTheChangeIsRead() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("off-main.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let settings = AppSettings(suite: suite)
        var threads: [String] = []
        for volume in 1...5 where !threads.contains("prefs.watcher") {
            #expect(suite.synchronize())
            let fired = Recorder<String>()
            withObservationTracking { _ = settings.volume } onChange: { fired.record(Thread.current.name ?? "") }
            try await child("set", file.path, "app.volume=int:\(volume)")
            threads += try await fired.wait(for: 1)
        }
        #expect(threads.contains("prefs.watcher"), "\(threads)")
    }

    @MainActor
    @Test func aMainActorClassIsUpdatedOnTheMainActor() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("main.plist")
        let settings = MainActorSettings(suite: try PreferenceSuite(fileURL: file))
        // On Linux the main queue may be served by another thread, so ask the queue, not the thread.
        let onMainQueue = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: onMainQueue, value: true)
        let fired = Recorder<Bool>()
        withObservationTracking { _ = settings.count } onChange: { fired.record(DispatchQueue.getSpecific(key: onMainQueue) == true) }
        try await child("set", file.path, "main.count=int:3")
        #expect(try await fired.wait(for: 1) == [true])
        #expect(settings.count == 3)
    }

    @Test func thePropertyWrapperReadsWritesResetsAndStreams() async throws {
        let suite = PreferenceSuite.inMemory()
        @Preference("volume", suite: suite) var volume = 5
        #expect(volume == 5)
        volume = 8
        #expect(suite.integer(forKey: "volume") == 8)
        var iterator = $volume.makeAsyncIterator()
        #expect(await iterator.next() == 8)
        $volume.reset()
        #expect(await iterator.next() == 5)
        #expect(volume == 5 && suite.storedValues["volume"] == nil)  // value(forKey:) is the registered default, 5
    }
}
