import Foundation
import Observation
import SharedPrefsObservation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

// sindresorhus/Defaults' Tests/DefaultsMacrosTests/ObservableDefaultTests.swift, ported: its models
// and assertions as written, with `Defaults.Key` → `PreferenceKey` (made with `suite:`, as
// `Defaults.Key(…, suite:)`), `Defaults[key]` → `sharedSuite[key]`, `UserDefaults.standard` →
// `sharedSuite`, and a `UserDefaults.standard.set` from elsewhere made a write by another process.
// Not ported: testConcurrentFirstAccessInstallsOneTask and testTaskStorageCancelsWhenOwnerDeinitializes,
// which test Defaults' private task storage (here: one observation, started at the first access,
// held by the model and cancelled with it, which the last test, our own, checks).

private let animalKey = "animalKey"
private let defaultAnimal = "cat"
private let newAnimal = "unicorn"

private let colorKey = "colorKey"
private let defaultColor = "blue"
private let newColor = "purple"

private let testSetKey = "testSetKey"
private let mainActorKey = "mainActorKey"
private let defaultMainActorValue = "before"
private let newMainActorValue = "after"

/// The suite these keys live in: a file in a temporary directory, so that another process can write it.
/// Removed at exit, after what the suite holds is written (else the flush at exit makes it again).
private let sharedDirectory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-observable-default-\(UUID().uuidString)")
private let sharedFile: URL = {
    try? FileManager.default.createDirectory(at: sharedDirectory, withIntermediateDirectories: true)
    atexit {
        _ = sharedSuite.synchronize()
        try? FileManager.default.removeItem(at: sharedDirectory)
    }
    return sharedDirectory.appending(path: "defaults.plist")
}()
// A fixture: a test process that cannot open a file in its own temporary directory stops here.
private let sharedSuite = try! PreferenceSuite(fileURL: sharedFile)

extension PreferenceKey where Value == String {
    fileprivate static let animal = PreferenceKey(animalKey, default: defaultAnimal, suite: sharedSuite)
    fileprivate static let color = PreferenceKey(colorKey, default: defaultColor, suite: sharedSuite)
    fileprivate static let mainActorValue = PreferenceKey(mainActorKey, default: defaultMainActorValue, suite: sharedSuite)
}
extension PreferenceKey where Value == Set<Int> {
    fileprivate static let testSet = PreferenceKey(testSetKey, default: Set<Int>(), suite: sharedSuite)
}

private func getKey() -> PreferenceKey<String> {
    .animal
}

private let keyProperty = PreferenceKey<String>.animal

@Observable
private final class TestModelWithDotSyntax: Sendable {
    @ObservableDefault(.animal)
    @ObservationIgnored
    var animal: String
}

@Observable
private final class TestModelWithFunctionCall {
    @ObservableDefault(getKey())
    @ObservationIgnored
    var animal: String
}

@Observable
private final class TestModelWithProperty {
    @ObservableDefault(keyProperty)
    @ObservationIgnored
    var animal: String
}

@Observable
private final class TestModelWithMemberSyntax {
    @ObservableDefault(PreferenceKey<String>.animal)
    @ObservationIgnored
    var animal: String
}

@Observable
private final class TestModelWithMultipleValues {
    @ObservableDefault(.animal)
    @ObservationIgnored
    var animal: String

    @ObservableDefault(.color)
    @ObservationIgnored
    var color: String
}

@Observable
private final class TestModelWithSet {
    @ObservableDefault(.testSet)
    @ObservationIgnored
    var testSet: Set<Int>
}

@MainActor @Observable
private final class MainActorTestModel {
    @ObservableDefault(.mainActorValue)
    @ObservationIgnored
    var value: String
}

/// Another process's write of `key`, as `UserDefaults.standard.set` from elsewhere.
private func setElsewhere(_ key: String, _ value: String) async throws {
    try await child("set", sharedFile.path, "\(key)=\(value)")
}

@Suite(.serialized, .timeLimit(.minutes(underThreadSanitizer ? 5 : 1)))
final class ObservableDefaultPortedTests {
    init() async throws {
        sharedSuite.removeAll()
        sharedSuite[.animal] = defaultAnimal
        sharedSuite[.color] = defaultColor
        sharedSuite[.testSet] = []
        sharedSuite[.mainActorValue] = defaultMainActorValue
        // On disk before another process writes, so that this write cannot land after its.
        try await sharedSuite.flush()
    }

    deinit {
        sharedSuite.removeAll()
    }

    @Test
    func testMacroWithMemberSyntax() async throws {
        let model = TestModelWithMemberSyntax()
        #expect(model.animal == defaultAnimal)

        let userDefaultsValue = sharedSuite.string(forKey: animalKey)
        #expect(userDefaultsValue == defaultAnimal)

        let (changeStream, changeContinuation) = AsyncStream<Void>.makeStream()
        try await confirmation { confirmation in
            _ = withObservationTracking {
                model.animal
            } onChange: {
                confirmation()
                changeContinuation.yield()
                changeContinuation.finish()
            }

            try await setElsewhere(animalKey, newAnimal)
            var changeIterator = changeStream.makeAsyncIterator()
            _ = await changeIterator.next()
        }

        #expect(model.animal == newAnimal)
    }

