// prefs-bench: what crosses processes, SharedPrefs side by side with Foundation UserDefaults,
// dconf and the kernel floor, in one run on one machine. Timings live here, never in tests; the
// in-process costs (cached reads, encode, re-read + diff, decode) are in Benchmarks/InProcess.
//
//   swift run -c release prefs-bench [--quick] [--install-dconf] [--json PATH] [--plot PNG] [--only 2,3,…]
//   swift run -c release prefs-bench --check PATH      the targets, met or not, of a run's JSON
//   swift run -c release --traits Etcd prefs-bench --etcd [ENDPOINTS]   row 10 only: an etcd suite (on a
//                                                                        3-member cluster of its own without ENDPOINTS)
import Foundation
import SharedPrefs

var arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "observe": try Role.observe(arguments[1], onWatcherThread: arguments.count > 2 && arguments[2] == "watcher-thread"); exit(0)
case "visible": try Role.visible(arguments[1], Int(arguments[2])!); exit(0)
case "idle-observe": try Role.idleObserve(arguments[1], seconds: Double(arguments[2])!, onWatcherThread: arguments.count > 3 && arguments[3] == "watcher-thread"); exit(0)
case "floor": Role.floor(arguments[1]); exit(0)
case "replace-floor": Role.replaceFloor(arguments[1], hop: arguments.count > 2 && arguments[2] == "hop"); exit(0)
case "contend": try Role.contend(arguments[1], until: Int64(arguments[2])!, durability: arguments[3] == "none" ? .none : .full); exit(0)
case "contend-floor": Role.contendFloor(arguments[1], until: Int64(arguments[2])!); exit(0)
case "memory": try Role.memory(arguments[1], Int(arguments[2])!); exit(0)
case "set-sync": try Role.setSync(arguments[1], Int(arguments[2])!); exit(0)
case "many-suites": Role.manySuites(arguments[1], Int(arguments[2])!); exit(0)
case "dconf-inner": try Role.dconf(Int(arguments[1])!); exit(0)
case "dconf-client": try Role.dconfClient(arguments[1], Int(arguments[2])!); exit(0)
case "defaults-observe": Role.defaultsObserve(arguments[1], Int(arguments[2])!); exit(0)
case "cold-read": try Role.coldRead(arguments[1]); exit(0)
case "cold-defaults": Role.coldDefaults(arguments[1]); exit(0)
case "codec": try Role.codec(keys: Int(arguments[1])!, rounds: Int(arguments[2])!); exit(0)
#if Etcd
case "etcd-observe": try Role.etcdObserve(arguments[1], arguments[2]); exit(0)
#endif
case "--check" where arguments.count == 2: exit(Check.run(arguments[1]))
default: break
}

var quick = false
var installDconf = false
var jsonPath = ".build/prefs-bench.json"
var only: Set<Int>? = nil
var plotPath: String? = nil
var etcdEndpoints: String? = nil
while let option = arguments.first {
    arguments.removeFirst()
    switch option {
    case "--quick": quick = true
    case "--install-dconf": installDconf = true
    case "--json" where !arguments.isEmpty: jsonPath = arguments.removeFirst()
    case "--plot" where !arguments.isEmpty: plotPath = arguments.removeFirst()
    case "--only" where !arguments.isEmpty: only = Set(arguments.removeFirst().split(separator: ",").compactMap { Int($0) })
    case "--etcd":
        etcdEndpoints = arguments.first.map { $0.hasPrefix("-") ? "" : arguments.removeFirst() } ?? ""
        #if !Etcd
        FileHandle.standardError.write(Data("prefs-bench: --etcd needs the Etcd trait: swift run -c release --traits Etcd prefs-bench --etcd ENDPOINTS\n".utf8))
        exit(64)
        #endif
    default:
        FileHandle.standardError.write(Data("usage: prefs-bench [--quick] [--install-dconf] [--json PATH] [--plot PNG] [--only 2,3,...]\n".utf8))
        exit(64)
    }
}

let directory = FileManager.default.temporaryDirectory.appending(path: "prefs-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

var measures = Measures(directory: directory, quick: quick)
let selected = etcdEndpoints == nil ? only : [10]
var steps: [(Int, String, (inout Measures) throws -> Void)] = [
    (2, "set loop", { try $0.setLoop() }),
    (4, "kernel floor", { try $0.kernelFloor(); try $0.fsyncPair() }),
    (3, "remote latency", { try $0.remoteLatency() }),
    (5, "dconf", { try $0.dconf(install: installDconf) }),
    (6, "scale", { try $0.scale() }),
    (7, "fan-out", { try $0.fanOut() }),
    (8, "contention", { try $0.contention() }),
    (9, "memory", { try $0.memory() }),
    (11, "cold start", { try $0.coldStart() }),
    (12, "idle", { try $0.idleWakeUps() }),
    (13, "cached read", { try $0.cachedRead() }),
    (14, "system calls", { try $0.systemCalls() }),
    (15, "suites per process", { try $0.suitesPerProcess() }),
]
#if Etcd
var ownCluster: LocalEtcdCluster? = nil
if let given = etcdEndpoints {
    let endpoints: String
    if given.isEmpty {
        ownCluster = try LocalEtcdCluster(in: directory)
        endpoints = ownCluster!.endpoints
    } else {
        endpoints = given
    }
    steps.append((10, "etcd", { try $0.etcd(endpoints) }))
    steps.append((10, "etcd fan-out", { try $0.etcdFanOut(endpoints, observers: quick ? 8 : 64) }))
}
defer { ownCluster?.stop() }
#endif
for (number, name, step) in steps where selected?.contains(number) ?? true {
    FileHandle.standardError.write(Data("prefs-bench: \(number). \(name)…\n".utf8))
    do { try step(&measures) } catch {
        measures.rows.append(Row(group: "\(number). \(name)", name: "failed", n: 0, note: "\(error)"))
    }
}

_Stages.dump()
var system = utsname()
_ = uname(&system)
let kernel = withUnsafeBytes(of: system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
print("prefs-bench — \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, Linux \(kernel)\(quick ? ", --quick" : "")\n")
print("| group | measure | n | p50 | p99 | throughput | ratio | note |")
print("|---|---|---|---|---|---|---|---|")
for row in measures.rows {
    print("| \(row.group) | \(row.name) | \(row.n) | \(row.p50?.description ?? "") | \(row.p99?.description ?? "") | \(row.throughput?.description ?? "") | \(row.ratioText) | \(row.note) |")
}
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
do {
    let url = URL(filePath: jsonPath)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try encoder.encode(measures.rows).write(to: url)
    FileHandle.standardError.write(Data("prefs-bench: results written to \(jsonPath)\n".utf8))
} catch {
    FileHandle.standardError.write(Data("prefs-bench: could not write the results to \(jsonPath): \(error.localizedDescription). Pass --json with a writable path.\n".utf8))
    exit(1)
}

// The picture: a latency CDF per row against the kernel floor, by a script beside this file.
if let plotPath {
    let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "plot-cdf.py")
    let plot = Process()
    plot.executableURL = URL(filePath: "/usr/bin/env")
    plot.arguments = ["python3", script.path, jsonPath, plotPath]
    do {
        try plot.run()
        plot.waitUntilExit()
    } catch {
        FileHandle.standardError.write(Data("prefs-bench: could not run \(script.path): \(error.localizedDescription). Is python3 installed?\n".utf8))
    }
    if plot.terminationStatus != 0 { exit(1) }
}
