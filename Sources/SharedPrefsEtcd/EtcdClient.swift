#if Etcd
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import SharedPrefs
import SharedPrefsLocking

/// etcd v3's JSON gateway (`/v3/kv/range`, `/v3/kv/txn`, `/v3/watch`): keys and values base64,
/// 64-bit integers JSON strings, every request a POST. One HTTP client per process, its I/O on
/// NIO's event loop threads; each request carries its suite's TLS configuration and a deadline.
/// A request tries the endpoints in turn, from the last that answered.
struct EtcdClient: Sendable {
    let endpoints: [String]
    let timeout: TimeAmount
    /// The suite's TLS configuration, for each of its requests (`nil`: plain HTTP).
    let tls: TLSConfiguration?
    private let preferred = LockedIndex()

    init(endpoints: [String], options: EtcdOptions) throws(PreferenceError) {
        self.endpoints = endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        let timeout = options.timeout.components
        self.timeout = .nanoseconds(timeout.seconds * 1_000_000_000 + timeout.attoseconds / 1_000_000_000)
        tls = try options.tls.map { (tls) throws(PreferenceError) in try tls.configuration() }
    }

    /// The process's one HTTP client. A connection that cannot be made fails its request at once
    /// (the next endpoint is tried) rather than being tried again until the request's deadline,
    /// and one that hangs is bounded by that deadline.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
    var http: HTTPClient { Self.http }

    /// How a request failed.
    enum Failure: Error, CustomStringConvertible {
        /// No endpoint answered, or the answer was lost: a write may or may not have been applied.
        case unreachable(String)
        /// etcd refused the request, with its gRPC code and message.
        case etcd(GatewayError)
        /// The cluster answered with something else than etcd's error (HTTP status and body).
        case refused(Int, String)

        var description: String {
            switch self {
            case .unreachable(let why): why
            case .etcd(let error): "\(error)"
            case .refused(let status, let body): "HTTP \(status): \(body.prefix(300))"
            }
        }
    }

    /// POSTs `body` to `path` on one endpoint after another until one answers, within `timeout`.
    ///
    /// Every request asks for a leader (`Grpc-Metadata-hasleader`, as clientv3's
    /// `WithRequireLeader`): a member that has none refuses at once (no leader: 503), and the next
    /// is tried. A request a member forwarded to a leader that just died is lost without an
    /// answer: so each round gives an endpoint half a second at first, then twice as long each
    /// round (a slow but healthy cluster still answers), with 50 ms between rounds, until
    /// `timeout` has passed. A failover thus takes about the election, not the whole timeout.
    ///
    /// A request that must not be applied twice (a compare-and-swap whose success the caller
    /// resolves itself) passes `failover: false`: it is sent once, to one endpoint, for `once`
    /// (the whole timeout by default); when that endpoint does not answer in time, or answers 5xx
    /// (etcd's "leader changed" or "request timed out" may come after the request was applied),
    /// it fails with ``Failure/unreachable(_:)`` rather than being sent again elsewhere.
    func post<Response: Decodable>(_ path: String, _ body: some Encodable, as: Response.Type, failover: Bool = true, once: TimeAmount? = nil) throws(Failure) -> Response {
        let payload: Data
        do { payload = try JSONEncoder().encode(body) } catch { throw .refused(0, "\(error)") }
        var failures: [String] = []
        let deadline = NIODeadline.now() + timeout
        let electionWindow = NIODeadline.now() + .seconds(3)
        var attempt = failover ? min(timeout, .milliseconds(500)) : min(timeout, once ?? timeout)
        while true {
            let start = preferred.value
            // Whether every endpoint refused the connection: nobody listens, no election runs.
            var allRefused = true
            for offset in 0..<(failover ? endpoints.count : 1) {
                let index = (start + offset) % endpoints.count
                let endpoint = endpoints[index]
                do {
                    var request = try HTTPClient.Request(url: endpoint + path, method: .POST, body: .byteBuffer(ByteBuffer(bytes: payload)), tlsConfiguration: tls)
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.headers.add(name: "Grpc-Metadata-hasleader", value: "true")
                    let response = try http.execute(request: request, deadline: min(deadline, .now() + attempt)).wait()
                    let bytes = response.body.map { Data($0.readableBytesView) } ?? Data()
                    guard response.status == .ok else {
                        let error = try? JSONDecoder().decode(GatewayError.self, from: bytes)
                        // 503 and friends: this member cannot serve now (no leader, stopping); try the next.
                        if response.status.code >= 500 || error?.memberCannotServe == true {
                            allRefused = false
                            failures.append("\(endpoint): \(error.map { "\($0)" } ?? "HTTP \(response.status.code) \(String(decoding: bytes, as: UTF8.self).prefix(200))")")
                            preferred.move(past: index, of: endpoints.count)
                            continue
                        }
                        if let error { throw Failure.etcd(error) }
                        throw Failure.refused(Int(response.status.code), String(decoding: bytes, as: UTF8.self))
                    }
                    preferred.value = index
                    do { return try JSONDecoder().decode(Response.self, from: bytes) } catch {
                        throw Failure.refused(Int(response.status.code), "unreadable answer from \(endpoint): \(error)")
                    }
                } catch let failure as Failure {
                    throw failure
                } catch {
                    failures.append("\(endpoint): \(error)")
                    preferred.move(past: index, of: endpoints.count)
                    if (error as? IOError)?.errnoCode != ECONNREFUSED { allRefused = false }
                }
            }
            guard failover, !allRefused, NIODeadline.now() + .milliseconds(50) < deadline else { break }
            Thread.sleep(forTimeInterval: 0.05)
            // Half a second an attempt while an election may run (etcd's take 1–3 s); then longer.
            if NIODeadline.now() > electionWindow { attempt = min(attempt * 2, timeout) }
        }
        throw .unreachable(failures.suffix(endpoints.count * 2).joined(separator: "; "))
    }
}

