import Foundation
import SharedPrefsLocking
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

@Suite("Misuse and hostile input")
struct MisuseTests {
    @Test func anObserverThatBlocksStallsNeitherOtherObserversNorTheWriter() async throws {
        let directory = try TemporaryDirectory()
        let suite = try PreferenceSuite(fileURL: directory.file("blocking.plist"))
        let release = DispatchSemaphore(value: 0)
        let blocked = Recorder<PreferenceChange>()
        let stuck = suite.observe(.all) { change in
            blocked.record(change)
            release.wait()  // blocks its own queue until the test lets it go
        }
        let (others, token) = suite.record(.all)
        defer { _ = (stuck, token) }
        for i in 0..<5 { suite.set(i, forKey: "k\(i)") }
        try await others.wait(for: 5)
        try await suite.flush()  // the writer is not stalled either
        #expect(try readSuiteFile(directory.file("blocking.plist")).count == 5)
        #expect(blocked.items.count == 1)
        for _ in 0..<5 { release.signal() }
        try await blocked.wait(for: 5)
    }

    @Test func anObserverMayCancelItselfInsideItsCallback() async throws {
        let suite = PreferenceSuite.inMemory()
        let calls = Recorder<Int>()
        let holder = Lock<PreferenceObservation?>(nil)
        // Cancelled before it records: once the test hears the call, the cancel is done. One
        // serial queue for both: once the witness heard 3, whatever was handed for 2 has run.
        let queue = DispatchQueue(label: "both observers")
        holder.withLock { $0 = suite.observe(.all, queue: queue) { _ in holder.withLock { $0?.cancel() }; calls.record(1) } }
        let (witness, token) = suite.record(.all, queue: queue)
        defer { _ = token }
        suite.set(1, forKey: "a")
        try await calls.wait(for: 1)
        suite.set(2, forKey: "a")
        suite.set(3, forKey: "a")
        try await witness.wait(for: 3)
        #expect(calls.items.count == 1)
    }

    /// Handlers cannot throw; a task iterating `changes` can, out of its loop. That ends its own
    /// subscription and nobody else's: nothing is kept for it, and the writer goes on.
    @Test func aConsumerThatThrowsOutOfItsLoopEndsOnlyItsOwnSubscription() async throws {
        struct Refused: Error {}
        let suite = PreferenceSuite.inMemory()
        let (witness, token) = suite.record(.all)
        defer { _ = token }
        let subscribed = Recorder<Bool>()
        let consumer = Task {
            let changes = suite.changes(.all)
            subscribed.record(true)
            for await _ in changes { throw Refused() }
        }
        try await subscribed.wait(for: 1)
        #expect(suite.store.observerCount == 2)
        suite.set(1, forKey: "a")
        await #expect(throws: Refused.self) { try await consumer.value }
        #expect(suite.store.observerCount == 1)
        for i in 2...100 { suite.set(i, forKey: "a") }
        #expect(try await witness.wait(for: 100).last?.newValue == 100)
    }

