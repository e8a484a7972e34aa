#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import SharedPrefsLocking
import Synchronization

/// The one live store of a suite in this process, shared by every `PreferenceSuite` for the same
/// file (or etcd prefix). Reads come from an in-memory snapshot; writes change it at once and are
/// persisted by a coalescing background writer; the backend's subscription schedules re-reads
/// when the stored values change. The store makes every state change: its backend only returns
/// what it read and wrote (``SuiteBackend``).
///
/// All I/O of a store (its ``SuiteBackend``'s calls) runs under `ioExclusion`: `update` and
/// `synchronize()` on the caller's thread, background work on the serial `ioQueue` (made at the
/// first such work: a store only ever written synchronously makes none, and its release starts
/// no thread to dispose of one), and a re-read the watcher thread runs inline when nothing holds it.
/// Everything else is in `state`, behind a mutex, and is never held across I/O.
package final class SuiteStore: Sendable {
    package let name: String
    /// Where the values live.
    let backend: any SuiteBackend
    /// The suite's file, for a file-backed suite.
    var file: SuiteFile? { (backend as? FileBackend)?.file }
    private let lazyQueue = Lock<DispatchQueue?>(nil)
    /// Held by all I/O. The watcher thread only ever *tries* it: when
    /// it is free the re-read runs inline (one thread wake-up saved per change another process
    /// makes), and when an `update` holds it the re-read is queued, so the watcher never waits
    /// for a transaction body, whatever that body waits for.
    private let ioExclusion = Lock(())
    /// The thread that holds `ioExclusion` (0: none), to tell a transaction body that calls back
    /// into the store.
    private let ioOwner = Atomic<UInt>(0)
    private let state = Lock(State())
    /// Whether the backend watches for other processes' changes: from the first read of the
    /// cached values or the first observer on, never for a store that is only written.
    private let watching = Atomic(false)
    /// The backend's subscription, while watching; released with the store.
    private let subscription = Lock<Subscription?>(nil)

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
        var values = PlistDictionary()
        /// The keys this process changed whose change is not yet adopted as stored. Every other
        /// key has its stored value in `values`: the stored state costs no second dictionary,
        /// and no copy of the suite is made when either changes.
        var local: [PlistKey: Local] = [:]
        var registered = PlistDictionary()
        var flushScheduled = false
        var reloadScheduled = false
        var observers: [UInt64: Observer] = [:]
        /// While the watcher thread re-reads inline: the ``OrderedDelivery``s it delivers once
        /// it has let `ioExclusion` go.
        var inlineDeliveries: [ObjectIdentifier: OrderedDelivery]? = nil
        var failureObservers: [UInt64: @Sendable (PreferenceError) -> Void] = [:]
        var nextObserverID: UInt64 = 0
        var reportedMismatches: Set<String> = []
        /// Failures found in the stored values that still stand (a corrupt file, a value or key
        /// that cannot be read): each is logged and reported once, and told to every failure
        /// observer when it subscribes. A full read replaces them.
        var standingNotices: [PreferenceError] = []
        var statistics = PreferenceSuite.Statistics()

        /// The value of `key` in the stored suite as last read or written.
        func storedValue(_ key: PlistKey) -> PlistValue? {
            if let local = local[key] { return local.stored }
            return values.storage[key]
        }

        /// The stored values in full: a copy of the suite, for the paths that need one.
        var stored: PlistDictionary {
            var stored = values
            for (key, local) in local { stored.storage[key] = local.stored }
            return stored
        }

        /// What changed in the stored suite if it now holds `new`: every key compared.
        func delta(to new: PlistDictionary) -> FileDelta {
            var delta: FileDelta = new.storage.compactMap { key, value in storedValue(key) == value ? nil : (key, value) }
            for (key, _) in values.storage where local[key] == nil && new.storage[key] == nil { delta.append((key, nil)) }
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

        /// The keys set and not yet taken by a write, for messages.
        var pendingKeys: [String] { local.filter { $0.value.operations.pending != nil }.keys.map(\.string).sorted() }
    }

    /// - Parameter loaded: The values read before the store is shared, to start from.
    package init(name: String, backend: any SuiteBackend, loaded: Loaded = Loaded()) {
        self.name = name
        self.backend = backend
        adopt(loaded)
    }

    /// Starts watching, at the first read of the cached values or the first observer, and reads
    /// once more what changed since the store was opened, unwatched (at once when no write is
    /// running; a running write reads it under the lock anyway).
    private func watch() {
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
        // Inside an update body this thread holds the I/O exclusion already.
        if holdsIO { reloadNow() } else { scheduleReload() }
    }

    // MARK: Reading

    func value(forKey key: String) -> PlistValue? {
        watch()
        return state.withLock { $0.values[key] ?? $0.registered[key] }
    }

    func storedValue(forKey key: String) -> PlistValue? {
        watch()
        return state.withLock { $0.values[key] }
    }

    func registeredValue(forKey key: String) -> PlistValue? {
        state.withLock { $0.registered[key] }
    }

    var statistics: PreferenceSuite.Statistics { state.withLock { $0.statistics } }

    func snapshot() -> (values: PlistDictionary, registered: PlistDictionary) {
        watch()
        return state.withLock { ($0.values, $0.registered) }
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

    /// Applies local operations: visible at once, observers told at once, persisted in the background.
    /// A value no reader would accept (see ``refusal(of:forKey:)``) is not stored; it is logged and
    /// reported to failure observers.
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

    /// Why `operation` must not be written, if it must not: a value nested deeper than the
    /// decoders read would make every reader call the whole suite corrupt.
    func refusal(of operation: PendingOperation, forKey key: String) -> PreferenceError? {
        guard case .set(let value) = operation, value.isNested(deeperThan: PlistValue.maximumNesting) else { return nil }
        return PreferenceError(
            code: .unsupportedValue,
            message: "Not stored: the value for key \"\(key)\" in suite \(name) is nested more than \(PlistValue.maximumNesting) levels deep, which no property-list reader of this library accepts. Flatten the value; nothing else in the suite was touched.",
            path: backend.location)
    }

    /// Records local operations and, when `flushing`, schedules a flush.
    private func applyLocked(flushing: Bool, _ body: (inout State, inout [PreferenceChange]) -> Void) {
        let scheduleFlush = change { s, changes -> Bool in
            body(&s, &changes)
            guard flushing, !s.flushScheduled else { return false }
            s.flushScheduled = true
            return true
        }
        if scheduleFlush { scheduleBackgroundFlush() }
    }

    /// A local operation: seen at once, written by the next flush.
    private func record(_ operation: PendingOperation, forKey key: PlistKey, in s: inout State, changes: inout [PreferenceChange]) {
        switch s.local[key]?.operations {
        case nil: s.local[key] = Local(stored: s.values.storage[key], operations: .pending(operation))
        case .pending: s.local[key]!.operations = .pending(operation)
        case .writing(let writing), .writingThenPending(let writing, _): s.local[key]!.operations = .writingThenPending(writing, operation)
        }
        see(key, operation.value, .local, in: &s, changes: &changes)
    }

    // MARK: Changing state

    /// The one way the state changes: runs `body` under the state lock, hands what it changed to
    /// observers in the order the state went through it, and makes the synchronous deliveries
    /// once the lock is let go (their handlers may call back into the suite).
    private func change<T>(_ body: (inout State, inout [PreferenceChange]) throws -> T) rethrows -> T {
        var synchronous: [() -> Void] = []
        let result = try state.withLock { s in
            var changes: [PreferenceChange] = []
            defer { synchronous = publish(changes, in: &s) }
            return try body(&s, &changes)
        }
        for deliver in synchronous { deliver() }
        return result
    }

    /// Makes `new` the value of `key` this process sees, and notes the change for observers.
    private func see(_ key: PlistKey, _ new: PlistValue?, _ origin: PreferenceChange.Origin, in s: inout State, changes: inout [PreferenceChange]) {
        let old = new.map { s.values.storage.updateValue($0, forKey: key) } ?? s.values.storage.removeValue(forKey: key)
        if old != new, !s.observers.isEmpty {
            changes.append(PreferenceChange(suite: name, key: key.string, oldValue: old, newValue: new, origin: origin))
        }
    }

    private func scheduleBackgroundFlush() {
        ioAsync { [self] in
            _Stages.mark("W")
            state.withLock { $0.flushScheduled = false }
            do {
                try commitPending(since: .now)
            } catch {
                // Reported by commit; written again when the backend says so.
                guard let error = error as? PreferenceError, let delay = backend.retryDelay(after: error) else { return }
                ioQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay / .nanoseconds(1)))) { [self] in apply([:], forceFlush: true) }
            }
        }
    }

    private var ioQueue: DispatchQueue {
        lazyQueue.withLock { queue in
            if let queue { return queue }
            let new = DispatchQueue(label: "SharedPrefs.io.\(name)")
            queue = new
            return new
        }
    }

    private func ioAsync(_ work: @escaping @Sendable () -> Void) {
        ioQueue.async { [self] in ioExclusion.withLock { _ in holdingIO(work) } }
    }

    /// Runs `work` under `ioExclusion`, on this thread, after the work queued before it (so that
    /// once `synchronize()` returns, no write of this store runs: a `fork` then copies no lock held).
    private func ioSync<T>(_ work: () throws -> T) rethrows -> T {
        var result: T? = nil
        if let queue = lazyQueue.withLock({ $0 }) {
            try queue.sync { try ioExclusion.withLock { _ in result = try holdingIO(work) } }
        } else {
            try ioExclusion.withLock { _ in result = try holdingIO(work) }
        }
        return result!
    }

    /// Runs `work`, which holds `ioExclusion`, as its owner.
    private func holdingIO<T>(_ work: () throws -> T) rethrows -> T {
        ioOwner.store(UInt(pthread_self()), ordering: .relaxed)
        defer { ioOwner.store(0, ordering: .relaxed) }
        return try work()
    }

    /// Whether this thread holds `ioExclusion`: it runs a transaction body, or what the body called.
    private var holdsIO: Bool { ioOwner.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Writes everything pending now; returns when it is on disk.
    /// - Throws: ``PreferenceError/Code/unsupportedOperation`` inside an `update` body of this
    ///   suite, where waiting for the write would wait for itself.
    /// Every failure is reported to failure observers, once.
    package func flushSynchronously() throws {
        guard state.withLock({ !$0.local.isEmpty || $0.flushScheduled }) else { return }
        do { try refuseInsideTransaction("synchronize() or the exit flush") } catch {
            report(error)
            throw error
        }
        // One lock timeout in all, counted from now: waiting for a write already running (for
        // the same lock, maybe) counts too.
        let start = ContinuousClock.now
        try ioSync { try commitPending(since: start) }
    }

    /// The keys written by the next flush, for messages.
    var pendingKeys: [String] { state.withLock { $0.pendingKeys } }

    /// Throws when called from a transaction body of this store (the only code of users that
    /// runs holding its I/O exclusion): whatever would wait for the store's I/O would wait for itself.
    private func refuseInsideTransaction(_ what: String) throws(PreferenceError) {
        guard holdsIO else { return }
        throw PreferenceError(
            code: .unsupportedOperation,
            message: "\(what) was called inside an update of the suite \(name); it would wait for the update that called it. Values set inside the update body are written right after it; call synchronize() after update returns.",
            path: backend.location)
    }

    /// Writes everything pending without blocking the caller's thread.
    func flush() async throws {
        let start = ContinuousClock.now
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            ioAsync { [self] in
                continuation.resume(with: Result { try commitPending(since: start) })
            }
        }
    }

    /// Runs `body` as a read-modify-write under the suite's file lock, on the freshest values.
    func update<R>(_ body: (inout PreferenceTransaction) throws -> R) throws -> R {
        try refuseInsideTransaction("update")
        let start = ContinuousClock.now
        return try withoutActuallyEscaping(body) { body in
            try ioSync { try commit(body, since: start)! }
        }
    }

    /// Writes the pending operations, if any. Runs under `ioExclusion` only.
    private func commitPending(since start: ContinuousClock.Instant) throws {
        _ = try commit(nil as ((inout PreferenceTransaction) throws -> Void)?, since: start)
    }

    /// The write path: the backend brings the values up to date under its lock (or
    /// compare-and-swap) → merge the pending operations key by key → run the transaction → the
    /// backend writes → tell observers. Returns `nil` when there was nothing to do.
    /// Runs under `ioExclusion` only.
    /// - Parameter start: When the caller began to wait: a lock is waited for until one lock
    ///   timeout after it.
    private func commit<R>(_ transaction: ((inout PreferenceTransaction) throws -> R)?, since start: ContinuousClock.Instant) throws -> R? {
        // The pending operations become the ones being written.
        let writing = state.withLock { s -> Operations? in
            var writing: Operations = [:]
            for (key, local) in s.local {
                guard case .pending(let operation) = local.operations else { continue }
                writing[key] = operation
                s.local[key]!.operations = .writing(operation)
            }
            return transaction != nil || !writing.isEmpty ? writing : nil
        }
        guard let writing else { return nil }
        do {
            var result: R? = nil
            var written: Operations = [:]
            var transactionKeys: Set<PlistKey> = []
            let committed = try backend.commit(since: start) { loaded throws -> WritePlan in
                adopt(loaded)
                // The transaction sees the stored values with the operations being written,
                // without the newer local ones still pending.
                var operations = writing
                var reads: Set<PlistKey>? = nil
                if let transaction {
                    var tx = state.withLock { s in
                        PreferenceTransaction(
                            base: s.values,
                            overrides: s.local.compactMapValues { local in
                                local.operations.pending.map { _ in local.operations.writing.map(\.value) ?? local.stored }
                            },
                            registered: s.registered)
                    }
                    result = try transaction(&tx)
                    if let (key, type) = tx.unencodable.min(by: { $0.key < $1.key }) {
                        throw PreferenceError(
                            code: .unsupportedValue,
                            message: "Not written, nor anything else of the update: it set key \"\(key)\" in suite \(name) to a \(type), \(noStoredForm).",
                            path: backend.location)
                    }
                    for (key, operation) in tx.operations {
                        if let error = refusal(of: operation, forKey: key.string) { throw error }
                    }
                    operations.merge(tx.operations) { _, transaction in transaction }
                    transactionKeys = Set(tx.operations.keys)
                    reads = tx.reads
                }
                written = operations
                let changesSomething = state.withLock { s in operations.contains { s.storedValue($0.key) != $0.value.value } }
                return WritePlan(
                    operations: operations, changesSomething: changesSomething, reads: reads, isTransaction: transaction != nil,
                    stored: { self.state.withLock { $0.stored } })
            }
            adoptWritten(written, transactionKeys: transactionKeys, counted: committed.wrote)
            for notice in committed.notices { reportNotice(notice) }
            if let failure = committed.failure { throw failure }
            return result
        } catch {
            // Put the operations back unless newer ones replaced them (after a quarantine they
            // were written and adopted). After a failed transaction body they are
            // written by the next background flush; after an I/O failure, by the next write, flush
            // or exit (not in a loop against a full disk). A failure of the write itself reaches
            // failure observers here, once, whoever else hears of it.
            let (retry, unwritten) = state.withLock { s in
                for (key, local) in s.local where local.operations.writing != nil {
                    s.local[key]!.operations = .pending(local.operations.pending ?? local.operations.writing!)
                }
                return (transaction != nil && !(error is PreferenceError) && !s.local.isEmpty, s.pendingKeys)
            }
            if retry { apply([:], forceFlush: true) }
            guard var error = error as? PreferenceError else { throw error }
            if error.code == .lockTimedOut, !unwritten.isEmpty {
                error.message += " Not written yet: \(unwritten.joined(separator: ", "))."
            }
            logger.error("\(error)")
            report(error)
            throw error
        }
    }

    // MARK: Re-reading

    /// Called by the watcher with a burst of events already coalesced: re-reads on the calling
    /// thread when no I/O is running, otherwise queues one re-read behind the running work.
    /// Never blocks on the store's I/O. Observers that take other processes' changes on this
    /// thread (``OrderedDelivery``) get them once the re-read has let `ioExclusion` go, so that
    /// their handlers may use the suite's I/O (`synchronize()`, `update`).
    package func scheduleReload() {
        _Stages.mark("R")
        let inline = ioExclusion.withLockIfAvailable { _ in
            state.withLock { $0.inlineDeliveries = [:] }
            holdingIO(reloadNow)
            return state.withLock { s in
                defer { s.inlineDeliveries = nil }
                return s.inlineDeliveries!.values
            }
        }
        if let inline {
            for delivery in inline { delivery.deliverPending(watched: { [weak self] in self?.report($0) }) }
            return
        }
        let schedule = state.withLock { s -> Bool in
            if s.reloadScheduled { return false }
            s.reloadScheduled = true
            return true
        }
        if schedule {
            ioAsync { [self] in
                state.withLock { $0.reloadScheduled = false }
                reloadNow()
            }
        }
    }

    /// Re-reads the file if its stamp changed and tells observers what other writers changed;
    /// failures go to the log and to failure observers. Runs under `ioExclusion`.
    func reloadNow() {
        do {
            try reload()
        } catch {
            logger.warning("\(error)")
            report(error)
        }
    }

    /// Reads what changed in the stored values; failures throw. Runs under `ioExclusion`, or
    /// from the registry before the store is shared.
    package func reload() throws(PreferenceError) {
        adopt(try backend.load())
    }

    /// Makes values just read the stored state: what changed in them reaches `values`, except
    /// where a local change not yet written hides it, and observers hear of it as external.
    /// Runs under `ioExclusion`.
    private func adopt(_ loaded: Loaded) {
        for notice in state.withLock({ $0.stand(loaded) }) { reportNotice(notice) }
        guard let read = loaded.values else { return }
        change { s, changes in
            s.statistics.fileReads += 1
            let delta: FileDelta
            switch read {
            case .full(let values): delta = s.delta(to: values)
            case .changes(let changes): delta = changes
            }
            for (key, new) in delta {
                if s.local[key] != nil {
                    s.local[key]!.stored = new
                } else {
                    see(key, new, .external, in: &s, changes: &changes)
                }
            }
            _Stages.mark("P")
        }
    }

    /// Makes values just written (or found to hold `operations` already) the stored state.
    /// A transaction's changes reach `values` here and are told to observers, on the thread that
    /// runs the `update`, before it returns.
    private func adoptWritten(_ operations: Operations, transactionKeys: Set<PlistKey>, counted: Bool) {
        change { s, changes in
            if counted { s.statistics.fileWrites += 1 }
            for (key, operation) in operations {
                if let pending = s.local[key]?.operations.pending {
                    // A newer local change still hides what was written.
                    s.local[key] = Local(stored: operation.value, operations: .pending(pending))
                } else {
                    s.local[key] = nil
                    see(key, operation.value, transactionKeys.contains(key) ? .local : .external, in: &s, changes: &changes)
                }
            }
        }
    }

    /// A failure a backend met that did not stop its read or write: logged and reported.
    private func reportNotice(_ notice: PreferenceError) {
        logger.warning("\(notice)")
        report(notice)
    }

    // MARK: Observers

    /// Hands changes to matching observers. Called with the state locked, so every observer gets
    /// changes in the order the state went through them; delivery itself is asynchronous.
    /// Returns the deliveries to synchronous observers, for the caller to make once the state is
    /// unlocked (they may call back into the suite).
    private func publish(_ changes: [PreferenceChange], in s: inout State) -> [() -> Void] {
        guard !changes.isEmpty else { return [] }
        var synchronous: [() -> Void] = []
        for observer in s.observers.values {
            let matching: [PreferenceChange]
            if case .all = observer.filter { matching = changes } else { matching = changes.filter { observer.filter.matches($0.key) } }
            if matching.isEmpty { continue }
            if let now = observer.synchronous, matching.allSatisfy({ $0.origin == .local }) {
                synchronous.append { now(matching) }
            } else if let ordered = observer.ordered {
                ordered.post(matching)
                if s.inlineDeliveries != nil {
                    s.inlineDeliveries![ObjectIdentifier(ordered)] = ordered
                } else {
                    ordered.deliverPendingOnQueue()
                }
            } else {
                observer.deliver(matching)
            }
        }
        return synchronous
    }

    /// Adds an observer; `initial` runs under the same lock, so no change slips between the two.
    func addObserver(
        _ filter: KeyFilter, deliver: @escaping @Sendable ([PreferenceChange]) -> Void,
        synchronous: (@Sendable ([PreferenceChange]) -> Void)? = nil, ordered: OrderedDelivery? = nil,
        initial: (State) -> Void = { _ in }
    ) -> UInt64 {
        watch()
        return state.withLock { s in
            s.nextObserverID += 1
            s.observers[s.nextObserverID] = Observer(filter: filter, deliver: deliver, synchronous: synchronous, ordered: ordered)
            initial(s)
            return s.nextObserverID
        }
    }

    /// How many change and failure observers are registered.
    var observerCount: Int { state.withLock { $0.observers.count + $0.failureObservers.count } }

    func removeObserver(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// Adds a failure observer, and tells it first the failures that still stand.
    func addFailureObserver(_ deliver: @escaping @Sendable (PreferenceError) -> Void) -> UInt64 {
        watch()
        let (id, standing) = state.withLock { s in
            s.nextObserverID += 1
            s.failureObservers[s.nextObserverID] = deliver
            return (s.nextObserverID, s.standingNotices)
        }
        for notice in standing { deliver(notice) }
        return id
    }

    func removeFailureObserver(_ id: UInt64) {
        _ = state.withLock { $0.failureObservers.removeValue(forKey: id) }
    }

    /// Reports a failure that no caller is waiting for (a background write, a corrupt file).
    package func report(_ error: any Error) {
        let failure = error as? PreferenceError ?? PreferenceError(code: .ioFailure, message: "\(error)", path: backend.location)
        for deliver in state.withLock({ Array($0.failureObservers.values) }) { deliver(failure) }
    }
}
