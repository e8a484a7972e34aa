#if Etcd
import CSharedPrefsShims
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import GRPCProtobuf
import NIOCore
import NIOPosix
import SharedPrefs
import SharedPrefsLocking
import SwiftProtobuf

/// One etcd cluster as this process reaches it: a gRPC client per member, made when a request
/// first goes there, and one watch stream, on the member in use, that carries the watch of every
/// suite of the cluster in this process (etcd multiplexes watches on a stream by watch id, as
/// clientv3 does).
///
/// The stream is kept alive by etcd's progress requests, not by reads: when it has carried nothing
/// for the request timeout, it asks for the members' progress (`WatchProgressRequest`), and a
/// member that does not answer within another timeout is left (a hung process, a stalled disk, a
/// link that died without a reset). A member that loses its leader ends the stream itself (the
/// stream asks for a leader, as clientv3's `WithRequireLeader`). Either way the stream moves to
/// the next member, and every watch that had heard from the old one ends with an error: its
/// suite resumes from its last applied revision + 1, so nothing is missed nor applied twice.
final class EtcdConnection: Sendable {
    /// The largest message sent or taken: etcd's own limits (`--max-request-bytes`, and none on
    /// what it sends) are the ones that apply.
    static let largestMessage = Int(Int32.max)

    let endpoints: [String]
    /// The member requests and the watch stream go to first: the last that answered.
    let preferred = LockedIndex()
    private let targets: [(host: String, port: Int, security: HTTP2ClientTransport.Posix.TransportSecurity)]
    private let clients = Lock([Int: GRPCClient<HTTP2ClientTransport.Posix>]())
    private let hub = Lock(Hub())

    /// The user of etcd's authentication, if any, and its token: asked for (requests that start
    /// meanwhile wait for that one asking), or given (empty: the cluster has authentication off);
    /// `nil` until asked for, or once etcd no longer took it.
    let credentials: EtcdOptions.Credentials?
    private let token = Lock<Token?>(nil)
    private enum Token { case asking(Task<String, any Error>), given(String) }

    private struct Key: Hashable {
        var endpoints: [String]
        var tls: EtcdOptions.TLS?
        var credentials: EtcdOptions.Credentials?
    }
    /// The instances in use, held weakly: an instance closes its connections (`deinit`) 2 s after
    /// its last suite is gone (`linger()`), once no request holds it either.
    private static let all = Lock([Key: Weak]())
    private struct Weak { weak var connection: EtcdConnection? }

    /// The process's one instance for these endpoints, TLS settings and credentials (a watch
    /// stream is authorized as one user).
    static func shared(endpoints: [String], tls: EtcdOptions.TLS?, credentials: EtcdOptions.Credentials? = nil) throws(PreferenceError) -> EtcdConnection {
        let key = Key(endpoints: endpoints, tls: tls, credentials: credentials)
        if let cluster = all.withLock({ $0[key]?.connection }) { return cluster }
        let made = try EtcdConnection(endpoints: endpoints, tls: tls, credentials: credentials)
        return all.withLock { all in
            if let cluster = all[key]?.connection { return cluster }
            all = all.filter { $0.value.connection != nil }
            all[key] = Weak(connection: made)
            return made
        }
    }

    deinit {
        for client in clients.withLock({ $0.values }) { client.beginGracefulShutdown() }
    }

    /// Keeps the connection 2 s longer: a suite of the cluster opened again meanwhile reuses it
    /// (an open that connected anew took about 2 ms more: 5.1 against 3.0–3.6 ms, debug build).
    func linger() {
        _ = EtcdExecutor.shared.group.next().scheduleTask(in: .seconds(2)) { withExtendedLifetime(self) {} }
    }

