import Foundation

/// `prefs-bench --ab OTHER [--rounds N] [--only …] [--quick]`: this build's rows and another
/// build's (another `prefs-bench` executable, a previous main's, say), group by group in
/// alternating runs: each group runs `rounds` times in this build and in the other, which goes
/// first alternating from round to round, before the next group; the groups that create and
/// delete thousands of files (9, 15) come last, since the freeing slows making files for
/// minutes on some file systems (ext4 mounted with `discard`). For every row both builds have,
/// prints this ÷ other of its cost (the p50, the time per operation of a rate, a size: above 1,
/// this build is slower or bigger), its min, median and max over the rounds. This is how a
/// change shows it pays, and how a rewrite shows it is no worse.
enum AB {
    struct Figures: Codable {
        var name = ""
        var this: [Double] = [], other: [Double] = []
        var thisP99: [Double] = [], otherP99: [Double] = []
        var unit = ""
        /// This ÷ other, round by round.
        var ratios: [Double] { zip(this, other).map { $0 / max($1, .leastNonzeroMagnitude) } }
        var p99Ratios: [Double] { zip(thisP99, otherP99).map { $0 / max($1, .leastNonzeroMagnitude) } }
    }

    static func run(other: String, rounds: Int, groups: [Int], quick: Bool, jsonPath: String) -> Int32 {
        guard FileManager.default.isExecutableFile(atPath: other) else {
            FileHandle.standardError.write(Data("prefs-bench: --ab \(other): no such executable. Pass another build's prefs-bench (swift build -c release --product prefs-bench --scratch-path .build-other in its checkout).\n".utf8))
            return 64
        }
        let work = FileManager.default.temporaryDirectory.appending(path: "prefs-bench-ab-\(getpid())")
        try? FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let builds = [executable.path, URL(filePath: other).standardizedFileURL.path]
        var figures: [String: Figures] = [:]
        var order: [String] = []
        let started = Date()
        for group in groups {
            for round in 0..<rounds {
                var results: [[Row]] = [[], []]
                for k in 0..<2 {
                    let b = (round + k) % 2
                    FileHandle.standardError.write(Data("prefs-bench --ab: round \(round + 1) of \(rounds), group \(group), \(b == 0 ? "this build" : "the other")…\n".utf8))
                    guard let rows = runOnce(builds[b], group: group, quick: quick, in: work) else { return 1 }
                    results[b] = rows
                }
                for row in results[0] {
                    guard let cost = row.cost, let theirs = results[1].first(where: { $0.id == row.id }), let otherCost = theirs.cost else { continue }
                    if figures[row.id] == nil { order.append(row.id) }
                    var f = figures[row.id, default: Figures(name: "\(row.group): \(row.name)")]
                    f.this.append(cost)
                    f.other.append(otherCost)
                    if let p99 = row.p99?.base, let otherP99 = theirs.p99?.base {
                        f.thisP99.append(p99)
                        f.otherP99.append(otherP99)
                    }
                    f.unit = row.p50 != nil ? "µs" : row.throughput?.unit ?? ""
                    figures[row.id] = f
                }
            }
        }
        print("prefs-bench --ab: \(builds[0]) ÷ \(builds[1]), \(rounds) rounds of groups \(groups.map(String.init).joined(separator: ",")), started \(started.formatted(.iso8601))\(quick ? ", --quick" : "")\n")
        print("Cost ratio this ÷ other (p50, time per operation, or size; above 1: this build is slower or bigger).\n")
        print("| row | this, median | other, median | min | median | max | p99 ratio, median |")
        print("|---|---|---|---|---|---|---|")
        for id in order {
            let f = figures[id]!
            let ratios = f.ratios
            let p99 = f.p99Ratios.isEmpty ? "" : String(format: "%.2f", median(f.p99Ratios))
            print("| \(id): \(f.name) | \(show(median(f.this), f.unit)) | \(show(median(f.other), f.unit)) | " + [ratios.min()!, median(ratios), ratios.max()!].map { String(format: "%.2f", $0) }.joined(separator: " | ") + " | \(p99) |")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        if let data = try? encoder.encode(figures) { try? data.write(to: URL(filePath: jsonPath)) }
        return 0
    }

    /// A cost in the row's own terms: µs for latencies, the rate for rates.
    static func show(_ cost: Double, _ unit: String) -> String {
        switch unit {
        case "µs": String(format: "%.0f µs", cost / 1000)
        case "reads/s", "sets/s", "updates/s", "replaces/s": (1 / cost >= 1e6 ? String(format: "%.2f M %@", 1e-6 / cost, unit) : String(format: "%.0f %@", 1 / cost, unit))
        default: String(format: "%.1f %@", cost, unit)
        }
    }

    /// One group of one build, its rows; nil (and what it printed) when it failed.
    static func runOnce(_ build: String, group: Int, quick: Bool, in work: URL) -> [Row]? {
        let json = work.appending(path: "rows.json")
        let log = work.appending(path: "log.txt")
        try? FileManager.default.removeItem(at: json)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = URL(filePath: build)
        // One block a run: the two builds' blocks alternate, seconds apart (this machine's noise
        // drifts within minutes), and the median of many pairs is what counts.
        process.arguments = ["--only", String(group), "--json", json.path, "--blocks", "1"] + (quick ? ["--quick"] : [])
        sync()  // what the last run left dirty is written before this one measures
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try? FileHandle(forWritingTo: log)
        do { try process.run() } catch {
            FileHandle.standardError.write(Data("prefs-bench --ab: could not start \(build): \(error)\n".utf8))
            return nil
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0, let rows = try? JSONDecoder().decode([Row].self, from: Data(contentsOf: json)) else {
            let printed = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            FileHandle.standardError.write(Data("prefs-bench --ab: \(build) --only \(group) failed (status \(process.terminationStatus)):\n\(printed.suffix(2000))\n".utf8))
            return nil
        }
        return rows
    }
}
