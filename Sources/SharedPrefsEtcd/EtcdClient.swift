#if Etcd
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import GRPCProtobuf
import NIOSSL
import SharedPrefs
import SharedPrefsLocking
import SwiftProtobuf

/// etcd's own v3 API over gRPC (KV `Range` and `Txn`, `Watch`), as etcd's Go and Java clients speak
/// it. Every client of the same endpoints and TLS in a process shares one ``EtcdConnection``: one
/// HTTP/2 connection to the member in use (another is opened only when a request moves on to the
/// next member) and one watch stream carrying every suite's watch.
///
/// Each call waits on its caller's thread for the async work, which runs on the library's own etcd
/// thread (``EtcdExecutor``), never on Swift's cooperative pool: a caller that blocks the pool
/// cannot stall it.
struct EtcdClient: Sendable {
    let endpoints: [String]
    let timeout: Duration
    let connection: EtcdConnection

    init(endpoints: [String], options: EtcdOptions) throws(PreferenceError) {
        self.endpoints = endpoints.map { $0.hasSuffix("/") && !$0.hasSuffix("://") ? String($0.dropLast()) : $0 }
        guard options.timeout >= .milliseconds(1), options.timeout <= .seconds(86_400) else {
            throw PreferenceError(code: .unsupportedOperation, message: "An etcd suite's timeout is each request's time, from 1 ms to a day (got \(options.timeout)): pass one in that range (EtcdOptions.timeout; the default is 5 seconds).")
        }
        timeout = options.timeout
        connection = try EtcdConnection.shared(endpoints: self.endpoints, tls: options.tls, credentials: options.credentials)
    }

    /// How a request failed.
    enum Failure: Error, CustomStringConvertible {
        /// No endpoint answered, or the answer was lost: a write may or may not have been applied.
        case unreachable(String)
        /// etcd refused the request, with its gRPC code and message.
        case etcd(EtcdError)
        /// The call's deadline had passed: the request was not sent.
        case deadlinePassed

        var description: String {
            switch self {
            case .unreachable(let why): why
            case .etcd(let error): "\(error)"
            case .deadlinePassed: "the call's deadline passed before the request was sent"
            }
        }
    }

    func range(_ request: Etcdserverpb_RangeRequest, by deadline: ContinuousClock.Instant? = nil) throws(Failure) -> Etcdserverpb_RangeResponse {
        try call(by: deadline) { kv, metadata, options in try await kv.range(request: ClientRequest(message: request, metadata: metadata), options: options) }
    }

    /// ``range(_:)`` for async code on the etcd thread, which must not block it.
    func asyncRange(_ request: Etcdserverpb_RangeRequest) async -> Result<Etcdserverpb_RangeResponse, Failure> {
        await perform { kv, metadata, options in try await kv.range(request: ClientRequest(message: request, metadata: metadata), options: options) }
    }

    /// A `txn`; the options as for ``call(failover:once:pause:by:_:)``.
    func txn(
        _ request: Etcdserverpb_TxnRequest, failover: Bool = true, once: Duration? = nil, pause: Duration = .zero, by deadline: ContinuousClock.Instant? = nil
    ) throws(Failure) -> Etcdserverpb_TxnResponse {
        try call(failover: failover, once: once, pause: pause, by: deadline) { kv, metadata, options in try await kv.txn(request: ClientRequest(message: request, metadata: metadata), options: options) }
    }

    /// Asks for a leader, as clientv3's `WithRequireLeader`: a member that has none refuses at once
    /// (UNAVAILABLE), and the next is tried; a watch stream it serves ends when it loses its leader.
    static let requireLeader: Metadata = ["hasleader": "true"]

    /// How the reason ends with which etcd refuses a watch whose stream's token it no longer takes
    /// (`rpctypes.ErrGRPCInvalidAuthToken` and `ErrGRPCAuthOldRevision`, as clientv3's
    /// `shouldRetryWatch`), or whose stream has none since authentication was turned on.
    static let staleTokenReasons = ["etcdserver: invalid auth token", "etcdserver: revision of auth store is old", "etcdserver: user name is empty"]

