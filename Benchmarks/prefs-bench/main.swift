// prefs-bench: what crosses processes, SharedPrefs side by side with Foundation UserDefaults,
// dconf and the floors, in one run on one machine. Timings live here, never in tests; the
// in-process costs (cached reads, encode, re-read + diff, decode) are in Benchmarks/InProcess.
//
//   swift run -c release prefs-bench [--quick] [--install-dconf] [--json PATH] [--plot PNG] [--only 2,3,…]
//   swift run -c release prefs-bench --check RUN.json...    the targets of one run, or of several (min/median/max)
//   swift run -c release prefs-bench --ab OTHER-PREFS-BENCH [--rounds N] [--only …] [--quick]
//                                                            this build ÷ another, group by group, alternating
//   swift run -c release --traits Etcd prefs-bench --etcd [ENDPOINTS]   row 10 only: an etcd suite (on a
//                                                                        3-member cluster of its own without ENDPOINTS)
import CSharedPrefsShims
import Foundation
@_spi(Benchmarks) import SharedPrefs

var arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "observe": try Role.observe(arguments[1], key: arguments[2], onWatcherThread: arguments.count > 3 && arguments[3] == "watcher-thread"); exit(0)
case "visible": try Role.visible(arguments[1], Int(arguments[2])!); exit(0)
case "idle-observe": try Role.idleObserve(arguments[1], seconds: Double(arguments[2])!, windows: Int(arguments[3])!, onWatcherThread: arguments.count > 4 && arguments[4] == "watcher-thread"); exit(0)
case "floor": Role.floor(arguments[1]); exit(0)
case "futex-floor": Role.futexFloor(arguments[1]); exit(0)
case "replace-floor": Role.replaceFloor(arguments[1], hop: arguments.count > 2 && arguments[2] == "hop"); exit(0)
case "contend": try Role.contend(arguments[1], durability: arguments[2] == "none" ? .none : .full); exit(0)
case "contend-floor": Role.contendFloor(arguments[1], durable: arguments.count > 2 && arguments[2] == "durable"); exit(0)
case "memory": try Role.memory(arguments[1], arguments.dropFirst(2).compactMap { Int($0) }); exit(0)
case "set-sync": try Role.setSync(arguments[1], Int(arguments[2])!); exit(0)
case "many-suites": Role.manySuites(arguments[1], Int(arguments[2])!); exit(0)
case "exit-flush": Role.exitFlush(Int(arguments[1])!, Array(arguments.dropFirst(2))); exit(0)
case "dconf-cli": try Role.dconfCLI(Int(arguments[1])!); exit(0)
case "dconf-client": try Role.dconfClient(arguments[1], Int(arguments[2])!); exit(0)
case "defaults-observe": Role.defaultsObserve(arguments[1], Int(arguments[2])!); exit(0)
case "cold-read": exit(try Role.coldRead(arguments[1]))
case "cold-defaults": exit(Role.coldDefaults(arguments[1]))
case "codec": try Role.codec(keys: Int(arguments[1])!, rounds: Int(arguments[2])!); exit(0)
#if Etcd
case "etcd-observe": try Role.etcdObserve(arguments[1], arguments[2], cache: arguments.count > 3 ? arguments[3] : nil); exit(0)
case "etcd-observe-many": try Role.etcdObserveMany(arguments[1], arguments[2], Int(arguments[3])!); exit(0)
#endif
case "--check" where arguments.count >= 2: exit(Check.run(Array(arguments.dropFirst())))
default: break
}

let usage = """
    usage: prefs-bench [--quick] [--install-dconf] [--json PATH] [--plot PNG] [--only 2,3,...] [--blocks N]
           prefs-bench --check RUN.json...
           prefs-bench --ab OTHER-PREFS-BENCH [--rounds N] [--only 2,3,...] [--quick] [--json PATH]

    """
var quick = false
var installDconf = false
var jsonPath: String? = nil
var only: Set<Int>? = nil
var plotPath: String? = nil
var etcdEndpoints: String? = nil
var abOther: String? = nil
var rounds = 10
var blocks: Int? = nil
while let option = arguments.first {
    arguments.removeFirst()
    switch option {
    case "--quick": quick = true
    case "--install-dconf": installDconf = true
    case "--json" where !arguments.isEmpty: jsonPath = arguments.removeFirst()
    case "--plot" where !arguments.isEmpty: plotPath = arguments.removeFirst()
    case "--only" where !arguments.isEmpty: only = Set(arguments.removeFirst().split(separator: ",").compactMap { Int($0) })
    case "--ab" where !arguments.isEmpty: abOther = arguments.removeFirst()
    case "--rounds" where !arguments.isEmpty && Int(arguments[0]) ?? 0 > 0: rounds = Int(arguments.removeFirst())!
    case "--blocks" where !arguments.isEmpty && Int(arguments[0]) ?? 0 > 0: blocks = Int(arguments.removeFirst())!
    case "--etcd":
        etcdEndpoints = arguments.first.map { $0.hasPrefix("-") ? "" : arguments.removeFirst() } ?? ""
        #if !Etcd
        FileHandle.standardError.write(Data("prefs-bench: --etcd needs the Etcd trait: swift run -c release --traits Etcd prefs-bench --etcd ENDPOINTS\n".utf8))
        exit(64)
        #endif
    default:
        FileHandle.standardError.write(Data(("prefs-bench: unknown or incomplete option \(option)\n" + usage).utf8))
        exit(64)
    }
}

