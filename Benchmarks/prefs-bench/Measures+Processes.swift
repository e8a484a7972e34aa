import Foundation
@_spi(Benchmarks) import SharedPrefs

/// The rows about processes: writers contending (8), memory (9), idle wake-ups (12), system
/// calls (14) and descriptors (15).
extension Measures {
    // MARK: 8. Contention

    /// 8 processes incrementing a counter with `update` in the 100-key suite, interleaved with
    /// their floor: 8 processes taking turns under one `flock`, each turn reading the same
    /// suite's bytes and replacing the file (with the fsync pair, for `.full`). Every block starts
    /// its processes together (each waits for a start time sent once all are ready).
    mutating func contention() throws {
        let processes = 8
        let seconds = quick ? 0.5 : 2.0
        let blockCount = blocks == defaultBlocks ? (quick ? 1 : 3) : blocks
        var values = realisticValues(100)
        values["counter"] = .integer(0)
        let suites = try ["none", "full"].map { try makeSuite("contended-\($0)", values, durability: $0 == "none" ? .none : .full) }
        let floor = directory.appending(path: "contend-floor")
        try FileManager.default.createDirectory(at: floor, withIntermediateDirectories: true)
        try Data(contentsOf: suites[0].fileURL!).write(to: floor.appending(path: "s"))  // the same bytes
        let counter = PreferenceKey<Int>("counter", default: 0)
        var counts = [Int](repeating: 0, count: 4)
        var lost = [Int](repeating: 0, count: 2)
        /// Runs `processes` children of `arguments` from one start time for `seconds`; their counts.
        func block(_ arguments: [String]) throws -> Int {
            let children = try (0..<processes).map { _ in try Child(arguments) }
            for child in children { try child.ready() }
            let start = now() + 100_000_000
            for child in children { child.send("go \(start) \(start + Int64(seconds * 1e9))") }
            var total = 0
            for child in children {
                guard let line = child.nextLine(timeout: seconds + 60), line.hasPrefix("count "), let count = Int(line.dropFirst(6)) else {
                    child.stop()
                    throw BenchError("a contending process (\(arguments.joined(separator: " "))) failed")
                }
                total += count
                child.waitForExit()
            }
            return total
        }
        try interleave(arms: 4, blocks: blockCount) { arm in
            switch arm {
            case 0, 1: counts[arm] += try block(["contend-floor", floor.path] + (arm == 1 ? ["durable"] : []))
            default:
                let suite = suites[arm - 2]
                let before = try suite.update { $0[counter] }
                let done = try block(["contend", suite.fileURL!.path, arm == 2 ? "none" : "full"])
                counts[arm] += done
                lost[arm - 2] += done - (try suite.update { $0[counter] } - before)
            }
        }
        /// The keys of the file each side replaced, read after the run: the same on both sides.
        func keys(_ file: URL) -> Double { Double((try? _BenchmarkHooks.decodeSuite([UInt8](Data(contentsOf: file))).count) ?? 0) }
        let duration = seconds * Double(blockCount)
        let rates = counts.map { Double($0) / duration }
        let group = "8. contention"
        let blocksText = "\(blockCount) blocks of \(seconds) s, rotated; every process starts at one time"
        for durable in [false, true] {
            rows.append(Row(
                id: "8.floor\(durable ? ".durable" : "")", group: group,
                name: "floor: \(processes) processes × (flock, read, write a new file\(durable ? ", fsync" : ""), rename\(durable ? ", fsync the directory" : "")) of the same suite's bytes",
                n: counts[durable ? 1 : 0], throughput: Quantity(value: rates[durable ? 1 : 0].rounded(), unit: "replaces/s"),
                note: "no library: the least a merge under one lock can cost; " + blocksText, cost: 1 / rates[durable ? 1 : 0],
                detail: ["keys": keys(floor.appending(path: "s"))]))
        }
        for (i, durability) in ["none", "full"].enumerated() {
            let floorRate = rates[durability == "none" ? 0 : 1]
            rows.append(Row(
                id: "8.\(durability)", group: group, name: "\(processes) processes × update increments of a counter in the 100-key suite, .\(durability)", n: counts[2 + i],
                lostUpdates: lost[i], throughput: Quantity(value: rates[2 + i].rounded(), unit: "updates/s"),
                ratio: rates[2 + i] / floorRate, ratioTo: "the floor\(durability == "full" ? " with the fsync pair" : ""), interleaved",
                note: "lost updates: \(lost[i]) (must be 0); " + blocksText,
                targets: durability == "none" ? [Target(what: Target.all[4], figure: rates[2 + i] / floorRate, bound: 0.8, atMost: false)] : nil,
                cost: 1 / rates[2 + i], detail: ["keys": keys(suites[i].fileURL!)]))
        }
    }

