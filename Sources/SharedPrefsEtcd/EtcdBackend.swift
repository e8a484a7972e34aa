#if Etcd
import Foundation
import GRPCCore
import SharedPrefs
import SharedPrefsLocking
import SwiftProtobuf

/// A suite stored under a key prefix of an etcd v3 cluster: each suite key one etcd key, each value
/// a binary property list. Reads come from the store's snapshot; a watch of the prefix (from the
/// last revision read, on the process's one watch stream to the cluster: see ``EtcdConnection``) brings other
/// clients' changes, key by key.
///
/// Plain writes put and delete their keys in one `txn` (the last writer wins per key, as in a
/// suite file), fenced so that a copy a member held never lands after a later write (``Fence``).
/// An `update` body is a compare-and-swap: its `txn` compares the modification
/// revision of every key the body read or wrote, and of the suite's transaction key, which every
/// `update` writes with a token of its own; after a timeout the token tells whether the attempt
/// was applied, so an increment is never applied twice nor lost.
final class EtcdBackend: SuiteBackend {
    let client: EtcdClient
    let prefix: Data
    /// Written by every `update` with its attempt's token: under the prefix, so that a role
    /// granted the prefix may write it, and not UTF-8 (a 0xFF byte), so that no suite key names it.
    let tokenKey: Data
    /// What the library's own keys under the prefix start with after it (the transaction key,
    /// each process's fence): never a suite key, and never reported.
    private static let reserved = Data([0xFF]) + Data("sharedprefs-".utf8)

    /// This process's fence for the suite's plain writes (etcd-io/etcd#13433). A write whose
    /// answer did not come is sent to the next member; the member that got the first copy (cut
    /// off from its peers, stopped, on a slow disk) may still pass it on later, and it would put
    /// older values over newer ones. So every plain write compares the fence key's revision, and
    /// the first write after one whose answer did not come moves the fence (an `update` too):
    /// a copy still on its way then fails its comparison. The key is under the prefix, like the
    /// transaction key, and this process's own; it exists once a write moved it.
    private struct Fence {
        let key: Data
        /// The key's modification revision as last known (0: never written).
        var revision: Int64 = 0
        /// A write was sent whose answer did not come: the next one moves the fence.
        var mustMove = false
    }
    private let fence: Lock<Fence>
    /// What every writer's fence key under `prefix` starts with; a UUID follows.
    private static func fences(under prefix: Data) -> Data { prefix + reserved + Data("writer-".utf8) }
    /// The fences of writers gone with a write whose answer did not come, from the offline cache
    /// (``EtcdCache/queue(_:fence:)``): this suite moves them before its first write, so that a
    /// copy of such a write that a member still holds never lands after what is written since.
    private let inherited = Lock<[Data]>([])

    private struct Known {
        /// The revision the snapshot is at: the last range or watch response applied.
        var revision: Int64 = 0
        /// Each known key's last modification revision (a deletion's revision for a removed key).
        var modRevisions: [PlistKey: Int64] = [:]
        /// The keys of `modRevisions` that are removed.
        var removed: Set<PlistKey> = []
        /// The transaction key's modification revision as last seen (0: never written).
        var tokenRevision: Int64 = 0
        /// The revision of this process's last `update` that compared the whole prefix: the
        /// prefix is known in full there too. (A plain write's revision, or a key's, says nothing
        /// of the keys it did not write.)
        var complete: Int64 = 0
        /// Watch events not yet handed to the store, in order.
        var events: [(revision: Int64, events: [Etcdserverpb_Event])] = []
        /// A full re-read is due: first load, or the watch fell below the compaction point.
        var mustResync = true
        /// The last compaction point the watch fell below: it resumes above it.
        var compacted: Int64 = 0
        /// Revisions in which the prefix changed nothing (``quiet(through:)``), `after` excluded,
        /// for ``history(after:through:)`` across a compaction; the latest few.
        var quiet: [(after: Int64, through: Int64)] = []
        /// The suite's number (``PreferenceSuite/sequence``): the highest revision read or written.
        var numbered: Int64 = 0
        /// The revisions of this process's latest writes, to tell its own in ``history(after:through:)``.
        var written: [Int64] = []
        /// Failures to record in the offline cache later, for the next ``load()`` or write to tell.
        var cacheFailures: [PreferenceError] = []
    }
    private let known = Lock(Known())
    /// The last known state and the writes not yet accepted, in a local file; `nil`: none.
    let cache: EtcdCache?

    init(client: EtcdClient, prefix: String, cache: EtcdCache?) {
        self.client = client
        self.prefix = Data(prefix.utf8)
        self.tokenKey = Data(prefix.utf8) + Self.reserved + Data("transaction".utf8)
        fence = Lock(Fence(key: Self.fences(under: Data(prefix.utf8)) + Data(UUID().uuidString.utf8)))
        self.cache = cache
    }

