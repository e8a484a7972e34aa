#if Etcd
import Foundation
@_spi(Benchmarks) import SharedPrefs
import SharedPrefsEtcd

/// Row 10: suites on an etcd cluster (`prefs-bench --etcd`, with the Etcd trait).
extension Measures {
    /// 10. A put through an etcd suite → an observer in another process: through SharedPrefs's
    /// watch, and through etcd's own (`etcdctl watch`), of the same puts. Both observers print a
    /// line per change and this process stamps its arrival, so each path has the same pipe hop.
    /// A third observer keeps an offline cache, as a suite does by default.
    mutating func etcd(_ endpoints: String) throws {
        let prefix = "prefs-bench/\(UUID().uuidString)/"
        let suite = try PreferenceSuite(etcd: endpoints.split(separator: ",").map(String.init), prefix: prefix, options: EtcdOptions(offlineCache: .none))
        let ours = try Child(["etcd-observe", endpoints, prefix])
        try ours.ready()
        let cached = try Child(["etcd-observe", endpoints, prefix, directory.appending(path: "etcd-cache-\(UUID().uuidString).plist").path])
        try cached.ready()
        let peer = try Child(["--endpoints", endpoints, "watch", "--prefix", prefix + "stamp", "-w", "json"], executable: URL(filePath: "/usr/bin/etcdctl"), environment: ["ETCDCTL_API": "3"])
        /// The arrival of the line that carries `value`, skipping older ones; nil after `timeout`.
        func arrival(of value: Int64, from child: Child, timeout: Double, _ parse: (String) -> Int64?) -> Int64? {
            while let (line, arrival) = child.nextTimedLine(timeout: timeout) {
                if parse(line) == value { return arrival }
            }
            return nil
        }
        let fromOurs: (String) -> Int64? = { Int64($0.split(separator: " ").last ?? "") }
        let fromPeer: (String) -> Int64? = { line in
            struct Response: Decodable { struct Event: Decodable { struct KV: Decodable { var value: Data? }; var kv: KV }; var Events: [Event]? }
            guard let response = try? JSONDecoder().decode(Response.self, from: Data(line.utf8)), let bytes = response.Events?.last?.kv.value,
                case .integer(let n)? = try? PlistValue(propertyListData: bytes) else { return nil }
            return n
        }
        // Warm-up: until both watches deliver (etcdctl's starts on its own time).
        var value: Int64 = 0
        repeat {
            value -= 1
            suite.set(value, forKey: "stamp")
            _ = suite.synchronize()
        } while arrival(of: value, from: peer, timeout: 1, fromPeer) == nil || arrival(of: value, from: ours, timeout: 1, fromOurs) == nil
            || arrival(of: value, from: cached, timeout: 1, fromOurs) == nil
        var (oursBlock, peerBlock, cachedBlock) = (Block(arrivals: [[:]]), Block(arrivals: [[:]]), Block(arrivals: [[:]]))
        for i in 1...Int64(scaled(500)) {
            let sent = now()
            suite.set(i, forKey: "stamp")
            _ = suite.synchronize()
            oursBlock.sent.append(sent)
            peerBlock.sent.append(sent)
            cachedBlock.sent.append(sent)
            peerBlock.arrivals[0][sent] = arrival(of: i, from: peer, timeout: 10, fromPeer)
            oursBlock.arrivals[0][sent] = arrival(of: i, from: ours, timeout: 10, fromOurs)
            cachedBlock.arrivals[0][sent] = arrival(of: i, from: cached, timeout: 10, fromOurs)
            gap(2)
        }
        ours.stop()
        cached.stop()
        peer.stop()
        var (oursTally, peerTally) = (Tally(timeout: 10_000_000_000), Tally(timeout: 10_000_000_000))
        oursTally.add(oursBlock, warmUp: 0)
        peerTally.add(peerBlock, warmUp: 0)
        let (o, p) = (Latencies(oursTally.latencies), Latencies(peerTally.latencies))
        rows.append(Row(id: "10.etcdctl", group: "10. etcd (3 members)", name: "put → etcdctl watch (etcd's own)", tally: peerTally, note: "the same puts"))
        rows.append(Row(
            id: "10.etcd", group: "10. etcd (3 members)", name: "put → SharedPrefs observer in another process", tally: oursTally,
            note: "overhead p50 \(µs(o.p50 - p.p50)) (target ≤ 0.5 ms); p99 \(µs(o.p99)) (target ≤ 20 ms)",
            ratio: ratio(o.p50, p.p50), ratioTo: "etcdctl watch p50"))
        // Per put, our arrival minus etcdctl's: the put's own commit, which both wait for, drops out.
        func overEtcdctl(_ block: Block) -> (n: Int, at: (Double) -> Int64) {
            let paired = block.sent.compactMap { sent in block.arrivals[0][sent].flatMap { o in peerBlock.arrivals[0][sent].map { o - $0 } } }.sorted()
            return (paired.count, { percent in paired.isEmpty ? 0 : paired[min(paired.count - 1, Int((percent / 100 * Double(paired.count)).rounded(.up)) - 1)] })
        }
        let (n, at) = overEtcdctl(oursBlock)
        rows.append(Row(
            id: "10.etcd-over-etcdctl", group: "10. etcd (3 members)", name: "… per put, SharedPrefs observer's arrival minus etcdctl watch's", n: n,
            p50: µs(at(50)), p99: µs(at(99)), note: "issue 54's targets: ≤ 100 µs p50, ≤ 250 µs p99", cost: Double(at(50))))
        let (cachedN, cachedAt) = overEtcdctl(cachedBlock)
        rows.append(Row(
            id: "10.etcd-cached-over-etcdctl", group: "10. etcd (3 members)", name: "… the same, an observer with an offline cache (the default)", n: cachedN,
            p50: µs(cachedAt(50)), p99: µs(cachedAt(99)), note: "the same puts; the cache file in the bench's directory", cost: Double(cachedAt(50))))
    }