    /// Tasks in one process, through two suite objects for one file: 8 × 1,000 sets of distinct
    /// keys, and 100 `update` increments of one counter from each task in between.
    @Test func manyTasksThroughTwoSuiteObjectsLoseNothing() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("tasks.plist")
        let first = try PreferenceSuite(fileURL: file)
        let second = try PreferenceSuite(fileURL: file)
        let counter = PreferenceKey<Int>("counter", default: 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                let suite = task.isMultiple(of: 2) ? first : second
                group.addTask {
                    for i in 0..<1_000 {
                        suite.set(i, forKey: "t\(task).k\(i)")
                        if i % 10 == 0 { try suite.update { $0[counter] += 1 } }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await first.flush()
        let values = try readSuiteFile(file)
        #expect(values["counter"] == 800)
        #expect(values.count == 1 + 8 * 1_000)
    }

    @Test func aSymlinkWhereTheLockFileShouldBeIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let elsewhere = directory.file("elsewhere")
        try Data().write(to: elsewhere)
        try FileManager.default.createSymbolicLink(at: directory.file(".locked.plist.lock"), withDestinationURL: elsewhere)
        let suite = try PreferenceSuite(fileURL: directory.file("locked.plist"))
        suite.set(1, forKey: "k")
        let error = await #expect(throws: PreferenceError.self) { try await suite.flush() }
        #expect(error?.code == .symbolicLink)
        #expect(error?.message.contains(".locked.plist.lock") == true)
        #expect(!FileManager.default.fileExists(atPath: directory.file("locked.plist").path))
    }

    /// A deterministic mutation fuzz of the decoders: flipped, inserted, deleted and truncated
    /// bytes of valid binary and XML property lists. Any outcome but a crash is fine.
    @Test(arguments: [PropertyListFormat.binary, .xml])
    func mutatedPropertyListsNeverCrashTheDecoder(format: PropertyListFormat) {
        var generator = SplitMix64(seed: 0x5EED)
        let seed = format.encode(.dictionary(CodecTests.sample.filter { $0.key != "long" }))
        var decoded = 0
        for _ in 0..<3000 {
            var bytes = seed
            for _ in 0...Int(generator.next() % 4) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 4 {
                case 0: bytes[position] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
                case 1: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                case 2: bytes.remove(at: position)
                default: bytes.removeSubrange(position...)
                }
                if bytes.isEmpty { bytes = [0] }
            }
            if (try? PropertyListFormat.decodeSuite(bytes).values) != nil { decoded += 1 }
        }
        #expect(decoded < 3000)  // mutations were real: most inputs are rejected
    }
}

extension MisuseTests {
    /// The inputs `Fuzz/run` (libFuzzer) kept because they reach new code in the decoders.
    static let fuzzCorpus = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../Fuzz/corpus").standardized

    @Test func theFuzzCorpusDecodesOrFailsCleanly() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fuzzCorpus.path)
        #expect(names.count >= 6)
        for name in names {
            let bytes = Array(try Data(contentsOf: Self.fuzzCorpus.appending(path: name)))
            guard let suite = try? PropertyListFormat.decodeSuite(bytes).values else { continue }
            #expect(try PropertyListFormat.decodeSuite(PropertyListFormat.binary.encode(.dictionary(suite))).values == suite, "\(name): binary")
            #expect(try PropertyListFormat.decodeSuite(PropertyListFormat.xml.encode(.dictionary(suite))).values == XMLPropertyList.storable(suite), "\(name): XML")
        }
    }

    @Test func aHundredMegabyteFileIsReadOrMovedAsideNeverACrash() async throws {
        let directory = try TemporaryDirectory()
        // A valid 100 MB suite (one large data value) loads, and is rewritten whole.
        let large = directory.file("large.plist")
        let blob = Data(repeating: 0xA5, count: 100 << 20)
        try Data(PropertyListFormat.binary.encode(["blob": .data(blob), "n": 1])).write(to: large)
        let suite = try PreferenceSuite(fileURL: large)
        #expect(suite.data(forKey: "blob")?.count == 100 << 20)
        suite.set(2, forKey: "n")
        try await suite.flush()
        #expect(try readSuiteFile(large)["n"] == 2)

        // 100 MB of garbage: the suite opens empty and reports the file; a process that never
        // read a good version of it writes nothing there (it could hold anyone's keys) and says
        // to move it aside; once it is, the values kept pending are written.
        let garbage = directory.file("garbage.plist")
        var bytes = Data(repeating: 0x7B, count: 100 << 20)
        bytes.replaceSubrange(0..<8, with: Array("bplist00".utf8))
        try bytes.write(to: garbage)
        let broken = try PreferenceSuite(fileURL: garbage)
        #expect(broken.dictionaryRepresentation().isEmpty)
        broken.set(1, forKey: "fresh")
        let error = await #expect(throws: PreferenceError.self) { try await broken.flush() }
        #expect(error?.code == .corruptFile && error?.message.contains("mv \(garbage.path) \(garbage.path).broken") == true, "\(String(describing: error))")
        #expect(try FileManager.default.attributesOfItem(atPath: garbage.path)[.size] as? Int == 100 << 20)
        #expect(rename(garbage.path, garbage.path + ".broken") == 0)
        try await broken.flush()
        #expect(try readSuiteFile(garbage) == ["fresh": 1])
    }
}

/// A small seeded generator, so every run fuzzes the same inputs.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