    deinit { client.connection.linger() }

    /// Reads the suite, from the cluster, else (when it does not answer) from the offline cache
    /// (the watch then replays what changed since the cached revision, or, when etcd compacted
    /// it away, the suite is read again in full). Returns it, and the writes a process queued
    /// offline, for the store to write like any local change: merged per key over what the
    /// cluster holds when it answers.
    func open() throws(PreferenceError) -> (Loaded, queued: Operations) {
        let cached = cache?.load()
        // Writers' fences of this suite only (never another key the file names), 128 at most
        // (one `txn`; the rest wait for the next process).
        let fences = (cached?.fences ?? []).filter { $0.starts(with: Self.fences(under: prefix)) }.prefix(128)
        inherited.withLock { $0 = Array(fences) }
        do {
            return (try load(), cached?.queued ?? [:])
        } catch where error.code == .clusterUnreachable {
            guard let cached else { throw error }
            known.withLock { k in
                k.revision = cached.revision
                k.modRevisions = cached.revisions
                k.removed = Set(cached.revisions.keys.filter { cached.values.storage[$0] == nil })
                k.mustResync = false
            }
            return (numbered(Loaded(.full(cached.values))), cached.queued)
        }
    }

    /// Mirrors values read or written into the offline cache (see ``EtcdCache/record(_:at:complete:written:)``).
    private func cacheRecord(_ changes: [EtcdCache.Change], at revision: Int64?, complete: Bool = false, written: Bool = false, notices: inout [PreferenceError]) {
        guard let cache else { return }
        do { try cache.record(changes, at: revision, complete: complete, written: written) } catch {
            notices.append(cacheFailure(error))
        }
    }

    /// The same, later (``EtcdCache/recordLater(_:at:failed:)``); a failure is told with the next
    /// changes read or write made.
    private func cacheRecordLater(_ changes: [EtcdCache.Change], at revision: Int64?) {
        cache?.recordLater(changes, at: revision) { [weak self] error in
            guard let self else { return }
            let failure = cacheFailure(error)
            known.withLock { $0.cacheFailures.append(failure) }
        }
    }

    private func cacheFailure(_ error: any Error) -> PreferenceError {
        let why = "\(error)".trimmingCharacters(in: CharacterSet(charactersIn: "."))
        return PreferenceError(code: .ioFailure, message: "Could not update the offline cache of \(address) in \(cache?.suite.fileURL?.path ?? "?"): \(why). The suite works on; without the cache it cannot open while the cluster is unreachable.", path: cache?.suite.fileURL?.path)
    }

    var location: String? { address }

    var timeout: Duration { client.timeout }

    /// The cluster and prefix, for messages.
    var address: String { "etcd \(client.endpoints.joined(separator: ",")) prefix \(String(decoding: prefix, as: UTF8.self))" }

    // MARK: Keys and values

    private func etcdKey(_ key: PlistKey) -> Data { prefix + Data(key.string.utf8) }

    /// The suite key of an etcd key under the prefix; `nil` (and a notice) for one that is not
    /// UTF-8, which no suite key names: it is left alone, never compared or written under
    /// another name.
    private func suiteKey(_ key: Data, notices: inout [PreferenceError]) -> PlistKey? {
        guard key.starts(with: prefix), !key.dropFirst(prefix.count).starts(with: Self.reserved) else { return nil }
        guard let name = String(data: key.dropFirst(prefix.count), encoding: .utf8) else {
            notices.append(PreferenceError(code: .unsupportedValue, message: "The etcd key with bytes (base64) \(key.base64EncodedString()) under \(address) is not UTF-8, so no suite key can name it; it is left out of the suite and never written. Rename it with another etcd client if it belongs to the suite.", path: address))
            return nil
        }
        return PlistKey(name)
    }

    private func decode(_ kv: Etcdserverpb_KeyValue, notices: inout [PreferenceError]) -> PlistValue? {
        let bytes = kv.value
        guard !bytes.isEmpty else { return nil }
        do { return try PropertyListFormat.decode(Array(bytes)) } catch {
            // A value another program put: shown as the string it is, when it is text.
            if let text = String(bytes: bytes, encoding: .utf8) { return .string(text) }
            notices.append(PreferenceError(code: .corruptFile, message: "The etcd key \(String(decoding: kv.key, as: UTF8.self)) holds \(bytes.count) bytes that are neither a property list nor UTF-8 text; it is left out of the suite. Write it through SharedPrefs or prefs-watch.", path: address))
            return nil
        }
    }

    // MARK: Watching

    /// The cluster does not answer: try again in a second, for as long as it does not (the values
    /// stay pending, and in the offline cache).
    func retryDelay(after error: PreferenceError) -> Duration? {
        error.code == .clusterUnreachable ? .seconds(1) : nil
    }

