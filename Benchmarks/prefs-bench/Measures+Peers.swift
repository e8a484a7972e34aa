import Foundation
@_spi(Benchmarks) import SharedPrefs

/// The rows measured side by side with a peer: dconf (5), Foundation `UserDefaults` at cold start
/// (11) and in cached reads (13).
extension Measures {
    // MARK: 5. dconf

    /// The environment of every dconf process: its database (`$XDG_CONFIG_HOME/dconf/user`) and
    /// runtime files under the bench's directory, on the same file system as the suites.
    var dconfEnvironment: [String: String] {
        ["XDG_CONFIG_HOME": directory.appending(path: "xdg").path, "XDG_RUNTIME_DIR": directory.appending(path: "run").path]
    }

    /// dconf as its users meet it, interleaved with SharedPrefs `.full` (both 2 ms between
    /// changes): a write through libdconf (as GSettings makes it) → the "changed" signal in
    /// another process, and `dconf write` → `dconf watch`, each block in a D-Bus session of its
    /// own, whose first changes (the service's activation among them) are warm-up.
    mutating func dconf(install: Bool) throws {
        let group = "5. dconf"
        let available = { FileManager.default.isExecutableFile(atPath: "/usr/bin/dconf") && FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-run-session") }
        if !available() && install {
            let apt = try Child(["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dconf-cli dconf-service dbus libdconf-dev pkg-config >/dev/null"], executable: URL(filePath: "/bin/sh"))
            apt.waitForExit()
        }
        guard available() else {
            rows.append(Row(id: "5.skipped", group: group, name: "dconf", n: 0, note: "skipped: dconf or dbus-run-session not installed (run with --install-dconf)"))
            return
        }
        let peer = directory.appending(path: "dconf-peer")
        let source = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "dconf-peer.c")
        let compile = try Child(["-c", "cc -O2 '\(source.path)' $(pkg-config --cflags --libs dconf) -o '\(peer.path)' 2>/dev/null"], executable: URL(filePath: "/bin/sh"))
        guard compile.waitForExit() == 0 else {
            rows.append(Row(id: "5.skipped", group: group, name: "dconf", n: 0, note: "skipped: could not compile \(source.lastPathComponent) (needs cc, pkg-config and libdconf-dev: run with --install-dconf)"))
            return
        }
        for path in dconfEnvironment.values { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
        let suite = try makeSuite("dconf-full")
        let perBlock = scaled(500) / defaultBlocks
        let perCLIBlock = (quick ? 6 : 100) / defaultBlocks
        var tallies = Array(repeating: Tally(), count: 3)
        var afterExit: [Int64] = []
        try interleave(arms: 3, blocks: blocks) { arm in
            switch arm {
            case 0:
                let session = try Child(["--", executable.path, "dconf-client", peer.path, String(warmUp + perBlock)], executable: URL(filePath: "/usr/bin/dbus-run-session"), environment: dconfEnvironment)
                let read = read(session)
                tallies[0].add(Block(sent: read.sent, arrivals: [read.arrivals]), warmUp: warmUp)
            case 1:
                let session = try Child(["--", executable.path, "dconf-cli", String(warmUp + perCLIBlock)], executable: URL(filePath: "/usr/bin/dbus-run-session"), environment: dconfEnvironment)
                var exits: [Int64] = []
                var sent: [Int64] = [], arrivals: [Int64: Int64] = [:]
                while let line = session.nextLine(timeout: 60), line != "end" {
                    let fields = line.split(separator: " ").compactMap { Int64($0) }
                    if line.hasPrefix("S "), fields.count == 1 { sent.append(fields[0]) }
                    if line.hasPrefix("L "), fields.count == 3 { arrivals[fields[0]] = fields[0] + fields[1]; exits.append(fields[2]) }
                }
                session.waitForExit()  // dbus-run-session ends its bus and the service
                tallies[1].add(Block(sent: sent, arrivals: [arrivals]), warmUp: warmUp)
                afterExit += exits.dropFirst(warmUp)
            default:
                tallies[2].add(try libraryBlock(suite, count: warmUp + perBlock).block, warmUp: warmUp)
            }
        }
        let full = Latencies(tallies[2].latencies).p50
        let library = Latencies(tallies[0].latencies).p50
        let cli = Latencies(tallies[1].latencies).p50
        let files = "database and runtime files in \(directory.path) (\(fileSystem(of: directory.path))), as the suites"
        rows.append(Row(
            id: "5.libdconf", group: group, name: "libdconf write → \"changed\" signal in another process", tally: tallies[0],
            note: "the client library (Benchmarks/dconf-peer.c), 2 ms apart, each block a D-Bus session of its own; " + files))
        let exited = Latencies(afterExit)
        rows.append(Row(
            id: "5.dconf-cli", group: group, name: "dconf write (CLI) → dconf watch", tally: tallies[1],
            note: "includes starting the dconf CLI; counted from the write command's exit: p50 \(µs(exited.p50)), p99 \(µs(exited.p99)) (the service's write → notify alone)",
            ratio: ratio(full, cli), ratioTo: "(SharedPrefs .full ÷ this)"))
        rows.append(Row(
            id: "5.full", group: group, name: "SharedPrefs 100-key suite, .full, in the same blocks", tally: tallies[2],
            note: "target ≤ ⅓ of libdconf's p50", ratio: ratio(full, library), ratioTo: "libdconf's p50",
            targets: full > 0 && library > 0 ? [Target(what: Target.all[2], figure: Double(full) / Double(library), bound: 0.33, atMost: true)] : nil))
    }

    // MARK: 11. Cold start

    /// A process that opens a suite, reads one key and exits, against the same with Foundation
    /// `UserDefaults`, alternating, each timed from its spawn to its exit here; both read a written
    /// suite of the same 100 keys (and check the key's value: a process that read nothing exits 1).
    mutating func coldStart() throws {
        var values = realisticValues(100)
        values["k"] = .integer(3)
        let bytes = PlistValue.dictionary(values).propertyListData(format: .binary)
        let xdg = directory.appending(path: "xdg")
        try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true)
        let suiteName = "prefs-bench-cold"
        try bytes.write(to: file("cold"))
        try bytes.write(to: xdg.appending(path: suiteName + ".plist"))  // where Foundation keeps the suite
        let environment = (ProcessInfo.processInfo.environment.merging(["XDG_CONFIG_HOME": xdg.path]) { $1 }).map { "\($0)=\($1)" }
        // posix_spawn and waitpid, with the output to /dev/null: Foundation's Process adds tens
        // of milliseconds of its own to a process this short.
        func run(_ arguments: [String]) throws -> Int64 {
            let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
            let envp = environment.map { strdup($0) } + [nil]
            defer { (argv + envp).forEach { free($0) } }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            var pid: pid_t = 0
            let start = now()
            guard posix_spawn(&pid, executable.path, &actions, nil, argv, envp) == 0 else { throw BenchError("could not start \(executable.path)") }
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            let elapsed = now() - start
            guard status == 0 else { throw BenchError("\(arguments.joined(separator: " ")) exited with status \(status >> 8) (signal \(status & 0x7f))") }
            return elapsed
        }
        var ours: [Int64] = [], peer: [Int64] = []
        let path = file("cold").path
        // Alternating, and which goes first alternates too.
        try interleave(arms: 2, blocks: quick ? 5 : 41) { arm in
            if arm == 0 { ours.append(try run(["cold-read", path])) } else { peer.append(try run(["cold-defaults", suiteName])) }
        }
        let (a, b) = (Latencies(ours), Latencies(peer))
        rows.append(Row(
            id: "11.cold-start", group: "11. cold start", name: "open a suite of 100 keys, read one key, exit", n: ours.count, p50: µs(a.p50), p99: µs(a.p99),
            ratio: ratio(a.p50, b.p50), ratioTo: "Foundation UserDefaults",
            note: "the same with UserDefaults(suiteName:) reading the same suite from $XDG_CONFIG_HOME: p50 \(µs(b.p50)); \(ours.count) pairs, alternating, exit statuses checked; target ≤ 1.1×",
            targets: [Target(what: Target.all[7], figure: Double(a.p50) / Double(max(1, b.p50)), bound: 1.1, atMost: true)],
            cost: Double(a.p50)))
    }