extension EtcdClient {
    /// Opens a watch (`/v3/watch`) on one endpoint after another until one answers, and hands
    /// each message of its stream to `body` (with the endpoint) until `body` returns `false` or
    /// the stream ends. A stream that has begun is not opened again here: the caller resumes from
    /// what it saw, and the client moves on to the next endpoint.
    ///
    /// Two kinds of member keep a watch open and silent. One cut off from its peers: the watch
    /// sends `Grpc-Metadata-hasleader: true`, as clientv3's `WithRequireLeader` does, and etcd
    /// then ends it with "no leader" (about 4 s after the cut, measured here). One that stops
    /// answering (a hung process, a stalled disk, a link that died without a reset): after
    /// `timeout` without a message, the watch reads once through its member (a linearizable range),
    /// and when that read fails too, the watch fails with ``Failure/unreachable(_:)``.
    func watch(_ create: WatchRequest.Create, timeout: TimeAmount, _ body: @escaping @Sendable (WatchResponse.Result, String) throws -> Bool) async throws {
        let payload = try JSONEncoder().encode(WatchRequest(create_request: create))
        var lastError: (any Error)? = nil
        let start = preferred.value
        for offset in 0..<endpoints.count {
            let index = (start + offset) % endpoints.count
            let progress = Lock(WatchProgress())
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.stream(payload, at: index, timeout: timeout, progress: progress, body) }
                    group.addTask { try await self.checkWhileSilent(index, progress: progress) }
                    try await group.next()
                    group.cancelAll()
                }
                return
            } catch {
                if Task.isCancelled { throw CancellationError() }
                preferred.move(past: index, of: endpoints.count)
                if progress.withLock({ $0.begun }) { throw error }
                lastError = error
            }
        }
        throw lastError ?? Failure.unreachable("no endpoint")
    }

    /// A JSON POST of `body` to `path` on the endpoint at `index`.
    private func post(at index: Int, _ path: String, _ body: ByteBuffer) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: endpoints[index] + path)
        request.method = .POST
        request.tlsConfiguration = tls
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        return request
    }

    private struct WatchProgress {
        /// When the member last sent something (or answered a check).
        var heard = ContinuousClock.now
        /// Whether `body` has seen a message of this stream.
        var begun = false
    }

    private func stream(_ payload: Data, at index: Int, timeout: TimeAmount, progress: Lock<WatchProgress>, _ body: @Sendable (WatchResponse.Result, String) throws -> Bool) async throws {
        let endpoint = endpoints[index]
        var request = post(at: index, "/v3/watch", ByteBuffer(bytes: payload))
        request.headers.add(name: "Grpc-Metadata-hasleader", value: "true")
        let response = try await http.execute(request, timeout: timeout)
        guard response.status == .ok else { throw Failure.refused(Int(response.status.code), endpoint) }
        var buffer = Data()
        /// One message; `false` when `body` is done. etcd ends a stream it closes with an error
        /// message that no newline follows.
        func hand(_ line: Data) throws -> Bool {
            let message = try JSONDecoder().decode(WatchResponse.self, from: line)
            guard let result = message.result else {
                let error = message.error ?? GatewayError(code: 2, message: "a watch message with neither a result nor an error")
                // A member that lost its leader ends its watches so: the next one may serve.
                if error.memberCannotServe { throw Failure.unreachable("\(endpoint) ended the watch: \(error)") }
                throw Failure.etcd(error)
            }
            progress.withLock { $0.begun = true }
            return try body(result, endpoint)
        }
        for try await part in response.body {
            progress.withLock { $0.heard = .now }
            buffer.append(contentsOf: part.readableBytesView)
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[buffer.index(after: newline)...])
                if !line.isEmpty, try !hand(line) { return }
            }
        }
        if !buffer.isEmpty { _ = try hand(buffer) }
    }

    /// Returns only when cancelled; throws when the member at `index`, silent for `timeout`, fails
    /// a linearizable read.
    private func checkWhileSilent(_ index: Int, progress: Lock<WatchProgress>) async throws {
        let interval = Duration.nanoseconds(timeout.nanoseconds)
        while true {
            let silent = progress.withLock { $0.heard }.duration(to: .now)
            if silent < interval {
                try await Task.sleep(for: interval - silent)
                continue
            }
            do {
                // The key "\0": no suite's, an empty answer.
                let request = post(at: index, "/v3/kv/range", ByteBuffer(string: #"{"key":"AA=="}"#))
                let response = try await http.execute(request, timeout: timeout)
                let answer = try await response.body.collect(upTo: 1 << 16)
                guard response.status == .ok else { throw Failure.refused(Int(response.status.code), String(buffer: answer)) }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw Failure.unreachable("\(endpoints[index]) sent nothing on a watch for \(interval) and then failed a read (\(error))")
            }
            progress.withLock { $0.heard = .now }
        }
    }
}

extension EtcdOptions.TLS {
    /// NIOSSL's configuration: the files read now, so that a missing or malformed one is named here.
    func configuration() throws(PreferenceError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        func read<T>(_ what: String, _ url: URL, _ load: (String) throws -> T) throws(PreferenceError) -> T {
            do { return try load(url.path) } catch {
                throw PreferenceError(code: .ioFailure, message: "Could not read the etcd suite's TLS \(what) \(url.path): \(error). Pass a PEM file this process can read.", path: url.path)
            }
        }
        if let ca = certificateAuthority {
            configuration.trustRoots = .certificates(try read("certificate authority", ca) { try NIOSSLCertificate.fromPEMFile($0) })
        }
        switch (certificate, privateKey) {
        case (let certificate?, let key?):
            configuration.certificateChain = try read("certificate", certificate) { try NIOSSLCertificate.fromPEMFile($0) }.map { .certificate($0) }
            configuration.privateKey = .privateKey(try read("private key", key) { try NIOSSLPrivateKey(file: $0, format: .pem) })
        case (nil, nil):
            break
        default:
            throw PreferenceError(code: .invalidName, message: "An etcd suite's TLS client certificate needs its private key, and the key its certificate: pass both, or neither.")
        }
        return configuration
    }
}

/// The endpoint that answered last, shared by copies of a client.
final class LockedIndex: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = 0
    var value: Int {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    /// The next endpoint, unless another request has moved on from `index` already.
    func move(past index: Int, of count: Int) { lock.withLock { if stored == index { stored = (index + 1) % count } } }
}

// MARK: The gateway's JSON

/// 64-bit integers travel as JSON strings; defaults (0, false, empty) are left out.
struct Int64String: Codable, Sendable {
    var value: Int64
    init(_ value: Int64) { self.value = value }
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self), let value = Int64(text) { self.value = value } else { value = try container.decode(Int64.self) }
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}