    /// 10. `set` + `synchronize()` on two etcd suites in turn, one without an offline cache and
    /// one with (the default): how long the call takes.
    mutating func etcdWrites(_ endpoints: String) throws {
        let urls = endpoints.split(separator: ",").map(String.init)
        let base = "prefs-bench/\(UUID().uuidString)/"
        let plain = try PreferenceSuite(etcd: urls, prefix: base + "plain/", options: EtcdOptions(offlineCache: .none))
        let cache = directory.appending(path: "etcd-cache-\(UUID().uuidString).plist")
        let cached = try PreferenceSuite(etcd: urls, prefix: base + "cached/", options: EtcdOptions(offlineCache: .file(cache)))
        var took: [[Int64]] = [[], []]
        for i in 0..<(warmUp + scaled(300)) {
            for (arm, suite) in [plain, cached].enumerated() {
                let start = now()
                suite.set(i, forKey: "stamp")
                _ = suite.synchronize()
                if i >= warmUp { took[arm].append(now() - start) }
            }
            gap(2)
        }
        let (p, c) = (Latencies(took[0]), Latencies(took[1]))
        rows.append(Row(id: "10.etcd-write", group: "10. etcd (3 members)", name: "set + synchronize(), no offline cache", n: p.count, p50: µs(p.p50), p99: µs(p.p99), note: "in turn with the next row's", cost: Double(p.p50)))
        rows.append(Row(
            id: "10.etcd-write-cached", group: "10. etcd (3 members)", name: "set + synchronize(), with an offline cache (the default)", n: c.count, p50: µs(c.p50), p99: µs(c.p99),
            ratio: ratio(c.p50, p.p50), ratioTo: "no cache, p50", note: "the cache file in the bench's directory", cost: Double(c.p50)))
    }