    // MARK: 13. Cached reads

    /// A cached read, in this process: `integer(forKey:)` of a 100-key suite against the same of
    /// Foundation `UserDefaults`, in alternating blocks (Benchmarks/InProcess has the allocation
    /// counts).
    mutating func cachedRead() throws {
        let suite = try makeSuite("cached")
        suite.set(7, forKey: "k")
        rows.append(cachedReads(suite, id: "13.cached-read", group: "13. cached read", name: "integer(forKey:) of a 100-key suite", target: 9))
        rows.append(try codableReads(suite))
    }

    /// A typed read of a `Codable` value (a struct of three fields) against a typed read of an
    /// `Int`, in the same suite, in 10 alternating blocks: what keeping decoded values until the
    /// stored value changes leaves of the decoding.
    func codableReads(_ suite: PreferenceSuite) throws -> Row {
        struct Window: Codable, PreferenceValue, Sendable { var x = 0, y = 0, title = "" }
        let window = PreferenceKey<Window>("window", default: Window())
        let number = PreferenceKey<Int>("k", default: 0)
        suite[window] = Window(x: 10, y: 20, title: "main")
        let count = quick ? 20_000 : 400_000
        let (codable, int) = interleavedReads(count, { suite[window].x }, { suite[number] })
        return Row(
            id: "13.codable", group: "13. cached read", name: "suite[key] of a Codable struct (3 fields) of a 100-key suite, \(count) times", n: count,
            throughput: Quantity(value: (1e9 / codable).rounded(), unit: "reads/s"),
            ratio: codable / int, ratioTo: "suite[key] of an Int in the same suite, interleaved",
            note: String(format: "%.0f ns a read; an Int %.0f ns; 10 alternating blocks", codable, int), cost: codable / 1e9)
    }

