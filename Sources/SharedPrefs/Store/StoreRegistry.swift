#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import SharedPrefsLocking

/// One live store per suite in this process, keyed by its backend's identity, and the exit hook
/// that flushes them all. A suite is opened outside the registry's lock, once: its entry is a
/// once-cell other openers of it wait on. Stores are held weakly, and loaded outside every lock
/// (the strong reference a load makes may be the last, and no `deinit` runs under a lock).
package enum StoreRegistry {
    /// A suite's once-cell: opening, then open (its store held weakly) or failed.
    private final class Entry: @unchecked Sendable {
        private enum Outcome { case opening, open, failed }
        private let outcome = Lock(Outcome.opening)
        private let settled = DispatchGroup()
        /// Written once, before `outcome` becomes `.open`; read only after that, outside every lock.
        nonisolated(unsafe) private weak var store: SuiteStore?

        init() { settled.enter() }

        func fill(_ store: SuiteStore?) {
            self.store = store
            outcome.withLock { $0 = store == nil ? .failed : .open }
            settled.leave()
        }

        /// The store, once the opening ended; `nil` when it failed or the store is gone.
        func wait() -> SuiteStore? {
            settled.wait()
            return current
        }

        /// The store, if it is open and alive; `nil` while opening, too.
        var current: SuiteStore? { outcome.withLock { $0 == .open } ? store : nil }

        /// Whether the entry holds no live store any more (never while opening).
        var isGone: Bool { outcome.withLock { $0 != .opening } && current == nil }
    }

    /// A suite's identity, whatever its backend's type. Sendable: made only from `Sendable` ids.
    private struct Key: Hashable, @unchecked Sendable {
        let id: AnyHashable
    }

    private static let stores = Lock<[Key: Entry]>([:])
    private static let pruneThreshold = Lock(64)

    /// What identifies a suite file: its directory as the kernel knows it (every path to it
    /// shares one store) and its name.
    private struct FileSuite: Hashable, Sendable {
        var directory: FileIdentity
        var fileName: String
    }

    /// Returns the live store for `file`, creating and reading it (and its system layers,
    /// `layers`) on first use.
    static func store(name: String, layers: SystemLayerIdentity, file: SuiteFile) throws(PreferenceError) -> SuiteStore {
        guard let dir = try file.openDirectory(creating: true) else { throw file.missingDirectory() }
        defer { dir.close() }
        return try store(id: FileSuite(directory: dir.identity, fileName: file.fileName)) { () throws(PreferenceError) in
            // Read now, to fail early on an unusable file. Watched from the first read of cached values or
            // first observer on: a process that only writes starts no watcher.
            let backend = FileBackend(file: file)
            let loaded = try backend.load(in: dir)
            var layers = layers
            layers.launchArguments = file.options.launchArguments
            return SuiteStore(name: name, backend: backend, loaded: loaded, layers: layers.readsFiles || layers.launchArguments ? layers : nil)
        }
    }

    /// The live store for the suite `id` names, or the one `open` makes (outside the registry's lock;
    /// openers of the same suite wait for it), flushed at exit like every other.
    package static func store(id: some Hashable & Sendable, open: () throws(PreferenceError) -> SuiteStore) throws(PreferenceError) -> SuiteStore {
        _ = installExitHook
        let key = Key(id: AnyHashable(id))
        var stale: Entry? = nil
        while true {
            let (entry, mine) = stores.withLock { stores -> (Entry, Bool) in
                if let entry = stores[key], entry !== stale { return (entry, false) }
                let entry = Entry()
                stores[key] = entry
                return (entry, true)
            }
            guard mine else {
                if let store = entry.wait() { return store }
                stale = entry  // failed, or its store is gone: open it anew
                continue
            }
            let store: SuiteStore
            do { store = try open() } catch {
                entry.fill(nil)
                stores.withLock { if $0[key] === entry { $0[key] = nil } }
                throw error
            }
            entry.fill(store)
            prune()
            return store
        }
    }

    /// Forgets stores gone since, when the table has doubled: pruning at every opening would make
    /// opening n suites cost n².
    private static func prune() {
        guard let table = stores.withLock({ $0.count >= pruneThreshold.withLock { $0 } ? $0 : nil }) else { return }
        let gone = table.filter { $0.value.isGone }
        stores.withLock { stores in
            for (key, entry) in gone where stores[key] === entry { stores[key] = nil }
            pruneThreshold.withLock { $0 = max(64, 2 * stores.count) }
        }
    }

    /// Flushes every live store with pending writes, in parallel, within one timeout counted from now,
    /// at normal process exit.
    static func flushAll() {
        let start = ContinuousClock.now
        let entries = stores.withLock { Array($0.values) }
        let live = entries.compactMap(\.current).filter(\.hasPendingWrites)
        guard !live.isEmpty else { return }
        let queue = Lock(live)
        let done = DispatchGroup()
        for _ in 0..<min(live.count, 16) {
            done.enter()
            Threads.start(named: "prefs.exit") {
                while let store = queue.withLock({ $0.popLast() }) {
                    do { try store.flushSynchronously(since: start) } catch {
                        let keys = store.pendingKeys
                        logger.error("Could not save \(keys.count) pending value(s) of \(store.name) at exit (keys: \(keys.joined(separator: ", "))): \(error)")
                    }
                }
                done.leave()
            }
        }
        // Each flush gives up at its own timeout from `start`; the margin is for the last write.
        let bound = live.map(\.backend.timeout).max()! + .seconds(1)
        _ = done.wait(timeout: .after(bound))
    }

    private static let installExitHook: Void = {
        atexit { StoreRegistry.flushAll() }
    }()
}
