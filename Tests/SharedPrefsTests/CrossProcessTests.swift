import Foundation
import SharedPrefsTestSupport
import Testing
import SharedPrefsLocking

@testable import SharedPrefs

@Suite("Across processes")
struct CrossProcessTests {
    @Test func aChildWritingAReachesOnlyTheObserversOfA() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("shared.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(0, forKey: "a")
        try await suite.flush()
        let (a, t1) = suite.record(.key("a"))
        let (b, t2) = suite.record(.key("b"))
        let (x, t3) = suite.record(.prefix("x."))
        defer { _ = (t1, t2, t3) }

        try await child("set", file.path, "a=int:1")
        let changes = try await a.wait(for: 1)
        #expect(changes == [PreferenceChange(suite: "shared", key: "a", oldValue: 0, newValue: 1, origin: .external, sequence: 2)])
        #expect(suite.integer(forKey: "a") == 1)

        // A second write that also touches b and x.: each observer's first change must be from it,
        // so the first write delivered nothing to them, and nothing more to a.
        try await child("set", file.path, "a=int:2", "b=str:sentinel", "x.y=bool:true")
        #expect(try await a.wait(for: 2).map(\.newValue) == [1, 2])
        #expect(try await b.wait(for: 1).map(\.newValue) == ["sentinel"])
        #expect(try await x.wait(for: 1).map(\.key) == ["x.y"])
    }

    @Test func ourOwnWritesSeenAgainThroughInotifyProduceNothing() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("own.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let (all, token) = suite.record(.all)
        defer { _ = token }
        for i in 0..<20 {
            suite.set(i, forKey: "n")
            try await suite.flush()
        }
        // Then one external change: if our own writes had come back as changes, they would sit before it.
        try await child("set", file.path, "other=int:1")
        let changes = try await all.wait(for: 21)
        #expect(changes.prefix(20).allSatisfy { $0.origin == .local && $0.key == "n" })
        #expect(changes[20].key == "other" && changes[20].origin == .external)
    }