    // MARK: 9. Memory

    /// A process that reads (and so watches) suites of the realistic 100 keys: resident memory and
    /// the heap in use (`mallinfo2`) at 100 and 1,000 suites, after one warm-up suite; the slope
    /// between them is what each suite costs, without what a process sets up once.
    mutating func memory() throws {
        let counts = quick ? [10, 100] : [100, 1000]
        let dir = scratch.appending(path: "memory")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let data = PlistValue.dictionary(realisticValues(100)).propertyListData(format: .binary)
        for i in 0..<counts[1] { try data.write(to: dir.appending(path: "s\(i).plist")) }
        try data.write(to: dir.appending(path: "warm-up.plist"))
        let child = try Child(["memory", dir.path] + counts.map(String.init))
        var at: [Int: (rss: Int, heap: Int)] = [:]
        while let line = child.nextLine(timeout: 300), line != "end" {
            let fields = line.split(separator: " ").compactMap { Int($0) }
            if fields.count == 3 { at[fields[0]] = (fields[1], fields[2]) }
        }
        child.waitForExit()
        guard let low = at[counts[0]], let high = at[counts[1]] else { throw BenchError("the memory child printed no figures") }
        let extra = Double(counts[1] - counts[0])
        let rss = Double(high.rss - low.rss) / 1024 / extra
        let heap = Double(high.heap - low.heap) / 1024 / extra
        let file = Double(data.count) / 1024
        rows.append(Row(
            id: "9.memory", group: "9. memory", name: "a process watching suites of 100 realistic keys: the cost of each, from \(counts[0]) to \(counts[1]) suites", n: counts[1],
            throughput: Quantity(value: rss, unit: "KiB"),
            note: String(
                format: "resident %.1f KiB and heap in use (mallinfo2) %.1f KiB per suite, whose file is %.1f KiB (keys of 12–40 characters; strings of 20–200 bytes, integers, dates, data); RSS %.1f → %.1f MiB; files on %@; target: resident ≤ 16 KiB beyond the file's size",
                rss, heap, file, Double(low.rss) / 1_048_576, Double(high.rss) / 1_048_576, fileSystem(of: dir.path)),
            targets: [Target(what: Target.all[8], figure: rss - file, bound: 16, atMost: true)],
            cost: rss, detail: ["heapKiB": heap, "fileKiB": file]))
    }

    // MARK: 12. Idle

    /// Observer processes left idle after a change, three windows each (a change, then idle):
    /// how often they wake (the context switches of all their threads) in the worst window. The
    /// two variants run side by side; each counts its own.
    mutating func idleWakeUps() throws {
        let suite = try makeSuite("idle", durability: .none)
        let seconds = quick ? 1.0 : 10.0
        let windows = 3
        let children = try [false, true].map { try Child(["idle-observe", suite.fileURL!.path, String(seconds), String(windows)] + ($0 ? ["watcher-thread"] : [])) }
        for child in children { try child.ready() }
        var worst = [Int](repeating: 0, count: 2), threads = ["", ""]
        for _ in 0..<windows {
            suite.set(now(), forKey: "stamp")
            for (i, child) in children.enumerated() {
                let fields = child.nextLine(timeout: seconds + 60)?.split(separator: " ") ?? []
                guard fields.count == 4, let switches = Int(fields[1]) else { throw BenchError("an idle observer printed no count") }
                worst[i] = max(worst[i], switches)
                threads[i] = String(fields[3])
            }
        }
        for child in children { child.waitForExit() }
        for onWatcherThread in [false, true] {
            let i = onWatcherThread ? 1 : 0
            let per10s = Double(worst[i]) * 10 / seconds
            rows.append(Row(
                id: "12.idle\(onWatcherThread ? ".watcher" : "")", group: "12. idle",
                name: "an observer process idle for \(Int(seconds)) s after a change, worst of \(windows) windows" + (onWatcherThread ? ", handler on the watcher thread (.synchronousExternalChanges)" : ""), n: windows,
                throughput: Quantity(value: per10s, unit: "wake-ups per 10 s"),
                note: "context switches of all its threads, ended ones too (getrusage), less its own sleep; \(threads[i]) threads at the end; target ≤ 2 in 10 s",
                targets: onWatcherThread ? nil : [Target(what: Target.all[10], figure: per10s, bound: 2, atMost: true)]))
        }
    }

    // MARK: 14. System calls

