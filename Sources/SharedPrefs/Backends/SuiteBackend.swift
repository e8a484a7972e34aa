import FoundationEssentials

/// Where a store's values live: memory (``MemoryBackend``), a suite file (``FileBackend``), or an
/// etcd prefix (`SharedPrefsEtcd`). A backend reads, writes and watches and returns what it read
/// and wrote; the snapshot, diff and observers are ``SuiteStore``'s. The store calls ``load()`` and
/// ``commit(since:_:)`` one at a time.
package protocol SuiteBackend: Sendable {
    /// The suite's file path or address, for messages; `nil` in memory.
    var location: String? { get }

    /// The longest a call waits (a lock, a cluster's answer), counted from when it was called.
    var timeout: Duration { get }

    /// Reads what changed in the stored values since the last load or commit.
    func load() throws(PreferenceError) -> Loaded

    /// One write with no other writer's change between its read and its write (a lock or a
    /// compare-and-swap): reads what changed, calls `plan` with it (again after a failed
    /// compare-and-swap), and writes the operations returned.
    /// - Parameter start: When the caller began to wait: a backend that waits gives up one timeout after.
    func commit(since start: ContinuousClock.Instant, _ plan: (Loaded) throws -> WritePlan) throws -> Committed

    /// Calls `sink` whenever the stored values may have changed elsewhere, and with failures no
    /// call returns, until the subscription is released.
    func subscribe(_ sink: @escaping @Sendable (BackendEvent) -> Void) -> Subscription

    /// Who holds what this suite's writes wait for (its lock), as a sentence for messages, or
    /// `nil` when nothing does or the backend cannot tell.
    var holder: String? { get }

    /// After a background write failed with `error`: how long to wait before writing again, or `nil`
    /// not to (the values stay pending: never a loop against a full disk).
    func retryDelay(after error: PreferenceError) -> Duration?

    /// The writes numbered `start`+1 through `end`, in order (``PreferenceSuite/changes(since:)``);
    /// `nil` when they are not all kept.
    func history(after start: UInt64, through end: UInt64) -> [NumberedWrite]?

    /// Whether every change the backend reads carries its write's number (etcd's revision), so
    /// that none is a gap; a file can be changed by a program that does not number its writes.
    var numbersEveryChange: Bool { get }
}

extension SuiteBackend {
    /// Nothing to tell of (a backend without a lock).
    package var holder: String? { nil }

    /// No history (a backend that keeps none).
    package func history(after start: UInt64, through end: UInt64) -> [NumberedWrite]? { nil }

    package var numbersEveryChange: Bool { false }
}

/// One numbered write: what ``PreferenceSuite/changes(since:)`` delivers, from a suite's journal
/// or an etcd watch.
package struct NumberedWrite: Equatable, Sendable {
    package var sequence: UInt64
    /// The number of the version the write was made on; `0` for a file without one.
    package var base: UInt64
    /// The writer's process id; `0` when unknown (another host).
    package var pid: Int32
    package var time: Date
    /// Each key the write changed, its value before and after (`nil`: absent).
    package var changes: [Change]

    package struct Change: Equatable, Sendable {
        package var key: String
        package var old: PlistValue?
        package var new: PlistValue?
        /// `false` for a value larger than ``Journal/maximumValueBytes``, whose values the
        /// record leaves out (`old` and `new` are then `nil`): read it from the suite.
        package var kept = true

        package init(key: String, old: PlistValue?, new: PlistValue?, kept: Bool = true) {
            (self.key, self.old, self.new, self.kept) = (key, old, new, kept)
        }
    }

    package init(sequence: UInt64, base: UInt64, pid: Int32, time: Date, changes: [Change]) {
        (self.sequence, self.base, self.pid, self.time, self.changes) = (sequence, base, pid, time, changes)
    }
}

/// The values of a suite as read: in full, or what changed since the last read or write.
package enum SuiteValues {
    case full(PlistDictionary)
    case changes(FileDelta)
}

/// What a backend read.
package struct Loaded {
    /// The values read; `nil` when nothing changed since the last load or commit.
    package var values: SuiteValues?
    /// Failures that did not stop the read (a value left out), for the store to report.
    package var notices: [PreferenceError] = []
    /// The binary file read, which then holds the values in memory (``SuiteSnapshot``).
    var image: SuiteImage? = nil
    /// The number of the write that made what was read (``PreferenceSuite/sequence``); `0` when
    /// that writer did not number it.
    package var sequence: UInt64 = 0
    /// Whether the changes come from the suite's journal, the file unread (``FileBackend``).
    var fromJournal = false

    package init(_ values: SuiteValues? = nil, notices: [PreferenceError] = []) {
        self.values = values
        self.notices = notices
    }
}

/// What a ``SuiteBackend/commit(since:_:)`` did.
package struct Committed {
    /// Whether it wrote (the plan changed something).
    package var wrote: Bool
    /// Failures that did not stop the write, for the store to report.
    package var notices: [PreferenceError] = []
    /// A failure to throw once the write is adopted: the write succeeded, but the caller must
    /// hear of something (a corrupt file moved aside).
    package var failure: PreferenceError? = nil
    /// The binary file written, which then holds the values in memory (``SuiteSnapshot``).
    var image: SuiteImage? = nil
    /// The number of the write, when it wrote.
    package var sequence: UInt64 = 0

    package init(wrote: Bool, notices: [PreferenceError] = [], failure: PreferenceError? = nil) {
        self.wrote = wrote
        self.notices = notices
        self.failure = failure
    }
}

/// What a backend tells its subscriber.
package enum BackendEvent: Sendable {
    /// The stored values may have changed: the store loads.
    case changed
    /// A failure no call returns (the watch broke, events were lost), for the store to report.
    case failed(PreferenceError)
}

/// A backend's subscription: released, it stops.
package final class Subscription: Sendable {
    private let cancel: @Sendable () -> Void

    package init(cancel: @escaping @Sendable () -> Void = {}) {
        self.cancel = cancel
    }

    deinit { cancel() }
}

/// What a write is to store, from ``SuiteStore``'s merge of its pending operations and transaction.
package struct WritePlan {
    /// The operations to persist, per key.
    package var operations: Operations
    /// Whether any of them changes a stored value: when none does, nothing needs writing.
    package var changesSomething: Bool
    /// The keys a transaction read, or `nil` when it read the whole suite or there was no
    /// transaction: a compare-and-swap backend must find them unchanged.
    package var reads: Set<PlistKey>?
    /// Whether the plan comes from a transaction (an `update` body), which must see every
    /// stored value current; plain sets merge per key whatever changed meanwhile.
    package var isTransaction: Bool
    /// The stored values as last read or written, before `operations`: a copy of the suite, made
    /// only when called.
    package var stored: () -> PlistDictionary
    /// One key's stored value as last read or written, before `operations`.
    package var storedValue: (PlistKey) -> PlistValue?
}