struct ResponseHeader: Codable, Sendable {
    var revision: Int64String?
}

struct KeyValue: Codable, Sendable {
    var key: Data
    var value: Data?
    var mod_revision: Int64String?
}

struct RangeRequest: Codable, Sendable {
    var key: Data
    var range_end: Data?
    var revision: Int64String?
}

struct RangeResponse: Codable, Sendable {
    var header: ResponseHeader?
    var kvs: [KeyValue]?
}

struct Compare: Codable, Sendable {
    var key: Data
    var range_end: Data?
    var target: String
    var result: String
    var mod_revision: Int64String?
    var version: Int64String?
}

struct RequestOp: Codable, Sendable {
    struct Put: Codable, Sendable { var key: Data; var value: Data }
    struct Delete: Codable, Sendable { var key: Data }
    var request_put: Put?
    var request_delete_range: Delete?
    var request_range: RangeRequest?
}

struct TxnRequest: Codable, Sendable {
    var compare: [Compare]
    var success: [RequestOp]
    var failure: [RequestOp]
}

struct TxnResponse: Codable, Sendable {
    struct Op: Codable, Sendable { var response_range: RangeResponse? }
    var header: ResponseHeader?
    var succeeded: Bool?
    var responses: [Op]?
}

struct WatchRequest: Codable, Sendable {
    struct Create: Codable, Sendable {
        var key: Data
        var range_end: Data?
        var start_revision: Int64String?
        var prev_kv: Bool?
    }
    var create_request: Create
}