    private init(endpoints: [String], tls: EtcdOptions.TLS?, credentials: EtcdOptions.Credentials?) throws(PreferenceError) {
        self.endpoints = endpoints
        self.credentials = credentials
        let secure = try tls.map { (tls) throws(PreferenceError) in try tls.transportSecurity() }
        targets = try endpoints.map { (endpoint) throws(PreferenceError) in
            guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                let host = url.host(percentEncoded: false), !host.isEmpty, url.path.isEmpty || url.path == "/",
                1...65535 ~= url.port ?? 2379, url.user == nil, url.query == nil, url.fragment == nil
            else {
                throw PreferenceError(code: .invalidName, message: "\"\(endpoint)\" is no etcd endpoint: give each member's client URL, such as http://10.0.0.1:2379 or https://etcd.example:2379 (a scheme, a host and a port from 1 to 65535, nothing more: a user and password go in EtcdOptions.credentials).")
            }
            let security: HTTP2ClientTransport.Posix.TransportSecurity = scheme == "https" ? (secure ?? .tls) : .plaintext
            return (host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, url.port ?? 2379, security)
        }
    }

    /// An address as itself (TLS then sends no server name, which may not be an address), a
    /// name through DNS.
    private static func resolvable(_ host: String, _ port: Int) -> any ResolvableTarget {
        var address = in6_addr()
        if inet_pton(AF_INET, host, &address) == 1 { return .ipv4(address: host, port: port) as ResolvableTargets.IPv4 }
        if inet_pton(AF_INET6, host, &address) == 1 { return .ipv6(address: host, port: port) as ResolvableTargets.IPv6 }
        return .dns(host: host, port: port) as ResolvableTargets.DNS
    }

    /// A call's options: `timeout`, no waiting for a connection that is failing (the next member
    /// is tried), and etcd's own limits on a message's size.
    static func options(timeout: Duration?) -> CallOptions {
        var options = CallOptions.defaults
        options.timeout = timeout
        options.waitForReady = false
        options.maxResponseMessageBytes = largestMessage
        options.maxRequestMessageBytes = largestMessage
        return options
    }

    /// The client of the member at `index`, made (and its connections run on the etcd thread,
    /// ``EtcdExecutor``) at its first use. Its connection is made when a request needs it.
    func member(_ index: Int) throws -> GRPCClient<HTTP2ClientTransport.Posix> {
        try clients.withLock { clients in
            if let client = clients[index] { return client }
            let target = targets[index]
            let transport = try HTTP2ClientTransport.Posix(
                target: Self.resolvable(target.host, target.port), transportSecurity: target.security,
                config: .defaults { config in
                    // A member that comes back is reached again within about 2 s.
                    config.backoff = .init(initial: .milliseconds(100), max: .seconds(2), multiplier: 1.6, jitter: 0.2)
                    // etcd refuses pings more often than its --grpc-keepalive-min-time (5 s by default).
                    config.connection.keepalive = .init(time: .seconds(30), timeout: .seconds(10), allowWithoutCalls: false)
                }, eventLoopGroup: EtcdExecutor.shared.group)
            let client = GRPCClient(transport: transport)
            Task(executorPreference: EtcdExecutor.shared) { try? await client.runConnections() }
            clients[index] = client
            return client
        }
    }

    /// A request's metadata, for the member at `index`: a leader asked for, and with
    /// ``credentials`` the token, asked of that member first when there is none. A cluster
    /// without authentication enabled is sent none. A request waits for a token another request
    /// is asking for no longer than its own `options.timeout` (the asking goes on for the other).
    func metadata(on index: Int, _ options: CallOptions) async throws -> Metadata {
        var metadata = EtcdClient.requireLeader
        guard let credentials else { return metadata }
        let (state, asked) = token.withLock { token -> (Token, Bool) in
            if let token { return (token, false) }
            let request = Etcdserverpb_AuthenticateRequest.with { ($0.name, $0.password) = (credentials.user, credentials.password) }
            token = .asking(Task(executorPreference: EtcdExecutor.shared) {
                do {
                    return try await Etcdserverpb_Auth.Client(wrapping: self.member(index)).authenticate(request: ClientRequest(message: request), options: options).token
                } catch let error as RPCError where error.code == .failedPrecondition && error.message.contains("authentication is not enabled") {
                    return ""
                }
            })
            return (token!, true)
        }
        let value: String
        switch state {
        case .given(let given):
            value = given
        case .asking(let asking):
            guard let result = asked ? await asking.result : await Self.result(of: asking, within: options.timeout) else {
                throw RPCError(code: .deadlineExceeded, message: "the token another request is asking etcd for did not come within this request's time")
            }
            // Failed: asked again by the next request.
            token.withLock { if case .asking(let current)? = $0, current == asking { $0 = try? .given(result.get()) } }
            value = try result.get()
        }
        if !value.isEmpty { metadata.addString(value, forKey: "token") }
        return metadata
    }