    @Test func aForeignPythonWriterChangingTwoKeysProducesExactlyTwoChanges() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("foreign.plist")
        let suite = try PreferenceSuite(fileURL: file)
        for (key, value) in ["keep": 1, "change": 2, "remove": 3] { suite.set(value, forKey: key) }
        try await suite.flush()
        let (all, token) = suite.record(.all)
        defer { _ = token }
        let result = try await python(
            """
            import os, plistlib, sys
            path = sys.argv[1]
            with open(path, 'rb') as f: v = plistlib.load(f)
            v['change'] = 20
            del v['remove']
            tmp = path + '.py.tmp'
            with open(tmp, 'wb') as f: plistlib.dump(v, f)
            os.replace(tmp, path)
            """, file.path)
        #expect(result.status == 0, "\(result.output)")
        let changes = try await all.wait(for: 2).sorted { $0.key < $1.key }
        #expect(changes.map(\.key) == ["change", "remove"])
        #expect(changes[0].oldValue == 2 && changes[0].newValue == 20 && changes[0].origin == .external)
        #expect(changes[1].oldValue == 3 && changes[1].isRemoval)
        try await child("set", file.path, "sentinel=int:1")
        #expect(try await all.wait(for: 3).map(\.key).last == "sentinel")
        #expect(suite.storedValues == ["keep": 1, "change": 20, "sentinel": 1])
    }

    @Test func eightProcessesIncrementingAndWritingLoseNothing() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("contended.plist")
        let processes = 8, writes = underThreadSanitizer ? 250 : 1_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in 0..<processes {
                group.addTask { try await child(["hammer", file.path, String(id), String(writes)]) }
            }
            try await group.waitForAll()
        }
        let values = try readSuiteFile(file)
        #expect(values["counter"] == .integer(Int64(processes * writes)))
        let lost = (0..<processes).flatMap { id in (0..<writes).map { i in ("p\(id).k\(i)", i) } }
            .filter { key, i in values[key] != .integer(Int64(i)) }.map(\.0)
        #expect(lost.isEmpty, "lost \(lost.count) keys, first \(lost.prefix(5))")
        #expect(values.count == 1 + processes * writes)
    }

    @Test(arguments: ["set", "set-exit"])
    func valuesSetJustBeforeExitAreNotLost(command: String) async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("exit.plist")
        try await child(command, file.path, "last=str:words", "n=int:3")
        #expect(try readSuiteFile(file) == ["last": "words", "n": 3])
    }

    @Test func inPlaceAndHalfWrittenFilesKeepTheLastGoodSnapshot() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("inplace.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(1, forKey: "a")
        suite.set(2, forKey: "b")
        try await suite.flush()
        let (all, token) = suite.record(.all)
        let (failures, task) = suite.recordFailures()
        defer { _ = token; task.cancel() }
        // An editor rewriting the file in place, caught halfway: the first half, then close.
        let writeInPlace = """
            import plistlib, sys
            data = plistlib.dumps({'a': 1, 'b': 3, 'c': 'new'}, fmt=plistlib.FMT_XML)
            with open(sys.argv[1], 'r+b') as f:
                f.truncate(0)
                f.write(data if sys.argv[2] == 'full' else data[: len(data) // 2])
            """
        #expect(try await python(writeInPlace, file.path, "half").status == 0)
        let failure = try await failures.wait(for: 1)[0]
        #expect(failure.code == .corruptFile && failure.path == file.path)
        #expect(suite.storedValues == ["a": 1, "b": 2])

        // The first changes this observer hears are the full file's: the half one made none.
        #expect(try await python(writeInPlace, file.path, "full").status == 0)
        let changes = try await all.wait(for: 2).sorted { $0.key < $1.key }
        #expect(changes.map { "\($0.key) \($0.oldValue?.description ?? "-") \($0.newValue?.description ?? "-")" } == ["b 2 3", #"c - "new""#])
        #expect(suite.storedValues == ["a": 1, "b": 3, "c": "new"])
    }

    /// With `.synchronousExternalChanges`, another process's change reaches the handler on the
    /// watcher thread that read it, and the handler may use the suite's I/O there (`update`,
    /// `synchronize()`) without waiting for itself; this process's own change still goes to the
    /// queue.
    @Test func otherProcessesChangesCanBeDeliveredOnTheThreadThatReadThem() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("watcher-thread.plist")
        let suite = try PreferenceSuite(fileURL: file)
        let heard = Recorder<String>()
        let token = suite.observe(.key("a"), options: .synchronousExternalChanges) { change in
            if change.origin == .external {
                try? suite.update { $0["copy"] = change.newValue }
                _ = suite.synchronize()
            }
            heard.record("\(change.newValue?.description ?? "-") \(change.origin) \(Thread.current.name ?? "")")
        }
        defer { token.cancel() }
        suite.set(1, forKey: "a")
        let first = try await heard.wait(for: 1)
        #expect(first.count == 1 && first[0].hasPrefix("1 local ") && !first[0].hasSuffix("prefs.watcher"), "\(first)")
        // A re-read that finds this process's own I/O running is queued behind it, and hands what
        // it finds to the queue, in order: so the watcher thread must read one of five at least.
        var onWatcher: Int64? = nil
        for value: Int64 in 7...11 where onWatcher == nil {
            #expect(suite.synchronize())  // nothing of this process's I/O left running or queued
            try await child("set", file.path, "a=int:\(value)")
            let heardNow = try await heard.wait(until: { $0.last?.hasPrefix("\(value) external") == true })
            if heardNow.last == "\(value) external prefs.watcher" { onWatcher = value }
        }
        #expect(onWatcher != nil, "\(heard.items)")
        #expect(try readSuiteFile(file)["copy"] == onWatcher.map(PlistValue.integer))
    }

    /// A `.synchronousExternalChanges` handler that blocks holds its own reader thread and
    /// nothing else: another suite's changes keep arriving meanwhile, and so do its own suite's
    /// other observers'; its own changes wait, and arrive in order once it returns, on a reader
    /// thread again. Nothing is reported: nothing else waits for it.
    @Test func aBlockedHandlerOnAReaderThreadDelaysNothingButItself() async throws {
        let directory = try TemporaryDirectory()
        let (stuckFile, otherFile) = (directory.file("stuck.plist"), directory.file("other.plist"))
        try await child("set", stuckFile.path, "k=int:0")
        try await child("set", otherFile.path, "j=int:0")
        let stuck = try PreferenceSuite(fileURL: stuckFile)
        let other = try PreferenceSuite(fileURL: otherFile)
        let release = DispatchSemaphore(value: 0)
        let heard = Recorder<String>()
        let token = stuck.observe(.key("k"), options: .synchronousExternalChanges) { change in
            heard.record("\(change.newValue?.description ?? "-") \(Thread.current.name ?? "")")
            if change.newValue == 1 { release.wait() }
        }
        defer { token.cancel() }
        let (failures, task) = stuck.recordFailures()
        defer { task.cancel() }
        let (otherChanges, otherToken) = other.record(.key("j"))
        defer { otherToken.cancel() }
        let (sameSuite, sameToken) = stuck.record(.key("k"))
        defer { sameToken.cancel() }
        try await child("set", stuckFile.path, "k=int:1")
        #expect(try await heard.wait(for: 1) == ["1 prefs.watcher"])
        try await child("set", otherFile.path, "j=int:1")
        #expect(try await otherChanges.wait(for: 1).map(\.newValue) == [1])
        try await child("set", stuckFile.path, "k=int:2")
        #expect(try await sameSuite.wait(until: { $0.last?.newValue == 2 }).last?.newValue == 2)
        #expect(heard.items.count == 1)
        release.signal()
        #expect(try await heard.wait(for: 2).last?.hasPrefix("2 ") == true)
        try await child("set", stuckFile.path, "k=int:3")
        #expect(try await heard.wait(for: 3).last == "3 prefs.watcher")
        #expect(failures.items.isEmpty, "\(failures.items)")
    }

    /// A writer in another process and this process's own writes interleave, so that some of
    /// the other process's changes are read by the watcher thread and some by a re-read queued
    /// behind this process's write: a `.synchronousExternalChanges` observer still hears them in
    /// order, one at a time.
    @Test func changesDeliveredOnTheWatcherThreadStayInOrder() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("ordered.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(durability: .none))
        let updates = underThreadSanitizer ? 100 : 300
        let heard = Recorder<Int>()
        let running = Lock(false)
        let overlaps = Lock(0)
        let token = suite.observe(.key("counter"), options: .synchronousExternalChanges) { change in
            let alreadyRunning = running.withLock { was in
                defer { was = true }
                return was
            }
            if alreadyRunning { overlaps.withLock { $0 += 1 } }
            if case .integer(let n)? = change.newValue { heard.record(Int(n)) }
            running.withLock { $0 = false }
        }
        defer { token.cancel() }
        let busy = Task.detached {
            var i = 0
            while !Task.isCancelled {
                i += 1
                suite.set(i, forKey: "own")
                try? await suite.flush()
            }
        }
        // Stopped however the test ends: a writer left running after a failure would write the
        // suite again (its directory included) once the temporary directory is gone.
        defer { busy.cancel() }
        try await child("hammer", file.path, "x", String(updates))
        let values = try await heard.wait(until: { $0.last == updates })
        busy.cancel()
        _ = await busy.value
        #expect(values == values.sorted() && Set(values).count == values.count, "\(values)")
        #expect(overlaps.withLock { $0 } == 0)
    }
}
