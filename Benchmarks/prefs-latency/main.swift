// A quick cross-process latency harness: process A sets a key, process B's observer fires.
//
//   swift run -c release prefs-latency [--count N] [--keys K]
//
// For each durability it starts an observer process (this executable, role "observe"), waits
// until it is ready, then sets one key N times with a 2 ms gap (so it measures latency, not
// throughput), then sets "done". Each value is the CLOCK_MONOTONIC time of the set; B reports
// now − value for every change it observes.
// The real benchmark (Benchmarks/, issue "prefs-bench") will supersede this.
import Foundation
import SharedPrefs
import Synchronization

func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

func percentile(_ sorted: [Int64], _ p: Double) -> Int64 {
    sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

var arguments = Array(CommandLine.arguments.dropFirst())

if arguments.first == "observe", arguments.count == 2 {
    // Role B: print "ready", collect latencies until the key "done" changes, print n p50 p99 (µs).
    // Two sets that land before B re-reads arrive as one change (old → newest), so n may be
    // slightly below the number of sets; each latency is still that of the value B saw.
    let suite = try PreferenceSuite(fileURL: URL(filePath: arguments[1]))
    let latencies = Mutex<[Int64]>([])
    let done = DispatchSemaphore(value: 0)
    let token = suite.observe(.keys(["stamp", "done"])) { change in
        guard change.key == "stamp" else { done.signal(); return }
        guard case .integer(let sent)? = change.newValue else { return }
        latencies.withLock { $0.append(monotonicNanoseconds() - sent) }
    }
    print("ready")
    fflush(nil)
    if done.wait(timeout: .now() + 120) == .timedOut {
        FileHandle.standardError.write(Data("observer timed out after \(latencies.withLock { $0.count }) changes\n".utf8))
        exit(1)
    }
    let sorted = latencies.withLock { $0 }.sorted()
    guard !sorted.isEmpty else { exit(1) }
    print("\(sorted.count) \(percentile(sorted, 0.5) / 1000) \(percentile(sorted, 0.99) / 1000)")
    token.cancel()
    exit(0)
}

var count = 500
var keys = 100
while let option = arguments.first {
    arguments.removeFirst()
    guard let value = arguments.first.flatMap(Int.init), value > 0 else {
        print("usage: prefs-latency [--count N] [--keys K]")
        exit(64)
    }
    arguments.removeFirst()
    switch option {
    case "--count": count = value
    case "--keys": keys = value
    default:
        print("usage: prefs-latency [--count N] [--keys K]")
        exit(64)
    }
}

let directory = FileManager.default.temporaryDirectory.appending(path: "prefs-latency-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }
print("set → remote observer latency, \(keys)-key suite, \(count) changes, 2 ms apart")
print("| durability | n | p50 µs | p99 µs |")
print("|---|---|---|---|")
for (label, durability) in [("none", PreferenceSuite.Durability.none), ("full", .full)] {
    let file = directory.appending(path: "latency-\(label).plist")
    let suite = try PreferenceSuite(fileURL: file, options: .init(durability: durability))
    for i in 0..<keys - 1 { suite.set("value \(i)", forKey: "key.\(i)") }
    try await suite.flush()

    let observer = Process()
    observer.executableURL = URL(filePath: CommandLine.arguments[0])
    observer.arguments = ["observe", file.path]
    let output = Pipe()
    observer.standardOutput = output
    try observer.run()
    let reader = output.fileHandleForReading
    var lines: [String] = []
    var buffer = Data()
    while lines.isEmpty {
        let chunk = reader.availableData
        guard !chunk.isEmpty else { break }
        buffer.append(chunk)
        if buffer.contains(UInt8(ascii: "\n")) { lines.append("ready") }
    }
    for _ in 0..<count {
        suite.set(monotonicNanoseconds(), forKey: "stamp")
        try await Task.sleep(for: .milliseconds(2))
    }
    suite.set(true, forKey: "done")
    let result = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        .split(separator: "\n").last.map(String.init) ?? ""
    observer.waitUntilExit()
    let fields = result.split(separator: " ")
    guard observer.terminationStatus == 0, fields.count == 3 else {
        print("| \(label) | observer failed (status \(observer.terminationStatus)) | | |")
        continue
    }
    print("| \(label) | \(fields[0]) | \(fields[1]) | \(fields[2]) |")
}
