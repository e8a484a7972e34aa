import CSharedPrefsShims
import Foundation
@_spi(Benchmarks) import SharedPrefs
import SharedPrefsLocking

/// CLOCK_MONOTONIC in nanoseconds: comparable between processes of one machine.
func now() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
}

/// The CPU time this process has used, all its threads, user and system (ns).
func cpuTime() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
    return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
}

/// Sleeps until `deadline` (`now()`), the start barrier of processes that work together.
func sleep(until deadline: Int64) {
    let wait = deadline - now()
    if wait > 0 { usleep(useconds_t(wait / 1000)) }
}

/// A number and its unit: the JSON keeps them apart, so that a script can compare two runs.
struct Quantity: Codable, CustomStringConvertible {
    var value: Double
    var unit: String

    var description: String {
        switch unit {
        case "µs": String(format: "%.0f µs", value)
        case "ms": String(format: "%.2f ms", value)
        case "KiB": String(format: "%.1f KiB", value)
        case "× timeout": String(format: "%.2f× the timeout", value)
        default: value >= 1e6 ? String(format: "%.2f M %@", value / 1e6, unit) : String(format: "%.0f %@", value, unit)
        }
    }

    /// The value in the unit's base (nanoseconds for a duration), so that two runs compare.
    var base: Double {
        switch unit {
        case "µs": value * 1e3
        case "ms": value * 1e6
        default: value
        }
    }
}

func µs(_ ns: Int64) -> Quantity { Quantity(value: (Double(ns) / 1000).rounded(), unit: "µs") }
func ms(_ ns: Int64) -> Quantity { Quantity(value: (Double(ns) / 1e4).rounded() / 100, unit: "ms") }

func ratio(_ a: Int64, _ b: Int64) -> Double? {
    b == 0 ? nil : Double(a) / Double(b)
}

/// The median of `values` (0 when empty).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Latencies in nanoseconds, kept whole: a row holds thousands of samples at most, so its
/// percentiles are exact (nearest rank) and need no histogram.
struct Latencies {
    private let sorted: [Int64]

    init(_ samples: some Sequence<Int64>) {
        sorted = samples.map { max(1, $0) }.sorted()
    }

    var count: Int { sorted.count }
    /// The smallest sample that `percent` % of the samples do not exceed.
    func at(_ percent: Double) -> Int64 {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
    var p50: Int64 { at(50) }
    var p99: Int64 { at(99) }

    /// The distribution, as (nanoseconds, percentile) points, for `--plot`: about 400 evenly
    /// ranked points and every one of the slowest 1 %.
    var cdf: [[Double]] {
        let n = sorted.count
        let step = max(1, n / 400)
        let ranks = Set(stride(from: 0, to: n, by: step)).union(max(0, n - max(1, n / 100))..<n).sorted()
        return ranks.map { [Double(sorted[$0]), Double($0 + 1) / Double(n) * 100] }
    }
}

/// One line of the results table, and of the JSON.
struct Row: Codable {
    /// A short name that stays the same from build to build, by which `--ab` pairs rows.
    var id: String
    var group: String
    var name: String
    /// Samples measured (in the percentiles: every change sent, warm-up excluded).
    var n: Int
    /// Changes sent (warm-up excluded), where a change can be lost: what became of them.
    var sent: Int? = nil
    /// … seen by every observer as sent.
    var measured: Int? = nil
    /// … not seen by some observer, which saw a newer value: counted at that one's arrival.
    var merged: Int? = nil
    /// … of which some observer saw neither it nor a newer value: counted as the timeout.
    var timedOut: Int? = nil
    /// Increments that `update` reported done and the stored counter does not hold.
    var lostUpdates: Int? = nil
    var p50: Quantity? = nil
    var p99: Quantity? = nil
    var throughput: Quantity? = nil
    /// The headline ratio: to what `ratioTo` names, measured in the same blocks.
    var ratio: Double? = nil
    var ratioTo: String = ""
    var note: String = ""
    /// The latency distribution (nanoseconds, percentile), for `--plot`.
    var cdf: [[Double]]? = nil
    /// The targets this row's figures are held to (`--check`).
    var targets: [Target]? = nil
    /// What `--ab` compares, lower is better: the p50 in nanoseconds, the time per operation of a
    /// rate, a size. `nil`: the row is not compared.
    var cost: Double? = nil
    /// Figures a script or test reads (`entriesAfter`: entries after the changed one in the file).
    var detail: [String: Double]? = nil

