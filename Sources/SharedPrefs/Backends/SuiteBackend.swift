/// Where a store's values live: a suite file here, a key prefix in an etcd cluster in
/// `SharedPrefsEtcd`. The snapshot, the pending operations, the per-key diff and the observers
/// are ``SuiteStore``'s, one implementation for every backend; a backend only reads, writes and
/// watches, and hands what it read to the store (``SuiteStore/adoptRead(_:)``).
///
/// The store calls a backend under its I/O exclusion only, one call at a time.
package protocol SuiteBackend: Sendable {
    /// The suite's file path or address, for messages.
    var location: String { get }

    /// Whether a transaction's plan must say which keys it read (``WritePlan/reads``): a
    /// compare-and-swap backend checks them; a backend that writes under a lock need not.
    var comparesReads: Bool { get }

    /// Starts telling `store` of changes made elsewhere (``SuiteStore/scheduleReload()``, or
    /// ``SuiteStore/adoptRead(_:)`` directly).
    func watch(_ store: SuiteStore)

    /// Stops watching for `store`, which is going away.
    func unwatch(_ store: SuiteStore)

    /// Reads what changed since the last read or write and hands it to `store`.
    func reload(_ store: SuiteStore) throws(PreferenceError)

    /// One write: brings `store` up to date with the stored values (``SuiteStore/adoptRead(_:)``)
    /// where they may have changed, then asks `plan` for the operations to write and writes them,
    /// all such that no other writer's change falls in between (a lock, or a compare-and-swap:
    /// after a failed one the backend adopts what changed and asks `plan` again).
    /// - Parameter start: When the caller began to wait for this write: a backend that waits (for
    ///   a lock) gives up one timeout after it.
    /// - Returns: An error to throw once the write is adopted (the write succeeded, but the caller
    ///   must hear of something), or `nil`.
    func write(_ store: SuiteStore, since start: ContinuousClock.Instant, _ plan: () throws -> WritePlan) throws -> PreferenceError?
}

extension SuiteBackend {
    package var comparesReads: Bool { false }
}

/// What a write is to store, from ``SuiteStore``'s merge of its pending operations and transaction.
package struct WritePlan {
    /// The operations to persist, per key.
    package var operations: Operations
    /// Whether any of them changes a stored value: when none does, nothing needs writing.
    package var changesSomething: Bool
    /// The keys a transaction read (when the backend ``SuiteBackend/comparesReads``), or `nil`
    /// when it read the whole suite or there was no transaction: a compare-and-swap backend must
    /// find them unchanged (``SuiteStore/persistedValue(forKey:)``).
    package var reads: Set<PlistKey>?
    /// Whether the plan comes from a transaction (an `update` body), which must see every
    /// stored value current; plain sets merge per key whatever changed meanwhile.
    package var isTransaction: Bool
}
