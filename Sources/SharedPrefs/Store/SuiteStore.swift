#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import SharedPrefsLocking
import Synchronization

/// The one live store of a suite in this process, shared by every `PreferenceSuite` of the same
/// file (or etcd prefix): reads come from its snapshot, writes change it at once and are persisted
/// in the background, and it makes every state change (its ``SuiteBackend`` only reads and writes).
/// Its I/O runs as jobs of its ``SuiteOwner``, one at a time; `state` is behind a mutex never held
/// across I/O or the app's code.
package final class SuiteStore: Sendable {
    package let name: String
    /// Where the values live.
    let backend: any SuiteBackend
    /// The suite's file, for a file-backed suite.
    var file: SuiteFile? { (backend as? FileBackend)?.file }
    /// Runs the store's I/O, one job at a time.
    let owner: SuiteOwner
    let state = Lock(State())
    /// Whether the backend watches for other processes' changes: from the first read of the
    /// cached values or the first observer on, never for a store that is only written.
    private let watching = Atomic(false)
    /// The backend's subscription, while watching; released with the store.
    let subscription = Lock<Subscription?>(nil)

    struct Observer: Sendable {
        let filter: KeyFilter
        let deliver: @Sendable ([PreferenceChange]) -> Void
        /// This process's own changes go to `synchronous` instead, on the setting thread, after
        /// the state lock is released and before the set returns.
        var synchronous: (@Sendable ([PreferenceChange]) -> Void)? = nil
        /// With ``ObservationOptions/synchronousExternalChanges``: what `synchronous` does not
        /// take goes here instead of to `deliver`.
        var ordered: OrderedDelivery? = nil
    }

    /// Where a key this process changed stands: its stored value, and the operations not yet
    /// adopted as stored.
    struct Local {
        enum Operations {
            /// Set, not yet taken by a write.
            case pending(PendingOperation)
            /// Taken by the write running now.
            case writing(PendingOperation)
            /// Taken by the write running now, and set again since.
            case writingThenPending(PendingOperation, PendingOperation)

            var pending: PendingOperation? {
                switch self {
                case .pending(let operation), .writingThenPending(_, let operation): operation
                case .writing: nil
                }
            }

            var writing: PendingOperation? {
                switch self {
                case .writing(let operation), .writingThenPending(let operation, _): operation
                case .pending: nil
                }
            }
        }

        /// The key's value in the stored suite as last read or written (`nil`: not stored).
        var stored: PlistValue?
        var operations: Operations
    }

    struct State {
        /// What this process sees: the stored values with its own operations applied.
        var values = SuiteSnapshot()
        /// The keys this process changed whose change is not yet adopted as stored; every other key has
        /// its stored value in `values` (no second dictionary).
        var local: [PlistKey: Local] = [:]
        var registered = PlistDictionary()
        /// The suite's system layers (administrator and vendor defaults, locks); `nil` when it
        /// has none, as most suites: reads then cost what they did without layers.
        var layers: SystemLayers? = nil
        /// Failures found in the system layers, told to every failure observer when it subscribes.
        var layerNotices: [PreferenceError] = []

        /// Those of `problems` not among ``layerNotices`` already: the ones to say.
        func newNotices(_ problems: [PreferenceError]) -> [PreferenceError] {
            problems.filter { problem in !layerNotices.contains { $0.message == problem.message } }
        }
        /// Locked keys whose value in the suite's file was found ignored, each reported once.
        var ignoredLockedKeys: Set<PlistKey> = []
        /// Failures found under the state lock, reported once it is let go (``change(_:)``).
        var unreported: [PreferenceError] = []
        var flushScheduled = false
        var reloadScheduled = false
        var observers: [UInt64: Observer] = [:]
        /// While a reader thread re-reads inline: that thread, and the ``OrderedDelivery``s it delivers
        /// once its job has ended.
        var inlineDeliveries: (thread: UInt, deliveries: [ObjectIdentifier: OrderedDelivery])? = nil
        var failureObservers: [UInt64: @Sendable (PreferenceError) -> Void] = [:]
        var nextObserverID: UInt64 = 0
        var reportedMismatches: Set<String> = []
        /// Failures in the stored values that still stand: logged and reported once, told to each new
        /// failure observer; a full read replaces them.
        var standingNotices: [PreferenceError] = []
        var statistics = PreferenceSuite.Statistics()
        /// The number of the last write read or made (``PreferenceSuite/sequence``).
        var sequence: UInt64 = 0
        /// The number of the stored version as last read or written (`0`: one without a number).
        var fileSequence: UInt64 = 0
        /// Counts the stored versions adopted, for ``followers``; and the count at the last that
        /// no number accounts for (a writer that does not number its writes, a restored backup).
        var generation: UInt64 = 0
        var unnumberedGeneration: UInt64 = 0
        /// Told each time the stored version changes (``PreferenceSuite/changes(since:)``).
        var followers: [UInt64: @Sendable () -> Void] = [:]

        /// The value this process reads for `key` above registered defaults: a locked key's from
        /// the system layers, any other's from the suite (its own changes applied), else from them.
        func visible(_ key: PlistKey) -> PlistValue? {
            guard let layers else { return values[key] }
            return layers.value(of: key) { values[$0] }
        }

        /// Every key a layer above registered defaults holds, with the value this process reads
        /// (``visible(_:)``): the view every observer's first values come from.
        var visibleValues: PlistDictionary {
            guard let layers else { return values.dictionary }
            var visible = PlistDictionary()
            for key in values.keys.union(layers.keys) {
                visible.storage[key] = layers.value(of: key) { values[$0] }
            }
            return visible
        }

        /// What reads return for every key: ``visibleValues`` over registered defaults.
        var resolvedValues: PlistDictionary {
            registered.merging(visibleValues) { _, visible in visible }
        }

        /// The first values of an observer of `filter` (``ObservationOptions/initial``) as changes from
        /// nothing, in key order: every key `.key`/`.keys` name, held or not, and every held key that
        /// passes `.prefix` or `.all`.
        func initialChanges(_ filter: KeyFilter, suite: String) -> [PreferenceChange] {
            let current: [(key: String, value: PlistValue?)] = switch filter {
            case .key(let key): [(key, visible(PlistKey(key)))]
            case .keys(let keys): keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { ($0, visible(PlistKey($0))) }
            case .all, .prefix: visibleValues.sortedByKey.filter { filter.matches($0.key) }.map { ($0.key, $0.value) }
            }
            return current.map { PreferenceChange(suite: suite, key: $0.key, oldValue: nil, newValue: $0.value, origin: .local) }
        }

        /// The value of `key` in the stored suite as last read or written.
        func storedValue(_ key: PlistKey) -> PlistValue? {
            if let local = local[key] { return local.stored }
            return values[key]
        }

        /// The stored values in full: a copy of the suite, for the paths that need one.
        var stored: PlistDictionary {
            var stored = values.dictionary
            for (key, local) in local { stored.storage[key] = local.stored }
            return stored
        }

        /// What changed in the stored suite if it now holds `new`: every key compared.
        func delta(to new: PlistDictionary) -> FileDelta {
            var delta: FileDelta = new.storage.compactMap { key, value in storedValue(key) == value ? nil : (key, value) }
            for key in values.keys where local[key] == nil && new.storage[key] == nil { delta.append((key, nil)) }
            for (key, local) in local where local.stored != nil && new.storage[key] == nil { delta.append((key, nil)) }
            return delta
        }

        /// Records the failures `loaded` found as standing; returns those not standing already.
        mutating func stand(_ loaded: Loaded) -> [PreferenceError] {
            let fresh = loaded.notices.filter { notice in !standingNotices.contains { $0.message == notice.message } }
            if case .full = loaded.values {
                standingNotices = loaded.notices
            } else {
                standingNotices = Array((standingNotices + fresh).suffix(64))
            }
            return fresh
        }

        /// The keys set and not written yet (pending, or taken by a write still running), for messages.
        var pendingKeys: [String] { local.keys.map(\.string).sorted() }
    }

    /// Which system layers apply (``SystemLayers``); `nil` for none.
    let layerIdentity: SystemLayerIdentity?
    /// The watches of the system layers' files and directories, while watching.
    let layerWatches = Lock<[SystemLayers.Watched: Subscription]>([:])
    /// Whether a re-read of the system layers is queued on the owner.
    let layerReloadScheduled = Atomic(false)
    /// Whether a re-read that confirms a loss of the system layers is scheduled.
    let layerConfirmScheduled = Atomic(false)
    /// Events heard from the system layers' files and directories, to tell a quiet settle.
    let layerEvents = Atomic(0)
    /// Writes of this store that gave up waiting for the lock: a call that waited behind one
    /// gets no time more for its own wait (``runAsJob``).
    let lockTimeouts = Atomic(0)

    /// - Parameters:
    ///   - loaded: The values read before the store is shared, to start from.
    ///   - layers: Whose system layers apply (read now; watched with the suite).
    package init(name: String, backend: any SuiteBackend, loaded: Loaded = Loaded(), layers: SystemLayerIdentity? = nil) {
        self.name = name
        self.backend = backend
        layerIdentity = layers
        owner = SuiteOwner(label: "SharedPrefs.io.\(name)")
        adopt(loaded)
        if layers != nil { reloadLayers(confirming: true) }
    }

    /// Starts watching, at the first read of the cached values or the first observer, and reads once
    /// more what changed since the store was opened.
    func watch() {
        guard !watching.load(ordering: .acquiring),
            watching.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let subscription = backend.subscribe { [weak self] event in
            switch event {
            case .changed: self?.scheduleReload()
            case .failed(let error): self?.report(error)
            }
        }
        self.subscription.withLock { $0 = subscription }
        if layerIdentity != nil { scheduleLayerReload() }
        // Inside an update body this thread runs the store's job already.
        if owner.isCurrent { reloadNow() } else { scheduleReload() }
    }

    // MARK: Reading

    func value(forKey key: String) -> PlistValue? {
        watch()
        return state.withLock { $0.visible(PlistKey(key)) ?? $0.registered[key] }
    }

    /// The value above registered defaults: the suite's, or its system layers'.
    func storedValue(forKey key: String) -> PlistValue? {
        watch()
        return state.withLock { $0.visible(PlistKey(key)) }
    }

    func registeredValue(forKey key: String) -> PlistValue? {
        state.withLock { $0.registered[key] }
    }

    var statistics: PreferenceSuite.Statistics { state.withLock { $0.statistics } }

    /// The number of the last write read or made.
    var sequence: UInt64 {
        watch()
        return state.withLock { $0.sequence }
    }

    /// The stored values, with this process's changes (no layer, no registered default).
    var storedValues: PlistDictionary {
        watch()
        return state.withLock { $0.values.dictionary }
    }

    /// Every key's value as ``value(forKey:)`` reads it.
    var resolvedValues: PlistDictionary {
        watch()
        return state.withLock { $0.resolvedValues }
    }

    func register(_ defaults: PlistDictionary) {
        state.withLock { $0.registered.merge(defaults) { _, new in new } }
    }

    /// Registers `value()` for `key` unless something is registered there; `value` (an encoding)
    /// runs only then, so the typed subscript's calls cost one lookup after the first.
    func registerIfAbsent(_ key: String, _ value: () -> PlistValue?) {
        state.withLock { s in
            if s.registered[key] == nil, let encoded = value() { s.registered[key] = encoded }
        }
    }

    /// Logs (once per key and type) and reports a stored value that does not decode as `type`.
    func reportMismatch(key: String, stored: PlistValue, expected type: Any.Type) {
        let message = "The suite \(name) holds a \(stored.typeName) for key \"\(key)\", not a \(type); the default is used instead. Write a \(type) to the key, or reset it."
        let isNew = state.withLock { $0.reportedMismatches.insert("\(key)\u{0}\(stored.typeName)\u{0}\(type)").inserted }
        if isNew {
            logger.warning("\(message)")
            report(PreferenceError(code: .unsupportedValue, message: message, path: backend.location))
        }
    }

    // MARK: Writing

    /// Applies local operations: visible and told at once, persisted in the background. A value no
    /// reader would accept (``refusal(of:forKey:)``) is logged and reported instead.
    package func apply(_ operations: Operations, forceFlush: Bool = false) {
        var operations = operations
        for (key, operation) in operations {
            if let error = refusal(of: operation, forKey: key.string) {
                operations[key] = nil
                logger.error("\(error)")
                report(error)
            }
        }
        applyLocked(flushing: forceFlush || !operations.isEmpty) { s, changes in
            for (key, operation) in operations { record(operation, forKey: key, in: &s, changes: &changes) }
        }
    }

    /// ``apply(_:forceFlush:)`` for one key, without building a dictionary: the path of every `set`.
    func apply(_ operation: PendingOperation, forKey key: String) {
        if let error = refusal(of: operation, forKey: key) {
            logger.error("\(error)")
            return report(error)
        }
        applyLocked(flushing: true) { s, changes in record(operation, forKey: PlistKey(key), in: &s, changes: &changes) }
    }

    /// Why `operation` must not be written, if it must not: a value the decoders refuse (nested
    /// deeper than they read, a date that is no number) would make every reader call the whole
    /// suite corrupt.
    func refusal(of operation: PendingOperation, forKey key: String) -> PreferenceError? {
        guard case .set(let value) = operation, let why = value.unreadable(nestingLimit: PlistValue.maximumNesting) else { return nil }
        return PreferenceError(
            code: .unsupportedValue, message: "Not stored: the value for key \"\(key)\" in suite \(name) \(why); nothing else in the suite was touched.",
            path: backend.location)
    }

    /// Records local operations and, when `flushing`, schedules a flush.
    func applyLocked(flushing: Bool, _ body: (inout State, inout [PreferenceChange]) -> Void) {
        let scheduleFlush = change { s, changes -> Bool in
            body(&s, &changes)
            guard flushing, !s.flushScheduled else { return false }
            s.flushScheduled = true
            return true
        }
        if scheduleFlush { scheduleBackgroundFlush() }
    }

    /// A local operation, written by the next flush. A value for a locked key is refused; its removal
    /// is not (it changes nothing read).
    private func record(_ operation: PendingOperation, forKey key: PlistKey, in s: inout State, changes: inout [PreferenceChange]) {
        if operation.value != nil, let lock = s.layers?.lock(of: key) { return s.unreported.append(lockedKey([key.string], lockedBy: lock)) }
        switch s.local[key]?.operations {
        case nil: s.local[key] = Local(stored: s.values[key], operations: .pending(operation))
        case .pending: s.local[key]!.operations = .pending(operation)
        case .writing(let writing), .writingThenPending(let writing, _): s.local[key]!.operations = .writingThenPending(writing, operation)
        }
        see(key, operation.value, .local, in: &s, changes: &changes)
    }

    // MARK: Changing state

    /// The one way the state changes: runs `body` under the state lock, hands its changes to observers
    /// in order, and makes the synchronous deliveries after the lock (handlers may call back in).
    func change<T>(_ body: (inout State, inout [PreferenceChange]) throws -> T) rethrows -> T {
        var synchronous: [() -> Void] = []
        var unreported: [PreferenceError] = []
        var followers: [@Sendable () -> Void] = []
        let result = try state.withLock { s in
            var changes: [PreferenceChange] = []
            let before = s.generation
            defer {
                synchronous = publish(changes, in: &s)
                if !s.unreported.isEmpty { swap(&unreported, &s.unreported) }
                if s.generation != before { followers = Array(s.followers.values) }
            }
            return try body(&s, &changes)
        }
        for error in unreported {
            logger.error("\(error)")
            report(error)
        }
        for deliver in synchronous { deliver() }
        for follower in followers { follower() }
        return result
    }

    /// Makes `new` the value of `key` this process sees, and notes the change for observers when what
    /// this process reads changed (not under a lock, nor where a layer held the same value).
    func see(_ key: PlistKey, _ new: PlistValue?, _ origin: PreferenceChange.Origin, sequence: UInt64 = 0, in s: inout State, changes: inout [PreferenceChange]) {
        let sequence = sequence == 0 ? nil : sequence
        let before = s.layers == nil ? nil : s.visible(key)
        let old = s.values.set(key, new)
        guard let layers = s.layers else {
            if old != new, !s.observers.isEmpty {
                changes.append(PreferenceChange(suite: name, key: key.string, oldValue: old, newValue: new, origin: origin, sequence: sequence))
            }
            return
        }
        let after = s.visible(key)
        if before != after, !s.observers.isEmpty {
            changes.append(PreferenceChange(suite: name, key: key.string, oldValue: before, newValue: after, origin: origin, sequence: sequence))
        }
        if let lock = layers.lock(of: key), new != nil, s.ignoredLockedKeys.insert(key).inserted {
            s.unreported.append(PreferenceError(
                code: .keyLocked,
                message: "Ignored the value of key \"\(key.string)\" in suite \(name)'s file (\(backend.location ?? "memory")): \(lock) locks it, so the system layers' value stands. Remove the key from the suite, or ask whoever administers the machine to unlock it.",
                path: backend.location))
        }
    }

    /// The error of a write of values for locked keys (sorted), the first locked by `lock`.
    func lockedKey(_ keys: [String], lockedBy lock: String) -> PreferenceError {
        let named = keys.count == 1 ? "key \"\(keys[0])\" of suite \(name) is locked by \(lock); its value is"
            : "keys \(keys.map { "\"\($0)\"" }.joined(separator: ", ")) of suite \(name) are locked (the first by \(lock)); their values are"
        return PreferenceError(
            code: .keyLocked,
            message: "Not stored: \(named) the system layers'. Nothing was written. Ask whoever administers the machine, or use another key.",
            path: lock)
    }
}