    /// 10. The same puts reaching `observers` processes, each with its own SharedPrefs suite on
    /// the cluster: every delivery's latency, the slowest observer's p99, and changes missed.
    mutating func etcdFanOut(_ endpoints: String, observers: Int) throws {
        let prefix = "prefs-bench/\(UUID().uuidString)/"
        let suite = try PreferenceSuite(etcd: endpoints.split(separator: ",").map(String.init), prefix: prefix, options: EtcdOptions(offlineCache: .none))
        let children = try (0..<observers).map { _ in try Child(["etcd-observe", endpoints, prefix]) }
        defer { for child in children { child.stop() } }
        for child in children { try child.ready() }
        let streams = endpoints.split(separator: ",").reduce(0) { $0 + Self.etcdMetric("etcd_debugging_mvcc_watch_stream_total", of: String($1)) }
        let parse: (String) -> Int64? = { Int64($0.split(separator: " ").last ?? "") }
        func arrival(of value: Int64, from child: Child, timeout: Double) -> Int64? {
            while let (line, arrival) = child.nextTimedLine(timeout: timeout) {
                if parse(line) == value { return arrival }
            }
            return nil
        }
        // Warm-up: until every watch delivers.
        var value: Int64 = 0
        var pending = children
        while !pending.isEmpty && value > -20 {
            value -= 1
            suite.set(value, forKey: "stamp")
            _ = suite.synchronize()
            pending = pending.filter { arrival(of: value, from: $0, timeout: 2) == nil }
        }
        var block = Block(arrivals: Array(repeating: [:], count: observers))
        for i in 1...Int64(scaled(100)) {
            let sent = now()
            suite.set(i, forKey: "stamp")
            _ = suite.synchronize()
            block.sent.append(sent)
            for (k, child) in children.enumerated() { block.arrivals[k][sent] = arrival(of: i, from: child, timeout: 5) }
            gap(20)
        }
        var tally = Tally(timeout: 5_000_000_000)
        tally.add(block, warmUp: 0)
        let p99s = block.arrivals.map { arrivals in Latencies(block.sent.compactMap { sent in arrivals[sent].map { $0 - sent } }).p99 }.sorted()
        rows.append(Row(
            id: "10.etcd-fan-out", group: "10. etcd (3 members)", name: "put → \(observers) SharedPrefs observers, each its own process, slowest of each put", tally: tally,
            note: "median observer's p99 \(µs(p99s[p99s.count / 2])); a put some observer missed counts as 5 s; \(Int(streams)) watch streams on the members"))
    }
}

extension Measures {
    /// 10. One process watching `suites` etcd suites (prefixes `<base><i>/`), after a warm-up,
    /// one put to each in turn, 2 ms apart (through a suite on `<base>`, whose key `<i>/stamp` is suite i's `stamp`):
    /// put → that suite's observer, the watches and streams on the members (their metrics), and
    /// the members' resident memory per watch.
    mutating func etcdManySuites(_ endpoints: String, suites: Int) throws {
        let base = "prefs-bench/\(UUID().uuidString)/"
        let urls = endpoints.split(separator: ",").map(String.init)
        func total(_ name: String) -> Double { urls.reduce(0) { $0 + Self.etcdMetric(name, of: $1) } }
        let memoryBefore = total("process_resident_memory_bytes")
        let watcher = try Child(["etcd-observe-many", endpoints, base, String(suites)])
        defer { watcher.stop() }
        try watcher.ready()
        let writer = try PreferenceSuite(etcd: urls, prefix: base, options: EtcdOptions(offlineCache: .none))
        // Warm-up: one put to each suite, until every watch has delivered (each is made after its
        // suite opens, and catches up from the revision read).
        var warming = Set(0..<suites)
        for i in 0..<suites { writer.set(-1 - Int64(i), forKey: "\(i)/stamp") }
        _ = writer.synchronize()
        while !warming.isEmpty, let (line, _) = watcher.nextTimedLine(timeout: 30) {
            if let value = Int64(line.split(separator: " ").last ?? ""), value < 0 { warming.remove(Int(-1 - value)) }
        }
        var block = Block(arrivals: [[:]])
        for i in 0..<suites {
            let sent = now()
            writer.set(sent, forKey: "\(i)/stamp")
            _ = writer.synchronize()
            block.sent.append(sent)
            gap(2)
        }
        // The observer prints `change <i> <sent>` for each; every put's line, in any order.
        var pending = Set(block.sent)
        while !pending.isEmpty, let (line, arrival) = watcher.nextTimedLine(timeout: 10) {
            guard let sent = Int64(line.split(separator: " ").last ?? ""), pending.remove(sent) != nil else { continue }
            block.arrivals[0][sent] = arrival
        }
        // Read once every watch has delivered (they are made as each suite opens, asynchronously).
        let (streams, watches) = (total("etcd_debugging_mvcc_watch_stream_total"), total("etcd_debugging_mvcc_watcher_total"))
        let memoryPerWatch = (total("process_resident_memory_bytes") - memoryBefore) / Double(max(1, suites))
        var tally = Tally(timeout: 10_000_000_000)
        tally.add(block, warmUp: 0)
        rows.append(Row(
            id: "10.etcd-many-suites", group: "10. etcd (3 members)", name: "put → its suite's observer, one process watching \(suites) suites", tally: tally,
            note: String(format: "%.0f watch streams and %.0f watches on the members; member memory %.1f KiB per watch; %d of %d missed", streams, watches, memoryPerWatch / 1024, pending.count, suites)))
    }

