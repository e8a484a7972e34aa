import CSharedPrefsShims
import Foundation
@_spi(Benchmarks) import SharedPrefs

/// Row 19: many observer processes of one user (issue 53's figures), against their floor.
extension Measures {
    /// For 16, 100 and 1,000 observer processes (4 with `--quick`), interleaved: the floor, bare
    /// processes woken by one futex wake on a shared word that then read the 100-key file, and
    /// the library's observers of a 100-key suite (slowest of each change), with bells and without
    /// (`SHAREDPREFS_BELLS=off`: each watches with an inotify instance of its own). For the library's
    /// observers, also: how many poll (their poll timer is armed), the inotify instances they hold,
    /// and how often they wake, all of them, while idle.
    mutating func manyProcesses() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max  // two pipes a child
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let group = "19. many processes"
        for observers in quick ? [4] : [16, 100, 1_000] {
            let suite = try makeSuite("many-\(observers)", durability: .none)
            // Apart enough for the slowest of them to have read one change before the next.
            let gapMs: Double = observers >= 1_000 ? 200 : observers >= 100 ? 40 : 8
            let count = warmUp + (quick ? 10 : observers >= 1_000 ? 30 : 60)
            // The floor; the library's observers with bells (``ManyProcesses``); without them.
            var tallies = [Tally(), Tally(), Tally()]
            var cpu = [[Int64](), [Int64](), [Int64]()]
            var held: [(polling: Int, instances: Int, idle: Int)?] = [nil, nil, nil]
            try interleave(arms: 3, blocks: quick ? 1 : 2) { arm in
                if arm == 0 {
                    let (block, used) = try futexBlock(observers: observers, count: count, gapMs: gapMs)
                    tallies[0].add(block, warmUp: warmUp)
                    cpu[0] += used.map { $0 / Int64(count) }
                    return
                }
                let environment = arm == 2 ? ["SHAREDPREFS_BELLS": "off"] : nil
                let (block, used) = try libraryBlock(suite, observers: observers, count: count, gapMs: gapMs, environment: environment) { children in
                    guard held[arm] == nil else { return }
                    let instances = children.map { Self.inotifyInstances(of: $0.pid) }
                    let polling = children.count { Self.polls($0.pid) }
                    let idleSeconds = quick ? 1.0 : 10.0
                    let before = children.reduce(0) { $0 + Self.contextSwitches(of: $1.pid) }
                    gap(idleSeconds * 1000)
                    let after = children.reduce(0) { $0 + Self.contextSwitches(of: $1.pid) }
                    held[arm] = (polling, instances.reduce(0, +), Int(Double(after - before) * 10 / idleSeconds))
                }
                tallies[arm].add(block, warmUp: warmUp)
                cpu[arm] += used.map { $0 / Int64(count) }
            }
            let floor = Latencies(tallies[0].latencies)
            func perObserver(_ arm: Int) -> String { "\(µs(cpu[arm].isEmpty ? 0 : cpu[arm].reduce(0, +) / Int64(cpu[arm].count)))" }
            rows.append(Row(
                id: "19.floor.\(observers)", group: group,
                name: "floor: \(observers) bare processes woken by one futex wake, each reading the 100-key file; slowest of each change",
                tally: tallies[0], note: "CPU per change per observer \(perObserver(0)); no inotify instance"))
            for (arm, id, name) in [(1, "library", "\(observers) observer processes of a 100-key suite, slowest of each change"), (2, "nobells", "the same, SHAREDPREFS_BELLS=off (each process watches with inotify of its own)")] {
                let measured = Latencies(tallies[arm].latencies)
                var row = Row(
                    id: "19.\(id).\(observers)", group: group, name: name, tally: tallies[arm],
                    note: String(format: "p99 %.2f× the floor's", Double(measured.p99) / Double(max(1, floor.p99)))
                        + "; CPU per change per observer \(perObserver(arm))"
                        + (held[arm].map { "; \($0.polling) of \(observers) poll; \($0.instances) inotify instances held in all; \($0.idle) wake-ups of all \(observers) in 10 s idle" } ?? ""),
                    ratio: ratio(measured.p50, floor.p50), ratioTo: "the floor's p50")
                row.detail = held[arm].map { ["polling": Double($0.polling), "inotifyInstances": Double($0.instances), "idleWakeUpsPer10s": Double($0.idle)] }
                rows.append(row)
            }
        }
    }

    /// `count` changes of a file holding the 100-key suite's bytes (the send time in the first
    /// 8), `gapMs` apart, each made by a new file renamed over the old one, then one `FUTEX_WAKE_OP`
    /// that adds 1 to a shared futex word and wakes every waiter; `observers` `futex-floor` processes.
    func futexBlock(observers: Int, count: Int, gapMs: Double) throws -> (block: Block, cpu: [Int64]) {
        let path = directory.appending(path: "futex").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let bell = open(path + "/bell", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard bell >= 0, ftruncate(bell, 4096) == 0, let mapping = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, bell, 0), mapping != MAP_FAILED else {
            throw BenchError("could not map \(path)/bell")
        }
        close(bell)
        defer { munmap(mapping, 4096) }
        let word = mapping.assumingMemoryBound(to: CUnsignedInt.self)
        func replace(_ sent: Int64) {
            let file = open(path + "/.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            Self.writeSuiteBytes(file, sent)
            close(file)
            rename(path + "/.tmp", path + "/s")
            _ = sharedprefs_futex_ring_shared(word)
        }
        replace(0)
        let children = try (0..<observers).map { _ in try Child(["futex-floor", path]) }
        for child in children { try child.ready() }
        var sent: [Int64] = []
        for _ in 0..<count {
            let time = now()
            replace(time)
            sent.append(time)
            gap(gapMs)
        }
        gap(50)
        replace(-1)
        let observed = children.map { read($0) }
        return (Block(sent: sent, arrivals: observed.map(\.arrivals)), observed.compactMap(\.cpu))
    }

    /// The inotify instances process `pid` holds (its descriptors that are one).
    static func inotifyInstances(of pid: pid_t) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.count { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == "anon_inode:inotify" }
    }

    /// Whether process `pid` polls: its watcher's poll timer is armed (``InotifyWatcher``).
    static func polls(_ pid: pid_t) -> Bool {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.contains { fd in
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))?.contains("timerfd") == true else { return false }
            let info = (try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8)) ?? ""
            return !info.contains("it_value: (0, 0)")
        }
    }

    /// The context switches of every thread of process `pid` so far (those of ended threads are
    /// not counted).
    static func contextSwitches(of pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            return total + status.split(separator: "\n").filter { $0.contains("ctxt_switches") }
                .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
        }
    }
}