    /// Runs `rpc` on one member after another until one answers, within `timeout`, or by
    /// `deadline` when that comes first (the deadline of the call that makes the request), after
    /// `pause` (on the etcd thread: the caller's waits in one place).
    ///
    /// A request a member forwarded to a leader that just died is lost without an answer: so each
    /// round gives a member half a second at first, then twice as long each round (a slow but
    /// healthy cluster still answers), with 50 ms between rounds, until `timeout` has passed. A
    /// failover thus takes about the election, not the whole timeout. When every member refused
    /// the connection (nobody listens, no election runs), it fails at once.
    ///
    /// A request that must not be applied twice (a compare-and-swap whose success the caller
    /// resolves itself) passes `failover: false`: it is sent once, to one member, for `once` (the
    /// whole timeout by default); when that member does not answer in time, or cannot serve
    /// (etcd's "leader changed" or "request timed out" may come after the request was applied), it
    /// fails with ``Failure/unreachable(_:)`` rather than being sent again elsewhere.
    func call<Response: Sendable>(
        failover: Bool = true, once: Duration? = nil, pause: Duration = .zero, by deadline: ContinuousClock.Instant? = nil,
        _ rpc: @escaping @Sendable (Etcdserverpb_KV.Client<HTTP2ClientTransport.Posix>, Metadata, CallOptions) async throws -> Response
    ) throws(Failure) -> Response {
        let client = self
        return try EtcdExecutor.shared.wait {
            if pause > .zero { try? await Task.sleep(for: pause) }
            return await client.perform(failover: failover, once: once, by: deadline, rpc)
        }.get()
    }

    /// ``call(failover:once:pause:by:_:)``'s work, on the etcd thread.
    private func perform<Response: Sendable>(
        failover: Bool = true, once: Duration? = nil, by callDeadline: ContinuousClock.Instant? = nil,
        _ rpc: @escaping @Sendable (Etcdserverpb_KV.Client<HTTP2ClientTransport.Posix>, Metadata, CallOptions) async throws -> Response
    ) async -> Result<Response, Failure> {
        let (connection, endpoints, timeout) = (self.connection, self.endpoints, self.timeout)
        let clock = ContinuousClock()
        let deadline = min(clock.now + timeout, callDeadline ?? clock.now + timeout)
        guard clock.now < deadline else { return .failure(.deadlinePassed) }
        let electionWindow = clock.now + .seconds(3)
        var attempt = failover ? min(timeout, .milliseconds(500)) : min(timeout, once ?? timeout)
        var failures: [String] = []
        while true {
            let start = connection.preferred.value
            var allRefused = true
            for offset in 0..<(failover ? endpoints.count : 1) {
                let index = (start + offset) % endpoints.count
                let options = EtcdConnection.options(timeout: max(.milliseconds(1), min(attempt, clock.now.duration(to: deadline))))
                do {
                    let client = try Etcdserverpb_KV.Client(wrapping: connection.member(index))
                    let response: Response
                    do {
                        response = try await rpc(client, try await connection.metadata(on: index, options), options)
                    } catch where EtcdError(error).wantsToken && connection.forgetToken() {
                        // A token etcd no longer takes, or none where one is now needed: another, and again.
                        response = try await rpc(client, try await connection.metadata(on: index, options), options)
                    }
                    connection.preferred.value = index
                    return .success(response)
                } catch {
                    let refusal = EtcdError(error)
                    guard refusal.memberCannotServe else { return .failure(.etcd(refusal)) }
                    if !refusal.connectionRefused { allRefused = false }
                    failures.append("\(endpoints[index]): \(refusal)")
                    connection.preferred.move(past: index, of: endpoints.count)
                }
            }
            guard failover, !allRefused, clock.now + .milliseconds(50) < deadline else { break }
            try? await Task.sleep(for: .milliseconds(50))
            // Half a second an attempt while an election may run (etcd's take 1–3 s); then longer.
            if clock.now > electionWindow { attempt = min(attempt * 2, timeout) }
        }
        return .failure(.unreachable(failures.suffix(endpoints.count * 2).joined(separator: "; ")))
    }

