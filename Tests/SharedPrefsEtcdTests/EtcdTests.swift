// SharedPrefsEtcd against a real 3-member etcd cluster (swift test --traits Etcd). The members
// listen on loopback ports in a temporary directory; `etcd` and `etcdctl` come from Debian's
// etcd-server and etcd-client (.ci/run installs them). Without the trait this file is empty.
#if Etcd
import Foundation
import SharedPrefs
import SharedPrefsEtcd
import Testing

/// Three etcd members on loopback, each with its data directory in a temporary directory.
final class EtcdCluster {
    let directory: URL
    let clientURLs: [String]
    private var members: [Process?]

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
        members = try (0..<3).map { i in
            let process = Process()
            process.executableURL = URL(filePath: "/usr/bin/etcd")
            process.arguments = [
                "--name", "m\(i)", "--data-dir", directory.appending(path: "m\(i)").path,
                "--listen-client-urls", clientURLs[i], "--advertise-client-urls", clientURLs[i],
                "--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
                "--initial-cluster", initial, "--initial-cluster-state", "new",
                "--initial-cluster-token", directory.lastPathComponent,
            ]
            let log = directory.appending(path: "m\(i).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
            return process
        }
        try waitUntilHealthy()
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

/// `prefs-etcd-child`, built next to the test bundle.
let etcdChild: URL = {
    let bundle = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    return bundle.deletingLastPathComponent().appending(path: "prefs-etcd-child")
}()

/// A running child whose output lines can be awaited.
final class Child: @unchecked Sendable {
    let process = Process()
    private let lines = AsyncStream<String>.makeStream()
    private var iterator: AsyncStream<String>.Iterator

    init(_ arguments: [String]) throws {
        iterator = lines.stream.makeAsyncIterator()
        process.executableURL = etcdChild
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
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

    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.process.waitUntilExit()
                continuation.resume(returning: self.process.terminationStatus)
            }
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

// Every wait below is for an event (a line from a child, a change, an exit); the time limit ends a
// test whose event never comes.
@Suite("etcd suites, across processes, on a 3-member cluster", .serialized, .timeLimit(.minutes(3)))
struct EtcdSuiteTests {
    @Test func aChangeReachesAnotherProcessKeyByKeyWithItsOldValue() async throws {
        let cluster = try EtcdCluster()
        let prefix = "apps/\(UUID().uuidString)/"
        let observer = try Child(["observe", cluster.endpoints, prefix, "4"])
        #expect(await observer.nextLine() == "ready")

        let suite = try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix)
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
        let children = try (0..<processes).map { _ in try Child(["increment", cluster.endpoints, prefix, "\(increments)"]) }
        // Kill the leader once the counter has moved: mid-run.
        let suite = try PreferenceSuite(etcd: cluster.clientURLs, prefix: prefix)
        for await _ in suite.updates([PreferenceKey<Int>("counter", default: 0)], initial: false) { break }
        let leader = try #require(try cluster.leader())
        cluster.kill(leader)

        for child in children {
            #expect(await child.nextLine() == "done")
            #expect(await child.exitStatus() == 0)
        }
        let survivors = cluster.clientURLs.enumerated().filter { $0.offset != leader }.map(\.element)
        let check = try PreferenceSuite(etcd: survivors, prefix: prefix + "")
        #expect(check.integer(forKey: "counter") == processes * increments)
    }
}
#endif
