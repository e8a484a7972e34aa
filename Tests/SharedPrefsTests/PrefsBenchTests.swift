import Foundation
import SharedPrefsTestSupport
import Testing

/// Keeps the benchmark runnable and honest. It checks that every measurement completes, that
/// every row that can lose a change accounts for each one it sent, that the scale rows change a
/// key in the middle, that contention's two sides hold the same keys and lose nothing, and that a
/// faulty observer fails `--check`; it asserts no timing (timings belong to the benchmark's report).
@Suite(.serialized) struct PrefsBenchTests {
    let bench = childExecutable.deletingLastPathComponent().appending(path: "prefs-bench")

    func rows(_ json: URL) throws -> [[String: Any]] {
        try #require(JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [[String: Any]])
    }

    @Test func aQuickRunCompletesEveryMeasurementAndAccountsForEveryChange() async throws {
        let directory = try TemporaryDirectory()
        let json = directory.file("bench.json")
        let result = try await run(bench, ["--quick", "--only", "2,3,4,6,7,8,9,11,12,13,14,15,19", "--json", json.path])
        #expect(result.status == 0, "\(result.output)")
        let rows = try rows(json)
        let groups = Set(rows.compactMap { ($0["group"] as? String)?.split(separator: ".").first.map(String.init) })
        #expect(groups == ["0", "2", "3", "4", "6", "7", "8", "9", "11", "12", "13", "14", "15", "19"])
        #expect(!rows.contains { $0["name"] as? String == "failed" }, "\(rows)")
        // The run says when it started, under what load, and on which file system.
        let info = try #require(rows.first { $0["id"] as? String == "0.run" }?["note"] as? String)
        #expect(info.contains("load average") && info.contains("files in"), "\(info)")
        // Every suite is had under the descriptor limit.
        #expect(rows.contains { $0["id"] as? String == "15.descriptors" && ($0["note"] as? String)?.hasPrefix("1000 of 1000 tried") == true }, "\(rows)")
        // Every row that sent changes says what became of each: seen, merged or timed out.
        let latencyRows = rows.filter { $0["cdf"] != nil && $0["id"] as? String != "4.fsync-pair" }
        #expect(latencyRows.count >= 12, "\(rows)")
        for row in latencyRows {
            let sent = try #require(row["sent"] as? Int, "\(row)")
            let parts = [row["measured"], row["merged"], row["timedOut"]].compactMap { $0 as? Int }
            #expect(parts.count == 3 && parts.reduce(0, +) == sent && sent > 0, "\(row)")
            #expect(row["n"] as? Int == sent, "every change sent is in the percentiles: \(row)")
        }
        // The scale rows change a key with entries after it, at every size.
        let scale = rows.filter { ($0["id"] as? String)?.hasPrefix("6.scale-") == true }
        #expect(scale.count == 2)
        for row in scale {
            let after = try #require((row["detail"] as? [String: Any])?["entriesAfter"] as? Double, "\(row)")
            #expect(after >= 4, "\(row)")
        }
        // Contention: the floor and the library replace the same 101 keys, and lose nothing.
        let contention = rows.filter { ($0["group"] as? String)?.hasPrefix("8.") == true }
        #expect(contention.count == 4)
        for row in contention {
            #expect((row["detail"] as? [String: Any])?["keys"] as? Double == 101, "\(row)")
        }
        #expect(contention.filter { $0["lostUpdates"] as? Int == 0 }.count == 2, "\(contention)")
        // Numbers and units apart, so that two runs compare by script; latency rows carry their CDF.
        for row in rows where row["p50"] != nil {
            let p50 = try #require(row["p50"] as? [String: Any])
            #expect((p50["value"] as? Double ?? 0) > 0 && ["ns", "µs", "ms"].contains(p50["unit"] as? String ?? ""), "\(row)")
        }
        // Many processes: the futex floor and the library's observers, which say how many poll,
        // the inotify instances they hold and how often they wake while idle.
        #expect(rows.contains { $0["id"] as? String == "19.floor.4" }, "\(rows)")
        let many = try #require(rows.first { $0["id"] as? String == "19.library.4" })
        let held = try #require(many["detail"] as? [String: Any], "\(many)")
        #expect(held["polling"] is Double && (held["inotifyInstances"] as? Double ?? 0) >= 1 && held["idleWakeUpsPer10s"] is Double, "\(many)")
        // Three floors measured in the same blocks as row 3, and each library variant's ratio to them.
        for id in ["3.floor.kernel", "3.floor.held", "3.floor.held-nothing"] { #expect(rows.contains { $0["id"] as? String == id }, "\(id)") }
        let none = try #require(rows.first { $0["id"] as? String == "3.none" })
        #expect((none["detail"] as? [String: Any])?["heldNothingFloorRatio"] is Double, "\(none)")
        // --check reads the run: a table of every target, met or not (a smoke test: a short run on a
        // busy machine meets few, so its status is not asserted beyond "read").
        let check = try await run(bench, ["--check", json.path])
        #expect(check.status == 0 || check.status == 1, "\(check.output)")
        for target in ["interleaved kernel floor p50", "fan-out, slowest p99", "bare 8-process lock + replace loop", "cold start ÷ Foundation UserDefaults", "realistic 100-key suite", "idle observer wake-ups", "run 1 ("] {
            #expect(check.output.contains(target), "\(check.output)")
        }
    }

    /// An observer process that leaves out about 5 % of the changes: the rows it observes say so,
    /// and `--check` fails them.
    @Test func aFaultyObserverThatDropsChangesFailsTheCheck() async throws {
        let directory = try TemporaryDirectory()
        let json = directory.file("bench.json")
        let result = try await run(bench, ["--quick", "--only", "3", "--json", json.path], environment: ["PREFS_BENCH_DROP_PERCENT": "5"])
        #expect(result.status == 0, "\(result.output)")
        let rows = try rows(json)
        let library = rows.filter { ["3.none", "3.none.watcher", "3.full"].contains($0["id"] as? String ?? "") }
        #expect(library.count == 3)
        for row in library {
            let (sent, measured) = (try #require(row["sent"] as? Int), try #require(row["measured"] as? Int))
            #expect(measured < sent && (row["merged"] as? Int ?? 0) + (row["timedOut"] as? Int ?? 0) == sent - measured, "\(row)")
        }
        // The floors have no faulty observer.
        #expect(rows.first { $0["id"] as? String == "3.floor.kernel" }?["measured"] as? Int == rows.first { $0["id"] as? String == "3.floor.kernel" }?["sent"] as? Int)
        let check = try await run(bench, ["--check", json.path])
        #expect(check.status == 1, "\(check.output)")
        #expect(check.output.contains("100-key suite, durability .none | ") && check.output.contains("changes seen as sent"), "\(check.output)")
    }

    /// `--ab` runs a group in this build and another (here the same executable) in turn and prints
    /// each row's ratio over the rounds.
    @Test func anABRunPrintsEachRowsRatioOverTheRounds() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(bench, ["--ab", bench.path, "--rounds", "2", "--only", "13,14", "--quick", "--json", directory.file("ab.json").path])
        #expect(result.status == 0, "\(result.output)")
        for id in ["13.cached-read", "14.set-sync"] {
            #expect(result.output.contains("| \(id): "), "\(result.output)")
        }
        #expect(result.output.contains("2 rounds of groups 13,14"), "\(result.output)")
        let missing = try await run(bench, ["--ab", directory.file("nothing").path])
        #expect(missing.status == 64 && missing.output.contains("no such executable"), "\(missing.output)")
    }

    @Test(.enabled(if: hasMatplotlib, "needs python3 with matplotlib (pip install matplotlib)"))
    func plotsTheLatencyDistribution() async throws {
        let directory = try TemporaryDirectory()
        let png = directory.file("cdf.png")
        let result = try await run(bench, ["--quick", "--only", "3", "--json", directory.file("bench.json").path, "--plot", png.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(try Data(contentsOf: png).starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }
}

/// Whether the `python3` on the PATH imports matplotlib (the plot's only dependency).
let hasMatplotlib: Bool = {
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/env")
    process.arguments = ["python3", "-c", "import matplotlib"]
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}()