    /// Watches from `create` on the process's one watch stream to this cluster (see
    /// ``EtcdConnection``), handing each message for it to `body` until `body` returns `false`.
    /// Throws when the stream breaks after `body` has seen a message (the caller resumes from
    /// what it saw); before, the watch is created again on the next member's stream.
    func watch(_ create: Etcdserverpb_WatchCreateRequest, _ body: @escaping @Sendable (Etcdserverpb_WatchResponse) throws -> Bool) async throws {
        try await connection.watch(create, timeout: timeout, body)
    }
}

extension EtcdOptions.TLS {
    /// The transport's TLS settings: the files read now, once, so that a missing or malformed one
    /// is named here rather than at the first connection, and a file swapped later changes nothing.
    func transportSecurity() throws(PreferenceError) -> HTTP2ClientTransport.Posix.TransportSecurity {
        var tls = HTTP2ClientTransport.Posix.TransportSecurity.TLS.defaults
        if let ca = certificateAuthority {
            tls.trustRoots = .certificates([.bytes(try Self.pem("certificate authority", ca) { _ = try NIOSSLCertificate(bytes: $0, format: .pem) }, format: .pem)])
        }
        switch (certificate, privateKey) {
        case (let certificate?, let key?):
            tls.certificateChain = [.bytes(try Self.pem("certificate", certificate) { _ = try NIOSSLCertificate(bytes: $0, format: .pem) }, format: .pem)]
            tls.privateKey = .bytes(try Self.pem("private key", key) { _ = try NIOSSLPrivateKey(bytes: $0, format: .pem) }, format: .pem)
        case (nil, nil):
            break
        default:
            throw PreferenceError(code: .invalidName, message: "An etcd suite's TLS client certificate needs its private key, and the key its certificate: pass both, or neither.")
        }
        return .tls(tls)
    }

    /// The bytes of a PEM file that `parse` takes: a regular file (a FIFO would block the call, a
    /// device never end) of at most 1 MiB (a system's whole CA bundle is about 200 KiB).
    private static func pem(_ what: String, _ url: URL, _ parse: ([UInt8]) throws -> Void) throws(PreferenceError) -> [UInt8] {
        let (path, limit) = (url.path, 1 << 20)
        let problem: String
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            problem = String(cString: strerror(errno))
        } else {
            defer { close(fd) }
            var info = stat()
            if fstat(fd, &info) != 0 || info.st_mode & S_IFMT != S_IFREG {
                problem = "it is no regular file"
            } else {
                switch Syscall.readAll(fd, sizeHint: Int(info.st_size), limit: limit) {
                case .success(let bytes) where bytes.count <= limit:
                    do {
                        try parse(bytes)
                        return bytes
                    } catch {
                        problem = "\(error)"
                    }
                case .success: problem = "it is larger than 1 MiB"
                case .failure(let error): problem = "\(error)"
                }
            }
        }
        throw PreferenceError(code: .ioFailure, message: "Could not read the etcd suite's TLS \(what) \(path): \(problem). Pass a PEM file this process can read.", path: path)
    }
}

/// The endpoint that answered last, shared by the clients of a cluster.
final class LockedIndex: Sendable {
    private let stored = Lock(0)
    var value: Int {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
    /// The next endpoint, unless another request has moved on from `index` already.
    func move(past index: Int, of count: Int) { stored.withLock { if $0 == index { $0 = (index + 1) % count } } }
}

/// A refusal from etcd or the transport: its gRPC code and message.
struct EtcdError: Error, Sendable, CustomStringConvertible {
    /// The gRPC status code (11: out of range, 14: unavailable, …).
    var code: Int
    var message: String
    /// The connection was refused: nobody listens at the member's address.
    var connectionRefused = false

    init(code: Int, message: String) { (self.code, self.message) = (code, message) }

    init(_ error: any Error) {
        guard let error = error as? RPCError else {
            self.init(code: 2, message: "\(error)")
            return
        }
        self.init(code: error.code.rawValue, message: error.message)
        var cause = error.cause
        while let next = cause {
            if "\(next)".localizedCaseInsensitiveContains("connection refused") { connectionRefused = true }
            cause = (next as? RPCError)?.cause
        }
        if let cause = error.cause, !message.contains("\(cause)") { message += " (\(cause))" }
    }

    /// The name of the gRPC code.
    var name: String {
        let names = [
            0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS",
            7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE",
            12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
        ]
        return names[code] ?? "code \(code)"
    }

