#if Etcd
import Foundation
import SharedPrefs
import SharedPrefsLocking

/// The offline cache of an etcd suite: its last known state, and the writes not yet accepted by
/// the cluster, in a local suite file. With it, a suite opens while the cluster is unreachable
/// (reads come from the last known state, and the watch replays what changed since, from the
/// cached revision), and writes made offline survive a restart of the process.
///
/// The file is an ordinary suite (`prefs-watch read` shows it), with these keys:
/// - `etcd.revision`: the cluster revision the state is at;
/// - `value:<key>` and `revision:<key>`: a key's last known value and modification revision (a
///   removed key keeps its revision, without value);
/// - `queued:<key>`: a write not yet accepted, `{set: value, by: owner}` (no `set`: a removal),
///   where the owner is the process that queued it and its suite (`[value]` or `[]`: from a
///   version that did not say);
/// - `fence:<base64>`: the fence key (`data`) of a writer whose write was queued when its answer
///   did not come: a copy of it may still land. The next write made with this cache moves the
///   fence first (``EtcdBackend``), so that the copy no longer can, and takes the entry out.
///
/// Processes on one machine share the file: the state is written in `update` transactions that
/// never move a key back to an older revision, and queued writes merge per key as any suite's
/// writes do. A queued write is sent by the next process (or suite) to open the suite only once
/// its owner is gone: while it lives, the write is still pending in it, and it sends it itself
/// (sent by another too, it could land after a newer write of the owner's, over it).
final class EtcdCache: Sendable {
    let suite: PreferenceSuite
    /// What this cache's queued writes say of their owner: the process ID, the process's start
    /// time (`/proc/<pid>/stat`: a later process with the same ID is another), and this cache.
    private let owner: String
    /// This process's caches that are open, by owner.
    private static let open = Lock<[String: Weak]>([:])
    private struct Weak { weak var cache: EtcdCache? }
    /// Set at exit (``recordAllAtExit()``): from then on, records are made at once.
    private static let exiting = Lock(false)
    /// Changes not yet recorded (``recordLater(_:at:failed:)``).
    private let later = Lock<[Batch]>([])
    private typealias Batch = (changes: [Change], revision: Int64?)
    /// A key's value (`nil`: removed) at its modification revision.
    typealias Change = (key: PlistKey, value: PlistValue?, revision: Int64)
    /// The queue that records them, every cache's: at exit, one `sync` waits for all.
    private static let writes = DispatchQueue(label: "SharedPrefs.etcd.cache")

    /// What the cache holds.
    struct State {
        var values = PlistDictionary()
        var revisions: [PlistKey: Int64] = [:]
        var revision: Int64 = 0
        var queued: Operations = [:]
        /// Fences of writers whose write may still land (``queue(_:fence:)``).
        var fences: [Data] = []
    }