struct WatchResponse: Decodable, Sendable {
    struct Result: Codable, Sendable {
        struct Event: Codable, Sendable {
            var type: String?
            var kv: KeyValue
            /// The key's value before the event, for a watch created with `prev_kv`.
            var prev_kv: KeyValue?
        }
        var header: ResponseHeader?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: Int64String?
        var cancel_reason: String?
        var events: [Event]?
    }
    var result: Result?
    var error: GatewayError?
}

/// An error etcd's gateway sent: `{"error": "…", "code": 11, "message": "…"}` answering a request,
/// and `{"error": {"grpc_code": 14, "http_code": 503, "message": "…", "http_status": "…"}}` ending a watch.
struct GatewayError: Decodable, Sendable, CustomStringConvertible {
    /// The gRPC status code (11: out of range, 14: unavailable, …).
    var code: Int
    var message: String

    init(code: Int, message: String) { (self.code, self.message) = (code, message) }

    private enum Keys: String, CodingKey { case error, code, grpc_code, message }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if let nested = try? container.nestedContainer(keyedBy: Keys.self, forKey: .error) {
            code = try nested.decodeIfPresent(Int.self, forKey: .grpc_code) ?? nested.decodeIfPresent(Int.self, forKey: .code) ?? 2
            message = try nested.decodeIfPresent(String.self, forKey: .message) ?? ""
        } else {
            code = try container.decodeIfPresent(Int.self, forKey: .code) ?? container.decodeIfPresent(Int.self, forKey: .grpc_code) ?? 2
            message = try container.decodeIfPresent(String.self, forKey: .message) ?? container.decodeIfPresent(String.self, forKey: .error) ?? ""
        }
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

    /// Unavailable or timed out (no leader, a member stopping): another member may serve.
    var memberCannotServe: Bool { code == 14 || code == 4 }

    var description: String { "\(message.isEmpty ? "no message" : message) (gRPC \(code) \(name))" }

    /// What a suite's caller is told: etcd's code and message, and what to do.
    func preferenceError(doing: String, address: String, endpoints: [String]) -> PreferenceError {
        let (kind, advice): (PreferenceError.Code, String) =
            switch code {
            case 11: (.resynchronized, "The revision asked for was compacted away: read the suite again (a new PreferenceSuite, or prefs-watch read), which reads the prefix in full.")
            case 16: (.permissionDenied, "The cluster requires authentication: give the suite credentials it accepts (EtcdOptions.tls with a client certificate of a user with a role on the prefix).")
            case 7: (.permissionDenied, "The user has no permission on the prefix: grant its role readwrite on it (etcdctl role grant-permission --prefix).")
            case 8: (.ioFailure, "The cluster is out of space or the request is too large: compact and defragment it, or raise its --quota-backend-bytes or --max-request-bytes.")
            case 3: (.unsupportedOperation, "etcd finds the request malformed (a key too long, or more operations in one transaction than its --max-txn-ops): split the update.")
            case 14, 4: (.clusterUnreachable, "No member could serve it (no leader, or one stopping): check that a majority of the cluster runs (etcdctl --endpoints \(endpoints.joined(separator: ",")) endpoint health).")
            default: (.ioFailure, "Check the cluster's health (etcdctl --endpoints \(endpoints.joined(separator: ",")) endpoint health) and its log.")
            }
        return PreferenceError(code: kind, message: "etcd refused to \(doing) \(address): \(self). \(advice)", path: address)
    }
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
