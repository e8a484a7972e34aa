import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

@Suite("Crashes")
struct CrashTests {
    /// A writer killed with SIGKILL 200 times (100 under ThreadSanitizer): 9 in 10 at random
    /// moments, 1 in 10 stopped by a test hook between writing its temporary file and renaming
    /// it, the suite locked. The suite
    /// always parses, every write that `update` or `synchronize` (flush) confirmed is there, the
    /// write that was never renamed is not, the lock of a dead process never blocks the next
    /// writer, and the next writer removes the temporary files dead writers left. The journal
    /// always holds the file's number, ends with it or with the one record a killed write
    /// appended before its rename, and no number is ever given to two writes.
    @Test func aWriterKilledAtRandomMomentsLosesNoConfirmedWrite() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("crash.plist")
        func temporaryFiles() throws -> [String] {
            // The directory of writes, and the suite directory where it cannot be used.
            try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.hasSuffix(".tmp") }
                + ((try? FileManager.default.contentsOfDirectory(atPath: directory.file(SuiteFile.writesDirectoryName).path)) ?? []).filter { $0.hasSuffix(".tmp") }
        }
        var lastConfirmed = 0
        var flushesConfirmed = 0
        var numbered: [UInt64: Journal.Record] = [:]
        let rounds = underThreadSanitizer ? 100 : 200
        for round in 0..<rounds {
            let beforeRename = round % 10 == 9
            let writer = try Launched(childExecutable, ["crash-loop", file.path] + (beforeRename ? ["--stop-before-rename"] : []))
            if beforeRename {
                let records = try await writer.records.wait { $0.contains { $0.hasPrefix("renaming ") } }
                let temporary = try #require(records.first { $0.hasPrefix("renaming ") }).dropFirst("renaming ".count)
                #expect(FileManager.default.fileExists(atPath: String(temporary)), "round \(round): no temporary file at \(temporary)")
                let lock = try Syscall.open(directory.file(".crash.plist.lock").path, O_RDONLY | O_CLOEXEC).get()
                defer { Syscall.close(lock) }
                let attempt = Syscall.lock(lock, LOCK_EX | LOCK_NB)
                let held = if case .failure(.wouldBlock) = attempt { true } else { false }
                #expect(held, "round \(round): the writer about to rename does not hold the suite lock (\(attempt))")
            } else {
                // Let it confirm a few writes (1 to 4), then kill it wherever it is.
                try await writer.records.wait(for: 1 + round % 4)
            }
            kill(writer.pid, SIGKILL)
            _ = try await writer.status()
            func highest(_ kind: String) -> Int {
                writer.records.items.filter { $0.hasPrefix(kind + " ") }.compactMap { Int($0.dropFirst(kind.count + 1)) }.max() ?? 0
            }
            let confirmed = highest("confirmed")
            #expect(confirmed >= 1 && confirmed >= lastConfirmed, "round \(round): the writer confirmed \(confirmed)")
            let values = try readSuiteFile(file)
            let stored = values["counter"].flatMap { Int(plistValue: $0) } ?? 0
            #expect(stored >= confirmed, "round \(round): a confirmed update is missing (\(stored) < \(confirmed))")
            if beforeRename {
                #expect(stored == confirmed, "round \(round): a write that was never renamed is visible (\(stored) > \(confirmed))")
            }
            let flushed = values["flushed"].flatMap { Int(plistValue: $0) } ?? 0
            #expect(flushed >= highest("flushed"), "round \(round): a flushed set is missing (\(flushed) < \(highest("flushed")))")
            flushesConfirmed += writer.records.items.count { $0.hasPrefix("flushed ") }
            // Each writer's first write removed what earlier ones left; it may have left one.
            let leftovers = try temporaryFiles()
            #expect(leftovers.count <= 1, "round \(round): stale temporary files \(leftovers)")
            lastConfirmed = stored
            let records = try journalRecords(file)
            let number = try fileSequence(file)
            let last = try #require(records.last, "round \(round): the journal is empty")
            #expect(zip(records, records.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "round \(round): numbers out of order")
            #expect(records.contains { $0.sequence == number }, "round \(round): the file's number \(number) is not in the journal")
            #expect(last.sequence == number || (last.sequence == number + 1 && last.base == number),
                "round \(round): the journal ends at \(last.sequence) (base \(last.base)), the file carries \(number)")
            if beforeRename { #expect(last.sequence == number + 1, "round \(round): the record of the write stopped before its rename is missing") }
            for record in records {
                if let earlier = numbered.updateValue(record, forKey: record.sequence) {
                    #expect(earlier == record, "round \(round): number \(record.sequence) was given to two writes")
                }
            }
        }
        #expect(flushesConfirmed >= rounds / 2, "the writers confirmed only \(flushesConfirmed) flushes")
        // The last writer died before its rename and left its temporary file; the next one removes it.
        #expect(try temporaryFiles().count == 1)
        try await child("set", file.path, "after=int:1")
        let leftovers = try temporaryFiles()
        #expect(leftovers.isEmpty, "stale temporary files: \(leftovers)")
        #expect(try readSuiteFile(file)["after"] == 1)
    }
}
