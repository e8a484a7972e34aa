import Foundation
import SharedPrefs
import Synchronization

extension Measures {
    // MARK: 18. Catch-up

    /// A consumer away for 10,000 writes of a 100-key suite (one key each) catches up with
    /// `changes(since:)`: every write, from the journal, against reading the suite once, which
    /// tells where the values ended and not the writes on the way; 10 alternating blocks.
    mutating func catchUp() throws {
        let writes = quick ? 1_000 : 10_000
        let suite = try makeSuite("catch-up", durability: .none)
        let start = suite.sequence
        for i in 0..<writes { try suite.update { $0["key.\(i % 100)"] = .integer(Int64(i)) } }
        let (end, url) = (suite.sequence, suite.fileURL!)
        var (following, reading) = ([Int64](), [Int64]())
        let gaps = Atomic<Int>(0)
        interleave(arms: 2, blocks: 10) { arm in
            let began = now()
            if arm == 0 {
                let done = DispatchSemaphore(value: 0)
                let token = suite.followChanges(since: start) { event in
                    if case .gap = event { gaps.add(1, ordering: .relaxed) }
                    if event.sequence == end { done.signal() }
                }
                done.wait()
                following.append(now() - began)
                token.cancel()
            } else {
                blackHole(((try? PreferenceSuite.readStored(fileURL: url)) ?? nil)?.values.count ?? 0)
                reading.append(now() - began)
            }
        }
        guard gaps.load(ordering: .relaxed) == 0 else { throw BenchError("18. catch-up: the journal did not tell every one of \(writes) writes") }
        let (follow, read) = (Double(Latencies(following).p50), Double(Latencies(reading).p50))
        rows.append(Row(
            id: "18.catch-up", group: "18. catch-up", name: "changes(since:) after \(writes) one-key writes of a 100-key suite: every write, from the journal", n: following.count,
            throughput: Quantity(value: (Double(writes) * 1e9 / follow).rounded(), unit: "changes/s"),
            ratio: follow / read, ratioTo: "reading the suite once (where the values ended, not the writes)",
            note: String(format: "%.1f ms for all %d writes, p50 of 10; reading the suite %.0f µs", follow / 1e6, writes, read / 1e3),
            cost: follow / Double(writes) / 1e9))
    }
}
