#if canImport(Glibc)
import Glibc
#endif
import SharedPrefsLocking

/// One live store per suite file in this process, and the exit hook that flushes them all.
///
/// A load of a weak reference that finds the store alive makes a strong one, whose release can be
/// the last (the app let the suite go meanwhile): the registry never releases one under its lock.
/// Loads under the lock only return the store; pruning loads outside it.
package enum StoreRegistry {
    /// A store, held weakly: the registry never keeps a suite alive. A class, so that an entry is
    /// told from its replacement by identity, without loading the reference.
    private final class Entry: @unchecked Sendable {
        weak var store: SuiteStore?
        init(_ store: SuiteStore) { self.store = store }
    }

    private static let stores = Lock<[String: Entry]>([:])
    private static let pruneThreshold = Lock(64)

    /// Returns the live store for `file`, creating and reading it on first use.
    static func store(name: String, file: SuiteFile) throws(PreferenceError) -> SuiteStore {
        guard let dir = try file.openDirectory(creating: true) else { throw file.missingDirectory() }
        defer { dir.close() }
        // Identify the file by its real directory, so every path to it shares one store.
        let realDirectory = (try? Syscall.readLink(dir.procPath).get()) ?? file.directory
        return try store(key: realDirectory + "/" + file.fileName) { () throws(PreferenceError) in
            // Read now, to fail early and clearly on an unusable file (a link, unreadable, not a
            // property list). Watched from the first read of the cached values or the first
            // observer on, which reads again what changed meanwhile: a process that only writes
            // starts no watcher.
            let backend = FileBackend(file: file)
            let loaded = try backend.load(in: dir)
            return SuiteStore(name: name, backend: backend, loaded: loaded)
        }
    }

    /// Returns the live store for `key` (a file path, or another backend's address that is no
    /// path), or the one `open` makes, which then is flushed at exit like every other.
    package static func store(key: String, open: () throws(PreferenceError) -> SuiteStore) throws(PreferenceError) -> SuiteStore {
        _ = installExitHook
        let (store, table) = try stores.withLock { (stores) throws(PreferenceError) -> (SuiteStore, [String: Entry]?) in
            if let existing = stores[key]?.store { return (existing, nil) }
            let store = try open()
            stores[key] = Entry(store)
            return (store, stores.count >= pruneThreshold.withLock { $0 } ? stores : nil)
        }
        // Forget stores gone since, when the table has doubled: pruning at every opening would
        // make opening n suites cost n².
        if let table {
            let gone = table.filter { $0.value.store == nil }
            stores.withLock { stores in
                for (key, entry) in gone where stores[key] === entry { stores[key] = nil }
                pruneThreshold.withLock { $0 = max(64, 2 * stores.count) }
            }
        }
        return store
    }

    /// Flushes every live store; runs at normal process exit (return from `main`, or `exit`).
    static func flushAll() {
        // A handler that ends the process (`exit` in a handler on the watcher thread) holds that
        // thread for as long as exiting takes: that is no stall to report.
        HandlerWatchdog.shared.processIsExiting()
        let live = stores.withLock { $0.values.compactMap(\.store) }
        for store in live {
            do { try store.flushSynchronously() } catch {
                // Never more than the lock timeout per suite: a held lock cannot hang the exit.
                let keys = store.pendingKeys
                logger.error("Could not save \(keys.count) pending value(s) of \(store.name) at exit (keys: \(keys.joined(separator: ", "))): \(error)")
            }
        }
    }

    private static let installExitHook: Void = {
        atexit { StoreRegistry.flushAll() }
    }()
}