    @Test
    func testMacroWithDotSyntax() async throws {
        let model = TestModelWithDotSyntax()
        #expect(model.animal == defaultAnimal)

        let userDefaultsValue = sharedSuite.string(forKey: animalKey)
        #expect(userDefaultsValue == defaultAnimal)

        let (changeStream, changeContinuation) = AsyncStream<Void>.makeStream()
        try await confirmation { confirmation in
            _ = withObservationTracking {
                model.animal
            } onChange: {
                confirmation()
                changeContinuation.yield()
                changeContinuation.finish()
            }

            try await setElsewhere(animalKey, newAnimal)
            var changeIterator = changeStream.makeAsyncIterator()
            _ = await changeIterator.next()
        }

        #expect(model.animal == newAnimal)
    }

    @Test
    func testMacroWithFunctionCall() async throws {
        let model = TestModelWithFunctionCall()
        #expect(model.animal == defaultAnimal)

        let userDefaultsValue = sharedSuite.string(forKey: animalKey)
        #expect(userDefaultsValue == defaultAnimal)

        let (changeStream, changeContinuation) = AsyncStream<Void>.makeStream()
        try await confirmation { confirmation in
            _ = withObservationTracking {
                model.animal
            } onChange: {
                confirmation()
                changeContinuation.yield()
                changeContinuation.finish()
            }

            try await setElsewhere(animalKey, newAnimal)
            var changeIterator = changeStream.makeAsyncIterator()
            _ = await changeIterator.next()
        }

        #expect(model.animal == newAnimal)
    }

    @Test
    func testMacroWithProperty() async throws {
        let model = TestModelWithProperty()
        #expect(model.animal == defaultAnimal)

        let userDefaultsValue = sharedSuite.string(forKey: animalKey)
        #expect(userDefaultsValue == defaultAnimal)

        let (changeStream, changeContinuation) = AsyncStream<Void>.makeStream()
        try await confirmation { confirmation in
            _ = withObservationTracking {
                model.animal
            } onChange: {
                confirmation()
                changeContinuation.yield()
                changeContinuation.finish()
            }

            try await setElsewhere(animalKey, newAnimal)
            var changeIterator = changeStream.makeAsyncIterator()
            _ = await changeIterator.next()
        }

        #expect(model.animal == newAnimal)
    }

    @Test
    func testMacroWithMultipleValues() async throws {
        let model = TestModelWithMultipleValues()
        #expect(model.animal == defaultAnimal)
        #expect(model.color == defaultColor)

        let (animalChangeStream, animalChangeContinuation) = AsyncStream<Void>.makeStream()
        let (colorChangeStream, colorChangeContinuation) = AsyncStream<Void>.makeStream()
        try await confirmation(expectedCount: 2) { confirmation in
            _ = withObservationTracking {
                model.animal
            } onChange: {
                confirmation()
                animalChangeContinuation.yield()
                animalChangeContinuation.finish()
            }

            _ = withObservationTracking {
                model.color
            } onChange: {
                confirmation()
                colorChangeContinuation.yield()
                colorChangeContinuation.finish()
            }

            try await setElsewhere(animalKey, newAnimal)
            try await setElsewhere(colorKey, newColor)
            var animalChangeIterator = animalChangeStream.makeAsyncIterator()
            _ = await animalChangeIterator.next()
            var colorChangeIterator = colorChangeStream.makeAsyncIterator()
            _ = await colorChangeIterator.next()
        }

        #expect(model.animal == newAnimal)
        #expect(model.color == newColor)
    }

    @Test
    func testMacroWithSetNoInfiniteRecursion() async {
        let model = TestModelWithSet()
        #expect(model.testSet.isEmpty)

        // This should not cause infinite recursion
        model.testSet.formUnion(1...10)

        #expect(model.testSet == Set(1...10))
        #expect(sharedSuite[.testSet] == Set(1...10))
    }

    @Test
    func testMacroObserversPropagateAcrossModels() async {
        let model1 = TestModelWithSet()
        let model2 = TestModelWithSet()

        #expect(model1.testSet.isEmpty)
        #expect(model2.testSet.isEmpty)

        let (changeStream, changeContinuation) = AsyncStream<Void>.makeStream()
        await confirmation { confirmation in
            _ = withObservationTracking {
                model2.testSet
            } onChange: {
                confirmation()
                changeContinuation.yield()
                changeContinuation.finish()
            }

            // Write through model1
            model1.testSet = [1, 2, 3]
            var changeIterator = changeStream.makeAsyncIterator()
            _ = await changeIterator.next()
        }

        // model2 should have observed the change
        #expect(model2.testSet == [1, 2, 3])
    }

    @Test @MainActor
    func testMainActorModelObservesExternalWrite() async throws {
        let model = MainActorTestModel()
        #expect(model.value == defaultMainActorValue)

        let (changeStream, changeContinuation) = AsyncStream<Void>.makeStream()
        try await confirmation { valueDidChange in
            _ = withObservationTracking {
                model.value
            } onChange: {
                valueDidChange()
                changeContinuation.yield()
                changeContinuation.finish()
            }

            try await setElsewhere(mainActorKey, newMainActorValue)
            var changeIterator = changeStream.makeAsyncIterator()
            _ = await changeIterator.next()
        }

        #expect(model.value == newMainActorValue)
    }

    /// Not upstream's: what its testTaskStorageCancelsWhenOwnerDeinitializes checks of its private
    /// task storage, checked of the model. The observation its first access starts ends when the
    /// model is released, and does not keep it alive.
    @Test
    func theObservationEndsWithItsModel() {
        let before = sharedSuite.store.observerCount
        weak var released: TestModelWithDotSyntax?
        do {
            let model = TestModelWithDotSyntax()
            released = model
            _ = model.animal
            #expect(sharedSuite.store.observerCount == before + 1)
        }
        #expect(released == nil)
        #expect(sharedSuite.store.observerCount == before)
    }
}
