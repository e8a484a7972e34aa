// SharedPrefsEtcd against a real 3-member etcd cluster (swift test --traits Etcd). As root, with
// `ip` (iproute2), each member runs in a network namespace of its own, on two bridges (peer and
// client traffic), so that a link can be cut; elsewhere the members listen on loopback ports and
// no link is cut. Data directories are in a temporary directory; `etcd` and `etcdctl` come from
// Debian's etcd-server and etcd-client (.ci/run installs them). Without the trait this file is empty.
#if Etcd
import Foundation
import Observation
import SharedPrefs
@testable import SharedPrefsEtcd
import SharedPrefsObservation
import Synchronization
import Testing

/// Runs `executable` with `arguments`, its output discarded; throws when it fails.
func run(_ executable: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(filePath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.executableLoad, userInfo: [NSDebugDescriptionErrorKey: "\(executable) \(arguments.joined(separator: " ")) failed"]) }
}

/// Runs `ip` (iproute2).
func ip(_ arguments: [String]) throws { try run("/usr/sbin/ip", arguments) }

/// Three etcd members, each with its data directory in a temporary directory: in network
/// namespaces when this machine can make them, else on loopback.
final class EtcdCluster {
    /// Whether members run in network namespaces (root, and `ip netns` works here).
    static let namespaces: Bool = {
        let probe = "spe\(String(getpid(), radix: 36))probe"
        guard getuid() == 0, (try? ip(["netns", "add", probe])) != nil else { return false }
        try? ip(["netns", "del", probe])
        return true
    }()
    nonisolated(unsafe) private static var made = 0

    let directory: URL
    let clientURLs: [String]
    /// The children's `XDG_CACHE_HOME`: their offline caches live here.
    var cacheHome: URL { directory.appending(path: "cache") }
    private let arguments: [[String]]
    private var members: [Process?] = [nil, nil, nil]
    /// Names (namespaces, links, bridges) start with it: `spe<pid>n<k>`.
    private let tag: String
    /// The client network's first three bytes (`10.201.x`).
    private var subnet = ""
    private var clients = 0

