import Foundation
import Histogram
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

/// A number and its unit: the JSON keeps them apart, so that a script can compare two runs.
struct Quantity: Codable, CustomStringConvertible {
    var value: Double
    var unit: String

    var description: String {
        switch unit {
        case "µs": String(format: "%.0f µs", value)
        case "ms": String(format: "%.2f ms", value)
        default: value >= 1e6 ? String(format: "%.2f M %@", value / 1e6, unit) : String(format: "%.0f %@", value, unit)
        }
    }
}

func µs(_ ns: Int64) -> Quantity { Quantity(value: (Double(ns) / 1000).rounded(), unit: "µs") }
func ms(_ ns: Int64) -> Quantity { Quantity(value: (Double(ns) / 1e4).rounded() / 100, unit: "ms") }

func ratio(_ a: Int64, _ b: Int64) -> Double? {
    b == 0 ? nil : Double(a) / Double(b)
}

/// Latencies in nanoseconds, in an HDR histogram (three significant digits, up to ten minutes).
struct Latencies {
    private var histogram = Histogram<UInt64>(highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .three)

    init(_ samples: some Sequence<Int64>) {
        for sample in samples { _ = histogram.record(UInt64(max(1, sample))) }
    }

    var count: Int { Int(histogram.totalCount) }
    func at(_ percent: Double) -> Int64 { count == 0 ? 0 : Int64(histogram.valueAtPercentile(percent)) }
    var p50: Int64 { at(50) }
    var p99: Int64 { at(99) }

    /// The distribution, as (nanoseconds, percentile) points, for `--plot`.
    var cdf: [[Double]] {
        count == 0 ? [] : histogram.percentiles(ticksPerHalfDistance: 4).map { [Double($0.value), $0.percentile] }
    }
}

/// One line of the results table, and of the JSON.
struct Row: Codable {
    var group: String
    var name: String
    /// Samples measured.
    var n: Int
    /// Changes sent, where a change can be lost or merged: `n` below it by more than 1 % fails
    /// `--check`.
    var sent: Int? = nil
    var p50: Quantity? = nil
    var p99: Quantity? = nil
    var throughput: Quantity? = nil
    /// The headline ratio: to what `ratioTo` names.
    var ratio: Double? = nil
    var ratioTo: String = ""
    var note: String = ""
    /// The latency distribution (nanoseconds, percentile), for `--plot`.
    var cdf: [[Double]]? = nil
    /// The targets this row's figures are held to (`--check`).
    var targets: [Target]? = nil

    /// What was lost or merged of what was sent, for the note: empty when nothing was.
    var lossText: String { sent.map { Self.loss(n, of: $0) } ?? "" }

    static func loss(_ n: Int, of sent: Int) -> String {
        guard sent > n else { return "" }
        let lost = Double(sent - n) / Double(sent)
        return "; \(n) of \(sent) changes measured (" + String(format: "%.1f", 100 * lost) + " % lost or merged" + (lost > 0.01 ? ", more than 1 %)" : ")")
    }

    var ratioText: String {
        guard let ratio else { return "" }
        return String(format: ratio < 0.1 ? "%.3f×" : "%.1f×", ratio) + " " + ratioTo
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

    var isMet: Bool { atMost ? figure <= bound : figure >= bound }

    /// Issue 29's targets, in its order.
    static let all = [
        "set → remote observer .none p50 ÷ interleaved kernel floor p50",
        "set → remote observer .none p99 ÷ interleaved kernel floor p50",
        ".full p50 ÷ libdconf write_sync → changed p50",
        "fan-out, slowest p99 ÷ bare reader floor p99, as many observers",
        "8 writers' update rate ÷ bare 8-process lock + replace loop",
        "realistic one-key change at 10,000 keys ÷ at 10 keys (p50)",
        "realistic one-key change at 100,000 keys, p50 (ms)",
        "cold start ÷ Foundation UserDefaults",
        "memory per extra 100-key suite (KiB)",
        "cached read ÷ Foundation UserDefaults read (times faster)",
        "idle observer wake-ups in 10 s",
    ]
}

/// Where this executable is, to start copies of itself in other roles.
let executable = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])

/// A child process (this executable in another role) whose standard output is read line by line.
final class Child: Sendable {
    private let process: Process
    /// Each line with the time it arrived here, and whether its output ended (read to the end:
    /// a process that exited may still have lines in the pipe).
    private let lines = Lock<(lines: [(String, Int64)], ended: Bool)>(([], false))
    private let arrived = DispatchSemaphore(value: 0)

    init(_ arguments: [String], executable: URL = executable, environment: [String: String]? = nil) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        self.process = process
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

    func waitForExit() { process.waitUntilExit() }


    /// Ends a child that runs until killed.
    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// Resident set size of this process, in bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}

/// Keeps a value alive so the optimizer cannot drop the work that made it.
@inline(never) func blackHole<T>(_ value: T) { _ = value }

/// Sleeps between changes, so latency is measured, not throughput. (A benchmark, not a test.)
func gap(_ milliseconds: Double) { usleep(useconds_t(milliseconds * 1000)) }

#if Etcd
/// Three etcd members on loopback with their data in `directory`, for row 10 when no endpoints
/// are given (`prefs-bench --etcd`); stopped by ``stop()``.
final class LocalEtcdCluster {
    let endpoints: String
    private var members: [Process] = []

    init(in directory: URL) throws {
        let base = 20_000 + Int(getpid() % 2_000) * 10
        let client = (0..<3).map { "http://127.0.0.1:\(base + $0)" }
        let peer = (0..<3).map { "http://127.0.0.1:\(base + 5 + $0)" }
        endpoints = client.joined(separator: ",")
        let cluster = (0..<3).map { "m\($0)=\(peer[$0])" }.joined(separator: ",")
        for i in 0..<3 {
            let member = Process()
            member.executableURL = URL(filePath: "/usr/bin/etcd")
            member.arguments = [
                "--name", "m\(i)", "--data-dir", directory.appending(path: "etcd-m\(i)").path,
                "--listen-client-urls", client[i], "--advertise-client-urls", client[i],
                "--listen-peer-urls", peer[i], "--initial-advertise-peer-urls", peer[i],
                "--initial-cluster", cluster, "--initial-cluster-state", "new", "--initial-cluster-token", "prefs-bench-\(getpid())",
            ]
            member.standardOutput = FileHandle.nullDevice
            member.standardError = FileHandle.nullDevice
            try member.run()
            members.append(member)
        }
        for _ in 0..<100 {
            let health = Process()
            health.executableURL = URL(filePath: "/usr/bin/etcdctl")
            health.arguments = ["--endpoints", endpoints, "--dial-timeout", "1s", "endpoint", "health"]
            health.environment = ["ETCDCTL_API": "3"]
            health.standardOutput = FileHandle.nullDevice
            health.standardError = FileHandle.nullDevice
            try health.run()
            health.waitUntilExit()
            if health.terminationStatus == 0 { return }
            gap(200)
        }
        stop()
        throw CocoaError(.featureUnsupported, userInfo: [NSDebugDescriptionErrorKey: "the local etcd cluster at \(endpoints) did not become healthy in 20 s (is etcd-server installed?)"])
    }

    func stop() {
        for member in members where member.isRunning {
            member.terminate()
            member.waitUntilExit()
        }
    }
}
#endif
