import Foundation
import Testing

/// Keeps the benchmark runnable. It checks that every measurement completes and that contention
/// loses nothing; it asserts no timing (timings belong to the benchmark's own report).
@Test func prefsBenchQuickRunCompletesEveryMeasurement() async throws {
    let directory = try TemporaryDirectory()
    let json = directory.file("bench.json")
    let bench = childExecutable.deletingLastPathComponent().appending(path: "prefs-bench")
    let result = try await run(bench, ["--quick", "--only", "1,2,3,4,6,7,8,9", "--json", json.path])
    #expect(result.status == 0, "\(result.output)")
    let rows = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [[String: Any]])
    let groups = Set(rows.compactMap { ($0["group"] as? String)?.split(separator: ".").first.map(String.init) })
    #expect(groups == ["1", "2", "3", "4", "6", "7", "8", "9"])
    #expect(!rows.contains { $0["name"] as? String == "failed" }, "\(rows)")
    #expect(rows.contains { ($0["note"] as? String)?.hasPrefix("lost updates: 0 ") == true })
}
