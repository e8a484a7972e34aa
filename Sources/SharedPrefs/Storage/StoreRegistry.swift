#if canImport(Glibc)
import Glibc
#endif
import SharedPrefsLocking

/// One live store per suite file in this process, and the exit hook that flushes them all.
enum StoreRegistry {
    private static let stores = Lock<[String: WeakStore]>([:])

    /// Returns the live store for `file`, creating, reading and watching it on first use.
    static func store(name: String, file: SuiteFile) throws(PreferenceError) -> SuiteStore {
        _ = installExitHook
        try file.createDirectory()
        // Identify the file by its real directory, so every path to it shares one store.
        let realDirectory = realpath(file.directory, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? file.directory
        let key = realDirectory + "/" + file.fileName
        return try stores.withLock { (stores) throws(PreferenceError) -> SuiteStore in
            if let existing = stores[key]?.store { return existing }
            // Watch first, then read, so no change can fall between the two. Fail early and
            // clearly on an unusable directory or file (insecure, a link, unreadable).
            let store = SuiteStore(name: name, file: file)
            InotifyWatcher.shared.watch(store, directory: file.directory, fileName: file.fileName)
            try store.reload()
            stores = stores.filter { $0.value.store != nil }
            stores[key] = WeakStore(store: store)
            return store
        }
    }

    /// Flushes every live store; runs at normal process exit (return from `main`, or `exit`).
    static func flushAll() {
        let live = stores.withLock { $0.values.compactMap(\.store) }
        for store in live {
            do { try store.flushSynchronously() } catch {
                logger.error("Could not save pending values of \(store.name) at exit: \(error)")
            }
        }
    }

    private static let installExitHook: Void = {
        atexit { StoreRegistry.flushAll() }
    }()
}