    /// `task`'s result, or `nil` once `timeout` has passed without it (the task goes on).
    private static func result<T: Sendable>(of task: Task<T, any Error>, within timeout: Duration?) async -> Result<T, any Error>? {
        guard let timeout else { return await task.result }
        let waiting = Lock<CheckedContinuation<Result<T, any Error>?, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            waiting.withLock { $0 = continuation }
            let resume: @Sendable (Result<T, any Error>?) -> Void = { result in
                waiting.withLock { waiting in
                    defer { waiting = nil }
                    return waiting
                }?.resume(returning: result)
            }
            let timer = Task(executorPreference: EtcdExecutor.shared) {
                try? await Task.sleep(for: timeout)
                resume(nil)
            }
            Task(executorPreference: EtcdExecutor.shared) {
                resume(await task.result)
                timer.cancel()
            }
        }
    }

    /// Forgets a token etcd did not take; whether there was one.
    func forgetToken() -> Bool {
        credentials != nil && token.withLock { token in
            defer { token = nil }
            return token != nil
        }
    }

    // MARK: The watch stream

    /// One watch on the stream.
    private struct Watcher {
        /// Its creation, from the revision after the last it was handed events of.
        var create: Etcdserverpb_WatchCreateRequest
        let messages: AsyncThrowingStream<Etcdserverpb_WatchResponse, any Error>.Continuation
        /// Its id on the current stream, once etcd has answered its creation.
        var id: Int64? = nil
        /// Whether it has been handed a message: after that, a broken stream ends it.
        var begun = false
        /// Streams that broke before it began.
        var failedStreams = 0
    }

    private struct Hub {
        var watchers: [UInt64: Watcher] = [:]
        var nextSerial: UInt64 = 0
        /// The watchers whose creation the current stream has not answered yet, in the order sent
        /// (etcd answers them in order); a serial no longer among `watchers` was let go meanwhile.
        var awaiting: [UInt64] = []
        var serials: [Int64: UInt64] = [:]
        /// The current stream's requests; `nil` while none runs, or once it is being closed.
        var requests: AsyncStream<Etcdserverpb_WatchRequest>.Continuation? = nil
        /// The current stream is being closed: every watch was let go.
        var closing = false
        var running = false
        /// When the current stream last carried something.
        var heard = ContinuousClock.now
        /// The current stream is ended to be opened with a new token (``route(_:renewingAfter:)``),
        /// and when that was last done.
        var renewing = false
        var renewed: ContinuousClock.Instant? = nil
    }

    /// Why a stream ended to be opened with a new token.
    private static let renewal = "etcd no longer takes the token the stream was opened with"

    private static func request(_ create: Etcdserverpb_WatchCreateRequest) -> Etcdserverpb_WatchRequest { .with { $0.createRequest = create } }

    private static func cancel(_ id: Int64) -> Etcdserverpb_WatchRequest { .with { $0.cancelRequest.watchID = id } }

    /// Watches from `create`, handing each message of the watch to `body` (on the caller's task)
    /// until `body` returns `false`, then cancels the watch. Throws when the stream breaks after
    /// the watch began, or when it broke on every member before.
    func watch(_ create: Etcdserverpb_WatchCreateRequest, timeout: Duration, _ body: @escaping @Sendable (Etcdserverpb_WatchResponse) throws -> Bool) async throws {
        let (messages, continuation) = AsyncThrowingStream.makeStream(of: Etcdserverpb_WatchResponse.self)
        let (serial, start) = hub.withLock { hub in
            let serial = hub.nextSerial
            hub.nextSerial += 1
            hub.watchers[serial] = Watcher(create: create, messages: continuation)
            if let requests = hub.requests {
                hub.awaiting.append(serial)
                requests.yield(Self.request(create))
            }
            defer { hub.running = true }
            return (serial, !hub.running)
        }
        if start { Task(executorPreference: EtcdExecutor.shared) { await self.run(timeout: timeout) } }
        defer { release(serial) }
        for try await message in messages where try !body(message) { return }
        try Task.checkCancellation()
    }

    /// Lets the watcher `serial` go, and cancels its watch on the stream.
    private func release(_ serial: UInt64) {
        hub.withLock { hub in
            guard let watcher = hub.watchers.removeValue(forKey: serial) else { return }
            watcher.messages.finish()
            if let id = watcher.id {
                hub.serials[id] = nil
                hub.requests?.yield(Self.cancel(id))
            }
            // The last watch gone: the stream closes its side, and ends (a watch made meanwhile
            // waits for the next stream).
            if hub.watchers.isEmpty, let requests = hub.requests {
                requests.finish()
                (hub.requests, hub.closing) = (nil, true)
            }
        }
    }

    /// Hands a message of the stream to its watcher; whether the stream goes on. etcd checks the
    /// stream's token when a watch is made on it: a creation refused because etcd dropped that
    /// token (its time to live ran out while only the stream used it, or authentication was
    /// turned off and on) ends the stream, at most once per `pause`, so that it is opened anew
    /// with a new token, every watch on it going on from the revision after its last events.
    private func route(_ message: Etcdserverpb_WatchResponse, renewingAfter pause: Duration) -> Bool {
        hub.withLock { hub in
            hub.heard = .now
            if message.created {
                guard !hub.awaiting.isEmpty else { return true }
                let serial = hub.awaiting.removeFirst()
                guard hub.watchers[serial] != nil else {
                    // Let go before etcd answered: cancel it now.
                    if !message.canceled { hub.requests?.yield(Self.cancel(message.watchID)) }
                    return true
                }
                if message.canceled, credentials != nil, EtcdClient.staleTokenReasons.contains(where: message.cancelReason.hasSuffix),
                    hub.renewed.map({ $0.duration(to: .now) >= pause }) ?? true
                {
                    (hub.renewing, hub.renewed) = (true, .now)
                    return false
                }
                if !message.canceled {
                    hub.watchers[serial]?.id = message.watchID
                    hub.serials[message.watchID] = serial
                }
                hub.watchers[serial]?.begun = true
                hub.watchers[serial]?.messages.yield(message)
            } else if let serial = hub.serials[message.watchID] {
                if message.canceled { hub.serials[message.watchID] = nil }
                if let last = message.events.last { hub.watchers[serial]?.create.startRevision = last.kv.modRevision + 1 }
                hub.watchers[serial]?.begun = true
                hub.watchers[serial]?.messages.yield(message)
            }
            // Else a progress answer (watch id -1), or a canceled watch's last words.
            return true
        }
    }

    /// Runs the stream while any watch wants it: on the preferred member, then on the next when
    /// it breaks, pausing 100 ms to 2 s after each round of members on which it carried nothing.
    private func run(timeout: Duration) async {
        var failed = 0
        while true {
            let index = preferred.value
            let (requests, continuation) = AsyncStream.makeStream(of: Etcdserverpb_WatchRequest.self)
            let wanted = hub.withLock { hub in
                guard !hub.watchers.isEmpty else {
                    hub.running = false
                    return false
                }
                (hub.requests, hub.closing) = (continuation, false)
                hub.awaiting = hub.watchers.keys.sorted()
                hub.serials = [:]
                hub.heard = .now
                for serial in hub.awaiting {
                    hub.watchers[serial]?.id = nil
                    continuation.yield(Self.request(hub.watchers[serial]!.create))
                }
                return true
            }
            guard wanted else { return }
            let opened = ContinuousClock.now
            let why = await stream(on: index, requests, continuation, timeout: timeout)
            let endpoint = endpoints[index]
            let (gone, carried, renewing) = hub.withLock { hub in
                let carried = hub.heard > opened
                let renewing = hub.renewing
                (hub.requests, hub.renewing) = (nil, false)
                continuation.finish()
                // Renewed: every watch is made again on the next stream, from where it was.
                for (serial, watcher) in hub.watchers where why != nil && !renewing {
                    let failedStreams = watcher.failedStreams + 1
                    if watcher.begun || failedStreams >= endpoints.count {
                        watcher.messages.finish(throwing: EtcdClient.Failure.unreachable("\(endpoint) ended the watch stream: \(why ?? "")"))
                        hub.watchers[serial] = nil
                    } else {
                        hub.watchers[serial]?.failedStreams = failedStreams
                    }
                }
                return (hub.watchers.isEmpty, carried, renewing)
            }
            if renewing { _ = forgetToken() }
            guard why != nil, !renewing else { continue }  // closed because every watch was let go (any new one gets a new stream), or renewed
            preferred.move(past: index, of: endpoints.count)
            failed = carried ? 1 : failed + 1
            if !gone, failed % endpoints.count == 0 {
                try? await Task.sleep(for: .milliseconds(100) * min(20, 1 << min(failed / endpoints.count, 5)))
            }
        }
    }

    /// One stream on the member at `index`: until it breaks (why), or it is closed because no
    /// watch wants it any more (`nil`: the last one let go finished `requests`, and set `closing`).
    private func stream(
        on index: Int, _ requests: AsyncStream<Etcdserverpb_WatchRequest>, _ continuation: AsyncStream<Etcdserverpb_WatchRequest>.Continuation, timeout: Duration
    ) async -> String? {
        let options = Self.options(timeout: nil)
        do {
            let client = try Etcdserverpb_Watch.Client(wrapping: member(index))
            let metadata = try await metadata(on: index, Self.options(timeout: timeout))
            return try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask {
                    let request = StreamingClientRequest(of: Etcdserverpb_WatchRequest.self, metadata: metadata) { writer in
                        for await request in requests { try await writer.write(request) }
                        // Every watch let go (etcd keeps a stream whose client only stops sending): end it.
                        throw CancellationError()
                    }
                    return try await client.watch(request: request, options: options) { response in
                        for try await message in response.messages where !self.route(message, renewingAfter: timeout) {
                            return Self.renewal
                        }
                        return self.hub.withLock { $0.closing } ? nil : "the member closed it"
                    }
                }
                group.addTask { try await self.checkWhileSilent(continuation, timeout: timeout) }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
        } catch {
            let refusal = EtcdError(error)
            if refusal.wantsToken { _ = forgetToken() }
            return hub.withLock { $0.closing } ? nil : "\(refusal)"
        }
    }

    /// Returns (with why) when the stream carried nothing for `timeout` after a progress request
    /// that followed `timeout` of silence; until then, never.
    private func checkWhileSilent(_ requests: AsyncStream<Etcdserverpb_WatchRequest>.Continuation, timeout: Duration) async throws -> String? {
        var asked: ContinuousClock.Instant? = nil
        while true {
            let heard = hub.withLock { $0.heard }
            if let at = asked, heard >= at { asked = nil }
            let now = ContinuousClock.now
            if let at = asked {
                if at.duration(to: now) >= timeout { return "nothing came for \(timeout), nor an answer to a progress request in \(timeout) more" }
                try await Task.sleep(until: at + timeout, clock: .continuous)
            } else if heard.duration(to: now) >= timeout {
                requests.yield(.with { $0.progressRequest = Etcdserverpb_WatchProgressRequest() })
                asked = now
            } else {
                try await Task.sleep(until: heard + timeout, clock: .continuous)
            }
        }
    }
}

/// The one thread on which SharedPrefsEtcd's async work runs: the event loop of its connections
/// (as a task executor, SE-0417: every task it starts prefers it, and so do their child tasks).
/// A message etcd sends is read, decoded and handed to its watch on that one thread, without a
/// hop to another. The library's blocking calls wait for that work on their own threads; were it
/// on Swift's cooperative pool, callers that block the pool's few threads (synchronous calls from
/// async code) could stall the very work they wait for.
final class EtcdExecutor: TaskExecutor {
    static let shared = EtcdExecutor()
    /// The connections' event loop group, of that one loop.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let loop: any EventLoop

    private init() {
        loop = group.next()
        loop.execute { sharedprefs_name_thread("SharedPrefsEtcd") }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Runs `body` on this executor and waits for its result on the calling thread, which must
    /// be another.
    func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        assert(!loop.inEventLoop, "EtcdExecutor.wait called on the etcd thread: it would wait for itself")
        let result = Lock<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: self) {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
#endif
