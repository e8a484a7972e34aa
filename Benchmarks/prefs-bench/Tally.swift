/// One block of one arm of a latency measurement: the changes it sent, in order, and what each
/// observer process saw of them.
struct Block {
    /// The send times (`now()`), in the order sent; each names its change.
    var sent: [Int64] = []
    /// For each observer, the arrival of each change it saw (send time → arrival).
    var arrivals: [[Int64: Int64]] = []
}

/// What became of the changes an arm sent, over its blocks: every change is in the percentiles.
/// A change every observer saw counts at its slowest arrival; one that some observer did not
/// see, but saw a newer change, counts at that newer change's arrival (merged); one that some
/// observer saw neither it nor anything newer of counts as the timeout. Percentiles of only the
/// changes that arrived would leave out the slowest ones.
struct Tally {
    var latencies: [Int64] = []
    var sent = 0, measured = 0, merged = 0, timedOut = 0
    /// What a change that did not arrive counts as (ns).
    let timeout: Int64

    init(timeout: Int64 = 1_000_000_000) { self.timeout = timeout }

    /// Adds a block, less its first `warmUp` changes (the observers' first reads, a service's
    /// activation, cold caches).
    mutating func add(_ block: Block, warmUp: Int) {
        let count = block.sent.count
        guard count > warmUp else { return }
        var slowest = Array(repeating: Int64(0), count: count)
        // 0 seen, 1 merged, 2 timed out: the worst observer's.
        var outcome = Array(repeating: 0, count: count)
        for arrivals in block.arrivals {
            var newerArrival: Int64? = nil
            for i in stride(from: count - 1, through: 0, by: -1) {
                let sent = block.sent[i]
                let (latency, kind): (Int64, Int)
                if let arrival = arrivals[sent] {
                    (latency, kind) = (arrival - sent, 0)
                    newerArrival = min(newerArrival ?? arrival, arrival)
                } else if let newer = newerArrival {
                    (latency, kind) = (newer - sent, 1)
                } else {
                    (latency, kind) = (timeout, 2)
                }
                slowest[i] = max(slowest[i], latency)
                outcome[i] = max(outcome[i], kind)
            }
        }
        if block.arrivals.isEmpty { outcome = Array(repeating: 2, count: count) }
        for i in warmUp..<count {
            sent += 1
            latencies.append(outcome[i] == 2 ? timeout : slowest[i])
            switch outcome[i] {
            case 0: measured += 1
            case 1: merged += 1
            default: timedOut += 1
            }
        }
    }

    /// What became of the changes, for a row's note.
    var text: String {
        "sent \(sent): \(measured) seen as sent, \(merged) merged (counted at a newer change's arrival), \(timedOut) timed out (counted as \(timeout / 1_000_000) ms)"
    }
}

/// Runs `arms` arms in `blocks` blocks, each arm once a block, the order rotated from one block
/// to the next, so that every ratio divides by figures of the same minutes and no arm always
/// runs first (or right after the same other).
func interleave(arms: Int, blocks: Int, _ run: (_ arm: Int) throws -> Void) rethrows {
    for block in 0..<blocks {
        for k in 0..<arms { try run((block + k) % arms) }
    }
}