    /// A latency row from a tally: its percentiles, distribution and what became of the changes.
    init(id: String, group: String, name: String, tally: Tally, note: String = "", ratio: Double? = nil, ratioTo: String = "", targets: [Target]? = nil, unit: (Int64) -> Quantity = µs) {
        let measuredLatencies = Latencies(tally.latencies)
        self.init(
            id: id, group: group, name: name, n: measuredLatencies.count, sent: tally.sent, measured: tally.measured,
            merged: tally.merged, timedOut: tally.timedOut, p50: unit(measuredLatencies.p50), p99: unit(measuredLatencies.p99),
            ratio: ratio, ratioTo: ratioTo, note: note, cdf: measuredLatencies.cdf, targets: targets, cost: Double(measuredLatencies.p50))
        self.note += (note.isEmpty ? "" : "; ") + tally.text
    }

    init(
        id: String, group: String, name: String, n: Int, sent: Int? = nil, measured: Int? = nil, merged: Int? = nil, timedOut: Int? = nil,
        lostUpdates: Int? = nil, p50: Quantity? = nil, p99: Quantity? = nil, throughput: Quantity? = nil, ratio: Double? = nil,
        ratioTo: String = "", note: String = "", cdf: [[Double]]? = nil, targets: [Target]? = nil, cost: Double? = nil, detail: [String: Double]? = nil
    ) {
        (self.id, self.group, self.name, self.n, self.sent, self.measured, self.merged, self.timedOut) = (id, group, name, n, sent, measured, merged, timedOut)
        (self.lostUpdates, self.p50, self.p99, self.throughput, self.ratio, self.ratioTo) = (lostUpdates, p50, p99, throughput, ratio, ratioTo)
        (self.note, self.cdf, self.targets, self.cost, self.detail) = (note, cdf, targets, cost, detail)
    }

    /// Why `--check` fails this row whatever its targets: more than 1 % of its changes not seen as
    /// sent, or an increment lost; `nil` when neither.
    var lossFailure: String? {
        if let lostUpdates, lostUpdates > 0 { return "\(lostUpdates) updates lost (must be 0)" }
        guard let sent, let measured, Double(sent - measured) > 0.01 * Double(sent) else { return nil }
        return "\(measured) of \(sent) changes seen as sent (\(merged ?? 0) merged, \(timedOut ?? 0) timed out; ≥ 99 %)"
    }

    var ratioText: String {
        guard let ratio else { return "" }
        return String(format: ratio < 0.1 ? "%.3f×" : "%.2f×", ratio) + " " + ratioTo
    }
}

/// A figure and the bound it must meet, by `prefs-bench --check`.
struct Target: Codable {
    /// One of ``Target/all``.
    var what: String
    var figure: Double
    var bound: Double
    /// `figure ≤ bound` (else `≥`).
    var atMost: Bool

    func isMet(_ figure: Double) -> Bool { atMost ? figure <= bound : figure >= bound }

    /// The targets, in issue 29's order (the memory one on realistic suites since Bench III).
    static let all = [
        "set → remote observer .none p50 ÷ interleaved kernel floor p50",
        "set → remote observer .none p99 ÷ interleaved kernel floor p50",
        ".full p50 ÷ libdconf write_sync → changed p50, interleaved",
        "fan-out, slowest p99 ÷ bare reader floor p99, as many observers, interleaved",
        "8 writers' update rate ÷ bare 8-process lock + replace loop, interleaved",
        "one-key change in the middle at 10,000 keys ÷ at 10 keys (p50), interleaved",
        "one-key change in the middle at 100,000 keys, p50 (ms)",
        "cold start ÷ Foundation UserDefaults, both reading a written suite",
        "memory per extra realistic 100-key suite, beyond its file's size (KiB)",
        "cached read ÷ Foundation UserDefaults read (times faster)",
        "idle observer wake-ups in 10 s, worst of three windows",
        "cached read with a locked key and two system layers ÷ Foundation UserDefaults read (times faster)",
        "an administrator's default changed → observer in another process, p99 (ms)",
        "a key locked or unlocked → observer in another process, p99 (ms)",
    ]
}

/// Where this executable is, to start copies of itself in other roles.
let executable = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])

/// A child process (this executable in another role) whose standard output is read line by line
/// and whose standard input takes lines.
final class Child: Sendable {
    private let process: Process
    private let input: FileHandle
    /// Each line with the time it arrived here, and whether its output ended (read to the end:
    /// a process that exited may still have lines in the pipe).
    private let lines = Lock<(lines: [(String, Int64)], ended: Bool)>(([], false))
    private let arrived = DispatchSemaphore(value: 0)