    /// The sum of the lines of member `url`'s metrics (Prometheus text) whose name is `name`.
    static func etcdMetric(_ name: String, of url: String) -> Double {
        let page = Process()
        page.executableURL = URL(filePath: "/usr/bin/env")
        page.arguments = ["python3", "-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1] + '/metrics', timeout=5).read().decode())", url]
        let pipe = Pipe()
        page.standardOutput = pipe
        guard (try? page.run()) != nil else { return 0 }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        page.waitUntilExit()
        return text.split(separator: "\n").filter { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }
}

/// Three etcd members on loopback with their data in `directory`, for row 10 when no endpoints
/// are given (`prefs-bench --etcd`); stopped by ``stop()``. Its ports come from the process id:
/// where a member cannot listen (a port taken), the next of three sets is tried. Each set gets 20 s.
final class LocalEtcdCluster {
    private(set) var endpoints = ""
    private var members: [Process] = []

    init(in directory: URL) throws {
        var failures: [String] = []
        for attempt in 0..<3 {
            // Below the ephemeral ports (32768 and up), which a connection may hold.
            let base = 20_000 + Int((getpid() + Int32(attempt) * 677) % 1_200) * 10
            let why = start(base: base, in: directory.appending(path: "etcd-\(attempt)"))
            guard let why else { return }
            stop()
            failures.append(why)
        }
        throw BenchError("no local etcd cluster started: \(failures.joined(separator: "; ")) (is etcd-server installed? are the ports taken?)")
    }

    /// Starts the members on ports from `base`; `nil` once every one answers, else why not.
    private func start(base: Int, in directory: URL) -> String? {
        let client = (0..<3).map { "http://127.0.0.1:\(base + $0)" }
        let peer = (0..<3).map { "http://127.0.0.1:\(base + 5 + $0)" }
        endpoints = client.joined(separator: ",")
        let cluster = (0..<3).map { "m\($0)=\(peer[$0])" }.joined(separator: ",")
        members = []
        for i in 0..<3 {
            let member = Process()
            member.executableURL = URL(filePath: "/usr/bin/etcd")
            member.arguments = [
                "--name", "m\(i)", "--data-dir", directory.appending(path: "m\(i)").path,
                "--listen-client-urls", client[i], "--advertise-client-urls", client[i],
                "--listen-peer-urls", peer[i], "--initial-advertise-peer-urls", peer[i],
                "--initial-cluster", cluster, "--initial-cluster-state", "new", "--initial-cluster-token", "prefs-bench-\(getpid())-\(base)",
            ]
            member.standardOutput = FileHandle.nullDevice
            member.standardError = FileHandle.nullDevice
            do { try member.run() } catch { return "/usr/bin/etcd did not start: \(error)" }
            members.append(member)
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let gone = members.firstIndex(where: { !$0.isRunning }) {
                return "member m\(gone) at \(client[gone]) exited with status \(members[gone].terminationStatus)"
            }
            let health = Process()
            health.executableURL = URL(filePath: "/usr/bin/etcdctl")
            health.arguments = ["--endpoints", endpoints, "--dial-timeout", "1s", "--command-timeout", "1s", "endpoint", "health"]
            health.environment = ["ETCDCTL_API": "3"]
            health.standardOutput = FileHandle.nullDevice
            health.standardError = FileHandle.nullDevice
            do { try health.run() } catch { return "/usr/bin/etcdctl did not start: \(error)" }
            health.waitUntilExit()
            if health.terminationStatus == 0 { return nil }
            gap(200)
        }
        return "the cluster at \(endpoints) was not healthy within 20 s"
    }

    func stop() {
        for member in members where member.isRunning {
            member.terminate()
            member.waitUntilExit()
        }
    }
}
#endif