    /// System calls (`strace -f -c`): of one `set` + `synchronize()` in a running process, and
    /// of a one-shot `prefs-watch write` over `prefs-watch --version` (where prefs-watch is built
    /// beside this executable).
    mutating func systemCalls() throws {
        let strace = "/usr/bin/strace"
        guard FileManager.default.isExecutableFile(atPath: strace) else {
            rows.append(Row(id: "14.skipped", group: "14. system calls", name: "not measured", n: 0, note: "strace is not installed (apt-get install strace)"))
            return
        }
        /// The system calls `arguments` makes, threads and children included.
        func calls(_ arguments: [String], environment: [String: String]? = nil) throws -> Int {
            let output = directory.appending(path: "strace.txt")
            let child = try Child(["-f", "-c", "-o", output.path, "--"] + arguments, executable: URL(filePath: strace), environment: environment)
            child.waitForExit()
            let report = try String(contentsOf: output, encoding: .utf8)
            guard let total = report.split(separator: "\n").last(where: { $0.hasSuffix(" total") }),
                let count = total.split(separator: " ").dropFirst(3).first.flatMap({ Int($0) })
            else { throw BenchError("could not read strace's report \(output.path)") }
            return count
        }
        let suite = file("syscalls").path
        let updates = 100
        let perSet = Double(try calls([executable.path, "set-sync", suite, String(updates)]) - calls([executable.path, "set-sync", suite, "0"])) / Double(updates)
        rows.append(Row(
            id: "14.set-sync", group: "14. system calls", name: "one set + synchronize() in a running process (a one-key suite, .full)", n: updates,
            throughput: Quantity(value: perSet, unit: "system calls"),
            note: "strace -f -c of \(updates) against none, after one to warm up", cost: perSet))
        let prefsWatch = executable.deletingLastPathComponent().appending(path: "prefs-watch")
        guard FileManager.default.isExecutableFile(atPath: prefsWatch.path) else {
            rows.append(Row(id: "14.cli-skipped", group: "14. system calls", name: "one-shot prefs-watch write: not measured", n: 0, note: "no prefs-watch beside \(executable.path): swift build -c release --product prefs-watch"))
            return
        }
        let write = try calls([prefsWatch.path, "write", file("cli").path, "k", "-int", "2", "--create"])
        let version = try calls([prefsWatch.path, "--version"])
        rows.append(Row(
            id: "14.cli-write", group: "14. system calls", name: "one-shot prefs-watch write, over prefs-watch --version", n: 1,
            throughput: Quantity(value: Double(write - version), unit: "system calls"),
            note: "\(write) in all, --version \(version); release build (issue 28 bounds the debug build: ≤ 60)", cost: Double(write - version)))
        // Into an existing suite of a group container (issue 49 bounds it: ≤ 60), after a first
        // write made it, its lock, journal and directory of writes.
        let root = ["SHAREDPREFS_ROOT": directory.appending(path: "root").path]
        let group = ["write", "--group", "group.bench", "syscalls", "k", "-int"]
        _ = try calls([prefsWatch.path] + group + ["1"], environment: root)
        let groupWrite = try calls([prefsWatch.path] + group + ["2"], environment: root)
        rows.append(Row(
            id: "14.cli-group-write", group: "14. system calls", name: "one-shot prefs-watch write into a group container's suite, over prefs-watch --version", n: 1,
            throughput: Quantity(value: Double(groupWrite - version), unit: "system calls"),
            note: "\(groupWrite) in all; an existing suite (issue 49's bound: ≤ 60)", cost: Double(groupWrite - version)))
    }

    // MARK: 15. Descriptors

    /// How many suites one process opens, writes and observes under `ulimit -n 1024`.
    mutating func suitesPerProcess() throws {
        let count = quick ? 1_000 : 10_000
        let dir = scratch.appending(path: "many")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let child = try Child(["many-suites", dir.path, String(count)])
        let fields = child.nextLine(timeout: 600)?.split(separator: " ") ?? []
        child.waitForExit()
        guard fields.count == 3, let done = Int(fields[1]), let open = Int(fields[2]) else { throw BenchError("the many-suites child printed no count") }
        rows.append(Row(
            id: "15.descriptors", group: "15. descriptors", name: "suites opened, written and observed by one process under ulimit -n 1024", n: done,
            throughput: Quantity(value: Double(done), unit: "suites"),
            note: "\(done) of \(count) tried; \(open) descriptors open with all of them kept; files in \(dir.deletingLastPathComponent().path) (\(fileSystem(of: dir.path)))"))
    }
}
