import Foundation
import SharedPrefsTestSupport
import Testing

/// Keeps the benchmark runnable. It checks that every measurement completes and that contention
/// loses nothing; it asserts no timing (timings belong to the benchmark's own report).
@Test func prefsBenchQuickRunCompletesEveryMeasurement() async throws {
    let directory = try TemporaryDirectory()
    let json = directory.file("bench.json")
    let bench = childExecutable.deletingLastPathComponent().appending(path: "prefs-bench")
    let result = try await run(bench, ["--quick", "--only", "2,3,4,6,7,8,9,11,14,15", "--json", json.path])
    #expect(result.status == 0, "\(result.output)")
    let rows = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [[String: Any]])
    let groups = Set(rows.compactMap { ($0["group"] as? String)?.split(separator: ".").first.map(String.init) })
    #expect(groups == ["2", "3", "4", "6", "7", "8", "9", "11", "14", "15"])
    // Every suite is had under the descriptor limit.
    #expect(rows.contains { $0["group"] as? String == "15. descriptors" && ($0["note"] as? String)?.hasPrefix("1000 of 1000 tried") == true }, "\(rows)")
    #expect(!rows.contains { $0["name"] as? String == "failed" }, "\(rows)")
    #expect(rows.filter { ($0["note"] as? String)?.hasPrefix("lost updates: 0 ") == true }.count == 2, "contention, .full and .none")
    // Numbers and units apart, so that two runs compare by script; latency rows carry their CDF.
    for row in rows where row["p50"] != nil {
        let p50 = try #require(row["p50"] as? [String: Any])
        #expect((p50["value"] as? Double ?? 0) > 0 && ["ns", "µs", "ms"].contains(p50["unit"] as? String ?? ""), "\(row)")
    }
    let floor = try #require(rows.first { ($0["name"] as? String)?.hasPrefix("rename") == true })
    let cdf = try #require(floor["cdf"] as? [[Double]])
    #expect(cdf.count > 1 && cdf.last?[1] == 100)
    // Every row that can lose a change says how many it sent.
    #expect(rows.filter { ($0["group"] as? String)?.hasPrefix("3.") == true && $0["p50"] != nil }.allSatisfy { $0["sent"] is Int }, "\(rows)")
    // --check reads the run: a table of every target, met or not (a smoke test: a short run on a
    // busy machine meets few, so its status is not asserted beyond "read").
    let check = try await run(bench, ["--check", json.path])
    #expect(check.status == 0 || check.status == 1, "\(check.output)")
    for target in ["interleaved kernel floor p50", "fan-out, slowest p99", "bare 8-process lock + replace loop", "cold start ÷ Foundation UserDefaults", "memory per extra 100-key suite", "idle observer wake-ups"] {
        #expect(check.output.contains(target), "\(check.output)")
    }
}

@Test func prefsBenchPlotsTheLatencyDistribution() async throws {
    let directory = try TemporaryDirectory()
    let bench = childExecutable.deletingLastPathComponent().appending(path: "prefs-bench")
    let png = directory.file("cdf.png")
    let result = try await run(bench, ["--quick", "--only", "4", "--json", directory.file("bench.json").path, "--plot", png.path])
    #expect(result.status == 0, "\(result.output)")
    #expect(try Data(contentsOf: png).starts(with: [0x89, 0x50, 0x4E, 0x47]))
}