    init(_ arguments: [String], executable: URL = executable, environment: [String: String]? = nil) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let output = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        self.process = process
        self.input = input.fileHandleForWriting
        let reader = output.fileHandleForReading
        Thread { [self] in
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending += chunk
                while let end = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<end], as: UTF8.self)
                    pending.removeSubrange(...end)
                    lines.withLock { $0.lines.append((line, now())) }
                    arrived.signal()
                }
            }
            lines.withLock { $0.ended = true }
            arrived.signal()
        }.start()
    }

    /// The next line, waiting up to `timeout` seconds; nil at end of output or on timeout.
    func nextLine(timeout: Double = 120) -> String? {
        nextTimedLine(timeout: timeout)?.line
    }

    /// The next line and when it arrived (`now()`), waiting up to `timeout` seconds.
    func nextTimedLine(timeout: Double = 120) -> (line: String, arrival: Int64)? {
        while true {
            let (line, ended) = lines.withLock { s in (s.lines.isEmpty ? nil : s.lines.removeFirst(), s.ended) }
            if let line { return line }
            if ended { return nil }
            if arrived.wait(timeout: .now() + timeout) == .timedOut { return nil }
        }
    }

    var pid: pid_t { process.processIdentifier }

    /// Waits for the `ready` line every role prints once set up.
    func ready() throws {
        guard let line = nextLine(), line == "ready" else {
            stop()
            throw BenchError("a child (\(process.arguments?.joined(separator: " ") ?? "")) did not get ready")
        }
    }

    /// Writes `line` to its standard input.
    func send(_ line: String) {
        try? input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits for its exit; its status.
    @discardableResult
    func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Ends it (SIGKILL: a child that stopped answering may have SIGTERM blocked) and reaps it.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A failure of the bench itself, with what happened.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Resident set size of this process, in bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}

/// The file system holding `path`, by name where known (`statfs` `f_type`).
func fileSystem(of path: String) -> String {
    let type = sharedprefs_filesystem_type(path)
    guard type >= 0 else { return "unknown" }
    switch UInt(type) {
    case 0xEF53: return "ext2/3/4"
    case 0x0102_1994: return "tmpfs"
    case 0x9123_683E: return "btrfs"
    case 0x5846_5342: return "xfs"
    case 0x794C_7630: return "overlayfs"
    case 0x6969: return "nfs"
    case 0x6573_5546: return "fuse"
    case let type: return String(format: "f_type 0x%lx", type)
    }
}

/// Keeps a value alive so the optimizer cannot drop the work that made it.
@inline(never) func blackHole<T>(_ value: T) { _ = value }

/// Sleeps between changes, so latency is measured, not throughput. (A benchmark, not a test.)
func gap(_ milliseconds: Double) { usleep(useconds_t(milliseconds * 1000)) }

/// A suite's content as applications have it, the same for the same `count`: keys of 12 to 40
/// characters; values that are strings of 20 to 200 bytes (55 %), integers (20 %), dates (15 %)
/// and data of 16 to 64 bytes (10 %). Swift stores strings of up to 15 bytes inline, so short
/// made-up keys and values would cost no heap at all.
func realisticValues(_ count: Int) -> PlistDictionary {
    var random = SplitMix(seed: UInt64(count))
    let words = ["window", "sidebar", "sync", "account", "theme", "network", "proxy", "history", "editor", "font", "export", "cache", "update", "privacy", "layout"]
    var values = PlistDictionary()
    for i in 0..<count {
        var key = "app.\(words[random.next(words.count)]).\(words[random.next(words.count)])"
        let length = 12 + random.next(29)
        while key.utf8.count < length - 4 { key += "." + words[random.next(words.count)] }
        key = String(key.prefix(length - 4)) + ".\(i)"  // no digits before: unique
        let kind = random.next(100)
        values[key] =
            kind < 55 ? .string(String((0..<(20 + random.next(181))).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next(26)))) }))
            : kind < 75 ? .integer(Int64(random.next(1_000_000)))
            : kind < 90 ? .date(Date(timeIntervalSince1970: 1_700_000_000 + Double(random.next(100_000_000))))
            : .data(Data((0..<(16 + random.next(49))).map { _ in UInt8(random.next(256)) }))
    }
    return values
}

/// A small deterministic generator (SplitMix64), so that every run and build makes the same suites.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    /// A number in `0..<bound`.
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
