#if Etcd
import Foundation
import SharedPrefs
import SharedPrefsLocking

extension PreferenceSuite {
    /// Opens a suite stored under a key prefix of an etcd v3 cluster, for processes on several
    /// machines: the same API as a file suite (reads from memory, coalesced writes, `update` as a
    /// compare-and-swap, per-key observers with old and new value).
    ///
    /// ```swift
    /// let suite = try PreferenceSuite(etcd: ["http://10.0.0.1:2379", "http://10.0.0.2:2379"], prefix: "apps/demo/")
    /// ```
    ///
    /// Each suite key is one etcd key, `prefix` + key; each value a binary property list. The
    /// suite is read in full here, then followed with a watch of the prefix. Every object for the
    /// same endpoints and prefix in a process shares one live store.
    ///
    /// - Parameters:
    ///   - endpoints: The members' client URLs (`http://host:2379`); requests go to the last one
    ///     that answered, and on to the next when it does not.
    ///   - prefix: The suite's key prefix; end it with a separator (`/`) so that no other suite's
    ///     prefix starts with it.
    ///   - timeout: How long one request waits for a member before trying the next.
    /// - Throws: ``PreferenceError`` with ``PreferenceError/Code/clusterUnreachable`` when no
    ///   endpoint answers, or ``PreferenceError/Code/invalidName`` for an empty prefix or endpoint list.
    public convenience init(etcd endpoints: [String], prefix: String, timeout: Duration = .seconds(5)) throws(PreferenceError) {
        guard !endpoints.isEmpty, !prefix.isEmpty else {
            throw PreferenceError(code: .invalidName, message: "An etcd suite needs at least one endpoint (http://host:2379) and a non-empty key prefix (got \(endpoints.count) endpoint(s) and prefix \"\(prefix)\").")
        }
        let client = EtcdClient(endpoints: endpoints, timeout: timeout)
        self.init(store: try EtcdStores.store(client: client, prefix: prefix))
    }
}

/// One live store per cluster and prefix in this process.
enum EtcdStores {
    private final class Weak: @unchecked Sendable { weak var store: SuiteStore? }
    private static let stores = Lock<[String: Weak]>([:])

    static func store(client: EtcdClient, prefix: String) throws(PreferenceError) -> SuiteStore {
        let key = client.endpoints.sorted().joined(separator: ",") + " " + prefix
        return try stores.withLock { (stores) throws(PreferenceError) -> SuiteStore in
            if let existing = stores[key]?.store { return existing }
            let backend = EtcdBackend(client: client, prefix: prefix)
            let store = SuiteStore(name: prefix, backend: backend)
            // Read first, then watch from the revision read: the watch starts there, so nothing falls between.
            try store.reload()
            backend.watch(store)
            let weak = Weak()
            weak.store = store
            stores[key] = weak
            return store
        }
    }
}
#endif
