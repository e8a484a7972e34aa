// SharedPrefsEtcd against a real 3-member etcd cluster (swift test --traits Etcd). The members
// listen on loopback ports in a temporary directory; `etcd` and `etcdctl` come from Debian's
// etcd-server and etcd-client (.ci/run installs them). Without the trait this file is empty.
#if Etcd
import Foundation
import Observation
import SharedPrefs
import SharedPrefsEtcd
import SharedPrefsObservation
import Testing

/// Three etcd members on loopback, each with its data directory in a temporary directory.
final class EtcdCluster {
    let directory: URL
    let clientURLs: [String]
    /// The children's `XDG_CACHE_HOME`: their offline caches live here.
    var cacheHome: URL { directory.appending(path: "cache") }
    private let arguments: [[String]]
    private var members: [Process?] = [nil, nil, nil]

    init() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-etcd-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Ports apart per test process, so that parallel runs do not meet.
        let base = 21_000 + Int(getpid() % 400) * 10 + Int.random(in: 0..<4) * 2_000
        let clientURLs = (0..<3).map { "http://127.0.0.1:\(base + 2 * $0)" }
        self.clientURLs = clientURLs
        let peers = (0..<3).map { "http://127.0.0.1:\(base + 2 * $0 + 1)" }
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

    /// Starts member `i` (again: a restarted member keeps its data directory and rejoins).
    func start(_ i: Int) throws {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/etcd")
        process.arguments = arguments[i]
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
        for member in members { member?.terminate() }
        for member in members { member?.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    var endpoints: String { clientURLs.joined(separator: ",") }

    /// Polls `etcdctl endpoint health` until every live member answers (30 s at most).
    func waitUntilHealthy() throws {
        let live = clientURLs.indices.filter { members[$0] != nil }.map { clientURLs[$0] }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if (try? etcdctl(["--endpoints", live.joined(separator: ","), "endpoint", "health"]))?.status == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw CancellationError()
    }

    /// The index of the member that leads now.
    func leader() throws -> Int? {
        let out = try etcdctl(["--endpoints", endpoints, "endpoint", "status", "-w", "json"]).output
        guard let statuses = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]] else { return nil }
        for status in statuses {
            guard let endpoint = status["Endpoint"] as? String, let body = status["Status"] as? [String: Any],
                let header = body["header"] as? [String: Any] else { continue }
            if "\(header["member_id"] ?? "")" == "\(body["leader"] ?? "-")" { return clientURLs.firstIndex(of: endpoint) }
        }
        return nil
    }

    func kill(_ member: Int) {
        guard let process = members[member] else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        members[member] = nil
    }

