import Foundation
import Synchronization
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
        let holder = Mutex<PreferenceObservation?>(nil)
        holder.withLock { $0 = suite.observe(.all) { _ in calls.record(1); holder.withLock { $0?.cancel() } } }
        let (witness, token) = suite.record(.all)
        defer { _ = token }
        suite.set(1, forKey: "a")
        try await calls.wait(for: 1)
        suite.set(2, forKey: "a")
        try await witness.wait(for: 2)
        #expect(calls.items.count == 1)
    }

    @Test func manyTasksThroughTwoSuiteObjectsLoseNothing() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("tasks.plist")
        let first = try PreferenceSuite(fileURL: file)
        let second = try PreferenceSuite(fileURL: file)
        let counter = PreferenceKey<Int>("counter", default: 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                let suite = task.isMultiple(of: 2) ? first : second
                group.addTask {
                    for i in 0..<50 {
                        try suite.update { $0[counter] += 1 }
                        suite.set(i, forKey: "t\(task).k\(i)")
                    }
                }
            }
            try await group.waitForAll()
        }
        try await first.flush()
        let values = try readSuiteFile(file)
        #expect(values["counter"] == 800)
        #expect(values.count == 1 + 16 * 50)
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
        let seed = format.encode(CodecTests.sample.filter { $0.key != "long" })
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
            if (try? PropertyListFormat.decodeSuite(bytes)) != nil { decoded += 1 }
        }
        #expect(decoded < 3000)  // mutations were real: most inputs are rejected
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
