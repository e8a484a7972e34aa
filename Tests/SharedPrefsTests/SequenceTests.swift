import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// Where the journal of the suite at `file` is: in its directory of writes.
func journalURL(_ file: URL) -> URL {
    file.deletingLastPathComponent().appending(path: SuiteFile.writesDirectoryName).appending(path: "." + file.lastPathComponent + ".journal")
}

/// The journal of the suite at `file`: its whole records, in order.
func journalRecords(_ file: URL) throws -> [Journal.Record] {
    let journal = journalURL(file)
    let bytes = [UInt8](try Data(contentsOf: journal))
    var records: [Journal.Record] = []
    var offset = 0
    while let next = Journal.record(in: bytes, at: offset) {
        records.append(next.record)
        offset = next.end
    }
    return records
}

/// The number the suite file at `file` carries.
func fileSequence(_ file: URL) throws -> UInt64 {
    PropertyListFormat.sequence(of: [UInt8](try Data(contentsOf: file)))
}

@Suite("Numbered writes")
struct SequenceTests {
    /// Every write by this library, in this process or another, takes the next number: the file
    /// carries it, the journal records it with the keys it changed and the number it was made
    /// on, and observers hear it with each change.
    @Test func everyWriteInAnyProcessTakesTheNextNumber() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("numbered.plist")
        let suite = try PreferenceSuite(fileURL: file)
        #expect(suite.sequence == 0)
        suite.set(1, forKey: "a")
        #expect(suite.synchronize())
        #expect(suite.sequence == 1)
        #expect(try fileSequence(file) == 1)

        let (all, token) = suite.record(.all)
        defer { _ = token }
        try await child("set", file.path, "a=int:2")
        #expect(try await all.wait(for: 1) == [PreferenceChange(suite: "numbered", key: "a", oldValue: 1, newValue: 2, origin: .external, sequence: 2)])
        #expect(suite.sequence == 2)

        try await suite.update { $0["a"] = 3 }
        #expect(suite.sequence == 3)
        #expect(try await all.wait(for: 2).last == PreferenceChange(suite: "numbered", key: "a", oldValue: 2, newValue: 3, origin: .local, sequence: 3))
        // A write that changes nothing takes no number.
        try await suite.update { $0["a"] = 3 }
        #expect(suite.sequence == 3)

