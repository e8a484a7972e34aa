#if Etcd
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SharedPrefs

/// etcd v3's JSON gateway (`/v3/kv/range`, `/v3/kv/txn`, `/v3/watch`): keys and values base64,
/// 64-bit integers JSON strings, every request a POST. One HTTP client per process
/// (`HTTPClient.shared`); a request tries the endpoints in turn, from the last that answered.
struct EtcdClient: Sendable {
    let endpoints: [String]
    let timeout: TimeAmount
    private let preferred = LockedIndex()

    init(endpoints: [String], timeout: Duration) {
        self.endpoints = endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.timeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + Int64(timeout.components.attoseconds / 1_000_000_000))
    }

    /// How a request failed.
    enum Failure: Error {
        /// No endpoint answered, or the answer was lost: a write may or may not have been applied.
        case unreachable(String)
        /// The cluster answered with an error (HTTP status and body).
        case refused(Int, String)
    }

    /// POSTs `body` to `path` on one endpoint after another until one answers.
    func post<Response: Decodable>(_ path: String, _ body: some Encodable, as: Response.Type) throws(Failure) -> Response {
        let payload: Data
        do { payload = try JSONEncoder().encode(body) } catch { throw .refused(0, "\(error)") }
        var failures: [String] = []
        let start = preferred.value
        for offset in 0..<endpoints.count {
            let index = (start + offset) % endpoints.count
            let endpoint = endpoints[index]
            do {
                var request = try HTTPClient.Request(url: endpoint + path, method: .POST, body: .byteBuffer(ByteBuffer(bytes: payload)))
                request.headers.add(name: "Content-Type", value: "application/json")
                let response = try HTTPClient.shared.execute(request: request, deadline: .now() + timeout).wait()
                let bytes = response.body.map { Data($0.readableBytesView) } ?? Data()
                guard response.status == .ok else {
                    // 503 and friends: this member cannot serve now (no leader, stopping); try the next.
                    if response.status.code >= 500 {
                        failures.append("\(endpoint): HTTP \(response.status.code) \(String(decoding: bytes, as: UTF8.self).prefix(200))")
                        continue
                    }
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
            }
        }
        throw .unreachable(failures.joined(separator: "; "))
    }
}

extension EtcdClient {
    /// Opens a watch (`/v3/watch`) on one endpoint after another until one answers, and hands
    /// each message of its stream to `body` (with the endpoint) until `body` returns `false` or
    /// the stream ends. Sends `Grpc-Metadata-hasleader: true`: without it a member cut off from
    /// the leader keeps the stream open and silent.
    func watch(_ create: WatchRequest.Create, timeout: TimeAmount, _ body: (WatchResponse.Result, String) throws -> Bool) async throws {
        let payload = try JSONEncoder().encode(WatchRequest(create_request: create))
        var lastError: (any Error)? = nil
        let start = preferred.value
        for offset in 0..<endpoints.count {
            let endpoint = endpoints[(start + offset) % endpoints.count]
            var request = HTTPClientRequest(url: endpoint + "/v3/watch")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Grpc-Metadata-hasleader", value: "true")
            request.body = .bytes(ByteBuffer(bytes: payload))
            let response: HTTPClientResponse
            do { response = try await HTTPClient.shared.execute(request, timeout: timeout) } catch {
                lastError = error
                continue
            }
            guard response.status == .ok else {
                lastError = Failure.refused(Int(response.status.code), endpoint)
                continue
            }
            var buffer = Data()
            for try await part in response.body {
                buffer.append(contentsOf: part.readableBytesView)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = buffer[buffer.startIndex..<newline]
                    buffer = Data(buffer[buffer.index(after: newline)...])
                    guard !line.isEmpty else { continue }
                    let message = try JSONDecoder().decode(WatchResponse.self, from: line)
                    guard let result = message.result else { throw Failure.refused(0, "watch error from \(endpoint): \(message.error ?? [:])") }
                    if try !body(result, endpoint) { return }
                }
            }
            return
        }
        throw lastError ?? Failure.unreachable("no endpoint")
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

struct WatchResponse: Codable, Sendable {
    struct Result: Codable, Sendable {
        struct Event: Codable, Sendable {
            var type: String?
            var kv: KeyValue
        }
        var header: ResponseHeader?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: Int64String?
        var cancel_reason: String?
        var events: [Event]?
    }
    var result: Result?
    var error: [String: String]?
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