if let abOther {
    // Rows 12 and 15 count wake-ups and suites, with no cost to compare, in 30 s each: only
    // when asked for. The groups that delete thousands of files come last (see AB).
    let groups = [2, 3, 4, 5, 6, 7, 8, 11, 13, 14, 16, 9, 15, 12].filter { only?.contains($0) ?? ![12, 15].contains($0) }
    exit(AB.run(other: abOther, rounds: rounds, groups: groups, quick: quick, jsonPath: jsonPath ?? ".build/prefs-bench-ab.json"))
}

let directory = FileManager.default.temporaryDirectory.appending(path: "prefs-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

var system = utsname()
_ = uname(&system)
let kernel = withUnsafeBytes(of: system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
var load = [Double](repeating: 0, count: 3)
_ = getloadavg(&load, 3)
let started = Date()
var measures = Measures(directory: directory, quick: quick, blocks: blocks)
measures.rows.append(Row(
    id: "0.run", group: "0. run", name: "this run", n: 0,
    note: "started \(started.formatted(.iso8601)), load average \(load.map { String(format: "%.2f", $0) }.joined(separator: " ")); "
        + "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, Linux \(kernel); "
        + "files in \(directory.path) (\(fileSystem(of: directory.path)))\(quick ? "; --quick" : "")",
    detail: ["start": started.timeIntervalSince1970, "load1": load[0]]))
let selected = etcdEndpoints == nil ? only : [10]
var steps: [(Int, String, (inout Measures) throws -> Void)] = [
    (2, "set loop", { try $0.setLoop() }),
    (3, "remote latency", { try $0.remoteLatency() }),
    (4, "fsync pair", { try $0.fsyncPair() }),
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
    (16, "system layers", { try $0.layers() }),
    (17, "deadlines", { try $0.deadlines() }),
    (18, "catch-up", { try $0.catchUp() }),
    (19, "many processes", { try $0.manyProcesses() }),
]
var failures = 0
#if Etcd
var ownCluster: LocalEtcdCluster? = nil
if let given = etcdEndpoints {
    do {
        if given.isEmpty { ownCluster = try LocalEtcdCluster(in: directory) }
        let endpoints = ownCluster?.endpoints ?? given
        steps.append((10, "etcd", { try $0.etcd(endpoints) }))
        steps.append((10, "etcd writes", { try $0.etcdWrites(endpoints) }))
        steps.append((10, "etcd fan-out", { try $0.etcdFanOut(endpoints, observers: quick ? 8 : 64) }))
        steps.append((10, "etcd, many suites", { try $0.etcdManySuites(endpoints, suites: quick ? 50 : 1_000) }))
    } catch {
        failures += 1
        measures.rows.append(Row(id: "10.failed", group: "10. etcd", name: "failed", n: 0, note: "\(error)"))
    }
}
defer { ownCluster?.stop() }
#endif
for (number, name, step) in steps where selected?.contains(number) ?? true {
    FileHandle.standardError.write(Data("prefs-bench: \(number). \(name)…\n".utf8))
    do { try step(&measures) } catch {
        failures += 1
        measures.rows.append(Row(id: "\(number).failed", group: "\(number). \(name)", name: "failed", n: 0, note: "\(error)"))
    }
}

_Stages.dump()
try? FileManager.default.removeItem(at: directory)
try? FileManager.default.removeItem(at: measures.scratch)
print("prefs-bench — \(measures.rows[0].note)\n")
print("| group | measure | n | p50 | p99 | throughput | ratio | note |")
print("|---|---|---|---|---|---|---|---|")
for row in measures.rows.dropFirst() {
    print("| \(row.group) | \(row.name) | \(row.n) | \(row.p50?.description ?? "") | \(row.p99?.description ?? "") | \(row.throughput?.description ?? "") | \(row.ratioText) | \(row.note) |")
}
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
let json = jsonPath ?? ".build/prefs-bench.json"
do {
    let url = URL(filePath: json)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try encoder.encode(measures.rows).write(to: url)
    FileHandle.standardError.write(Data("prefs-bench: results written to \(json)\n".utf8))
} catch {
    FileHandle.standardError.write(Data("prefs-bench: could not write the results to \(json): \(error.localizedDescription). Pass --json with a writable path.\n".utf8))
    exit(1)
}

// The picture: a latency CDF per row against the kernel floor, by a script beside this file.
if let plotPath {
    let script = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "plot-cdf.py")
    do {
        let plot = try Child(["python3", script.path, json, plotPath], executable: URL(filePath: "/usr/bin/env"))
        if plot.waitForExit() != 0 { exit(1) }
    } catch {
        FileHandle.standardError.write(Data("prefs-bench: could not run \(script.path): \(error.localizedDescription). Is python3 installed?\n".utf8))
        exit(1)
    }
}
exit(failures == 0 ? 0 : 1)