        let records = try journalRecords(file)
        #expect(records.map(\.sequence) == [1, 2, 3])
        #expect(records.map(\.base) == [0, 1, 2])
        #expect(records.map(\.changes) == [
            [.init(key: "a", old: nil, new: 1)],
            [.init(key: "a", old: 1, new: 2)],
            [.init(key: "a", old: 2, new: 3)],
        ])
        #expect(try FileManager.default.attributesOfItem(atPath: journalURL(file).path)[.posixPermissions] as? Int
            == (try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int))
    }

    /// A writer that does not number its files (plistlib) replaces the suite: its change is heard
    /// without a number, and the next write continues after the journal's last number, never
    /// reusing one. The numbered file stays readable by plistlib and Foundation.
    @Test func aForeignRewriteIsHeardUnnumberedAndNoNumberIsGivenTwice() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("foreign.plist")
        let suite = try PreferenceSuite(fileURL: file)
        for i in 1...3 {
            suite.set(i, forKey: "n")
            #expect(suite.synchronize())
        }
        #expect(try fileSequence(file) == 3)
        let decoded = try PropertyListDecoder().decode([String: Int].self, from: Data(contentsOf: file))
        #expect(decoded == ["n": 3])

        let (all, token) = suite.record(.key("foreign"))
        defer { _ = token }
        let result = try await python("""
            import plistlib, sys
            path = sys.argv[1]
            with open(path, 'rb') as f: values = plistlib.load(f)
            values['foreign'] = values['n'] + 1
            with open(path + '.new', 'wb') as f: plistlib.dump(values, f, fmt=plistlib.FMT_BINARY)
            import os; os.rename(path + '.new', path)
            """, file.path)
        #expect(result.status == 0, "\(result.output)")
        #expect(try await all.wait(for: 1) == [PreferenceChange(suite: "foreign", key: "foreign", oldValue: nil, newValue: 4, origin: .external)])
        #expect(try fileSequence(file) == 0)
        #expect(suite.sequence == 3)

        suite.set(5, forKey: "n")
        #expect(suite.synchronize())
        #expect(try fileSequence(file) == 4)
        #expect(suite.sequence == 4)
        let records = try journalRecords(file)
        #expect(records.map(\.sequence) == [1, 2, 3, 4])
        // Made on the foreign file, which carried no number.
        #expect(records.last?.base == 0)
        #expect(records.last?.changes == [.init(key: "n", old: 3, new: 5)])
    }

    /// An XML suite carries its number in a comment, which other readers skip.
    @Test func anXMLSuiteCarriesItsNumberInAComment() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("xml.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(format: .xml))
        suite.set("v", forKey: "k")
        #expect(suite.synchronize())
        suite.set("w", forKey: "k")
        #expect(suite.synchronize())
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("<!-- SharedPrefs sequence 2 -->"), "\(text)")
        #expect(try fileSequence(file) == 2)
        let result = try await python("import plistlib, sys; print(plistlib.load(open(sys.argv[1], 'rb')))", file.path)
        #expect(result.output.contains("{'k': 'w'}"), "\(result.output)")
    }

    /// Past its bounds the journal is rewritten with its newer half, keeping the suite file's mode.
    @Test func theJournalIsBoundedAndKeepsItsNewestRecords() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("bounded.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(durability: .none))
        let writes = Int(Journal.maximumRecords) + 10
        for i in 1...writes { try suite.update { $0["n"] = .integer(Int64(i)) } }
        let records = try journalRecords(file)
        #expect(records.count <= Int(Journal.maximumRecords))
        #expect(records.count >= Int(Journal.maximumRecords) / 2)
        #expect(records.last?.sequence == UInt64(writes))
        #expect(zip(records, records.dropFirst()).allSatisfy { $1.sequence == $0.sequence + 1 && $1.base == $0.sequence })
        // The last record says where the journal begins now: it is not rewritten at every write.
        let bytes = [UInt8](try Data(contentsOf: journalURL(file)))
        var (offset, first) = (0, UInt64(0))
        while let frame = Journal.frame(in: bytes, at: offset) { (offset, first) = (frame.end, frame.first) }
        #expect(first == records.first?.sequence)
        #expect(try FileManager.default.attributesOfItem(atPath: journalURL(file).path)[.posixPermissions] as? Int
            == (try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int))
    }

    /// A value larger than a record holds is named in it, not copied; the file has it.
    @Test func aLargeValueIsNamedInTheJournalNotCopied() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("large.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let blob = Data(count: Journal.maximumValueBytes + 1)
        try suite.update { transaction in
            transaction["blob"] = .data(blob)
            transaction["small"] = 1
        }
        let record = try #require(try journalRecords(file).last)
        #expect(record.changes == [.init(key: "blob", old: nil, new: nil, kept: false), .init(key: "small", old: nil, new: 1)])
        #expect(try FileManager.default.attributesOfItem(atPath: journalURL(file).path)[.size] as? Int ?? .max < 1_000)
        #expect(try readSuiteFile(file)["blob"] == .data(blob))
    }

    /// A journal someone made unusable (a FIFO, a symbolic link, garbage) never stops a write:
    /// the write is numbered from the file, and garbage is cut off before the next record.
    @Test func aHostileJournalNeverStopsAWrite() throws {
        let directory = try TemporaryDirectory()
        for hostile in ["fifo", "symlink", "garbage", "cut"] {
            let file = directory.file("\(hostile).plist")
            let journal = journalURL(file)
            let suite = try PreferenceSuite(fileURL: file)
            suite.set(1, forKey: "n")
            #expect(suite.synchronize())
            switch hostile {
            case "fifo":
                try FileManager.default.removeItem(at: journal)
                #expect(mkfifo(journal.path, 0o600) == 0)
            case "symlink":
                try FileManager.default.removeItem(at: journal)
                try FileManager.default.createSymbolicLink(atPath: journal.path, withDestinationPath: directory.file("elsewhere").path)
            case "garbage":
                try Data("not a journal at all".utf8).write(to: journal)
            default:
                // A record cut short, as a crash mid-append leaves it.
                let handle = try FileHandle(forWritingTo: journal)
                try handle.seekToEnd()
                try handle.write(contentsOf: Data("SPJ1\u{0}\u{0}\u{1}".utf8))
                try handle.close()
            }
            suite.set(2, forKey: "n")
            #expect(suite.synchronize(), "\(hostile)")
            #expect(try readSuiteFile(file)["n"] == 2)
            #expect(try fileSequence(file) == 2, "\(hostile)")
            #expect(!FileManager.default.fileExists(atPath: directory.file("elsewhere").path))
            if hostile == "cut" {
                #expect(try journalRecords(file).map(\.sequence) == [1, 2])
            }
        }
    }

    // MARK: changes(since:)

    /// The events of `suite.changes(since:)`, recorded as they come.
    func follow(_ suite: PreferenceSuite, since sequence: UInt64) -> (Recorder<ChangeStreamEvent>, Task<Void, Never>) {
        let events = Recorder<ChangeStreamEvent>()
        let task = Task { for await event in suite.changes(since: sequence) { events.record(event) } }
        return (events, task)
    }

    /// Every write after the number, in order, each once, from the journal; then what this and
    /// other processes write.
    @Test func changesSinceANumberYieldsEveryWriteAfterItThenFollows() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("stream.plist")
        let suite = try PreferenceSuite(fileURL: file)
        for i in 1...5 { try await suite.update { $0["k\(i)"] = .integer(Int64(i)) } }
        let (events, task) = follow(suite, since: 2)
        defer { task.cancel() }
        func write(_ sequence: UInt64, _ changes: [(String, PlistValue?, PlistValue)], _ origin: PreferenceChange.Origin = .local) -> ChangeStreamEvent {
            .write(sequence: sequence, changes: changes.map {
                PreferenceChange(suite: "stream", key: $0.0, oldValue: $0.1, newValue: $0.2, origin: origin, sequence: sequence)
            })
        }
        #expect(try await events.wait(for: 3) == [write(3, [("k3", nil, 3)]), write(4, [("k4", nil, 4)]), write(5, [("k5", nil, 5)])])
        try await child("set", file.path, "k6=int:6")
        #expect(try await events.wait(for: 4).last == write(6, [("k6", nil, 6)], .external))
        // One write (two sets may be two: the background write may begin between them).
        try await suite.update { $0["k7"] = 7; $0["k3"] = 8 }
        let all = try await events.wait(for: 5)
        #expect(all.last == write(7, [("k3", 3, 8), ("k7", nil, 7)]), "\(all)")
    }

    /// A record half appended at the journal's end (its writer holds the lock, which a reader does
    /// not take; a CI run under load once caught one) hides none of the records before it: the
    /// stream still tells every write, no gap.
    @Test func aRecordBeingAppendedHidesNoEarlierWrite() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("appending.plist")
        let suite = try PreferenceSuite(fileURL: file)
        for i in 1...3 { try await suite.update { $0["k"] = .integer(Int64(i)) } }
        let handle = try FileHandle(forWritingTo: journalURL(file))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("SPJ1\u{0}\u{0}\u{1}\u{0}".utf8) + Data(count: 40))
        try handle.close()
        let (events, task) = follow(suite, since: 1)
        defer { task.cancel() }
        #expect(try await events.wait(for: 2).map(\.sequence) == [2, 3], "\(events.items)")
        #expect(events.items.allSatisfy { if case .write = $0 { true } else { false } })
    }

    /// An observer takes another process's writes from the journal, not by reading the suite
    /// file: every change arrives with its number, and the values it then holds are the file's,
    /// also once this process writes on them (a write starts from the file's bytes).
    @Test func anObserverTakesOtherWritesFromTheJournal() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("applied.plist")
        let suite = try PreferenceSuite(fileURL: file)
        try await suite.update { tx in
            // Large enough to be followed (FileBackend.followedSize): 60 KB.
            for i in 0..<2_000 { tx["key.\(i)"] = .string("value \(i)") }
            tx["nested"] = ["date": .date(Date(timeIntervalSince1970: 1_700_000_000.5)), "data": .data(Data([0, 1, 2]))]
        }
        let changes = Recorder<PreferenceChange>()
        let token = suite.observe(.key("counter"), options: .synchronousExternalChanges) { changes.record($0) }
        defer { token.cancel() }
        let before = suite.statistics
        // 50 ms apart, so that the observer takes them one by one, as this test means: 20 writes
        // without a pause came as two re-reads under ThreadSanitizer's load (one of them of the
        // file), which said nothing of the journal.
        try await child("counter-writes", file.path, "20", "50000")
        let seen = try await changes.wait { $0.last?.newValue == 20 }
        // The suite's first write was 1, so counter n is write n + 1.
        #expect(seen.allSatisfy { $0.newValue.map(\.description) == $0.sequence.map { "\($0 - 1)" } }, "\(seen)")
        #expect(suite.statistics.journalReads > before.journalReads)
        #expect(suite.statistics.fileReads - before.fileReads < suite.statistics.journalReads - before.journalReads, "\(suite.statistics)")
        #expect(suite.storedValues == (try readSuiteFile(file)))
        try await suite.update { $0["mine"] = 1 }
        #expect(suite.storedValues == (try readSuiteFile(file)))
        #expect(try readSuiteFile(file).storage.count == 2_003)
    }

    /// A consumer ahead of the suite (its number saved from a suite since restored or replaced):
    /// a gap back to the stored number with the whole content, then every write from there.
    @Test func aNumberAheadOfTheSuiteGivesAGapBackToIt() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("ahead.plist")
        let suite = try PreferenceSuite(fileURL: file)
        for i in 1...3 { try await suite.update { $0["k"] = .integer(Int64(i)) } }
        let (events, task) = follow(suite, since: 100)
        defer { task.cancel() }
        #expect(try await events.wait(for: 1) == [.gap(from: 100, to: 3, contents: ["k": 3])])
        try await suite.update { $0["k"] = 4 }
        let all = try await events.wait(for: 2)
        #expect(all.last == .write(sequence: 4, changes: [PreferenceChange(suite: "ahead", key: "k", oldValue: 3, newValue: 4, origin: .local, sequence: 4)]), "\(all)")
    }

    /// From a number older than the journal, and from 0: a gap with the whole content.
    @Test func aNumberOlderThanTheJournalGivesAGapWithTheWholeContent() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("old.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(durability: .none))
        try await suite.update { $0["fixed"] = "a" }
        let writes = Int(Journal.maximumRecords) + 9
        for i in 2...writes { try await suite.update { $0["n"] = .integer(Int64(i)) } }
        let end = UInt64(writes)
        for since: UInt64 in [0, 1] {
            let (events, task) = follow(suite, since: since)
            defer { task.cancel() }
            #expect(try await events.wait(for: 1) == [.gap(from: since, to: end, contents: ["fixed": "a", "n": .integer(Int64(writes))])])
        }
        let (recent, task) = follow(suite, since: end - 2)
        defer { task.cancel() }
        #expect(try await recent.wait(for: 2).map(\.sequence) == [end - 1, end])
    }

    /// A program that does not number its writes changes the suite: a gap with the whole content.
    @Test func anUnnumberedWriteArrivesAsAGap() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("gap.plist")
        let suite = try PreferenceSuite(fileURL: file)
        try await suite.update { $0["a"] = 1 }
        let (events, task) = follow(suite, since: 1)
        defer { task.cancel() }
        let result = try await python("""
            import plistlib, sys, os
            path = sys.argv[1]
            with open(path, 'rb') as f: values = plistlib.load(f)
            values['b'] = 2
            with open(path + '.new', 'wb') as f: plistlib.dump(values, f, fmt=plistlib.FMT_BINARY)
            os.rename(path + '.new', path)
            """, file.path)
        #expect(result.status == 0, "\(result.output)")
        #expect(try await events.wait(for: 1) == [.gap(from: 1, to: 1, contents: ["a": 1, "b": 2])], "\(events.items)")
        // A stream that begins after the change, at the number before it: a gap too.
        let (later, laterTask) = follow(suite, since: 1)
        defer { laterTask.cancel() }
        #expect(try await later.wait(for: 1) == [.gap(from: 1, to: 1, contents: ["a": 1, "b": 2])])
        // The next numbered write, made on a file without a number: a gap, then on.
        try await suite.update { $0["c"] = 3 }
        #expect(try await events.wait(for: 2).last == .gap(from: 1, to: 2, contents: ["a": 1, "b": 2, "c": 3]), "\(events.items)")
    }

    /// A consumer killed with SIGKILL 500 times at random moments while another process makes
    /// 10,000 writes, each time restarted from the number its output ends with: every write after
    /// its first gap arrives once, in order, none missed; a gap only where it started from nothing.
    @Test(.timeLimit(.minutes(15)))
    func aConsumerKilledAtRandomResumesMissingNothingAndRepeatingNothing() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("resume.plist")
        let output = directory.file("consumed")
        let (count, kills) = underThreadSanitizer ? (150, 20) : (10_000, 500)
        // Spread over about the time the kills take (a consumer starts in some 30 ms).
        let writer = try Launched(childExecutable, ["counter-writes", file.path, String(count), underThreadSanitizer ? "0" : "3000"])
        var killed = 0
        while killed < kills {
            let consumer = try Launched(childExecutable, ["consume", file.path, output.path])
            // Killed wherever it is then: starting, catching up, following.
            try await Task.sleep(for: .milliseconds(Int.random(in: 1...40)))
            kill(consumer.pid, SIGKILL)
            _ = try await consumer.status()
            killed += 1
        }
        #expect(try await writer.status() == 0)
        let last = try Launched(childExecutable, ["consume", file.path, output.path])
        _ = try await last.records.wait { $0.contains("at \(count)") || $0.contains("from \(count)") }
        kill(last.pid, SIGKILL)
        _ = try await last.status()

        let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
        let gaps = lines.filter { $0[0] == "gap" }
        #expect(!gaps.isEmpty && gaps.allSatisfy { $0[1] == "0" }, "gaps: \(gaps)")
        let writes = lines.filter { $0[0] == "write" }.map { (sequence: Int($0[1])!, value: String($0[2])) }
        let start = try #require(gaps.last.flatMap { Int($0[2]) })
        #expect(writes.map(\.sequence) == Array((start + 1)..<(count + 1)), "numbers: \(writes.map(\.sequence))")
        #expect(writes.allSatisfy { $0.value == String($0.sequence) })
    }

    /// Two processes writing with `update`, then a third interleaved with the documented foreign
    /// writer (plistlib, under the lock, unnumbered), while this process follows
    /// `changes(since: 0)`: the first two processes' writes come one by one, after each gap the
    /// numbered writes follow one another, none skipped, and what the stream gives, applied in
    /// order, is the suite's final content.
    @Test func interleavedForeignWritesArriveAsGapsAndNoNumberedWriteIsSkipped() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("mixed.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let (events, task) = follow(suite, since: 0)
        defer { task.cancel() }
        #expect(try await events.wait(for: 1) == [.gap(from: 0, to: 0, contents: [:])])
        let count = underThreadSanitizer ? 40 : 100
        async let first: Void = child("hammer", file.path, "a", String(count))
        async let second: Void = child("hammer", file.path, "b", String(count))
        _ = try await (first, second)
        _ = try await events.wait { $0.last?.sequence == UInt64(2 * count) }
        let example = repositoryRoot.appending(path: "docs/examples/foreign_writer.py")
        async let third: Void = child("hammer", file.path, "c", String(count))
        async let foreign = run(URL(filePath: "/usr/bin/env"), ["python3", example.path, file.path, "foreign", String(count)])
        _ = try await third
        #expect(try await foreign.status == 0)
        let final = try readSuiteFile(file)
        func replay(_ events: [ChangeStreamEvent]) -> PlistDictionary {
            var contents = PlistDictionary()
            for event in events {
                switch event {
                case .gap(_, _, let whole): contents = whole
                case .write(_, let changes): for change in changes { contents[change.key] = change.newValue }
                }
            }
            return contents
        }
        let seen = try await events.wait { replay($0) == final }
        // After each gap the numbered writes come one after another: the gap's number + 1, + 2, …
        var next: UInt64? = nil
        var numbered = 0
        for event in seen {
            switch event {
            case .gap(_, let to, _): next = to + 1
            case .write(let number, let changes):
                #expect(number == next, "write \(number) after \(String(describing: next))")
                #expect(changes.allSatisfy { $0.sequence == number })
                next = number + 1
                numbered += 1
            }
        }
        // The first two processes' writes came one by one, and the foreign ones as gaps.
        #expect(numbered >= 2 * count && seen.count { if case .gap = $0 { true } else { false } } > 1, "\(numbered) numbered writes")
    }
}