    /// Watches the prefix from the last revision read, so that nothing falls between, until the
    /// subscription is released. The watch runs on the etcd thread (``EtcdExecutor``); what it
    /// finds goes to `sink` on a serial queue of its own, in order: the store's re-read (requests
    /// that wait for their answers) and the handlers that run where changes are read never take a
    /// thread of Swift's cooperative pool, nor the etcd thread.
    func subscribe(_ sink: @escaping @Sendable (BackendEvent) -> Void) -> Subscription {
        let deliveries = DispatchQueue(label: "SharedPrefs.etcd.watch")
        let sink: @Sendable (BackendEvent) -> Void = { event in deliveries.async { sink(event) } }
        let watch = Task(executorPreference: EtcdExecutor.shared) { [self] in
            var delay: Duration = .milliseconds(100)
            while !Task.isCancelled {
                let from = known.withLock { max($0.revision, $0.compacted) } + 1
                do {
                    try await follow(from: from, sink)
                    delay = .milliseconds(100)
                } catch let error as Compacted {
                    let compacted = error.revision
                    known.withLock { $0.compacted = max($0.compacted, compacted) }
                    if await quiet(through: compacted) { continue }
                    // Below the compaction point: re-read the prefix, diff, and watch on from there.
                    known.withLock { $0.mustResync = true }
                    sink(.failed(PreferenceError(code: .resynchronized, message: "The watch of \(address) fell below etcd's compaction point (revision \(compacted)), and suite keys changed in what was compacted; the suite was read again in full and diffed, so observers hear of every key that changed, but not of each step between.", path: address)))
                    sink(.changed)
                } catch EtcdClient.Failure.etcd(let refusal) {
                    sink(.failed(refusal.preferenceError(doing: "watch", address: address, endpoints: client.endpoints)))
                } catch {
                    if Task.isCancelled { return }
                    sink(.failed(PreferenceError(code: .clusterUnreachable, message: "The watch of \(address) broke (\(error)); it resumes from revision \(from) on the next endpoint that answers, so no change is missed.", path: address)))
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
        return Subscription { watch.cancel() }
    }

    /// Streams the prefix's events from `revision` until the stream ends.
    private func follow(from revision: Int64, _ sink: @escaping @Sendable (BackendEvent) -> Void) async throws {
        let create = Etcdserverpb_WatchCreateRequest.with { ($0.key, $0.rangeEnd, $0.startRevision) = (prefix, prefix.prefixEnd, revision) }
        try await client.watch(create) { [self] result in
            if result.canceled {
                guard result.compactRevision > 0 else {
                    let reason = result.cancelReason
                    let code = reason.contains("code = PermissionDenied") ? 7 : reason.contains("code = Unauthenticated") ? 16 : 2
                    throw EtcdClient.Failure.etcd(EtcdError(code: code, message: "etcd canceled the watch: \(reason.isEmpty ? "no reason given" : reason)"))
                }
                throw Compacted(revision: result.compactRevision)
            }
            if !result.events.isEmpty {
                let (at, events) = (result.header.revision, result.events)
                known.withLock { $0.events.append((at, events)) }
                sink(.changed)
            }
            return true
        }
    }

    // MARK: Reading

    func load() throws(PreferenceError) -> Loaded {
        if known.withLock({ $0.mustResync }) { return try resync() }
        let batches = known.withLock { k in
            defer { k.events = [] }
            return k.events
        }
        var changes: [EtcdCache.Change] = []
        var notices: [PreferenceError] = []
        let (before, after) = known.withLock { k in
            notices = k.cacheFailures
            k.cacheFailures = []
            let before = k.revision
            for batch in batches where batch.revision > k.revision {
                for event in batch.events {
                    guard let key = suiteKey(event.kv.key, notices: &notices) else { continue }
                    let revision = event.kv.modRevision
                    // Already known (this process wrote it, or a re-read saw it): skip.
                    if let seen = k.modRevisions[key], seen >= revision { continue }
                    k.modRevisions[key] = revision
                    if event.type == .delete { k.removed.insert(key) } else { k.removed.remove(key) }
                    changes.append((key, event.type == .delete ? nil : decode(event.kv, notices: &notices), revision))
                }
                k.revision = batch.revision
            }
            return (before, k.revision)
        }
        if after > before { cacheRecordLater(changes, at: after) }
        return numbered(Loaded(changes.isEmpty ? nil : .changes(changes.map { ($0.key, $0.value) }), notices: notices))
    }

    /// Every change is numbered by its revision: none is a gap in ``PreferenceSuite/changes(since:)``.
    var numbersEveryChange: Bool { true }

    /// `loaded` with the suite's number: the highest revision read or written, so that it never
    /// goes back when the watch brings another client's write older than this process's last.
    private func numbered(_ loaded: Loaded) -> Loaded {
        var loaded = loaded
        loaded.sequence = known.withLock { k in
            k.numbered = max(k.numbered, k.revision)
            return UInt64(max(0, k.numbered))
        }
        return loaded
    }

    /// A watch that etcd canceled because the revision it starts from was compacted away
    /// (`revision`: the compaction point; `0`, a history that failed otherwise).
    private struct Compacted: Error { let revision: Int64 }

    /// Whether the prefix changed nothing from the revision the suite is at through `compacted`,
    /// the compaction point a watch fell below: its keys there are the ones this process knows,
    /// with the same modification revisions. Then the suite moves to `compacted` with no re-read
    /// and no gap. (A key made and removed again entirely within the compacted revisions leaves
    /// nothing etcd can show; so does nothing else.)
    private func quiet(through compacted: Int64) async -> Bool {
        guard case .success(let response) = await client.asyncRange(.with { ($0.key, $0.rangeEnd, $0.revision) = (prefix, prefix.prefixEnd, compacted) }) else { return false }
        var ignored: [PreferenceError] = []
        return known.withLock { k in
            guard !k.mustResync, k.events.isEmpty, k.revision < compacted else { return false }
            var unmatched = k.modRevisions.count - k.removed.count
            for kv in response.kvs {
                guard let key = suiteKey(kv.key, notices: &ignored) else { continue }
                guard !k.removed.contains(key), k.modRevisions[key] == kv.modRevision else { return false }
                unmatched -= 1
            }
            guard unmatched == 0 else { return false }
            k.quiet = Array((k.quiet + [(k.revision, compacted)]).suffix(16))
            k.revision = compacted
            return true
        }
    }

    /// Reads the whole prefix, for the store to diff.
    private func resync(by deadline: ContinuousClock.Instant? = nil) throws(PreferenceError) -> Loaded {
        let response = try request("read") { () throws(EtcdClient.Failure) in try client.range(.prefix(prefix), by: deadline) }
        let loaded = adoptRange(response)
        known.withLock { k in
            k.mustResync = false
            k.events.removeAll { $0.revision <= k.revision }
        }
        return loaded
    }

    /// Makes a range of the whole prefix the stored state, at `revision` (the range's own, unless
    /// it was part of a `txn`), and returns it.
    private func adoptRange(_ response: Etcdserverpb_RangeResponse, at revision: Int64? = nil) -> Loaded {
        var values = PlistDictionary()
        var revisions: [PlistKey: Int64] = [:]
        var notices: [PreferenceError] = []
        for kv in response.kvs {
            guard let key = suiteKey(kv.key, notices: &notices), let value = decode(kv, notices: &notices) else { continue }
            values[key.string] = value
            revisions[key] = kv.modRevision
        }
        let revision = known.withLock { k in
            k.modRevisions = revisions
            k.removed = []
            k.revision = max(k.revision, revision ?? response.header.revision)
            return k.revision
        }
        cacheRecord(revisions.map { ($0.key, values.storage[$0.key], $0.value) }, at: revision, complete: true, notices: &notices)
        return numbered(Loaded(.full(values), notices: notices))
    }

    // MARK: Writing

    /// Writes what `plan` makes of the values read, by one deadline that every request it makes
    /// is given (what remains of it): a plain write's one request timeout after `start`, an
    /// `update`'s ten. An `update` whose comparison fails runs again on what the writer that came
    /// first left: at once for the first 8 attempts, then after random pauses of up to 1, 2, 4 …
    /// 50 ms (contending writers fall out of step); once less than a tenth of a request timeout is
    /// left before its deadline it fails, saying which keys it kept comparing (an attempt sent
    /// with less would as likely lose its answer, and leave the update neither known applied nor
    /// known not). Contention alone does not get there: every failed comparison is another
    /// writer's success.
    func commit(since start: ContinuousClock.Instant, _ plan: (Loaded) throws -> WritePlan) throws -> Committed {
        var loaded = known.withLock({ $0.mustResync }) ? try resync(by: start + client.timeout) : Loaded()
        var notices: [PreferenceError] = []
        var (attempts, lost) = (0, 0)
        while true {
            let plan = try plan(loaded)
            guard plan.changesSomething || plan.isTransaction else { return Committed(wrote: false) }
            if !plan.isTransaction {
                try putPlain(plan.operations, by: start + client.timeout, notices: &notices)
                return committed(notices)
            }
            let deadline = start + client.timeout * 10
            try moveInheritedFences(by: deadline)
            let pause: Duration = attempts < 9 ? .zero : .microseconds(Int.random(in: 0...min(1000 << min(attempts - 8, 6), 50_000)))
            if attempts > 0, ContinuousClock.now + pause + client.timeout / 10 >= deadline {
                let read = plan.reads.map { "keys " + $0.map(\.string).sorted().prefix(20).joined(separator: ", ") } ?? "the whole suite"
                let why = lost == 0 ? "each time, another writer had changed what it read first" : lost == attempts ? "each time its answer was lost, and it was found not applied"
                    : "\(attempts - lost) times another writer had changed what it read first, and \(lost) times its answer was lost and it was found not applied"
                throw PreferenceError(code: .lockTimedOut, message: "An update of \(address) did not get through in \(attempts) attempts over \(ContinuousClock.now - start): \(why) (\(read)). Its values are not written; try again, or read fewer keys in the update.", path: address)
            }
            guard let reread = try attemptTransaction(plan, attempt: attempts, pause: pause, by: deadline, lost: &lost, notices: &notices) else { return committed(notices) }
            loaded = reread
            attempts += 1
        }
    }

    /// A write made, with the suite's number after it.
    private func committed(_ notices: [PreferenceError]) -> Committed {
        let (failures, numbered) = known.withLock { k in
            defer { k.cacheFailures = [] }
            return (k.cacheFailures, k.numbered)
        }
        var committed = Committed(wrote: true, notices: notices + failures)
        committed.sequence = UInt64(max(0, numbered))
        return committed
    }

    /// Plain writes: the last writer wins per key, so no comparison but the ``Fence``'s; at most
    /// 127 operations per `txn` (etcd's default `--max-txn-ops` is 128, and the fence may be
    /// moved). A lost answer is retried: the same puts again.
    private func putPlain(_ operations: Operations, by deadline: ContinuousClock.Instant, notices: inout [PreferenceError]) throws(PreferenceError) {
        let ordered = Array(operations)
        for start in stride(from: 0, to: ordered.count, by: 127) {
            let chunk = ordered[start..<min(start + 127, ordered.count)]
            let ops = chunk.map { op($0.key, $0.value) }
            var response = Etcdserverpb_TxnResponse()
            // A failed comparison: a write of this process whose answer did not come landed, and
            // moved the fence; compared with its revision now, this one gets through.
            for _ in 0..<3 where !response.succeeded {
                do {
                    try moveInheritedFences(by: deadline)
                    response = try request("write") { () throws(EtcdClient.Failure) in try fencedTxn(ops, by: deadline) }
                } catch where error.code == .clusterUnreachable {
                    // Kept in the offline cache too, so that a restart does not lose them, with
                    // the fence when a copy may still land.
                    cache?.queue(Operations(uniqueKeysWithValues: ordered[start...].map { ($0.key, $0.value) }), fence: fence.withLock { $0.mustMove ? $0.key : nil })
                    throw error
                }
            }
            guard response.succeeded else {
                throw PreferenceError(code: .ioFailure, message: "A write of \(address) failed its comparison three times: another client keeps changing this process's fence key (under the prefix, after a 0xFF byte). Its values stay pending; find the client that writes keys it does not own.", path: address)
            }
            recordWritten(Operations(uniqueKeysWithValues: chunk.map { ($0.key, $0.value) }), at: response.header.revision, notices: &notices)
        }
    }

    /// Moves the ``inherited`` fences (a put each), and takes them out of the cache.
    private func moveInheritedFences(by deadline: ContinuousClock.Instant) throws(PreferenceError) {
        let fences = inherited.withLock { $0 }
        guard !fences.isEmpty else { return }
        let puts = fences.map { Etcdserverpb_RequestOp.put($0, Data()) }
        _ = try request("write") { () throws(EtcdClient.Failure) in try client.txn(.with { $0.success = puts }, by: deadline) }
        inherited.withLock { $0.removeAll(where: fences.contains) }
        cache?.forget(fences: fences)
    }

    /// One plain write's `txn`, built for each member it is sent to: it compares the fence, and
    /// moves it when a copy sent before may still land.
    private func fencedTxn(_ ops: [Etcdserverpb_RequestOp], by deadline: ContinuousClock.Instant) throws(EtcdClient.Failure) -> Etcdserverpb_TxnResponse {
        try client.call(by: deadline) { [fence] kv, metadata, options in
            let (txn, moves) = fence.withLock { f in
                (Etcdserverpb_TxnRequest.with {
                    $0.compare = [.modRevision(of: f.key, .equal, f.revision)]
                    $0.success = ops + (f.mustMove ? [.put(f.key, Data())] : [])
                    $0.failure = [.range(.key(f.key))]
                }, f.mustMove)
            }
            do {
                let response = try await kv.txn(request: ClientRequest(message: txn, metadata: metadata), options: options)
                fence.withLock { f in
                    if !response.succeeded, case .responseRange(let range)? = response.responses.first?.response {
                        (f.revision, f.mustMove) = (range.kvs.first?.modRevision ?? 0, false)
                    } else if moves {
                        (f.revision, f.mustMove) = (response.header.revision, false)
                    }
                }
                return response
            } catch {
                fence.withLock { $0.mustMove = true }
                throw error
            }
        }
    }

    private func op(_ key: PlistKey, _ operation: PendingOperation) -> Etcdserverpb_RequestOp {
        switch operation {
        case .set(let value): .put(etcdKey(key), Data(PropertyListFormat.binary.encode(value)))
        case .remove: .delete(etcdKey(key))
        }
    }

    /// One compare-and-swap attempt of an `update`: `nil` when it was applied, else what another
    /// writer that came first changed, for the body to run again on. The first attempt waits half
    /// a second for its answer (a member that forwarded it to a leader that just died never
    /// answers), each later one twice as long, up to the request timeout; an answer not come in
    /// time is resolved by the fence, so the attempt is applied once or not at all. `pause`
    /// comes before it is sent; nothing goes past `deadline`.
    private func attemptTransaction(
        _ plan: WritePlan, attempt: Int, pause: Duration, by deadline: ContinuousClock.Instant, lost: inout Int, notices: inout [PreferenceError]
    ) throws -> Loaded? {
        let token = Data(UUID().uuidString.utf8)
        var compared = Set(plan.operations.keys)
        var compares: [Etcdserverpb_Compare] = []
        let (revisions, snapshotRevision, tokenRevision) = known.withLock { ($0.modRevisions, max($0.revision, $0.complete), $0.tokenRevision) }
        let stored = plan.stored()
        if let reads = plan.reads {
            compared.formUnion(reads)
        } else {
            // The body read the whole suite: no key may have appeared or changed since.
            compared.formUnion(stored.storage.keys)
            compares.append(.modRevision(of: prefix, rangeEnd: prefix.prefixEnd, .less, snapshotRevision + 1))
        }
        for key in compared {
            if stored.storage[key] == nil {
                compares.append(.absent(etcdKey(key)))
            } else {
                compares.append(.modRevision(of: etcdKey(key), .equal, revisions[key] ?? 0))
            }
        }
        compares.append(.modRevision(of: tokenKey, .equal, tokenRevision))
        // 126 keys, the transaction key and the fence (``Fence``: a plain write's copy may still
        // land, and this update moves the fence when so) make etcd's 128.
        guard compares.count <= 128, plan.operations.count <= 126 else {
            throw PreferenceError(code: .unsupportedOperation, message: "An update of \(address) compares \(compares.count) keys and writes \(plan.operations.count); etcd takes at most 128 operations of each kind in one transaction (its --max-txn-ops), of which an update compares up to 128 keys and writes up to 126 (the other two are the library's own keys). Read single keys through the transaction's subscript rather than `values`, or split the update.", path: address)
        }
        let (fenceKey, moves) = fence.withLock { ($0.key, $0.mustMove) }
        var txn = Etcdserverpb_TxnRequest()
        txn.compare = compares
        txn.success = plan.operations.map { op($0.key, $0.value) } + [.put(tokenKey, token)] + (moves ? [.put(fenceKey, Data())] : [])
        txn.failure = [.range(.prefix(prefix)), .range(.key(tokenKey))]
        let response: Etcdserverpb_TxnResponse
        do {
            response = try client.txn(txn, failover: false, once: .milliseconds(500 << min(attempt, 6)), pause: pause, by: deadline)
        } catch .unreachable(let why) {
            // The answer was lost: the attempt may have been applied. Find out before anything else.
            if let applied = try resolve(token: token, after: tokenRevision, why: why, by: deadline) {
                if moves { fence.withLock { ($0.revision, $0.mustMove) = (applied, false) } }
                recordWritten(plan.operations, at: applied, transaction: true, notices: &notices)
                return nil
            }
            lost += 1
            return Loaded()
        } catch {
            throw failed("write", error)
        }
        let revision = response.header.revision
        if response.succeeded {
            if moves { fence.withLock { ($0.revision, $0.mustMove) = (revision, false) } }
            recordWritten(plan.operations, at: revision, transaction: true, notices: &notices)
            if plan.reads == nil { known.withLock { $0.complete = max($0.complete, revision) } }
            return nil
        }
        // Someone came first: adopt the prefix and the token key as they are now, and retry.
        let ranges = response.responses.compactMap { op -> Etcdserverpb_RangeResponse? in
            if case .responseRange(let range) = op.response { range } else { nil }
        }
        let reread = ranges.first.map { adoptRange($0, at: revision) } ?? Loaded()
        let latestToken = ranges.dropFirst().first?.kvs.first?.modRevision ?? 0
        known.withLock { $0.tokenRevision = latestToken }
        return reread
    }

    /// Records a successful write at `revision`: its keys' revisions (and the transaction key's,
    /// for an `update`), here and in the offline cache.
    private func recordWritten(_ operations: Operations, at revision: Int64, transaction: Bool = false, notices: inout [PreferenceError]) {
        known.withLock { k in
            for (key, operation) in operations where revision >= k.modRevisions[key] ?? 0 {
                k.modRevisions[key] = revision
                if operation.value == nil { k.removed.insert(key) } else { k.removed.remove(key) }
            }
            if transaction { k.tokenRevision = max(k.tokenRevision, revision) }
            k.numbered = max(k.numbered, revision)
            k.written.append(revision)
            if k.written.count > 1024 { k.written.removeFirst(512) }
        }
        let changes = operations.map { ($0.key, $0.value.value, revision) }
        // A write takes values queued for its keys out of the queue before it returns: left there
        // by a process that ends first, they would be sent again by the next to open the suite.
        if cache?.isQueued(operations.keys) == true {
            cacheRecord(changes, at: nil, written: true, notices: &notices)
        } else {
            cacheRecordLater(changes, at: nil)
        }
    }

    /// Whether the attempt with `token` was applied, and at which revision; `nil` when it was not
    /// and never will be. A fence first: a `txn` that writes the transaction key only if it is
    /// still at `revision`. When the fence succeeds, the attempt was not applied and now cannot be;
    /// when it fails, the first write of the key after `revision` tells whose it was. Asked again
    /// every quarter second while no member answers, until the update's `deadline`.
    private func resolve(token: Data, after revision: Int64, why: String, by deadline: ContinuousClock.Instant) throws -> Int64? {
        let fence = Etcdserverpb_TxnRequest.with {
            $0.compare = [.modRevision(of: tokenKey, .equal, revision)]
            $0.success = [.put(tokenKey, Data("fence".utf8))]
        }
        let (start, quarter) = (ContinuousClock.now, Duration.milliseconds(250))
        var (lastFailure, pause) = (why, Duration.zero)
        while ContinuousClock.now + pause < deadline {
            do {
                let answer = try client.txn(fence, pause: pause, by: deadline)
                if answer.succeeded {
                    known.withLock { $0.tokenRevision = answer.header.revision }
                    return nil
                }
                return try firstWrite(of: tokenKey, after: revision, by: deadline).map { $0.value == token ? $0.revision : nil } ?? nil
            } catch EtcdClient.Failure.unreachable(let why) {
                (lastFailure, pause) = (why, quarter)
            } catch EtcdClient.Failure.deadlinePassed {
                break
            } catch {
                throw failed("find out whether an update was applied", error)
            }
        }
        throw PreferenceError(code: .clusterUnreachable, message: "An update of \(address) may or may not have been applied: its answer was lost (\(why)), and the cluster did not answer in the \(ContinuousClock.now - start) left before the update's deadline (\(lastFailure)). It is not retried, so that it is never applied twice; read the suite when the cluster is back.", path: address)
    }

    /// The first write of `key` after `revision` (a watch from `revision + 1`, read to its first
    /// event), by `deadline`; `nil` when the watch ended with nothing.
    private func firstWrite(of key: Data, after revision: Int64, by deadline: ContinuousClock.Instant) throws -> (value: Data, revision: Int64)? {
        let first = Lock<(value: Data, revision: Int64)?>(nil)
        let create = Etcdserverpb_WatchCreateRequest.with { ($0.key, $0.startRevision) = (key, revision + 1) }
        let outcome = watchOnce(create, by: deadline) { message in
            guard let event = message.events.first else { return !message.canceled }
            first.withLock { $0 = (event.kv.value, event.kv.modRevision) }
            return false
        }
        switch outcome {
        case .success: return first.withLock { $0 }
        case .failure(let error): throw failed("find out whether an update was applied", error)
        case nil: throw PreferenceError(code: .clusterUnreachable, message: "Could not find out whether an update of \(address) was applied: no member answered a watch of its transaction key before the update's deadline. It is not retried, so that it is never applied twice; read the suite when the cluster answers.", path: address)
        }
    }

    /// The writes under the prefix after revision `start` through `end`, one per revision, from a
    /// watch of every key from `start + 1`: every revision is some key's write, so the watch
    /// reaches `end` whether or not a suite key changed there. `nil` when etcd compacted them
    /// away, the cluster did not answer in three request timeouts, or this client may not watch
    /// every key (a role limited to the prefix): the stream then gives a gap. Revisions compacted
    /// away in which this process saw the prefix change nothing (``quiet(through:)``) are passed
    /// over: no gap for them.
    func history(after start: UInt64, through end: UInt64) -> [NumberedWrite]? {
        guard start < end else { return start == end ? [] : nil }
        guard let first = Int64(exactly: start + 1), let end = Int64(exactly: end) else { return nil }
        switch history(from: first, through: end, base: start) {
        case .success(let writes): return writes
        case .failure(let compacted):
            guard compacted.revision > 0, let quiet = known.withLock({ $0.quiet.last { $0.after < first && $0.through >= compacted.revision - 1 } }) else { return nil }
            return try? history(from: quiet.through + 1, through: end, base: start).get()
        }
    }

    /// The writes under the prefix from revision `first` through `end`; the compaction point
    /// (`0`: another failure) when etcd no longer has them all. A watch that breaks is resumed from
    /// the revision after the last it brought, on the next member (all of a revision's events come
    /// in one message), for three request timeouts in all.
    private func history(from first: Int64, through end: Int64, base start: UInt64) -> Result<[NumberedWrite], Compacted> {
        let writes = Lock((list: [NumberedWrite](), next: first, canceled: false, compacted: Int64(0)))
        let mine = known.withLock { Set($0.written) }
        let deadline = ContinuousClock.now + client.timeout * 3
        while case let (next, canceled) = writes.withLock({ ($0.next, $0.canceled) }), next <= end, !canceled, ContinuousClock.now < deadline {
            let create = Etcdserverpb_WatchCreateRequest.with { ($0.key, $0.rangeEnd, $0.startRevision, $0.prevKv) = (Data([0]), Data([0]), next, true) }
            let outcome = watchOnce(create, by: deadline) { [self] message in
                var ignored: [PreferenceError] = []
                return writes.withLock { w in
                    for event in message.events {
                        let revision = event.kv.modRevision
                        guard revision <= end else { break }
                        guard let key = suiteKey(event.kv.key, notices: &ignored) else { continue }
                        let change = NumberedWrite.Change(
                            key: key.string, old: event.hasPrevKv ? decode(event.prevKv, notices: &ignored) : nil,
                            new: event.type == .delete ? nil : decode(event.kv, notices: &ignored))
                        if w.list.last?.sequence == UInt64(revision) {
                            w.list[w.list.count - 1].changes.append(change)
                        } else {
                            w.list.append(NumberedWrite(sequence: UInt64(revision), base: w.list.last?.sequence ?? start, pid: mine.contains(revision) ? getpid() : 0, time: Date(), changes: [change]))
                        }
                    }
                    if let last = message.events.last?.kv.modRevision { w.next = max(w.next, last + 1) }
                    if message.canceled { (w.canceled, w.compacted) = (true, message.compactRevision) }
                    return w.next <= end && !message.canceled
                }
            }
            // A stream that broke before it brought anything: not again at once.
            if case .failure? = outcome, writes.withLock({ $0.next == next }) { Thread.sleep(forTimeInterval: 0.1) }
        }
        return writes.withLock { $0.next > end ? .success($0.list) : .failure(Compacted(revision: $0.compacted)) }
    }

    /// Runs a watch until `body` returns `false` or the stream ends, waiting on this thread (one
    /// of the library's, never the etcd thread) for three request timeouts at most (the stream's
    /// own checks end it within about two), or until `deadline`. `nil` when it did not end in time.
    private func watchOnce(_ create: Etcdserverpb_WatchCreateRequest, by deadline: ContinuousClock.Instant? = nil, _ body: @escaping @Sendable (Etcdserverpb_WatchResponse) -> Bool) -> Result<Void, any Error>? {
        let (client, limit) = (self.client, min(client.timeout * 3, ContinuousClock.now.duration(to: deadline ?? .now + client.timeout * 3)))
        return EtcdExecutor.shared.wait {
            await withTaskGroup(of: Result<Void, any Error>?.self) { group in
                group.addTask {
                    do { try await client.watch(create, body) } catch { return .failure(error) }
                    return .success(())
                }
                group.addTask {
                    try? await Task.sleep(for: limit)
                    return nil
                }
                defer { group.cancelAll() }
                return await group.next() ?? nil
            }
        }
    }

    // MARK: Errors

    private func request<T>(_ doing: String, _ body: () throws(EtcdClient.Failure) -> T) throws(PreferenceError) -> T {
        do { return try body() } catch { throw failed(doing, error) }
    }

    private func failed(_ doing: String, _ error: any Error) -> PreferenceError {
        switch error {
        case let error as PreferenceError: return error
        case EtcdClient.Failure.unreachable(let why):
            let then = doing == "write" ? "; the values stay pending and are written when it answers" : " (etcdctl --endpoints \(client.endpoints.joined(separator: ",")) endpoint health)"
            return PreferenceError(code: .clusterUnreachable, message: "Could not \(doing) \(address): no endpoint answered (\(why)). Check that the cluster is running and reachable\(then).", path: address)
        case EtcdClient.Failure.etcd(let error):
            return error.preferenceError(doing: doing, address: address, endpoints: client.endpoints)
        case EtcdClient.Failure.deadlinePassed:
            return PreferenceError(code: .clusterUnreachable, message: "Could not \(doing) \(address): the call's deadline passed before the request was sent (\(client.timeout) a request, ten for an update); nothing was sent. Check that the cluster answers, or raise EtcdOptions.timeout.", path: address)
        default:
            return PreferenceError(code: .ioFailure, message: "Could not \(doing) \(address): \(error)", path: address)
        }
    }
}
#endif