    init() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-etcd-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        Self.made += 1  // the suite is serialized
        tag = "spe\(String(getpid(), radix: 36))n\(Self.made)"
        let (clientURLs, peers): ([String], [String])
        if Self.namespaces {
            let (client, peer) = try Self.makeNetwork(tag)
            clientURLs = (0..<3).map { "http://\(client).1\($0):2379" }
            peers = (0..<3).map { "http://\(peer).1\($0):2380" }
            subnet = client
        } else {
            // Ports apart per test process, so that parallel runs do not meet.
            let base = 21_000 + Int(getpid() % 400) * 10 + Int.random(in: 0..<4) * 2_000
            clientURLs = (0..<3).map { "http://127.0.0.1:\(base + 2 * $0)" }
            peers = (0..<3).map { "http://127.0.0.1:\(base + 2 * $0 + 1)" }
        }
        self.clientURLs = clientURLs
        let initial = (0..<3).map { "m\($0)=\(peers[$0])" }.joined(separator: ",")
        arguments = (0..<3).map { i in
            [
                "--name", "m\(i)", "--data-dir", directory.appending(path: "m\(i)").path,
                "--listen-client-urls", clientURLs[i], "--advertise-client-urls", clientURLs[i],
                "--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
                "--initial-cluster", initial, "--initial-cluster-state", "new",
                "--initial-cluster-token", directory.lastPathComponent,
            ]
        }
        for i in 0..<3 { try start(i) }
        try waitUntilHealthy()
    }

    /// Two bridges here, client (this namespace on it, at `.1`) and peer; member `i` in namespace
    /// `<tag>m<i>` with a link to each, at `.1<i>`. Returns the two networks' first three bytes.
    private static func makeNetwork(_ tag: String) throws -> (client: String, peer: String) {
        let used = Syscall.procFile("/proc/net/fib_trie") ?? ""  // past 4 KiB too
        // A network no earlier cluster of this process had. The process keeps one connection per
        // endpoints and user: at an earlier cluster's addresses, a test with the same user as the
        // one before it got that cluster's connection, and DEADLINE_EXCEEDED from every member
        // (seen twice in full runs, never alone; the test process's neighbour cache, still naming
        // the old links, is the likely cause).
        let start = Int(getpid()) + made * 7
        let third = (0..<250).map { (start + $0 * 7) % 250 + 2 }.first { !used.contains("10.201.\($0).") } ?? 2
        let (client, peer) = ("10.201.\(third)", "10.202.\(third)")
        for bridge in ["C", "P"] { try ip(["link", "add", tag + bridge, "type", "bridge"]); try ip(["link", "set", tag + bridge, "up"]) }
        try ip(["addr", "add", "\(client).1/24", "dev", tag + "C"])
        for i in 0..<3 {
            try makeNamespace(tag + "m\(i)")
            try link(tag, "m\(i)", "c\(i)", bridge: "C", address: "\(client).1\(i)")
            try link(tag, "m\(i)", "p\(i)", bridge: "P", address: "\(peer).1\(i)")
        }
        return (client, peer)
    }

    private static func makeNamespace(_ namespace: String) throws {
        try ip(["netns", "add", namespace])
        try ip(["-n", namespace, "link", "set", "lo", "up"])
    }

    /// A veth pair: `<tag><name>` on bridge `<tag><bridge>` here, `eth-<name>` with `address` in
    /// namespace `<tag><namespace>`.
    private static func link(_ tag: String, _ namespace: String, _ name: String, bridge: String, address: String) throws {
        try ip(["link", "add", tag + name, "type", "veth", "peer", "name", "eth-" + name, "netns", tag + namespace])
        try ip(["link", "set", tag + name, "master", tag + bridge, "up"])
        try ip(["-n", tag + namespace, "addr", "add", address + "/24", "dev", "eth-" + name])
        try ip(["-n", tag + namespace, "link", "set", "eth-" + name, "up"])
    }

    /// A namespace for a client process, on the client bridge, whose link ``cutClient(_:_:)`` cuts.
    func clientNamespace() throws -> String {
        clients += 1
        let name = "x\(clients)"
        try Self.makeNamespace(tag + name)
        try Self.link(tag, name, name, bridge: "C", address: "\(subnet).\(100 + clients)")
        return tag + name
    }

    /// Cuts the link of a client namespace (packets are dropped, no connection is reset), or mends it.
    func cutClient(_ namespace: String, _ cut: Bool = true) throws {
        try ip(["link", "set", namespace, cut ? "down" : "up"])
    }

    /// What can befall a member while clients hold connections to it.
    enum Fault: String, CustomTestStringConvertible {
        /// Killed (SIGKILL): its connections are reset.
        case killed
        /// Its peer link is down: clients reach it, it reaches no peer (namespaces only).
        case cutOffFromPeers
        /// Stopped (SIGSTOP): its connections stay open, and nothing comes through them.
        case stopped
        var testDescription: String { rawValue }
        /// The faults this machine can make.
        static var possible: [Fault] { namespaces ? [.killed, .cutOffFromPeers, .stopped] : [.killed, .stopped] }
    }

    func inflict(_ fault: Fault, on i: Int) throws {
        switch fault {
        case .killed: kill(i)
        case .cutOffFromPeers: try ip(["link", "set", tag + "p\(i)", "down"])
        case .stopped: if let member = members[i] { Foundation.kill(member.processIdentifier, SIGSTOP) }
        }
    }

    /// Starts member `i` (again: a restarted member keeps its data directory and rejoins).
    func start(_ i: Int) throws {
        let process = Process()
        if Self.namespaces {
            process.executableURL = URL(filePath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", tag + "m\(i)", "/usr/bin/etcd"] + arguments[i]
        } else {
            process.executableURL = URL(filePath: "/usr/bin/etcd")
            process.arguments = arguments[i]
        }
        let log = directory.appending(path: "m\(i).log")
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = handle
        try process.run()
        members[i] = process
    }

    deinit {
        // SIGKILL: a member cut off from its peers does not stop on SIGTERM.
        for i in members.indices { kill(i) }
        // A namespace lives on while a process is in it, and its links with it: both go here.
        if Self.namespaces {
            let names = (0..<3).flatMap { ["m\($0)", "c\($0)", "p\($0)"] } + (0..<clients).map { "x\($0 + 1)" }
            for name in names { try? ip(["netns", "del", tag + name]) }
            for name in names + ["C", "P"] { try? ip(["link", "del", tag + name]) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    var endpoints: String { clientURLs.joined(separator: ",") }

    /// Polls `etcdctl endpoint health` until every live member answers (30 s at most); `user`
    /// (`name:password`) once authentication is on.
    func waitUntilHealthy(user: String? = nil) throws {
        let live = clientURLs.indices.filter { members[$0] != nil }.map { clientURLs[$0] }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if (try? etcdctl(["--endpoints", live.joined(separator: ","), "endpoint", "health"] + (user.map { ["--user", $0] } ?? [])))?.status == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw CancellationError()
    }

    /// The index of the member that leads now.
    func leader(among urls: [String]? = nil) throws -> Int? {
        let out = try etcdctl(["--endpoints", (urls ?? clientURLs).joined(separator: ","), "endpoint", "status", "-w", "json"]).output
        guard let statuses = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]] else { return nil }
        for status in statuses {
            guard let endpoint = status["Endpoint"] as? String, let body = status["Status"] as? [String: Any],
                let header = body["header"] as? [String: Any] else { continue }
            if "\(header["member_id"] ?? "")" == "\(body["leader"] ?? "-")" { return clientURLs.firstIndex(of: endpoint) }
        }
        return nil
    }

    /// Lets a member stopped by ``inflict(_:on:)`` go on.
    func resume(_ member: Int) {
        if let process = members[member] { Foundation.kill(process.processIdentifier, SIGCONT) }
    }

    /// Brings a member cut off from its peers by ``inflict(_:on:)`` back.
    func mend(_ member: Int) throws {
        try ip(["link", "set", tag + "p\(member)", "up"])
    }

    func kill(_ member: Int) {
        guard let process = members[member] else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        members[member] = nil
    }

    /// The value of the metric line that starts with `name` (a name, or a name and the start of
    /// its labels) on the member at `url`, from its /metrics (Prometheus text); 0 when none.
    func metric(_ name: String, of url: String) throws -> Double {
        let page = Process()
        page.executableURL = URL(filePath: "/usr/bin/env")
        page.arguments = ["python3", "-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1] + '/metrics', timeout=5).read().decode())", url]
        let pipe = Pipe()
        page.standardOutput = pipe
        try page.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        page.waitUntilExit()
        return text.split(separator: "\n").filter { $0.hasPrefix(name) && ($0.dropFirst(name.count).first == " " || name.contains("{")) }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }

    /// The cluster's current revision, from a linearizable read on the first live member that
    /// answers one: at or past every write acknowledged before the call. (A member's status gives
    /// the revision it has applied, which a follower reaches up to a heartbeat after the leader
    /// acknowledged the write: the hundred-breaks test once took 1607 for the end of a history
    /// that reached 1609.)
    func revision() throws -> Int64 {
        for (i, url) in clientURLs.enumerated() where members[i] != nil {
            guard let read = try? etcdctl(["--endpoints", url, "get", "sharedprefs-test-revision", "-w", "json"]), read.status == 0,
                let object = try? JSONSerialization.jsonObject(with: Data(read.output.utf8)) as? [String: Any],
                let revision = (object["header"] as? [String: Any])?["revision"] as? NSNumber
            else { continue }
            return revision.int64Value
        }
        return try #require(nil as Int64?, "no live member of \(endpoints) answered a linearizable read")
    }

    /// Puts `value` under `key`, both raw bytes (etcdctl takes keys as arguments, which cannot
    /// hold bytes that are not UTF-8), through the gateway of member 0, as any etcd client may.
    func putRaw(_ key: Data, _ value: Data) throws {
        let script = """
            import base64, json, sys, urllib.request
            body = json.dumps({"key": sys.argv[2], "value": sys.argv[3]}).encode()
            urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/v3/kv/put", body, {"Content-Type": "application/json"}), timeout=5).read()
            """
        try run("/usr/bin/python3", ["-c", script, clientURLs[0], key.base64EncodedString(), value.base64EncodedString()])
    }

    /// etcd's users `root` (password `rootpw`) and `app` (`apppw`), `app` with a role that reads
    /// and writes under `prefix`; then authentication turned on, unless `enable` is false.
    func addUsers(appPrefix prefix: String, enable: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for command in [
            ["user", "add", "root:rootpw"], ["user", "add", "app:apppw"], ["role", "add", "app"],
            ["role", "grant-permission", "app", "readwrite", "--prefix=true", prefix], ["user", "grant-role", "app", "app"],
        ] + (enable ? [["auth", "enable"]] : []) {
            #expect(try etcdctl(["--endpoints", endpoints] + command).status == 0, "\(command)", sourceLocation: sourceLocation)
        }
    }

    func etcdctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/etcdctl")
        process.arguments = ["--dial-timeout", "1s", "--command-timeout", "2s"] + arguments
        process.environment = ["ETCDCTL_API": "3"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// The build's products, next to the test bundle: `prefs-etcd-child`, and `prefs-watch` (built
/// with the Etcd trait too).
let products = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]).deletingLastPathComponent()

/// A running child whose output lines can be awaited.
final class Child: @unchecked Sendable {
    let process = Process()
    private let lines = AsyncStream<String>.makeStream()
    private var iterator: AsyncStream<String>.Iterator

    /// A child (`prefs-etcd-child`, or another product) whose offline cache lives under
    /// `cacheHome`; in network namespace `namespace` when one is given.
    init(_ arguments: [String], cacheHome: URL, product: String = "prefs-etcd-child", namespace: String? = nil, environment: [String: String] = [:]) throws {
        iterator = lines.stream.makeAsyncIterator()
        let executable = products.appending(path: product)
        if let namespace {
            process.executableURL = URL(filePath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace, executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.standardInput = input
        process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CACHE_HOME": cacheHome.path].merging(environment) { $1 }) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        let continuation = lines.continuation
        let output = pipe.fileHandleForReading
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let data = output.availableData
                if data.isEmpty { break }
                pending.append(data)
                while let newline = pending.firstIndex(of: 10) {
                    continuation.yield(String(decoding: pending[..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
            }
            continuation.finish()
        }
        Thread.detachNewThread { [self] in
            while case let data = errors.fileHandleForReading.availableData, !data.isEmpty { errorText.withLock { $0.append(data) } }
            errorsRead.signal()
        }
        try process.run()
    }

    func nextLine() async -> String? { await iterator.next() }

    /// The next line that `matches`, skipping the others (kept in ``skipped``).
    func nextLine(where matches: (String) -> Bool) async -> String? {
        while let line = await nextLine() {
            if matches(line) { return line }
            skipped.append(line)
        }
        return nil
    }
    private(set) var skipped: [String] = []

    /// Writes `line` to the child's standard input.
    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }
    /// Closes the child's standard input.
    func endInput() { try? input.fileHandleForWriting.close() }
    private let input = Pipe()

    /// What the child wrote to standard error, once it has exited. (Read as it comes: a child that
    /// logs more than a pipe holds must not block.)
    var errorOutput: String {
        errorsRead.wait()
        errorsRead.signal()
        return errorText.withLock { String(decoding: $0, as: UTF8.self) }
    }
    private let errors = Pipe()
    private let errorText = Mutex(Data())
    private let errorsRead = DispatchSemaphore(value: 0)

    /// Every line until the child exits, and its exit status.
    func finish() async -> (lines: [String], status: Int32) {
        var lines: [String] = []
        while let line = await nextLine() { lines.append(line) }
        return (lines, await exitStatus())
    }

    /// The child's exit status; a cancelled wait (the test's time limit) kills the child.
    func exitStatus() async -> Int32 {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    self.process.waitUntilExit()
                    continuation.resume(returning: self.process.terminationStatus)
                }
            }
        } onCancel: {
            kill(process.processIdentifier, SIGKILL)
        }
    }
}

/// The README's etcd block, as written (the README test builds without the trait and leaves it out):
/// compiled here, never run, so that the README cannot drift from the API.
func readmeEtcdBlock() throws {
    let launches = PreferenceKey<Int>("launches", default: 0)
    let suite = try PreferenceSuite(etcd: ["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"], prefix: "apps/demo/")
    suite.set(3, forKey: "retries")              // visible here at once; one etcd txn moments later
    let token = suite.observe(.key("retries")) { change in print(change.oldValue as Any, "->", change.newValue as Any) }
    try suite.update { $0[launches] += 1 }       // a compare-and-swap: never lost, never applied twice
    token.cancel()
}

/// ObservableDefaults' `@ObservableCloud` README class, ported: backed by an etcd suite.
@ObservableCloud
final class CloudSettings: @unchecked Sendable {
    @CloudBacked var username: String = "Fatbobman"
    @CloudKey(keyValueStoreKey: "theme_key") @CloudBacked var theme: String = "light"
}

/// Sets a to 2, removes b and sets c to 3, then c to 4, in two writes, and compacts the cluster
/// through `endpoint` to the revision reached, which it returns: c's step through 3 is gone.
@discardableResult
func changeAndCompact(_ suite: PreferenceSuite, on cluster: EtcdCluster, through endpoint: String) async throws -> Int64 {
    suite.set(2, forKey: "a")
    suite.removeObject(forKey: "b")
    suite.set(3, forKey: "c")
    try await suite.flush()
    suite.set(4, forKey: "c")
    try await suite.flush()
    let revision = try cluster.revision()
    #expect(try cluster.etcdctl(["--endpoints", endpoint, "compact", "\(revision)"]).status == 0)
    return revision
}

/// Every write under `prefix` from revision `first` through `end` as etcd's own client replays it
/// (`etcdctl watch --prefix --rev first -w json`): each revision's suite keys (without the prefix)
/// with their values (an integer's digits, "-" for a removal).
func etcdHistory(of prefix: String, from first: Int64, through end: Int64, on cluster: EtcdCluster) throws -> [Int64: [String: String]] {
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/etcdctl")
    process.arguments = ["--endpoints", cluster.endpoints, "watch", "--prefix", prefix, "--rev", "\(first)", "-w", "json"]
    process.environment = ["ETCDCTL_API": "3"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    defer {
        process.terminate()
        process.waitUntilExit()
    }
    var history: [Int64: [String: String]] = [:]
    var (pending, depth, inString, escaped, objectStart) = ([UInt8](), 0, false, false, 0)
    var scanned = 0
    // etcdctl never ends a watch: a history that does not reach `end` within a minute is
    // returned as it is (the test then says what is missing) rather than waited for.
    let deadline = Date().addingTimeInterval(60)
    while history.keys.max() ?? 0 < end, Date() < deadline {
        var ready = pollfd(fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 1_000) > 0 else { continue }
        let data = pipe.fileHandleForReading.availableData
        guard !data.isEmpty else { break }
        pending += data
        // etcdctl writes one JSON object per response, not always on lines of their own.
        while scanned < pending.count {
            let byte = pending[scanned]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "{") {
                if depth == 0 { objectStart = scanned }
                depth += 1
            } else if byte == UInt8(ascii: "}") {
                depth -= 1
                if depth == 0 {
                    let object = try JSONSerialization.jsonObject(with: Data(pending[objectStart...scanned])) as? [String: Any]
                    for event in object?["Events"] as? [[String: Any]] ?? [] {
                        let kv = event["kv"] as? [String: Any] ?? [:]
                        guard let revision = (kv["mod_revision"] as? NSNumber)?.int64Value, revision <= end,
                            let bytes = (kv["key"] as? String).flatMap({ Data(base64Encoded: $0) }),
                            bytes.dropFirst(prefix.utf8.count).first != 0xFF  // the library's own keys (a writer's fence)
                        else { continue }
                        let key = String(decoding: bytes, as: UTF8.self)
                        var value = "-"
                        if (event["type"] as? NSNumber)?.intValue != 1, let bytes = (kv["value"] as? String).flatMap({ Data(base64Encoded: $0) }),
                            case .integer(let n) = try PropertyListFormat.decode(Array(bytes)) {
                            value = "\(n)"
                        }
                        history[revision, default: [:]][String(key.dropFirst(prefix.count))] = value
                    }
                }
            }
            scanned += 1
        }
    }
    return history
}

/// The established TCP connections of this process to `urls` (`http://address:port`): its
/// sockets (/proc/self/fd) among /proc/self/net/tcp's, by remote address and port.
func connections(to urls: [String]) -> Int {
    let sockets = Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { fd -> String? in
        guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"), link.hasPrefix("socket:[") else { return nil }
        return String(link.dropFirst(8).dropLast())
    })
    let remotes = Set(urls.compactMap { URL(string: $0) }.map { url -> String in
        let octets = (url.host() ?? "").split(separator: ".").compactMap { UInt8($0) }
        return octets.reversed().map { String(format: "%02X", $0) }.joined() + String(format: ":%04X", url.port ?? 2379)
    })
    let table = Syscall.procFile("/proc/self/net/tcp") ?? ""
    return table.split(separator: "\n").dropFirst().count { line in
        let fields = line.split(separator: " ")
        return fields.count > 9 && fields[3] == "01" && remotes.contains(String(fields[2])) && sockets.contains(String(fields[9]))
    }
}

/// Waits, ten times a second for 30 s at most, until `condition` holds (for a state seen only from
/// outside, such as another server's metrics).
func waitFor(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async {
    for _ in 0..<300 {
        if condition() { return }
        try? await Task.sleep(for: .milliseconds(100))
    }
    Issue.record("waited 30 s for a condition that did not come", sourceLocation: sourceLocation)
}

/// The next two lines of `lines`, sorted; "nothing more within 20 s", told by `tell`, for one
/// that does not come by then.
func nextTwo(_ lines: inout AsyncStream<String>.Iterator, _ tell: AsyncStream<String>.Continuation) async -> [String?] {
    let deadline = Task {
        try await Task.sleep(for: .seconds(20))
        tell.yield("nothing more within 20 s")
    }
    defer { deadline.cancel() }
    return [await lines.next(), await lines.next()].sorted { ($0 ?? "") < ($1 ?? "") }
}

/// The test process's own suites keep no offline cache (the children's is under the cluster's directory).
let noCache = EtcdOptions(offlineCache: .none)

// Every wait below is for an event (a line from a child, a change, an exit); the time limit ends a
// test whose event never comes. (The shorter of a suite's and a test's limits applies: the
// hundred-breaks test takes 120–140 s here, so the suite's is 5 minutes.)
@Suite(
    "etcd suites, across processes, on a 3-member cluster", .serialized, .timeLimit(.minutes(5)),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/etcd") && FileManager.default.isExecutableFile(atPath: "/usr/bin/etcdctl"),
        "needs etcd and etcdctl in /usr/bin: apt-get install etcd-server etcd-client (.ci/run does)"))
struct EtcdSuiteTests {
    @Test func aChangeReachesAnotherProcessKeyByKeyWithItsOldValue() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let observer = try Child(["observe", cluster.endpoints, prefix, "4"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")

        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        suite.set("x", forKey: "b")
        try await suite.flush()
        suite.set(2, forKey: "a")
        suite.removeObject(forKey: "b")
        try await suite.flush()

        var lines: [String] = []
        while lines.count < 4, let line = await observer.nextLine() { lines.append(line) }
        #expect(await observer.exitStatus() == 0)
        // Per key in order, each with its old value.
        #expect(lines.filter { $0.hasPrefix("change a ") } == ["change a - 1", "change a 1 2"])
        #expect(lines.filter { $0.hasPrefix("change b ") } == ["change b - x", "change b x -"])
        // And the values are what another client reads.
        let reader = try cluster.etcdctl(["--endpoints", cluster.endpoints, "get", "--prefix", prefix, "--keys-only"])
        #expect(reader.output.split(separator: "\n").filter { !$0.isEmpty } == [Substring(prefix + "a")])
    }

    /// An endpoint that is no http(s) URL of a member is refused when the suite opens, and named:
    /// a port out of range crashed the process; a user, a query or a fragment was ignored.
    @Test(arguments: [
        "127.0.0.1:2379", "etcd:2379", "ftp://127.0.0.1:2379", "http://", "http://127.0.0.1:2379/v3", "http://127.0.0.1:99999", "http://127.0.0.1:0",
        "http://app:apppw@127.0.0.1:2379", "http://127.0.0.1:2379?timeout=1", "http://127.0.0.1:2379#a",
    ])
    func anEndpointThatIsNoURLIsRefusedAndNamed(_ endpoint: String) {
        let error = #expect(throws: PreferenceError.self) { try PreferenceSuite(etcd: [endpoint], prefix: "apps/x/", options: noCache) }
        #expect(error?.code == .invalidName && error?.message.contains("\"\(endpoint)\"") == true, "\(String(describing: error))")
    }

    /// A request timeout outside 1 ms to a day is refused when the suite opens, saying the range:
    /// `.seconds(Int64.max)`, meant as "for ever", stopped the process (an integer overflow)
    /// where the watch stream waited for that long.
    @Test(arguments: [Duration.zero, .microseconds(999), .seconds(86_401), .seconds(Int64.max)])
    func aTimeoutOutOfRangeIsRefusedSayingTheRange(_ timeout: Duration) {
        let error = #expect(throws: PreferenceError.self) {
            try PreferenceSuite(etcd: ["http://127.0.0.1:2379"], prefix: "apps/x/", options: EtcdOptions(timeout: timeout, offlineCache: .none))
        }
        #expect(error?.code == .unsupportedOperation && error?.message.contains("from 1 ms to a day") == true, "\(String(describing: error))")
    }

    /// Twenty suites of one process on one cluster: one TCP connection, one watch stream with
    /// twenty watches on the members (their own metrics), every change heard; and while they are
    /// quiet for three request timeouts, no read (no `Range`), the stream kept by progress requests;
    /// once they are gone, no stream and no connection (before, the connection stayed for the
    /// life of the process).
    @Test func theSuitesOfAProcessShareOneConnectionAndOneWatchStreamAndReadNothingWhileQuiet() async throws {
        let cluster = try EtcdCluster()
        let options = EtcdOptions(timeout: .seconds(1), offlineCache: .none)
        let base = "apps/\(UUID().uuidString)/"
        let (heard, hear) = AsyncStream.makeStream(of: String.self)
        var kept: [(PreferenceSuite, PreferenceObservation)] = []
        for i in 0..<20 {
            let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: base + "\(i)/", options: options)
            kept.append((suite, suite.observe(.key("k")) { change in hear.yield("\(i) \(change.newValue.map { "\($0)" } ?? "-")") }))
        }
        for i in 0..<20 { #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "put", base + "\(i)/k", "v\(i)"]).status == 0) }
        var seen = Set<String>()
        for await line in heard {
            seen.insert(line)
            if seen.count == 20 { break }
        }
        #expect(seen == Set((0..<20).map { "\($0) \"v\($0)\"" }))
        func total(_ name: String) throws -> Double { try cluster.clientURLs.reduce(0) { try $0 + cluster.metric(name, of: $1) } }
        #expect(try total("etcd_debugging_mvcc_watch_stream_total") == 1)
        #expect(try total("etcd_debugging_mvcc_watcher_total") == 20)
        #expect(connections(to: cluster.clientURLs) == 1, "TCP connections of this process to the members")
        let ranges = try total("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\"")
        let received = try total("grpc_server_msg_received_total{grpc_method=\"Watch\"")
        // Quiet for three timeouts: what is asserted is what does not happen in that time.
        try await Task.sleep(for: .seconds(3.5))
        #expect(try total("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\"") == ranges, "reads while quiet")
        #expect(try total("grpc_server_msg_received_total{grpc_method=\"Watch\"") > received, "no progress request was sent")
        #expect(try total("etcd_debugging_mvcc_watch_stream_total") == 1)
        #expect(connections(to: cluster.clientURLs) == 1)
        // Released, each suite's watch is canceled on the stream, the stream then closed, and
        // with the last suite of the cluster the connection.
        kept.removeAll()
        await waitFor { (try? total("etcd_debugging_mvcc_watch_stream_total")) == 0 }
        await waitFor { connections(to: cluster.clientURLs) == 0 }
    }

    @Test func eightProcessesIncrementingWhileTheLeaderIsKilledLoseNothingAndDoubleNothing() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let (processes, increments) = (8, 40)
        let children = try (0..<processes).map { _ in try Child(["increment", cluster.endpoints, prefix, "\(increments)"], cacheHome: cluster.cacheHome) }
        // Kill the leader once the counter has moved: mid-run.
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        for await _ in suite.updates([PreferenceKey<Int>("counter", default: 0)], initial: false) { break }
        let leader = try #require(try cluster.leader())
        cluster.kill(leader)

        for child in children {
            #expect(await child.nextLine() == "done")
            #expect(await child.exitStatus() == 0)
        }
        let survivors = cluster.clientURLs.enumerated().filter { $0.offset != leader }.map(\.element)
        let check = try await PreferenceSuite.open(etcd: survivors, prefix: prefix, options: noCache)
        #expect(check.integer(forKey: "counter") == processes * increments)
    }

    /// 64 async `update`s at once in a process whose cooperative pool is strict
    /// (`LIBDISPATCH_COOPERATIVE_POOL_STRICT`: one thread a core, none added while they block;
    /// far fewer threads than updates on any machine, 2 on a 2-core one), while the member they
    /// first go to is stopped (its answers are lost): every one returns, within its bound, and
    /// the counter holds exactly the ones that said they were applied. (Sync updates on the
    /// pool's threads, waiting for a task that needed one of them, hung for good.)
    @Test(.timeLimit(.minutes(2)))
    func sixtyFourAsyncUpdatesOnAStrictPoolWithLostAnswersAllReturn() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let child = try Child(["async-updates", cluster.endpoints, prefix, "64"], cacheHome: cluster.cacheHome, environment: ["LIBDISPATCH_COOPERATIVE_POOL_STRICT": "1"])
        #expect(await child.nextLine() == "ready")
        // The child asks member 0 first: stopped, it keeps the connection open and answers nothing.
        try cluster.inflict(.stopped, on: 0)
        defer { cluster.resume(0) }
        child.send("go")
        let line = try #require(await child.nextLine())
        #expect(await child.exitStatus() == 0)
        let fields = line.split(separator: " ")
        let (ok, failed, longest) = (Int(fields[1]) ?? -1, Int(fields[3]) ?? -1, Int(fields[5]) ?? -1)
        #expect(ok + failed == 64, "\(line)")
        // Each waits for the suite's earlier updates 2 s (the child's timeout) at most, and its
        // own comparison and answer get the same again, a lost one its fence.
        #expect(longest < 10_000, "\(line)")
        let check = try await PreferenceSuite.open(etcd: Array(cluster.clientURLs.dropFirst()), prefix: prefix, options: noCache)
        #expect(check.integer(forKey: "counter") == ok, "\(line)")
    }

    @Test func aWatchBelowTheCompactionPointReadsTheSuiteAgainAndEndsInTheExactState() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        // The observer knows member 0 only, so it sees nothing while member 0 is down.
        let observer = try Child(["observe", cluster.clientURLs[0], prefix, "6"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")
        let suite = try await PreferenceSuite.open(etcd: [cluster.clientURLs[1], cluster.clientURLs[2]], prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        suite.set("x", forKey: "b")
        try await suite.flush()
        var seen: [String] = []
        while seen.count < 2, let line = await observer.nextLine() { if line.hasPrefix("change") { seen.append(line) } }
        #expect(Set(seen) == ["change a - 1", "change b - x"])

        cluster.kill(0)
        try await changeAndCompact(suite, on: cluster, through: cluster.clientURLs[1])
        try cluster.start(0)

        let (lines, status) = await observer.finish()
        #expect(status == 0)
        #expect(lines.contains("failure resynchronized"))
        // The state the cluster holds, key by key with old values; c's step through 3 was compacted away.
        #expect(Set(lines.filter { $0.hasPrefix("change") }) == ["change a 1 2", "change b x -", "change c - 4"])
    }

    /// A watch that falls below a compaction point in which the prefix changed nothing (another
    /// prefix written and compacted while its only member was down) goes on without a re-read:
    /// its observer hears no resynchronization, a change stream following it no gap, and both
    /// hear the next write as it is. (The children are stopped until the member has the
    /// compaction, so that their watches resume below it.)
    @Test func aCompactionInWhichThePrefixChangedNothingGivesNoResyncAndNoGap() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let others = [cluster.clientURLs[1], cluster.clientURLs[2]]
        let suite = try await PreferenceSuite.open(etcd: others, prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        try await suite.flush()
        let observer = try Child(["observe", cluster.clientURLs[0], prefix, "2"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")
        let consumer = try Child(["changes", cluster.clientURLs[0], prefix, String(try cluster.revision())], cacheHome: cluster.cacheHome)
        defer { kill(consumer.process.processIdentifier, SIGKILL) }
        suite.set(1, forKey: "b")
        try await suite.flush()
        let first = try cluster.revision()
        #expect(await consumer.nextLine() == "write \(first) b=1")
        #expect(await observer.nextLine() == "change b - 1")

        for child in [observer, consumer] { kill(child.process.processIdentifier, SIGSTOP) }
        cluster.kill(0)
        let other = try await PreferenceSuite.open(etcd: others, prefix: "other/\(UUID().uuidString)/", options: noCache)
        for n in 1...5 {
            other.set(n, forKey: "k\(n)")
            try await other.flush()
        }
        let compacted = try cluster.revision()
        #expect(try cluster.etcdctl(["--endpoints", others[0], "compact", "\(compacted)"]).status == 0)
        try cluster.start(0)
        // A linearizable read answered by member 0 has it apply everything committed: the compaction too.
        await waitFor { (try? cluster.etcdctl(["--endpoints", cluster.clientURLs[0], "get", prefix + "a"]).status) == 0 }
        for child in [observer, consumer] { kill(child.process.processIdentifier, SIGCONT) }

        suite.set(2, forKey: "a")
        try await suite.flush()
        let written = try cluster.revision()
        #expect(await consumer.nextLine() == "write \(written) a=2")
        let (lines, status) = await observer.finish()
        #expect(status == 0)
        #expect(lines.filter { !$0.hasPrefix("failure clusterUnreachable") } == ["change a 1 2"], "\(lines)")
    }

    /// etcd's six watch properties for `changes(since:)` across 100 forced breaks, checked against
    /// etcd's own client: a writer sets or removes 1–128 keys per write, every 40 ms, while, one
    /// after another, a member is SIGKILLed and restarted, SIGSTOPped and let go, cut off from
    /// its peers (network namespaces only), the consumer's link is cut (namespaces only), or the
    /// consumer is SIGKILLed and started again from the number of the last write it printed. The
    /// writes all its runs printed, against `etcdctl watch --rev` of the prefix from the start:
    /// ordered and unique (numbers only grow, across restarts too), atomic (a revision's events
    /// in one write, exactly), reliable (every revision of the prefix, no gap), resumable and
    /// bookmarkable (each run starts right after the number the last one printed). In etcd's
    /// history, no key goes back to an earlier round's value (a write's held copy never lands late).
    @Test
    func aChangeStreamAcrossAHundredBreaksIsEtcdsOwnHistory() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let start = try cluster.revision()
        let namespace = EtcdCluster.namespaces ? try cluster.clientNamespace() : nil
        func consumer(since: Int64) throws -> Child {
            try Child(["changes", cluster.endpoints, prefix, String(since)], cacheHome: cluster.cacheHome, namespace: namespace)
        }
        var printed: [String] = []
        var reader = try consumer(since: start)
        let writer = try Child(["storm", cluster.endpoints, prefix], cacheHome: cluster.cacheHome)
        // Open before the first break: opening needs the cluster (nothing is cached yet), and a
        // writer whose first read met the election after round 0's kill exited, leaving the
        // rounds to run with no writes (seen once).
        #expect(await writer.nextLine() == "ready")
        let kinds = EtcdCluster.namespaces ? ["kill", "stop", "cut off", "restart", "cut link"] : ["kill", "stop", "restart"]
        var breaks: [String: Int] = [:]
        for round in 0..<100 {
            let (kind, member) = (kinds[round % kinds.count], round / kinds.count % 3)
            breaks[kind, default: 0] += 1
            switch kind {
            case "kill":
                cluster.kill(member)
                try await Task.sleep(for: .milliseconds(100))
                try cluster.start(member)
            case "stop":
                try cluster.inflict(.stopped, on: member)
                try await Task.sleep(for: .milliseconds(300))
                cluster.resume(member)
            case "cut off":
                try cluster.inflict(.cutOffFromPeers, on: member)
                try await Task.sleep(for: .milliseconds(1500))
                try cluster.mend(member)
            case "cut link":
                try cluster.cutClient(namespace!)
                try await Task.sleep(for: .milliseconds(500))
                try cluster.cutClient(namespace!, false)
            default:
                kill(reader.process.processIdentifier, SIGKILL)
                printed += await reader.finish().lines
                let last = printed.last { $0.hasPrefix("write ") }.flatMap { Int64($0.split(separator: " ")[1]) } ?? start
                reader = try consumer(since: last)
            }
            try cluster.waitUntilHealthy()
        }
        writer.endInput()
        let written = await writer.finish()
        #expect(written.lines == ["done"], "status \(written.status): \(writer.errorOutput.suffix(2000))")
        // Compared through `end`: a put whose answer the writer lost (it wrote the values again)
        // may still be applied after it, from a member that kept it while cut off from its peers.
        let end = try cluster.revision()
        // The consumer's last run reaches the last write; then it stops, and every run's lines are in.
        let last = await reader.nextLine { $0.hasPrefix("write \(end) ") || $0.hasPrefix("gap") }
        if last == nil { Issue.record("the consumer's last run ended before write \(end), with status \(await reader.exitStatus()): \(reader.errorOutput.suffix(4000))") }
        kill(reader.process.processIdentifier, SIGKILL)
        printed += reader.skipped + [last].compactMap { $0 } + (await reader.finish().lines)

        let history = try etcdHistory(of: prefix, from: start + 1, through: end, on: cluster)
        var seen: [Int64: [String: String]] = [:]
        var order: [Int64] = []
        for line in printed {
            #expect(!line.hasPrefix("gap"), "\(line)")
            let words = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard words.first == "write", words.count == 3, let revision = Int64(words[1]), revision <= end else { continue }
            order.append(revision)
            seen[revision] = Dictionary(words[2].split(separator: ",").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }) { first, _ in first }
        }
        let unordered = zip(order, order.dropFirst()).filter { $0 >= $1 }
        #expect(unordered.isEmpty, "ordered and unique: of \(order.count) writes, these follow one not below them: \(unordered.prefix(10))")
        let (missing, extra) = (Set(history.keys).subtracting(seen.keys).sorted(), Set(seen.keys).subtracting(history.keys).sorted())
        #expect(missing.isEmpty && extra.isEmpty, "reliable: \(history.count) revisions in etcd, \(seen.count) heard; missing \(missing.prefix(10)), extra \(extra.prefix(10))")
        let inexact = history.keys.sorted().filter { seen[$0] != nil && seen[$0] != history[$0] }
        #expect(inexact.isEmpty, "atomic: revisions whose events differ: \(inexact.prefix(3).map { "\($0): \(history[$0]!) against \(seen[$0]!)" })")
        #expect(breaks.values.reduce(0, +) == 100 && history.count > 100, "\(breaks), \(history.count) revisions")
        // The writer sets a key to the number of its round, and a write that fails leaves the
        // values for the next: no key goes back to an earlier round, unless a copy a member held
        // landed after a later write (etcd-io/etcd#13433; the writer's fence refuses it).
        var latest: [String: Int] = [:]
        var backwards: [String] = []
        for revision in history.keys.sorted() {
            for (key, value) in history[revision]! {
                guard let round = Int(value) else { continue }
                if let before = latest[key], round < before { backwards.append("\(key): \(before), then \(round) at revision \(revision)") }
                latest[key] = round
            }
        }
        #expect(backwards.isEmpty, "a key went back to an earlier round: \(backwards.prefix(5))")
    }

    /// etcd's own authentication, with a role granted the suite's prefix only: a suite with the
    /// user's name and password writes, updates (its transaction key is under the prefix) and
    /// hears another client's change; one without credentials, or with a wrong password, is
    /// refused, saying what to do; a prefix outside the role's is refused as such. The password
    /// is never printed. prefs-watch does the same with `--etcd-user`.
    @Test func aSuiteWithAUserAndPasswordWorksOnItsPrefixAndWithoutIsRefusedSayingSo() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        try cluster.addUsers(appPrefix: prefix)
        let credentials = EtcdOptions.Credentials(user: "app", password: "apppw")
        #expect(!"\(credentials)".contains("apppw") && !"\(EtcdOptions(credentials: credentials))".contains("apppw"))
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: EtcdOptions(offlineCache: .none, credentials: credentials))
        let heard = suite.changes(.key("other"))
        suite.set(1, forKey: "a")
        #expect(suite.synchronize())
        for _ in 1...3 { try await suite.update { $0["count"] = .integer(Int64(($0["count"]?.get(Int.self) ?? 0) + 1)) } }
        #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "--user", "root:rootpw", "put", prefix + "other", "x"]).status == 0)
        for await change in heard {
            #expect(change.newValue == .string("x"))
            break
        }
        let check = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: EtcdOptions(offlineCache: .none, credentials: credentials))
        #expect(check.integer(forKey: "count") == 3 && check.integer(forKey: "a") == 1)
        // Its history is read through a watch of every key, which the role may not read: the
        // change stream gives the write as a gap with the exact content, never nothing.
        var events = suite.changes(since: suite.sequence).makeAsyncIterator()
        suite.set(2, forKey: "a")
        #expect(suite.synchronize())
        let event = try await events.next()
        guard case .gap(_, _, let contents)? = event else { return #expect(Bool(false), "\(String(describing: event))") }
        #expect(contents["a"] == .integer(2) && contents["count"] == .integer(3), "\(contents)")

        for (options, says) in [
            (EtcdOptions(offlineCache: .none), "EtcdOptions.credentials"),
            (EtcdOptions(offlineCache: .none, credentials: .init(user: "app", password: "wrong")), "did not take the user name and password"),
        ] {
            let error = #expect(throws: PreferenceError.self) { try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix + "more/", options: options) }
            #expect(error?.code == .permissionDenied && error?.message.contains(says) == true, "\(String(describing: error))")
            #expect(error?.message.contains("wrong") == false)
        }
        let outside = #expect(throws: PreferenceError.self) {
            try PreferenceSuite(etcd: cluster.clientURLs, prefix: "apps/elsewhere/", options: EtcdOptions(offlineCache: .none, credentials: credentials))
        }
        #expect(outside?.code == .permissionDenied && outside?.message.contains("grant-permission") == true, "\(String(describing: outside))")

        // Read on every key granted: write by write.
        #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "--user", "root:rootpw", "role", "grant-permission", "app", "read", "--from-key", ""]).status == 0)
        suite.set(3, forKey: "a")
        #expect(suite.synchronize())
        let next = try await events.next()
        guard case .write(_, let changes)? = next else { return #expect(Bool(false), "\(String(describing: next))") }
        #expect(changes.map(\.key) == ["a"] && changes.first?.newValue == .integer(3))

        // prefs-watch: with the user's name and password (after a colon, or from the
        // environment, out of the process list), and without, told in its own options' terms.
        func prefsWatch(_ arguments: [String], _ environment: [String: String] = [:]) async throws -> (lines: [String], status: Int32, errors: String) {
            let child = try Child(arguments, cacheHome: cluster.cacheHome, product: "prefs-watch", environment: environment)
            let (lines, status) = await child.finish()
            return (lines, status, child.errorOutput)
        }
        let at = ["--etcd", cluster.endpoints, prefix]
        let written = try await prefsWatch(["write", "--etcd-user", "app:apppw"] + at + ["volume", "-int", "7"])
        #expect(written.status == 0, "\(written.errors)")
        let read = try await prefsWatch(["read"] + at + ["volume", "--etcd-user", "app"], ["PREFS_WATCH_ETCD_PASSWORD": "apppw"])
        #expect(read.lines == ["7"] && read.status == 0, "\(read.errors)")
        let without = try await prefsWatch(["read"] + at + ["volume"])
        #expect(without.status == 1 && without.errors.contains("--etcd-user") && !without.errors.contains("EtcdOptions"), "\(without.errors)")
        let noPassword = try await prefsWatch(["read"] + at + ["volume", "--etcd-user", "app"])
        #expect(noPassword.status == 64 && noPassword.errors.contains("PREFS_WATCH_ETCD_PASSWORD"), "\(noPassword.errors)")
        let wrong = try await prefsWatch(["read"] + at + ["volume", "--etcd-user", "app:wrong"])
        #expect(wrong.status == 1 && wrong.errors.contains("did not take the user name and password") && !wrong.errors.contains("wrong"), "\(wrong.errors)")
    }

    /// etcd checks a watch stream's token when a watch is made on it, not when the stream opened:
    /// once etcd has dropped the token (its time to live ran out while only the stream used it,
    /// or authentication was turned off and on), a new suite's watch is refused with "invalid
    /// auth token" on a stream that goes on carrying the others. The stream is then opened anew
    /// with a new token, and each watch on it goes on from the revision after the last it
    /// brought: both suites hear the next changes, and nobody hears a failure. (Eight suites
    /// opened at once ask for one token between them.)
    @Test func aWatchMadeAfterEtcdDroppedTheStreamsTokenIsMadeOnAStreamWithANewToken() async throws {
        let cluster = try EtcdCluster()
        let (first, second) = ("apps/\(UUID().uuidString)/", "apps/\(UUID().uuidString)/")
        let root = ["--endpoints", cluster.endpoints, "--user", "root:rootpw"]
        try cluster.addUsers(appPrefix: "apps/")
        let options = EtcdOptions(offlineCache: .none, credentials: .init(user: "app", password: "apppw"))
        let (heard, tell) = AsyncStream.makeStream(of: String.self)
        var lines = heard.makeAsyncIterator()
        // Suites opened together ask for one token.
        func authentications() throws -> Double {
            try cluster.clientURLs.reduce(0) { try $0 + cluster.metric("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Authenticate\"", of: $1) }
        }
        let before = try authentications()
        let urls = cluster.clientURLs
        let opened = try await withThrowingTaskGroup(of: (String, PreferenceSuite).self) { group in
            for prefix in [first] + (1..<8).map({ "apps/\($0)/" }) {
                group.addTask { (prefix, try await PreferenceSuite.open(etcd: urls, prefix: prefix, options: options)) }
            }
            return try await group.reduce(into: [String: PreferenceSuite]()) { $0[$1.0] = $1.1 }
        }
        let asked = try authentications() - before
        #expect(asked == 1, "\(asked) Authenticate calls")
        let one = try #require(opened[first])
        let failures = Mutex<[PreferenceError]>([])
        let watchingFailures = one.observeFailures { failure in failures.withLock { $0.append(failure) } }
        let watchingOne = one.observe(.key("k")) { tell.yield("one \($0.newValue?.get(String.self) ?? "-")") }
        #expect(try cluster.etcdctl(root + ["put", first + "k", "1"]).status == 0)
        #expect(await lines.next() == "one 1")
        // Every token etcd gave is dropped, the stream's too.
        for command in [["auth", "disable"], ["auth", "enable"]] { #expect(try cluster.etcdctl(root + command).status == 0, "\(command)") }

        let two = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: second, options: options)
        let watchingTwo = two.observe(.key("k")) { tell.yield("two \($0.newValue?.get(String.self) ?? "-")") }
        let watchingFailuresOfTwo = two.observeFailures { failure in failures.withLock { $0.append(failure) } }
        #expect(try cluster.etcdctl(root + ["put", second + "k", "2"]).status == 0)
        #expect(try cluster.etcdctl(root + ["put", first + "k", "3"]).status == 0)
        #expect(await nextTwo(&lines, tell) == ["one 3", "two 2"])
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        withExtendedLifetime((watchingFailures, watchingFailuresOfTwo, watchingOne, watchingTwo)) {}
    }

    /// A request that waits for the token another request is asking for (requests that start
    /// together ask once) waits no longer than its own time: each call has one deadline. Before,
    /// it waited as long as the other request's asking could take (the watch stream's: the whole
    /// request timeout of the suite that opened it). The member here takes the connection and
    /// never answers, as a hung process does.
    @Test func aRequestWaitingForATokenAnotherRequestAsksForWaitsNoLongerThanItsOwnTime() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        try #require(bound, "a listening socket on 127.0.0.1: errno \(errno)")
        let connection = try EtcdConnection.shared(
            endpoints: ["http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"], tls: nil, credentials: .init(user: "app", password: "apppw"))
        let first = Task { try await connection.metadata(on: 0, EtcdConnection.options(timeout: .seconds(60))) }
        // The first request's asking has reached the member.
        let accepted = await Task.detached { accept(listener, nil, nil) }.value
        defer { close(accepted) }
        #expect(accepted >= 0)
        let start = ContinuousClock.now
        let error = await #expect(throws: (any Error).self) { try await connection.metadata(on: 0, EtcdConnection.options(timeout: .milliseconds(300))) }
        let took = ContinuousClock.now - start
        #expect(error.map { EtcdError($0).code } == 4, "\(String(describing: error))")
        #expect(took < .seconds(10), "\(took)")
        first.cancel()
    }

    /// Suites given credentials while the cluster has authentication off keep working once an
    /// administrator turns it on (`etcdctl auth enable`). etcd then refuses a request that carries
    /// no token with "user name is empty": the token is asked for then, as clientv3 does
    /// (`shouldRefreshToken`), not only when etcd drops one it gave; and a watch made afterwards
    /// on the stream opened without a token (refused: "permission denied") is made on a stream
    /// with one. Before, every write and every new suite failed with "The cluster requires
    /// authentication" for the life of the process, although the suite had its credentials.
    @Test func suitesGivenCredentialsKeepWorkingOnceAuthenticationIsTurnedOn() async throws {
        let cluster = try EtcdCluster()
        let (first, second) = ("apps/\(UUID().uuidString)/", "apps/\(UUID().uuidString)/")
        try cluster.addUsers(appPrefix: "apps/", enable: false)
        let options = EtcdOptions(offlineCache: .none, credentials: .init(user: "app", password: "apppw"))
        let failures = Mutex<[PreferenceError]>([])
        let (heard, tell) = AsyncStream.makeStream(of: String.self)
        var lines = heard.makeAsyncIterator()
        let one = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: first, options: options)
        let watchingFailures = one.observeFailures { failure in failures.withLock { $0.append(failure) } }
        let watchingOne = one.observe(.key("k")) { tell.yield("one \($0.newValue?.get(String.self) ?? "-")") }
        one.set(1, forKey: "a")
        #expect(one.synchronize())

        #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "auth", "enable"]).status == 0)
        one.set(2, forKey: "a")
        #expect(one.synchronize())
        try await one.update { $0["count"] = 1 }
        let two = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: second, options: options)
        let watchingFailuresOfTwo = two.observeFailures { failure in failures.withLock { $0.append(failure) } }
        let watchingTwo = two.observe(.key("k")) { tell.yield("two \($0.newValue?.get(String.self) ?? "-")") }
        let root = ["--endpoints", cluster.endpoints, "--user", "root:rootpw"]
        #expect(try cluster.etcdctl(root + ["put", second + "k", "2"]).status == 0)
        #expect(try cluster.etcdctl(root + ["put", first + "k", "3"]).status == 0)
        #expect(await nextTwo(&lines, tell) == ["one 3", "two 2"])
        let check = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: first, options: options)
        #expect(check.integer(forKey: "a") == 2 && check.integer(forKey: "count") == 1)
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        withExtendedLifetime((watchingFailures, watchingFailuresOfTwo, watchingOne, watchingTwo)) {}
    }

    /// An `update` that reads the whole suite, made after this process's plain write and before
    /// it heard another client's write that came between (this process only writes, so it has
    /// no watch), sees that write: its comparison starts from the revision it knows the prefix
    /// in full at, not from its own last write's, which says nothing of the keys it did not write.
    @Test func anUpdateOfTheWholeSuiteAfterAPlainWriteSeesAWriteThatCameBetween() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        try cluster.putRaw(Data((prefix + "x").utf8), Data(PropertyListFormat.binary.encode(.integer(1))))
        suite.set(1, forKey: "y")
        #expect(suite.synchronize())
        try await suite.update { tx in tx["seen"] = .string(tx.values.keys.filter { $0 != "seen" }.sorted().joined(separator: ",")) }
        #expect(suite.string(forKey: "seen") == "x,y")
    }

    /// A key under the prefix that is not UTF-8 (any etcd client may write one) is reported once,
    /// with its bytes, and left alone; an update that reads the whole suite gets through (it was
    /// compared under a name with U+FFFD, which no key has, and retried about 1,000 times a
    /// second, for ever). A value that does not decode, there before the suite was opened, is
    /// told to a failure observer that subscribes later.
    @Test func aKeyThatIsNotUTF8IsReportedOnceAndLeftAloneWhileUpdatesGetThrough() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let rawKey = Data(prefix.utf8) + Data([0xFF, 0xFE, 0x41])
        try cluster.putRaw(rawKey, Data("x".utf8))
        try cluster.putRaw(Data((prefix + "binary").utf8), Data([0xFF, 0x00, 0xFE]))
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        let failures = Mutex<[PreferenceError]>([])
        let observation = suite.observeFailures { failure in failures.withLock { $0.append(failure) } }
        defer { observation.cancel() }
        let early = failures.withLock { $0 }
        #expect(early.contains { $0.message.contains(rawKey.base64EncodedString()) }, "\(early)")
        #expect(early.contains { $0.code == .corruptFile && $0.message.contains(prefix + "binary") }, "\(early)")

        for _ in 1...3 {
            try await suite.update { tx in tx["count"] = PlistValue((tx.values["count"]?.get(Int.self) ?? 0) + 1) }
        }
        #expect(suite.integer(forKey: "count") == 3)
        #expect(!suite.storedValues.keys.contains { $0.contains("\u{FFFD}") })
        #expect(failures.withLock { $0 }.filter { $0.message.contains(rawKey.base64EncodedString()) }.count == 1)
        let left = try cluster.etcdctl(["--endpoints", cluster.endpoints, "get", "--prefix", prefix, "--keys-only", "-w", "json"]).output
        #expect(left.contains(rawKey.base64EncodedString()), "\(left)")
    }

    /// An update whose comparison fails every time (another client changes what it read during
    /// each attempt) does not retry for ever: past ten request timeouts it fails, saying so.
    @Test func anUpdateThatNeverGetsThroughFailsSayingWhatItKeptComparing() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: EtcdOptions(timeout: .milliseconds(300), offlineCache: .none))
        suite.set(0, forKey: "count")
        try await suite.flush()
        let attempts = Mutex(0)
        let error = #expect(throws: PreferenceError.self) {
            try suite.update { tx in
                let n = attempts.withLock { n in
                    n += 1
                    return n
                }
                try cluster.putRaw(Data((prefix + "count").utf8), Data(PropertyListFormat.binary.encode(.integer(Int64(-n)))))
                tx["count"] = PlistValue((tx["count"]?.get(Int.self) ?? 0) + 1)
            }
        }
        #expect(error?.code == .lockTimedOut && error?.message.contains("each time, another writer had changed what it read first (keys count)") == true, "\(String(describing: error))")
        #expect(attempts.withLock { $0 } > 8)
    }

    /// An update writes at most 126 keys: with the transaction key and the fence (moved by the
    /// first write after one whose answer was lost, an update's too) that is etcd's 128
    /// operations. One of 127 keys is refused before anything is sent, saying why and what to do
    /// (with 127, an update that had to move the fence did not: a plain write's copy still on its
    /// way could land after it).
    @Test func anUpdateOfMoreThan126KeysIsRefusedSayingWhyAndWritesNothing() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        try await suite.update { tx in for i in 0..<126 { tx["a\(i)"] = 1 } }
        let error = #expect(throws: PreferenceError.self) { try suite.update { tx in for i in 0..<127 { tx["b\(i)"] = 1 } } }
        #expect(error?.code == .unsupportedOperation && error?.message.contains("writes up to 126") == true, "\(String(describing: error))")
        let check = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        #expect(check.storedValues.count == 126 && !check.storedValues.keys.contains { $0.hasPrefix("b") })
    }

    /// An update whose answer is lost while every member stops answering ends by its one deadline,
    /// ten request timeouts from its call: every request it makes, those that find out whether it
    /// was applied included, gets only what is left of it (each got a timeout of its own before,
    /// and the fence alone was asked 20 times: 26 s with a 1 s timeout). It says that it may or
    /// may not have been applied; once the members go on, the suite holds one or the other.
    @Test func anUpdateWhoseClusterStopsAnsweringEndsByItsOneDeadline() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let timeout = Duration.seconds(1)
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: EtcdOptions(timeout: timeout, offlineCache: .none))
        suite.set(0, forKey: "count")
        try await suite.flush()
        for member in 0..<3 { try cluster.inflict(.stopped, on: member) }
        let start = ContinuousClock.now
        let error = #expect(throws: PreferenceError.self) { try suite.update { $0["count"] = 1 } }
        let took = ContinuousClock.now - start
        for member in 0..<3 { cluster.resume(member) }
        #expect(error?.code == .clusterUnreachable && error?.message.contains("may or may not have been applied") == true, "\(String(describing: error))")
        #expect(took < timeout * 10 + .seconds(3), "\(took)")
        let check = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: EtcdOptions(timeout: .seconds(5), offlineCache: .none))
        #expect([0, 1].contains(check.integer(forKey: "count")))
    }

    /// A write a member could not pass on in time is sent to the next one, and the first copy,
    /// held by the member, must never land after it (etcd-io/etcd#13433: a follower cut off from
    /// its peers keeps the proposal, and forwards it to the leader when its link returns). The
    /// writer prefers a follower; while the follower is cut off from its peers, k is written 1
    /// (the follower takes it and cannot pass it on; the next member writes it), then 2. Once
    /// the link is back and a put through the follower has landed (anything it held went to the
    /// leader before it), k is still 2 (before, it was 1 again). Then another client writes the
    /// fence key: the writer's next write takes the key's new revision and gets through, with
    /// no failure reported (with one try, its background flush reported one).
    @Test(.enabled(if: EtcdCluster.namespaces, "cutting a member off from its peers needs network namespaces (root and ip)"))
    func aWriteAFollowerHeldWhileCutOffNeverLandsAfterTheWritesThatFollowed() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let leader = try #require(try cluster.leader())
        let follower = (leader + 1) % 3
        let urls = [cluster.clientURLs[follower]] + cluster.clientURLs.indices.filter { $0 != follower }.map { cluster.clientURLs[$0] }
        let suite = try await PreferenceSuite.open(etcd: urls, prefix: prefix, options: EtcdOptions(timeout: .seconds(3), offlineCache: .none))
        let failures = Mutex<[PreferenceError]>([])
        let observation = suite.observeFailures { failure in failures.withLock { $0.append(failure) } }
        defer { observation.cancel() }
        suite.set(0, forKey: "k")
        try await suite.flush()

        try cluster.inflict(.cutOffFromPeers, on: follower)
        suite.set(1, forKey: "k")
        try await suite.flush()
        suite.set(2, forKey: "k")
        try await suite.flush()
        try cluster.mend(follower)
        await waitFor { (try? cluster.etcdctl(["--endpoints", urls[0], "put", prefix + "marker", "x"]).status) == 0 }

        let check = try await PreferenceSuite.open(etcd: Array(urls.dropFirst()), prefix: prefix, options: noCache)
        #expect(check.integer(forKey: "k") == 2)
        // The second copy of the write of 1 moved the writer's fence: its key is there, and no suite key.
        #expect(Set(check.storedValues.keys) == ["k", "marker"])
        let keys = try cluster.etcdctl(["--endpoints", cluster.endpoints, "get", "--prefix", prefix, "--keys-only", "-w", "json"]).output
        let fences = (try JSONSerialization.jsonObject(with: Data(keys.utf8)) as? [String: Any])?["kvs"] as? [[String: Any]] ?? []
        let fence = fences.compactMap { ($0["key"] as? String).flatMap { Data(base64Encoded: $0) } }.filter { String(decoding: $0, as: UTF8.self).contains("sharedprefs-writer-") }
        #expect(fence.count == 1, "\(keys)")

        // Another client moves the fence: the writer's next write fails its comparison once,
        // takes the fence's revision, and gets through, with no failure reported (the watch's
        // stream on the cut-off follower may have broken).
        try cluster.putRaw(try #require(fence.first), Data("moved".utf8))
        suite.set(3, forKey: "k")
        try await suite.flush()
        let last = try await PreferenceSuite.open(etcd: [urls[1]], prefix: prefix, options: noCache)  // a store of its own, read now
        #expect(last.integer(forKey: "k") == 3)
        #expect(failures.withLock { $0 }.filter { $0.code != .clusterUnreachable }.isEmpty, "\(failures.withLock { $0 })")
    }

    /// The same held copy, across its writer's exit: a process that writes through the follower
    /// only gets no answer while the follower is cut off from its peers, queues k = 1 in its
    /// offline cache, with its fence, and exits. The next suite to write with that cache moves
    /// the fence first (and sends k = 1); another client then writes k = 2. Once the follower's
    /// link is back and a put through it has landed, k is still 2 (before, the fence went with the
    /// process, and k was 1 again), and the cache holds no fence any more; an entry planted in it
    /// that names a suite key as a fence is not written.
    @Test(.enabled(if: EtcdCluster.namespaces, "cutting a member off from its peers needs network namespaces (root and ip)"))
    func aWriteHeldForAWriterThatExitedNeverLandsAfterTheWritesThatFollowed() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let follower = (try #require(try cluster.leader()) + 1) % 3
        let others = cluster.clientURLs.indices.filter { $0 != follower }.map { cluster.clientURLs[$0] }
        let cacheFile = cluster.cacheHome.appending(path: "held.plist")
        let writer = try Child(["session", cluster.clientURLs[follower], prefix], cacheHome: cluster.cacheHome, environment: ["PREFS_ETCD_CHILD_CACHE": cacheFile.path])
        #expect(await writer.nextLine() == "ready")
        writer.send("set k=0")
        writer.send("flush")
        #expect(await writer.nextLine(where: { $0.hasPrefix("flush") }) == "flushed")
        try cluster.inflict(.cutOffFromPeers, on: follower)
        writer.send("set k=1")
        writer.send("flush")
        #expect(await writer.nextLine(where: { $0.hasPrefix("flush") }) == "flush failed clusterUnreachable")
        writer.endInput()
        _ = await writer.finish()

        // A fence entry that names any other key is left alone.
        let planted = try PreferenceSuite(fileURL: cacheFile)
        planted.set(PlistValue.data(Data((prefix + "planted").utf8)), forKey: "fence:planted")
        #expect(planted.synchronize())
        let next = try await PreferenceSuite.open(etcd: others, prefix: prefix, options: EtcdOptions(offlineCache: .file(cacheFile)))
        try await next.flush()
        let other = try await PreferenceSuite.open(etcd: others, prefix: prefix, options: noCache)
        other.set(2, forKey: "k")
        try await other.flush()
        try cluster.mend(follower)
        await waitFor { (try? cluster.etcdctl(["--endpoints", cluster.clientURLs[follower], "put", prefix + "marker", "x"]).status) == 0 }

        let check = try await PreferenceSuite.open(etcd: [others[1]], prefix: prefix, options: noCache)
        #expect(check.integer(forKey: "k") == 2)
        #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "get", prefix + "planted"]) == (0, ""))
        #expect(try PreferenceSuite(fileURL: cacheFile).storedValues.keys.filter { $0.hasPrefix("fence:") } == ["fence:planted"])
    }

    /// A writer that writes a new key every 10 ms, each flushed once (or in one update), while the
    /// leader is killed, and never tries one again itself: every flushed key lands (a failed
    /// flush leaves it pending for the next), and exactly the updates that did not throw. It
    /// prints how long its slowest write took beside how long the election took (the time is the
    /// benchmark's to judge, not this test's).
    @Test(arguments: ["flush", "update"])
    func aWriterAcrossALeaderKillLosesNothing(_ how: String) async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let writer = try Child(["pulse", cluster.endpoints, prefix, "300", how], cacheHome: cluster.cacheHome)
        #expect(await writer.nextLine() == "ready")
        let leader = try #require(try cluster.leader())
        let killed = ContinuousClock.now
        cluster.kill(leader)
        let survivors = cluster.clientURLs.enumerated().filter { $0.offset != leader }.map(\.element)
        var elected: Duration? = nil
        while elected == nil {
            if let next = try? cluster.leader(among: survivors), next != leader { elected = ContinuousClock.now - killed }
        }
        var failed: Set<String> = []
        var line = await writer.nextLine() ?? ""
        while line.hasPrefix("failed ") {
            failed.insert("p" + line.dropFirst("failed ".count))
            line = await writer.nextLine() ?? ""
        }
        #expect(await writer.nextLine() == "done")
        #expect(await writer.exitStatus() == 0)
        print("failover (\(how)): election \(elected!), writer's \(line), \(failed.count) of 300 writes failed at first")
        let check = try await PreferenceSuite.open(etcd: survivors, prefix: prefix, options: noCache)
        let all = Set((1...300).map { "p\($0)" })
        let expected = how == "update" ? all.subtracting(failed) : all
        #expect(Set(check.storedValues.keys) == expected, "missing \(expected.subtracting(check.storedValues.keys).sorted()), extra \(Set(check.storedValues.keys).subtracting(expected).sorted())")
    }

    /// `changes(since:)` in another process, numbered by etcd's revisions: from 0 a gap with the
    /// whole content, then each write once and in order, across a kill of the member it reads
    /// from and across its own SIGKILL, resuming from the number it printed last; 30 writes, 30
    /// events, no second gap; the last number is the key's modification revision in etcd.
    @Test func changesSinceANumberCrossAMemberKillAndARestartMissingNothing() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: Array(cluster.clientURLs.dropFirst()), prefix: prefix, options: noCache)
        suite.set(0, forKey: "n")
        try await suite.flush()
        // The consumer reads from member 0 first.
        var consumer = try Child(["changes", cluster.endpoints, prefix, "0"], cacheHome: cluster.cacheHome)
        defer { kill(consumer.process.processIdentifier, SIGKILL) }
        let start = try #require(await consumer.nextLine())
        #expect(start.hasPrefix("gap 0 ") && start.hasSuffix(" n=0"), "\(start)")
        var cursor = try #require(UInt64(start.split(separator: " ")[2]))
        var seen: [Int] = []
        func consume(through last: Int) async throws {
            while seen.last != last {
                let line = try #require(await consumer.nextLine(), "the consumer ended after \(seen)")
                let fields = line.split(separator: " ")
                #expect(fields.count == 3 && fields[0] == "write", "\(line)")
                let sequence = try #require(UInt64(fields[1]))
                #expect(sequence > cursor, "\(line) after \(cursor)")
                cursor = sequence
                seen.append(try #require(Int(fields[2].dropFirst("n=".count))))
            }
        }
        func write(_ values: ClosedRange<Int>) async throws {
            for value in values {
                suite.set(value, forKey: "n")
                try await suite.flush()
            }
        }
        try await write(1...10)
        try await consume(through: 10)
        cluster.kill(0)
        try await write(11...20)
        try await consume(through: 20)
        kill(consumer.process.processIdentifier, SIGKILL)
        _ = await consumer.exitStatus()
        try await write(21...30)
        consumer = try Child(["changes", cluster.endpoints, prefix, String(cursor)], cacheHome: cluster.cacheHome)
        try await consume(through: 30)
        #expect(seen == Array(1...30))
        let stored = try cluster.etcdctl(["--endpoints", cluster.clientURLs[1], "get", prefix + "n", "-w", "json"]).output
        #expect(stored.contains("\"mod_revision\":\(cursor),"), "\(stored)")
    }

    /// A consumer away while etcd compacts past its number: on return, one gap from its number to
    /// the suite's, with the exact content (a key removed while away is not in it), then writes.
    @Test func changesSinceACompactedNumberGiveAGapWithTheExactContent() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        suite.set(1, forKey: "b")
        try await suite.flush()
        let away = try cluster.revision()
        let compacted = try await changeAndCompact(suite, on: cluster, through: cluster.endpoints)
        let consumer = try Child(["changes", cluster.endpoints, prefix, String(away)], cacheHome: cluster.cacheHome)
        defer { kill(consumer.process.processIdentifier, SIGKILL) }
        let gap = try #require(await consumer.nextLine())
        #expect(gap == "gap \(away) \(compacted) a=2,c=4", "\(gap)")
        suite.set(5, forKey: "a")
        try await suite.flush()
        let written = try cluster.revision()
        #expect(await consumer.nextLine() == "write \(written) a=5")
    }

    /// A member whose peers stopped loses its leader and ends the watch with an error whose
    /// gRPC code is a number: the failure says what etcd said, not that its JSON did not decode.
    @Test func aWatchEndedByEtcdSaysWhatEtcdSaid() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: [cluster.clientURLs[0]], prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        try await suite.flush()
        let failures = suite.failures()
        cluster.kill(1)
        cluster.kill(2)
        var said: PreferenceError? = nil
        for await failure in failures where failure.message.contains("no leader") {
            said = failure
            break
        }
        let failure = try #require(said)
        #expect(failure.code == .clusterUnreachable && failure.message.contains("gRPC 14 UNAVAILABLE"), "\(failure)")
        #expect(!failure.message.contains("DecodingError") && !failure.message.contains("typeMismatch"), "\(failure)")
    }

    /// A request for a revision etcd compacted away: its code and message, and what to do.
    @Test func aRequestForACompactedRevisionSaysSoAndWhatToDo() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        for n in 1...3 {
            suite.set(n, forKey: "a")
            try await suite.flush()
        }
        let revision = try cluster.revision()
        #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "compact", "\(revision)"]).status == 0)
        let client = try EtcdClient(endpoints: cluster.clientURLs, options: noCache)
        do {
            var request = Etcdserverpb_RangeRequest.key(Data((prefix + "a").utf8))
            request.revision = revision - 1
            _ = try client.range(request)
            Issue.record("a range at a compacted revision was answered")
        } catch .etcd(let refusal) {
            let error = refusal.preferenceError(doing: "read", address: "etcd prefix \(prefix)", endpoints: client.endpoints)
            #expect(refusal.code == 11 && error.code == .resynchronized, "\(error)")
            #expect(error.message.contains("compacted") && error.message.contains("read the suite again"), "\(error)")
        } catch {
            Issue.record("not etcd's refusal: \(error)")
        }
    }

    /// A write this process made of a key takes a value queued for the key before out of the
    /// offline cache, whatever that value was. Left there, the next process to open the suite
    /// sent it again, over the newer value: in the hundred-breaks test a writer's flush failed
    /// (its values queued), its next one wrote a newer value of the key, and a consumer that
    /// restarted later put the queued one back (a key went from round 481 to 465). A value
    /// another client wrote, heard, leaves the queue only when it is the queued one; a write
    /// recorded 50 ms after it was made (nothing was queued for its key then) takes nothing out:
    /// what was queued since is newer.
    @Test func aWriteOfAKeyTakesAnOlderQueuedValueOutOfTheOfflineCache() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "etcd-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try EtcdCache(fileURL: directory.appending(path: "cache.plist"))
        cache.queue([PlistKey("a"): .set(.integer(2)), PlistKey("b"): .set(.integer(2)), PlistKey("c"): .set(.integer(2)), PlistKey("d"): .set(.integer(6))])
        try cache.record([(PlistKey("a"), .integer(3), 10)], at: nil, written: true)  // this process wrote a = 3
        try cache.record([(PlistKey("b"), .integer(7), 11), (PlistKey("c"), .integer(2), 11)], at: 11)  // heard: b = 7, c = 2
        // A write recorded later (there was nothing queued for d when it was made): d = 6, queued
        // since, is newer, and stays.
        try cache.record([(PlistKey("d"), .integer(5), 12)], at: nil)
        #expect(cache.suite.storedValues.keys.filter { $0.hasPrefix("queued:") }.sorted() == ["queued:b", "queued:d"])
    }

    /// A queued write is sent by the next process or suite to open the suite only once its owner
    /// is gone: while the owner lives, the write is still pending in it, and sent by another too
    /// it could land after a newer write of the owner's, over it (a consumer restarted in the
    /// hundred-breaks test while the writer ran could do so). Gone: the owner's process exited
    /// (or another has its ID: the start time differs), or, in this process, its cache closed.
    /// An entry written before entries named their owner is sent.
    @Test func aQueuedWriteIsSentByAnotherOnlyOnceItsOwnerIsGone() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "etcd-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "cache.plist")
        var first: EtcdCache? = try EtcdCache(fileURL: file)
        try first?.record([], at: 5)
        first?.queue([PlistKey("a"): .set(.integer(1)), PlistKey("gone"): .remove])
        let second = try EtcdCache(fileURL: file)
        #expect(second.load()?.queued == [:])
        first = nil
        #expect(second.load()?.queued == [PlistKey("a"): .set(.integer(1)), PlistKey("gone"): .remove])

        let sleeper = Process()
        sleeper.executableURL = URL(filePath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        let pid = sleeper.processIdentifier
        defer { kill(pid, SIGKILL) }  // SIGKILL: the test runner's children may ignore SIGTERM
        let started = try #require(EtcdCache.startTime(of: pid))
        func entry(_ value: Int64, _ owner: String) -> PlistValue { .dictionary(["set": .integer(value), "by": .string(owner)]) }
        second.suite.set(entry(2, "\(pid) \(started) x"), forKey: "queued:live")
        second.suite.set(entry(3, "\(pid) 1\(started) x"), forKey: "queued:reused")  // the same ID, another start time
        second.suite.set(PlistValue.array([.integer(4)]), forKey: "queued:older")
        #expect(second.load()?.queued == [PlistKey("a"): .set(.integer(1)), PlistKey("gone"): .remove, PlistKey("reused"): .set(.integer(3)), PlistKey("older"): .set(.integer(4))])
        kill(pid, SIGKILL)
        sleeper.waitUntilExit()
        #expect(second.load()?.queued[PlistKey("live")] == .set(.integer(2)))
    }

    /// A change another client made reaches observers without waiting for the offline cache's
    /// file, which is recorded after: heard while another holder keeps the file's lock, with no
    /// failure reported; the record then waits for the lock (seen in `/proc/locks`), and once
    /// the lock is free the cache holds the value, and still no failure is reported. (Before, the
    /// delivery waited for the lock, up to its 5 s timeout, and the record's failure was reported
    /// before the change.)
    @Test func aChangeIsHeardWhileTheOfflineCacheIsLockedAndRecordedOnceItIsFree() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let directory = FileManager.default.temporaryDirectory.appending(path: "etcd-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "cache.plist")
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: EtcdOptions(offlineCache: .file(file)))
        let failures = Mutex<[PreferenceError]>([])
        let observation = suite.observeFailures { failure in failures.withLock { $0.append(failure) } }
        defer { observation.cancel() }
        let heard = suite.changes(.key("k"))
        let cache = try PreferenceSuite(fileURL: file)  // this process's store of the file: the cache's
        let recorded = cache.changes(.key("value:k"))

        let lock = open(directory.appending(path: ".cache.plist.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(flock(lock, LOCK_EX) == 0)
        try cluster.putRaw(Data((prefix + "k").utf8), Data(PropertyListFormat.binary.encode(.integer(1))))
        for await change in heard {
            #expect(change.newValue == .integer(1))
            break
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        // The record waits for the lock: a `flock` of this process's, waited for.
        let recordWaits = { ((try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? "").split(separator: "\n").contains { $0.contains("-> FLOCK") && $0.contains(" \(getpid()) ") } }
        await waitFor(recordWaits)
        guard recordWaits() else {
            close(lock)
            return
        }
        #expect(cache.value(forKey: "value:k") == nil)
        close(lock)
        for await change in recorded where change.newValue == .integer(1) { break }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
    }

    @Test func writesMadeOfflineSurviveARestartAndMergePerKeyWhenTheClusterReturns() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        func run(_ arguments: [String]) async throws -> [String] {
            let child = try Child([arguments[0], cluster.endpoints, prefix] + arguments.dropFirst(), cacheHome: cluster.cacheHome)
            let (lines, status) = await child.finish()
            #expect(status == 0, "prefs-etcd-child \(arguments) failed")
            return lines
        }
        _ = try await run(["set", "a=1", "b=1"])

        // Every member down: a process opens from the offline cache, reads, and writes.
        for member in 0..<3 { cluster.kill(member) }
        #expect(try await run(["get", "a", "b"]) == ["a 1", "b 1"])
        _ = try await run(["set", "a=2", "c=3"])
        // Queued across that process's exit: the next process of this machine sees them.
        #expect(try await run(["get", "a", "b", "c"]) == ["a 2", "b 1", "c 3"])

        // The cluster returns, and another client (no cache) writes a and b first.
        for member in 0..<3 { try cluster.start(member) }
        try cluster.waitUntilHealthy()
        let other = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        other.set(5, forKey: "a")
        other.set(9, forKey: "b")
        try await other.flush()

        // The next process of this machine sends the queued writes: per key, the later write wins
        // (a, c); the key they did not write keeps the other client's value (b).
        let changes = other.changes(.all)
        _ = try await run(["get"])
        var arrived: [String: PlistValue?] = [:]
        for await change in changes {
            arrived[change.key] = change.newValue
            if arrived.count == 2 { break }
        }
        #expect(arrived == ["a": .integer(2), "c": .integer(3)])
        #expect(try await run(["get", "a", "b", "c"]) == ["a 2", "b 9", "c 3"])
        // Nothing is left queued in the cache.
        let cacheDirectory = cluster.cacheHome.appending(path: "sharedprefs/etcd")
        let files = try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path).filter { $0.hasSuffix(".plist") }
        #expect(files.count == 1)
        let cache = try PreferenceSuite(fileURL: cacheDirectory.appending(path: try #require(files.first)))
        #expect(cache.storedValues.keys.filter { $0.hasPrefix("queued:") }.isEmpty)
        #expect(cache.value(forKey: "value:b") == .integer(9))
    }

    /// The default offline cache is one per etcd user: a process of the same OS user that
    /// reaches the cluster as another etcd user neither reads offline what only the first may
    /// read (before, `other`, who may read nothing, read `a` from `app`'s cache while the cluster
    /// was down), nor sends the first's queued writes under its own name (before, `root`'s
    /// process sent `app`'s write of `b`).
    @Test func theOfflineCachesOfTwoEtcdUsersAreTheirOwn() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        try cluster.addUsers(appPrefix: prefix)
        #expect(try cluster.etcdctl(["--endpoints", cluster.endpoints, "--user", "root:rootpw", "user", "add", "other:otherpw"]).status == 0)
        func run(_ user: String, _ arguments: [String]) async throws -> (lines: [String], status: Int32) {
            let child = try Child([arguments[0], cluster.endpoints, prefix] + arguments.dropFirst(), cacheHome: cluster.cacheHome, environment: ["PREFS_ETCD_CHILD_USER": user])
            return await child.finish()
        }
        #expect(try await run("app:apppw", ["set", "a=1"]).status == 0)

        for member in 0..<3 { cluster.kill(member) }
        #expect(try await run("app:apppw", ["get", "a"]) == (["a 1"], 0))
        let other = try await run("other:otherpw", ["get", "a"])
        #expect(other.lines.isEmpty && other.status == 1, "\(other)")
        #expect(try await run("app:apppw", ["set", "b=2"]).status == 0)  // queued in app's cache

        for member in 0..<3 { try cluster.start(member) }
        try cluster.waitUntilHealthy(user: "root:rootpw")
        #expect(try await run("root:rootpw", ["get", "b"]) == (["b -"], 0))
        #expect(try await run("app:apppw", ["get", "b"]) == (["b 2"], 0))  // it sends its own
        #expect(try await run("root:rootpw", ["get", "b"]) == (["b 2"], 0))
    }

    @Test func anObservableCloudClassOnAnEtcdSuiteHearsAnotherProcessAndWritesForIt() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        let settings = CloudSettings(suite: suite)
        #expect(settings.theme == "light")

        // Another process writes the property's custom key: the property changes, observably.
        let changed = AsyncStream<Void>.makeStream()
        withObservationTracking { _ = settings.theme } onChange: { changed.continuation.yield() }
        let writer = try Child(["set", cluster.endpoints, prefix, "theme_key=dark"], cacheHome: cluster.cacheHome)
        #expect(await writer.finish().status == 0)
        for await _ in changed.stream { break }
        #expect(settings.theme == "dark")

        // And this instance's writes reach the other processes.
        settings.username = "Linus"
        try await suite.flush()
        let reader = try Child(["get", cluster.endpoints, prefix, "username"], cacheHome: cluster.cacheHome)
        #expect(await reader.finish().lines == ["username Linus"])
    }

    @Test func prefsWatchReadsWritesAndTailsAnEtcdSuite() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        func prefsWatch(_ arguments: [String]) async throws -> (lines: [String], status: Int32) {
            try await Child(arguments, cacheHome: cluster.cacheHome, product: "prefs-watch").finish()
        }
        #expect(try await prefsWatch(["write", "--etcd", cluster.endpoints, prefix, "volume", "-int", "7"]).status == 0)
        #expect(try await prefsWatch(["read", "--etcd", cluster.endpoints, prefix, "volume"]) == (["7"], 0))

        // Tail: the initial value, then another process's change, as JSON Lines.
        let tail = try Child(["--etcd", cluster.endpoints, prefix, "--initial", "--json", "--count", "2"], cacheHome: cluster.cacheHome, product: "prefs-watch")
        let initial = try #require(await tail.nextLine())
        #expect(initial.contains("\"key\":\"volume\"") && initial.contains("\"new\":7"))
        #expect(try await prefsWatch(["write", "--etcd", cluster.endpoints, prefix, "volume", "-int", "8"]).status == 0)
        let change = try #require(await tail.nextLine())
        #expect(change.contains("\"old\":7") && change.contains("\"new\":8"))
        #expect(await tail.exitStatus() == 0)

        // A cluster that does not answer is an error naming it, not a hang or a queued write.
        let nobody = "http://127.0.0.1:1"
        let unreachable = try Child(["write", "--etcd", nobody, prefix, "volume", "-int", "9"], cacheHome: cluster.cacheHome, product: "prefs-watch")
        #expect(await unreachable.finish().status == 1)
        #expect(unreachable.errorOutput.contains(nobody))
        #expect(try await prefsWatch(["read", "--etcd", cluster.endpoints, prefix, "volume"]) == (["8"], 0))

        // Each request's time is --etcd-timeout's (5 s without): with every member stopped, a
        // read gives up after it. --lock-timeout, for a suite file's lock, is refused.
        for member in 0..<3 { try cluster.inflict(.stopped, on: member) }
        let start = ContinuousClock.now
        let stopped = try Child(["read", "--etcd", cluster.endpoints, "--etcd-timeout", "0.5", prefix, "volume"], cacheHome: cluster.cacheHome, product: "prefs-watch")
        let status = await stopped.finish().status
        let took = ContinuousClock.now - start
        for member in 0..<3 { cluster.resume(member) }
        #expect(status == 1 && took < .seconds(4), "\(took): \(stopped.errorOutput)")
        for (arguments, says) in [(["--etcd-timeout", "0"], "greater than 0"), (["--lock-timeout", "3"], "give --etcd-timeout")] {
            let refused = try Child(["read", "--etcd", cluster.endpoints] + arguments + [prefix, "volume"], cacheHome: cluster.cacheHome, product: "prefs-watch")
            #expect(await refused.finish().status == 64 && refused.errorOutput.contains(says), "\(refused.errorOutput)")
        }
    }

    /// An etcd suite's system layers are this host's files, for the suite named by its prefix
    /// with `/` as `.`: an administrator's default is read, a locked key's write refused (the
    /// library's and prefs-watch's), and `read --explain` says where a value comes from.
    @Test func anEtcdSuiteReadsThisHostsSystemLayers() async throws {
        let cluster = try EtcdCluster()
        let id = UUID().uuidString
        let prefix = "apps/\(id)/"
        let root = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-etcd-layers-\(id)")
        defer { try? FileManager.default.removeItem(at: root) }
        let admin = root.appending(path: "etc/sharedprefs")
        try FileManager.default.createDirectory(at: admin.appending(path: "locks"), withIntermediateDirectories: true)
        for path in ["", "etc", "etc/sharedprefs", "etc/sharedprefs/locks"] { chmod(root.appending(path: path).path, 0o755) }
        try Data(PlistValue.dictionary(["volume": 3, "theme": "admin"]).propertyListData(format: .binary)).write(to: admin.appending(path: "apps.\(id).plist"))
        try Data("volume\n".utf8).write(to: admin.appending(path: "locks/apps.\(id)"))
        for file in ["apps.\(id).plist", "locks/apps.\(id)"] { chmod(admin.appending(path: file).path, 0o644) }
        let environment = ["SHAREDPREFS_SYSTEM_ROOT": root.path]

        let read = await (try Child(["get", cluster.endpoints, prefix, "volume", "theme"], cacheHome: cluster.cacheHome, environment: environment)).finish()
        #expect(read.status == 0 && read.lines == ["volume 3", "theme admin"], "\(read.lines)")
        let write = try Child(["write", "--etcd", cluster.endpoints, prefix, "volume", "-int", "9"], cacheHome: cluster.cacheHome, product: "prefs-watch", environment: environment)
        #expect(await write.finish().status == 1)
        #expect(write.errorOutput.contains("is locked by \(admin.appending(path: "locks/apps.\(id)").path)"), "\(write.errorOutput)")
        let explained = await (try Child(["read", "--explain", "--etcd", cluster.endpoints, prefix, "theme"], cacheHome: cluster.cacheHome, product: "prefs-watch", environment: environment)).finish()
        // The suite's number is the cluster's revision when it was read.
        let revision = try cluster.revision()
        #expect(explained.status == 0 && explained.lines == ["admin", "layer: administrator, \(admin.appending(path: "apps.\(id).plist").path)", "system layers: those of suite apps.\(id)", "sequence: \(revision)"], "\(explained.lines)")
        let keys = try cluster.etcdctl(["--endpoints", cluster.endpoints, "get", "--prefix", prefix, "--keys-only"])
        #expect(keys.output.split(separator: "\n").filter { !$0.isEmpty }.isEmpty, "\(keys.output)")
    }

    @Test(arguments: EtcdCluster.Fault.possible)
    func aWatchResumesOnAnotherMemberWhenItsMemberDiesOrFallsSilentMissingNothing(_ fault: EtcdCluster.Fault) async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        // The observer watches through a follower first; the writer knows the other two members.
        let silent = (try #require(try cluster.leader()) + 1) % 3
        let others = cluster.clientURLs.indices.filter { $0 != silent }.map { cluster.clientURLs[$0] }
        let observer = try Child(["observe", ([cluster.clientURLs[silent]] + others).joined(separator: ","), prefix, "3"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")
        let suite = try await PreferenceSuite.open(etcd: others, prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        try await suite.flush()
        #expect(await observer.nextLine(where: { $0.hasPrefix("change") }) == "change a - 1")

        // Killed, the member resets the watch's connection; cut off or stopped, it keeps it open
        // and no change reaches it.
        try cluster.inflict(fault, on: silent)
        suite.set(2, forKey: "a")
        suite.set(1, forKey: "b")
        try await suite.flush()

        let (lines, status) = await observer.finish()
        #expect(status == 0)
        // The watch left it for another member and resumed there: both changes, each once (one
        // txn: no order between them).
        let changes = lines.filter { $0.hasPrefix("change") }
        #expect(changes.count == 2)
        #expect(Set(changes) == ["change a 1 2", "change b - 1"])
    }

    /// Twenty suites of another process share its one watch stream; each round kills a member (the
    /// stream's, in the order the stream moves), writes every suite, and restarts the member: each
    /// suite's observer hears its values in order, none twice, up to the last.
    @Test func twentySuitesOnOneStreamAcrossMemberKillsMissNothingAndRepeatNothing() async throws {
        let cluster = try EtcdCluster()
        let base = "apps/\(UUID().uuidString)/"
        let (suites, rounds) = (20, 6)
        let observer = try Child(["observe-many", cluster.endpoints, base, "\(suites)", "\(rounds)"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")
        let writers = try (0..<suites).map { try PreferenceSuite(etcd: cluster.clientURLs, prefix: base + "\($0)/", options: noCache) }
        for round in 1...rounds {
            let victim = (round - 1) % 3
            cluster.kill(victim)
            for writer in writers { writer.set(round, forKey: "k") }
            for writer in writers { try await writer.flush() }
            try cluster.start(victim)
            try cluster.waitUntilHealthy()
        }
        let (lines, status) = await observer.finish()
        #expect(status == 0)
        let heard = lines.filter { $0.hasPrefix("suite ") }
        #expect(heard.count == suites)
        for line in heard {
            let values = line.split(separator: " ").last.map { $0.split(separator: ",").compactMap { Int($0) } } ?? []
            #expect(values.last == rounds && values == values.sorted() && Set(values).count == values.count, "\(line)")
        }
    }

    @Test(.enabled(if: EtcdCluster.namespaces, "cutting a client's link needs network namespaces (root and ip); on loopback there is no link to cut"))
    func aClientCutOffWhileOthersWriteCatchesUpAndItsWritesMergeWhenItsLinkReturns() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let namespace = try cluster.clientNamespace()
        let cutOff = try Child(["session", cluster.endpoints, prefix], cacheHome: cluster.cacheHome, namespace: namespace)
        #expect(await cutOff.nextLine() == "ready")
        let suite = try await PreferenceSuite.open(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        let changes = suite.changes(.all)
        suite.set(1, forKey: "shared")
        try await suite.flush()
        #expect(await cutOff.nextLine(where: { $0.hasPrefix("change") }) == "change shared - 1")

        // While its link is down, the others write b and shared, and the cut-off client writes a
        // and shared: its write fails, and it reads on from memory, without the others' writes.
        try cluster.cutClient(namespace)
        suite.set(2, forKey: "b")
        suite.set(2, forKey: "shared")
        try await suite.flush()
        cutOff.send("set a=3 shared=3")
        cutOff.send("flush")
        #expect(await cutOff.nextLine(where: { $0.hasPrefix("flush") }) == "flush failed clusterUnreachable")
        cutOff.send("get a b shared")
        #expect(await cutOff.nextLine(where: { $0.hasPrefix("a ") }) == "a 3")
        #expect(await cutOff.nextLine() == "b -")
        #expect(await cutOff.nextLine() == "shared 3")

        // The link returns: the cut-off client hears what it missed, and its writes arrive; per
        // key, its later write of shared wins.
        try cluster.cutClient(namespace, false)
        #expect(await cutOff.nextLine(where: { $0.hasPrefix("change") }) == "change b - 2")
        var arrived: [String: PlistValue?] = [:]
        for await change in changes where change.newValue == .integer(3) {
            arrived[change.key] = change.newValue
            if arrived.count == 2 { break }
        }
        #expect(arrived == ["a": .integer(3), "shared": .integer(3)])
        cutOff.send("flush")
        #expect(await cutOff.nextLine(where: { $0.hasPrefix("flush") }) == "flushed")
        cutOff.endInput()
        let (rest, status) = await cutOff.finish()
        #expect(status == 0)
        // Its own value of shared went 1 → 3 when it wrote it, and stayed 3: no observer saw the
        // others' 2 come in between.
        #expect((cutOff.skipped + rest).filter { $0.hasPrefix("change shared") } == ["change shared 1 3"], "\(cutOff.skipped + rest)")
        let reader = try Child(["get", cluster.endpoints, prefix, "a", "b", "shared"], cacheHome: cluster.cacheHome)
        #expect(await reader.finish().lines == ["a 3", "b 2", "shared 3"])
    }

    @Test func aClusterThatChecksClientCertificatesIsReachedWithTheTLSOptionsOnly() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-etcd-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func file(_ name: String) -> URL { directory.appending(path: name) }
        func openssl(_ arguments: [String]) throws { try run("/usr/bin/openssl", arguments) }
        // A CA, and a server and a client certificate it signed.
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca", "-keyout", file("ca.key").path, "-out", file("ca.pem").path])
        try "subjectAltName=IP:127.0.0.1\n".write(to: file("san.ext"), atomically: true, encoding: .utf8)
        for name in ["server", "client"] {
            try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=\(name)", "-keyout", file("\(name).key").path, "-out", file("\(name).csr").path])
            try openssl(["x509", "-req", "-in", file("\(name).csr").path, "-CA", file("ca.pem").path, "-CAkey", file("ca.key").path, "-CAcreateserial", "-days", "1", "-extfile", file("san.ext").path, "-out", file("\(name).pem").path])
        }
        // One member serving TLS that requires a client certificate.
        let port = 31_000 + Int(getpid() % 1_000) * 2
        let url = "https://127.0.0.1:\(port)"
        let member = Process()
        member.executableURL = URL(filePath: "/usr/bin/etcd")
        member.arguments = [
            "--name", "tls", "--data-dir", file("data").path, "--listen-client-urls", url, "--advertise-client-urls", url,
            "--listen-peer-urls", "http://127.0.0.1:\(port + 1)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(port + 1)",
            "--initial-cluster", "tls=http://127.0.0.1:\(port + 1)",
            "--cert-file", file("server.pem").path, "--key-file", file("server.key").path,
            "--trusted-ca-file", file("ca.pem").path, "--client-cert-auth",
        ]
        member.standardOutput = FileHandle.nullDevice
        member.standardError = FileHandle.nullDevice
        try member.run()
        defer { member.terminate(); member.waitUntilExit() }

        let tls = EtcdOptions.TLS(certificateAuthority: file("ca.pem"), certificate: file("client.pem"), privateKey: file("client.key"))
        let options = EtcdOptions(timeout: .seconds(2), offlineCache: .none, tls: tls)
        // The member is up when a suite opens (a readiness poll of an outside server, 30 s at most).
        var suite: PreferenceSuite? = nil
        for _ in 0..<300 where suite == nil {
            suite = try? await PreferenceSuite.open(etcd: [url], prefix: "tls/", options: options)
            if suite == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let opened = try #require(suite)
        try await opened.update { $0["greeting"] = .string("hello") }
        #expect(opened.string(forKey: "greeting") == "hello")

        // Without the client certificate the member refuses the connection: an error, no suite.
        let refused = #expect(throws: PreferenceError.self) {
            try PreferenceSuite(etcd: [url], prefix: "tls-other/", options: EtcdOptions(timeout: .seconds(2), offlineCache: .none, tls: .init(certificateAuthority: file("ca.pem"))))
        }
        #expect(refused?.code == .clusterUnreachable)
        // A missing file is named.
        let missing = #expect(throws: PreferenceError.self) {
            try PreferenceSuite(etcd: [url], prefix: "tls/", options: EtcdOptions(offlineCache: .none, tls: .init(certificateAuthority: file("nope.pem"))))
        }
        #expect(missing?.message.contains("nope.pem") == true)
        // A FIFO (it blocked the call for ever) and a directory are refused, saying so.
        #expect(mkfifo(file("fifo.pem").path, 0o600) == 0)
        for path in [file("fifo.pem"), directory] {
            let refused = #expect(throws: PreferenceError.self) {
                try PreferenceSuite(etcd: [url], prefix: "tls/", options: EtcdOptions(offlineCache: .none, tls: .init(certificateAuthority: path)))
            }
            #expect(refused?.message.contains("\(path.path): it is no regular file") == true, "\(String(describing: refused))")
        }

        // prefs-watch reaches it with its --etcd-cacert, --etcd-cert and --etcd-key, and not without the key.
        let certificates = ["--etcd-cacert", file("ca.pem").path, "--etcd-cert", file("client.pem").path]
        let read = try Child(["read", "--etcd", url, "tls/", "greeting"] + certificates + ["--etcd-key", file("client.key").path], cacheHome: directory, product: "prefs-watch")
        #expect(await read.finish() == (["hello"], 0), "\(read.errorOutput)")
        let keyless = try Child(["read", "--etcd", url, "tls/", "greeting"] + certificates, cacheHome: directory, product: "prefs-watch")
        #expect(await keyless.finish().status != 0 && keyless.errorOutput.contains("needs its private key"), "\(keyless.errorOutput)")
    }
}
#endif