    init(fileURL: URL) throws(PreferenceError) {
        let directory = fileURL.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PreferenceError(code: .ioFailure, message: "Could not create the etcd suite's offline cache directory \(directory.path): \(error.localizedDescription). Pass another cache, or none.", path: directory.path)
        }
        Self.installExitHook
        suite = try PreferenceSuite(fileURL: fileURL, options: .init(durability: .none, filePermissions: 0o600))
        owner = "\(getpid()) \(Self.startTime(of: getpid()) ?? "?") \(UUID().uuidString)"
        Self.open.withLock { $0[owner] = Weak(cache: self) }
    }

    /// What was left for later is recorded on the queue (the last reference may go on any thread,
    /// one of Swift's cooperative pool among them, and a record may wait for the file's lock), or
    /// here at exit.
    deinit {
        Self.open.withLock { _ = $0.removeValue(forKey: owner) }
        let (batches, suite) = (later.withLock { $0 }, suite)
        guard !batches.isEmpty else { return }
        if Self.exiting.withLock({ $0 }) {
            try? Self.record(batches, in: suite)
        } else {
            Self.writes.async { try? Self.record(batches, in: suite) }
        }
    }

    /// Records what every cache holds for later, at exit, after the writes the exit flush makes
    /// (whichever of the two exit handlers runs first) and what caches let go left on the queue.
    private static let installExitHook: Void = {
        atexit { EtcdCache.recordAllAtExit() }
    }()

    private static func recordAllAtExit() {
        exiting.withLock { $0 = true }
        writes.sync {
            for cache in open.withLock({ $0.values.compactMap(\.cache) }) { cache.recordNow(failed: { _ in }) }
        }
    }

    /// A process's start time, in clock ticks after boot (field 22 of `/proc/<pid>/stat`, after
    /// the command name in parentheses, which may hold spaces); `nil`: no such process.
    static func startTime(of pid: pid_t) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Whether the owner of a queued write still holds it pending: its process runs (the same
    /// one: the start time matches), and, in this process, its cache is open.
    private static func holds(_ owner: String) -> Bool {
        let parts = owner.split(separator: " ").map(String.init)
        guard parts.count == 3, let pid = pid_t(parts[0]), startTime(of: pid) == parts[1] else { return false }
        return pid != getpid() || open.withLock { $0[owner] != nil }
    }

    /// A queued write's operation, and its owner (`nil`: the entry does not say).
    private static func queued(_ entry: PlistValue) -> (operation: PendingOperation, owner: String?)? {
        switch entry {
        case .array(let operation): (operation.first.map { .set($0) } ?? .remove, nil)
        case .dictionary(let entry): (entry["set"].map { .set($0) } ?? .remove, entry["by"].flatMap { if case .string(let by) = $0 { by } else { nil } })
        default: nil
        }
    }

    /// The default cache file of a suite: `$XDG_CACHE_HOME/sharedprefs/etcd/` (else `~/.cache/…`),
    /// named after the prefix and a hash of the endpoints, the prefix and whom etcd takes the suite
    /// for (its user, its client certificate file): suites of two etcd users never share a cache, so
    /// neither reads offline what only the other may read, nor sends the other's queued writes.
    static func defaultURL(endpoints: [String], prefix: String, user: String? = nil, certificate: URL? = nil) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? URL(filePath: $0) : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser.appending(path: ".cache")
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        let readable = String(prefix.map { allowed.contains($0) ? $0 : "_" }.prefix(64))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        // Without a user or certificate, the name is the one it was before they counted.
        let identity = [user.map { "\u{0}user " + $0 }, certificate.map { "\u{0}certificate " + $0.standardizedFileURL.path }]
        for byte in (endpoints.sorted().joined(separator: ",") + "\u{0}" + prefix + identity.compactMap { $0 }.joined()).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return base.appending(path: "sharedprefs/etcd/\(readable)-\(String(hash, radix: 16)).plist")
    }

    /// The cached state; `nil` when the cache holds none yet. Its queued writes are those whose
    /// owner is gone.
    func load() -> State? {
        let stored = suite.storedValues
        guard let revision = stored["etcd.revision"]?.int64 else { return nil }
        var state = State(revision: revision)
        for (key, value) in stored {
            if let name = key.dropping("value:") {
                state.values[name] = value
            } else if let name = key.dropping("revision:"), let revision = value.int64 {
                state.revisions[PlistKey(name)] = revision
            } else if let name = key.dropping("queued:"), let (operation, owner) = Self.queued(value), !(owner.map(Self.holds) ?? false) {
                state.queued[PlistKey(name)] = operation
            } else if key.hasPrefix("fence:"), case .data(let fence) = value {
                state.fences.append(fence)
            }
        }
        return state
    }

    /// Records values read or written at their revisions. `revision` is the revision the whole
    /// prefix is now known at (a range, or a watch response: `nil` for a write, which says nothing
    /// of other keys); with `complete`, `changes` is the whole prefix and every other key is gone.
    /// A key already cached at a newer revision is kept. A queued write leaves the queue when the
    /// cluster now holds its value, or, with `written`, when `changes` are this process's write
    /// of its key, made just now (whatever the value: left there, the next process to open the
    /// suite sent it again, over the newer value).
    func record(_ changes: [Change], at revision: Int64?, complete: Bool = false, written: Bool = false) throws {
        try Self.record(changes, at: revision, complete: complete, written: written, in: suite)
    }

    private static func record(
        _ changes: [Change], at revision: Int64?, complete: Bool = false, written: Bool = false, in suite: PreferenceSuite
    ) throws {
        try suite.update { cache in
            if complete, let revision {
                let present = Set(changes.map(\.key.string))
                for key in cache.values.keys {
                    guard let name = key.dropping("revision:"), !present.contains(name),
                        (cache[key]?.int64 ?? 0) <= revision
                    else { continue }
                    cache["value:" + name] = nil
                    cache[key] = nil
                }
            }
            for (key, value, keyRevision) in changes {
                let name = key.string
                if written { cache["queued:" + name] = nil }
                if let cached = cache["revision:" + name]?.int64, cached > keyRevision { continue }
                cache["value:" + name] = value
                cache["revision:" + name] = .integer(keyRevision)
                if let queued = cache["queued:" + name].flatMap(Self.queued), queued.operation.value == value {
                    cache["queued:" + name] = nil
                }
            }
            if let revision, (cache["etcd.revision"]?.int64 ?? 0) < revision { cache["etcd.revision"] = .integer(revision) }
        }
    }

    /// ``record(_:at:complete:written:)`` 50 ms later, on the caches' queue, together with what
    /// comes meanwhile: a delivery or a write does not wait for the file (a locked, merged write:
    /// it added about 0.45 ms to a delivery's p50 and 0.2 ms to a `synchronize()`'s, and made at
    /// once on another thread, it took the CPU the delivery needed; BENCHMARKS "etcd: the offline
    /// cache off the delivery path"). What is left when the cache goes or the process exits is
    /// recorded then. A process killed first leaves the cache older, never wrong: it is the last
    /// known state, and a suite opened from it replays what changed since its revision. A write
    /// recorded so takes nothing out of the queue (what is queued meanwhile is newer): a write of
    /// a key with a queued write (``isQueued(_:)``) is recorded before it returns, `written`.
    /// `failed` gets what stopped a record.
    func recordLater(_ changes: [Change], at revision: Int64?, failed: @escaping @Sendable (any Error) -> Void) {
        guard later.withLock({ l in
            l.append((changes, revision))
            return l.count == 1
        }) else { return }
        if Self.exiting.withLock({ $0 }) { return Self.writes.sync { recordNow(failed: failed) } }
        // Weakly: a suite closed meanwhile lets its cache go at once, which records what is left.
        Self.writes.asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in self?.recordNow(failed: failed) }
    }

    /// Records what was left for later.
    private func recordNow(failed: (any Error) -> Void) {
        let batches = later.withLock { l in
            defer { l = [] }
            return l
        }
        do { try Self.record(batches, in: suite) } catch { failed(error) }
    }

    /// Records `batches` in one ``record(_:at:complete:written:)``.
    private static func record(_ batches: [Batch], in suite: PreferenceSuite) throws {
        guard !batches.isEmpty else { return }
        try record(batches.flatMap(\.changes), at: batches.compactMap(\.revision).max(), in: suite)
    }

    /// Whether the cache holds a queued write of one of `keys` (from any process, as this process
    /// last read the file).
    func isQueued(_ keys: some Sequence<PlistKey>) -> Bool {
        keys.contains { suite.value(forKey: "queued:" + $0.string) != nil }
    }

    /// Keeps writes the cluster did not accept, for whichever process reaches it next, and the
    /// fence of their writer when a copy of them may still land (its answer did not come).
    func queue(_ operations: Operations, fence: Data? = nil) {
        for (key, operation) in operations {
            var entry: PlistDictionary = ["by": .string(owner)]
            entry["set"] = operation.value
            suite.set(PlistValue.dictionary(entry), forKey: "queued:" + key.string)
        }
        if let fence { suite.set(PlistValue.data(fence), forKey: Self.fenceEntry(fence)) }
        _ = suite.synchronize()
    }

    /// Takes fences that were moved out of the cache.
    func forget(fences: [Data]) {
        for fence in fences { suite.removeObject(forKey: Self.fenceEntry(fence)) }
        _ = suite.synchronize()
    }

    private static func fenceEntry(_ fence: Data) -> String { "fence:" + fence.base64EncodedString() }
}

extension String {
    /// The rest of the string after `prefix`, when it starts with it.
    fileprivate func dropping(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}

extension PlistValue {
    fileprivate var int64: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }
}
#endif
