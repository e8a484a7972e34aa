import Foundation
import Testing

@testable import SharedPrefs

@Suite("Crashes")
struct CrashTests {
    /// A writer killed with SIGKILL at random moments, 100 times: the suite always parses, every
    /// write that `update` or `synchronize` (flush) confirmed is there, the lock of a dead process never blocks the next one, and the
    /// next writer removes the temporary files dead writers left.
    @Test func aWriterKilledAtRandomMomentsLosesNoConfirmedWrite() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("crash.plist")
        var lastConfirmed = 0
        var flushesConfirmed = 0
        for round in 0..<100 {
            let writer = try Launched(childExecutable, ["crash-loop", file.path])
            // Let it confirm a few writes (1 to 4), then kill it wherever it is.
            let records = try await writer.records.wait(for: 1 + round % 4)
            kill(writer.pid, SIGKILL)
            _ = try await writer.status()
            func highest(_ kind: String) -> Int {
                writer.records.items.filter { $0.hasPrefix(kind + " ") }.compactMap { Int($0.dropFirst(kind.count + 1)) }.max() ?? 0
            }
            let confirmed = highest("confirmed")
            #expect(confirmed >= lastConfirmed && records.count >= 1)
            let values = try readSuiteFile(file)
            let stored = values["counter"].flatMap { Int(plistValue: $0) } ?? 0
            #expect(stored >= confirmed, "round \(round): a confirmed update is missing (\(stored) < \(confirmed))")
            let flushed = values["flushed"].flatMap { Int(plistValue: $0) } ?? 0
            #expect(flushed >= highest("flushed"), "round \(round): a flushed set is missing (\(flushed) < \(highest("flushed")))")
            flushesConfirmed += writer.records.items.count { $0.hasPrefix("flushed ") }
            lastConfirmed = stored
        }
        #expect(flushesConfirmed >= 50, "the writers confirmed only \(flushesConfirmed) flushes")
        // Plant a temporary file as a writer killed between write and rename leaves it.
        try Data("half".utf8).write(to: directory.file(".crash.plist.deadwriter.tmp"))
        try await child("set", file.path, "after=int:1")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty, "stale temporary files: \(leftovers)")
        #expect(try readSuiteFile(file)["after"] == 1)
    }
}
