import Foundation
import SharedPrefsLocking

/// CLOCK_MONOTONIC in nanoseconds: comparable between processes of one machine.
func now() -> Int64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
}

func percentile(_ sorted: [Int64], _ p: Double) -> Int64 {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
}

/// One line of the results table.
struct Row: Codable {
    var group: String
    var name: String
    var n: Int
    var p50: String = ""
    var p99: String = ""
    var throughput: String = ""
    var ratio: String = ""
    var note: String = ""
}

func µs(_ ns: Int64) -> String { String(format: "%.0f µs", Double(ns) / 1000) }
func ms(_ ns: Int64) -> String { String(format: "%.2f ms", Double(ns) / 1e6) }
func times(_ a: Int64, _ b: Int64) -> String {
    guard b != 0 else { return "" }
    let ratio = Double(a) / Double(b)
    return String(format: ratio < 0.1 ? "%.3f×" : "%.1f×", ratio)
}

/// Where this executable is, to start copies of itself in other roles.
let executable = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])

/// A child process (this executable in another role) whose standard output is read line by line.
final class Child: Sendable {
    private let process: Process
    private let lines = Lock<[String]>([])
    private let arrived = DispatchSemaphore(value: 0)

    init(_ arguments: [String], executable: URL = executable) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
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
                    lines.withLock { $0.append(line) }
                    arrived.signal()
                }
            }
            arrived.signal()
        }.start()
    }

    /// The next line, waiting up to `timeout` seconds; nil at end of output or on timeout.
    func nextLine(timeout: Double = 120) -> String? {
        while true {
            if let line = lines.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return line }
            if !process.isRunning && lines.withLock({ $0.isEmpty }) { return nil }
            if arrived.wait(timeout: .now() + timeout) == .timedOut { return nil }
        }
    }

    func waitForExit() { process.waitUntilExit() }
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