    /// Nanoseconds per call of `a` and of `b`, `count` calls of each in 10 alternating blocks,
    /// after a warm-up of a twentieth.
    func interleavedReads(_ count: Int, _ a: () -> Int, _ b: () -> Int) -> (a: Double, b: Double) {
        func time(_ count: Int, _ read: () -> Int) -> Int64 {
            var total = 0
            let start = now()
            for _ in 0..<count { total &+= read() }
            blackHole(total)
            return now() - start
        }
        _ = (time(count / 20, a), time(count / 20, b))
        var elapsed = [Int64](repeating: 0, count: 2)
        interleave(arms: 2, blocks: 10) { arm in elapsed[arm] += time(count / 10, arm == 0 ? a : b) }
        return (Double(elapsed[0]) / Double(count), Double(elapsed[1]) / Double(count))
    }

    /// `integer(forKey: "k")` of `suite` (which holds 7 there) against the same of a Foundation
    /// `UserDefaults` suite of 100 realistic keys, in 10 alternating blocks after a warm-up.
    func cachedReads(_ suite: PreferenceSuite, id: String, group: String, name: String, target: Int) -> Row {
        let count = quick ? 100_000 : 2_000_000
        let defaults = UserDefaults(suiteName: "prefs-bench-cached-\(getpid())")!
        defer { defaults.removePersistentDomain(forName: "prefs-bench-cached-\(getpid())") }
        for (key, value) in realisticValues(100).swiftDictionary { defaults.set(value.foundationValue, forKey: key) }
        defaults.set(7, forKey: "k")
        let (ours, theirs) = interleavedReads(count, { suite.integer(forKey: "k") }, { defaults.integer(forKey: "k") })
        return Row(
            id: id, group: group, name: "\(name), \(count) times", n: count,
            throughput: Quantity(value: (1e9 / ours).rounded(), unit: "reads/s"),
            note: String(format: "%.0f ns a read; Foundation UserDefaults %.0f ns: %.1f× faster; 10 alternating blocks; target ≥ 20×", ours, theirs, theirs / ours),
            targets: [Target(what: Target.all[target], figure: theirs / ours, bound: 20, atMost: false)], cost: ours / 1e9)
    }
}