    /// Unavailable or timed out (no leader, a member stopping, no connection): another member may serve.
    var memberCannotServe: Bool { code == 14 || code == 4 }

    /// Refused for its token, before anything was applied: a token etcd no longer takes, or none
    /// where authentication was turned on since (as clientv3's `shouldRefreshToken`).
    var wantsToken: Bool { code == 16 || (code == 3 && message.contains("user name is empty")) }

    var description: String { "\(message.isEmpty ? "no message" : message) (gRPC \(code) \(name))" }

    /// What a suite's caller is told: etcd's code and message, and what to do.
    func preferenceError(doing: String, address: String, endpoints: [String]) -> PreferenceError {
        let (kind, advice): (PreferenceError.Code, String) =
            switch code {
            case 11: (.resynchronized, "The revision asked for was compacted away: read the suite again (a new PreferenceSuite, or prefs-watch read), which reads the prefix in full.")
            case 16: (.permissionDenied, "The cluster requires authentication: give the suite a user it accepts (EtcdOptions.credentials, or EtcdOptions.tls with a client certificate) with a role on the prefix.")
            case _ where message.contains("etcdserver: user name is empty"): (.permissionDenied, "The cluster requires authentication: give the suite a user it accepts (EtcdOptions.credentials, or EtcdOptions.tls with a client certificate) with a role on the prefix.")
            case 3 where message.contains("authentication failed"): (.permissionDenied, "etcd did not take the user name and password: check EtcdOptions.credentials against the cluster's users (etcdctl user list, as root).")
            case 7: (.permissionDenied, "The user has no permission on the prefix: grant its role readwrite on it (etcdctl role grant-permission --prefix).")
            case 8: (.ioFailure, "The cluster is out of space or the request is too large: compact and defragment it, or raise its --quota-backend-bytes or --max-request-bytes.")
            case 3: (.unsupportedOperation, "etcd finds the request malformed (a key too long, or more operations in one transaction than its --max-txn-ops): split the update.")
            case 14, 4: (.clusterUnreachable, "No member could serve it (no leader, or one stopping): check that a majority of the cluster runs (etcdctl --endpoints \(endpoints.joined(separator: ",")) endpoint health).")
            default: (.ioFailure, "Check the cluster's health (etcdctl --endpoints \(endpoints.joined(separator: ",")) endpoint health) and its log.")
            }
        return PreferenceError(code: kind, message: "etcd refused to \(doing) \(address): \(self). \(advice)", path: address)
    }
}

// MARK: Requests, as SharedPrefsEtcd makes them

extension Etcdserverpb_RangeRequest {
    /// Every key under `prefix`.
    static func prefix(_ prefix: Data) -> Self { .with { ($0.key, $0.rangeEnd) = (prefix, prefix.prefixEnd) } }
    /// One key.
    static func key(_ key: Data) -> Self { .with { $0.key = key } }
}

extension Etcdserverpb_RequestOp {
    static func put(_ key: Data, _ value: Data) -> Self { .with { ($0.requestPut.key, $0.requestPut.value) = (key, value) } }
    static func delete(_ key: Data) -> Self { .with { $0.requestDeleteRange.key = key } }
    static func range(_ range: Etcdserverpb_RangeRequest) -> Self { .with { $0.requestRange = range } }
}

extension Etcdserverpb_Compare {
    /// The modification revision of `key` (of every key up to `rangeEnd`) compared with `revision`.
    static func modRevision(of key: Data, rangeEnd: Data = Data(), _ result: CompareResult, _ revision: Int64) -> Self {
        .with { ($0.key, $0.rangeEnd, $0.target, $0.result, $0.modRevision) = (key, rangeEnd, .mod, result, revision) }
    }
    /// `key` does not exist (its version is 0).
    static func absent(_ key: Data) -> Self { .with { ($0.key, $0.target, $0.result, $0.version) = (key, .version, .equal, 0) } }
}

extension Data {
    /// The first key after every key that starts with these bytes (etcd's `range_end` for a prefix).
    var prefixEnd: Data {
        var end = self
        while let last = end.last {
            if last < 0xFF {
                end[end.index(before: end.endIndex)] = last + 1
                return end
            }
            end.removeLast()
        }
        return Data([0])  // every key
    }
}
#endif