    /// The cluster's current revision.
    func revision() throws -> Int64 {
        let out = try etcdctl(["--endpoints", endpoints, "endpoint", "status", "-w", "json"]).output
        let statuses = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]] ?? []
        let revisions = statuses.compactMap { (($0["Status"] as? [String: Any])?["header"] as? [String: Any])?["revision"] as? NSNumber }
        return try #require(revisions.map(\.int64Value).max())
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

    /// A child (`prefs-etcd-child`, or another product) whose offline cache lives under `cacheHome`.
    init(_ arguments: [String], cacheHome: URL, product: String = "prefs-etcd-child") throws {
        iterator = lines.stream.makeAsyncIterator()
        process.executableURL = products.appending(path: product)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CACHE_HOME": cacheHome.path]) { $1 }
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
        try process.run()
    }

    func nextLine() async -> String? { await iterator.next() }

    /// What the child wrote to standard error, once it has exited.
    var errorOutput: String { String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
    private let errors = Pipe()

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

/// The test process's own suites keep no offline cache (the children's is under the cluster's directory).
let noCache = EtcdOptions(offlineCache: .none)

// Every wait below is for an event (a line from a child, a change, an exit); the time limit ends a
// test whose event never comes.
@Suite("etcd suites, across processes, on a 3-member cluster", .serialized, .timeLimit(.minutes(3)))
struct EtcdSuiteTests {
    @Test func aChangeReachesAnotherProcessKeyByKeyWithItsOldValue() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let observer = try Child(["observe", cluster.endpoints, prefix, "4"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")

        let suite = try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
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

    @Test func eightProcessesIncrementingWhileTheLeaderIsKilledLoseNothingAndDoubleNothing() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let (processes, increments) = (8, 40)
        let children = try (0..<processes).map { _ in try Child(["increment", cluster.endpoints, prefix, "\(increments)"], cacheHome: cluster.cacheHome) }
        // Kill the leader once the counter has moved: mid-run.
        let suite = try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
        for await _ in suite.updates([PreferenceKey<Int>("counter", default: 0)], initial: false) { break }
        let leader = try #require(try cluster.leader())
        cluster.kill(leader)

        for child in children {
            #expect(await child.nextLine() == "done")
            #expect(await child.exitStatus() == 0)
        }
        let survivors = cluster.clientURLs.enumerated().filter { $0.offset != leader }.map(\.element)
        let check = try PreferenceSuite(etcd: survivors, prefix: prefix, options: noCache)
        #expect(check.integer(forKey: "counter") == processes * increments)
    }

    @Test func aWatchResumesOnAnotherMemberWhenItsMemberIsKilledMissingNothing() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        // The observer reads and watches through member 0 first (the first endpoint).
        let observer = try Child(["observe", cluster.endpoints, prefix, "3"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")
        let suite = try PreferenceSuite(etcd: [cluster.clientURLs[1], cluster.clientURLs[2]], prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        try await suite.flush()
        #expect(await observer.nextLine() == "change a - 1")

        cluster.kill(0)
        suite.set(2, forKey: "a")
        suite.set(1, forKey: "b")
        try await suite.flush()

        let (lines, status) = await observer.finish()
        #expect(status == 0)
        // Both changes made while the watch moved to another member, each once (one txn: no order between them).
        let changes = lines.filter { $0.hasPrefix("change") }
        #expect(changes.count == 2)
        #expect(Set(changes) == ["change a 1 2", "change b - 1"])
    }

    @Test func aWatchBelowTheCompactionPointReadsTheSuiteAgainAndEndsInTheExactState() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        // The observer knows member 0 only, so it sees nothing while member 0 is down.
        let observer = try Child(["observe", cluster.clientURLs[0], prefix, "6"], cacheHome: cluster.cacheHome)
        #expect(await observer.nextLine() == "ready")
        let suite = try PreferenceSuite(etcd: [cluster.clientURLs[1], cluster.clientURLs[2]], prefix: prefix, options: noCache)
        suite.set(1, forKey: "a")
        suite.set("x", forKey: "b")
        try await suite.flush()
        var seen: [String] = []
        while seen.count < 2, let line = await observer.nextLine() { if line.hasPrefix("change") { seen.append(line) } }
        #expect(Set(seen) == ["change a - 1", "change b - x"])

        cluster.kill(0)
        suite.set(2, forKey: "a")
        suite.removeObject(forKey: "b")
        suite.set(3, forKey: "c")
        try await suite.flush()
        suite.set(4, forKey: "c")
        try await suite.flush()
        let revision = try cluster.revision()
        #expect(try cluster.etcdctl(["--endpoints", cluster.clientURLs[1], "compact", "\(revision)"]).status == 0)
        try cluster.start(0)

        let (lines, status) = await observer.finish()
        #expect(status == 0)
        #expect(lines.contains("failure resynchronized"))
        // The state the cluster holds, key by key with old values; c's step through 3 was compacted away.
        #expect(Set(lines.filter { $0.hasPrefix("change") }) == ["change a 1 2", "change b x -", "change c - 4"])
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
        let other = try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
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

    @Test func anObservableCloudClassOnAnEtcdSuiteHearsAnotherProcessAndWritesForIt() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let suite = try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix, options: noCache)
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
    }

    @Test func aClusterThatChecksClientCertificatesIsReachedWithTheTLSOptionsOnly() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-etcd-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func file(_ name: String) -> URL { directory.appending(path: name) }
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(filePath: "/usr/bin/openssl")
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " "))")
        }
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
            suite = try? PreferenceSuite(etcd: [url], prefix: "tls/", options: options)
            if suite == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let opened = try #require(suite)
        try opened.update { $0["greeting"] = .string("hello") }
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
    }
}
#endif
