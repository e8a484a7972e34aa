#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import SharedPrefsLocking

/// The one live store of a suite in this process, shared by every `PreferenceSuite` for the same
/// file. Reads come from an in-memory snapshot; writes change it at once and are persisted by a
/// coalescing background writer; the watcher schedules re-reads when the file changes.
///
/// All file I/O of a store runs under `ioExclusion`: queued work on the serial `ioQueue`, and a
/// re-read the watcher thread runs inline when nothing holds it. Everything else is in `state`,
/// behind a mutex, and is never held across I/O.
final class SuiteStore: Sendable {
    let name: String
    /// `nil` for an in-memory suite.
    let file: SuiteFile?
    private let ioQueue: DispatchQueue
    /// Held by every job on `ioQueue` while it runs. The watcher thread only ever *tries* it: when
    /// it is free the re-read runs inline (one thread wake-up saved per change another process
    /// makes), and when an `update` holds it the re-read is queued, so the watcher never waits
    /// for a transaction body, whatever that body waits for.
    private let ioExclusion = Lock(())
    private let state = Lock(State())
    private static let ioQueueKey = DispatchSpecificKey<ObjectIdentifier>()

    struct Observer: Sendable {
        let filter: KeyFilter
        let deliver: @Sendable ([PreferenceChange]) -> Void
        /// This process's own changes go to `synchronous` instead, on the setting thread, after
        /// the state lock is released and before the set returns.
        var synchronous: (@Sendable ([PreferenceChange]) -> Void)? = nil
    }

    struct State {
        /// What this process sees: the file's values with `inFlight` and `pending` applied.
        var values = PlistDictionary()
        /// The file's value of every key in `pending` or `inFlight` (`nil`: not in the file). Every
        /// other key has its file value in `values`: the file's state costs no second dictionary,
        /// and no copy of the suite is made when either changes.
        var shadowed: [PlistKey: PlistValue?] = [:]
        /// Local operations not yet taken by the writer.
        var pending: Operations = [:]
        /// Local operations the writer is persisting right now.
        var inFlight: Operations = [:]
        var registered = PlistDictionary()
        /// The suite file as last read or written.
        var version = FileVersion.missing
        /// The same file's image, when it is a binary one: reads and writes then work on what changed.
        var image: SuiteImage?
        var flushScheduled = false
        var reloadScheduled = false
        var observers: [UInt64: Observer] = [:]
        var failureObservers: [UInt64: @Sendable (PreferenceError) -> Void] = [:]
        var nextObserverID: UInt64 = 0
        var reportedMismatches: Set<String> = []
        var statistics = PreferenceSuite.Statistics()
        /// When this process last looked for temporary files a dead writer left (see `commit`).
        var lastStaleScan: ContinuousClock.Instant?

        /// The value of `key` in the file as last read or written.
        func diskValue(_ key: PlistKey) -> PlistValue? {
            if let shadow = shadowed[key] { return shadow }
            return values.storage[key]
        }

        /// The file's values in full: a copy of the suite, for the paths that need one.
        var disk: PlistDictionary {
            var disk = values
            for (key, value) in shadowed { disk.storage[key] = value }
            return disk
        }

        /// What changed in the file if it now holds `new`: every key compared.
        func delta(to new: PlistDictionary) -> FileDelta {
            var delta: FileDelta = new.storage.compactMap { key, value in diskValue(key) == value ? nil : (key, value) }
            for (key, _) in values.storage where shadowed.index(forKey: key) == nil && new.storage[key] == nil { delta.append((key, nil)) }
            for (key, value) in shadowed where value != nil && new.storage[key] == nil { delta.append((key, nil)) }
            return delta
        }
    }

    init(name: String, file: SuiteFile?) {
        self.name = name
        self.file = file
        self.ioQueue = DispatchQueue(label: "SharedPrefs.io.\(name)")
        ioQueue.setSpecific(key: Self.ioQueueKey, value: ObjectIdentifier(self))
    }

    deinit {
        if let file { InotifyWatcher.shared.unwatch(ObjectIdentifier(self), fileName: file.fileName) }
    }

    private var isOnIOQueue: Bool { DispatchQueue.getSpecific(key: Self.ioQueueKey) == ObjectIdentifier(self) }

    // MARK: Reading

    func value(forKey key: String) -> PlistValue? {
        state.withLock { $0.values[key] ?? $0.registered[key] }
    }

    func storedValue(forKey key: String) -> PlistValue? {
        state.withLock { $0.values[key] }
    }

    func registeredValue(forKey key: String) -> PlistValue? {
        state.withLock { $0.registered[key] }
    }

    var statistics: PreferenceSuite.Statistics { state.withLock { $0.statistics } }

    func snapshot() -> (values: PlistDictionary, registered: PlistDictionary) {
        state.withLock { ($0.values, $0.registered) }
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
            report(PreferenceError(code: .unsupportedValue, message: message, path: file?.path))
        }
    }

    // MARK: Writing

    /// Applies local operations: visible at once, observers told at once, persisted in the background.
    /// A value no reader would accept (see ``refusal(of:forKey:)``) is not stored; it is logged and
    /// reported to failure observers.
    func apply(_ operations: Operations, forceFlush: Bool = false) {
        var operations = operations
        for (key, operation) in operations {
            if let error = refusal(of: operation, forKey: key.string) {
                operations[key] = nil
                logger.error("\(error)")
                report(error)
            }
        }
        applyLocked(forceFlush: forceFlush) { s, changes in
            for (key, operation) in operations { record(operation, forKey: key, in: &s, changes: &changes) }
        }
    }

    /// ``apply(_:forceFlush:)`` for one key, without building a dictionary: the path of every `set`.
    func apply(_ operation: PendingOperation, forKey key: String) {
        if let error = refusal(of: operation, forKey: key) {
            logger.error("\(error)")
            return report(error)
        }
        applyLocked(forceFlush: false) { s, changes in record(operation, forKey: PlistKey(key), in: &s, changes: &changes) }
    }

    /// Why `operation` must not be written, if it must not: a value nested deeper than the
    /// decoders read would make every reader call the whole suite corrupt.
    func refusal(of operation: PendingOperation, forKey key: String) -> PreferenceError? {
        guard case .set(let value) = operation, value.isNested(deeperThan: PlistValue.maximumNesting) else { return nil }
        return PreferenceError(
            code: .unsupportedValue,
            message: "Not stored: the value for key \"\(key)\" in suite \(name) is nested more than \(PlistValue.maximumNesting) levels deep, which no property-list reader of this library accepts. Flatten the value; nothing else in the suite was touched.",
            path: file?.path)
    }

    /// Runs `body` under the state lock, tells observers what it changed, and schedules a flush.
    private func applyLocked(forceFlush: Bool, _ body: (inout State, inout [PreferenceChange]) -> Void) {
        var synchronous: [() -> Void] = []
        let scheduleFlush = state.withLock { s -> Bool in
            var changes: [PreferenceChange] = []
            body(&s, &changes)
            synchronous = publish(changes, in: s)
            guard file != nil, !s.flushScheduled, !s.pending.isEmpty || forceFlush else { return false }
            s.flushScheduled = true
            return true
        }
        for deliver in synchronous { deliver() }
        if scheduleFlush { scheduleBackgroundFlush() }
    }

    private func record(_ operation: PendingOperation, forKey key: PlistKey, in s: inout State, changes: inout [PreferenceChange]) {
        let new = operation.value
        if file != nil, s.shadowed.index(forKey: key) == nil { s.shadowed[key] = .some(s.values.storage[key]) }
        let old: PlistValue?
        if let new { old = s.values.storage.updateValue(new, forKey: key) } else { old = s.values.storage.removeValue(forKey: key) }
        if file != nil { s.pending[key] = operation }
        if old != new, !s.observers.isEmpty {
            changes.append(PreferenceChange(suite: name, key: key.string, oldValue: old, newValue: new, origin: .local))
        }
    }

    private func scheduleBackgroundFlush() {
        ioAsync { [self] in
            state.withLock { $0.flushScheduled = false }
            do {
                try commitPending()
            } catch let error as PreferenceError where error.code == .lockTimedOut {
                // Reported by commit; try again in a second, for as long as the lock is held.
                ioQueue.asyncAfter(deadline: .now() + 1) { [self] in apply([:], forceFlush: true) }
            } catch {}  // commit reported it
        }
    }

    private func ioAsync(_ work: @escaping @Sendable () -> Void) {
        ioQueue.async { [self] in ioExclusion.withLock { _ in work() } }
    }

    private func ioSync<T>(_ work: () throws -> T) rethrows -> T {
        try ioQueue.sync { try ioExclusion.withLock { _ in try work() } }
    }

    /// Writes everything pending now; returns when it is on disk.
    /// - Throws: ``PreferenceError/Code/unsupportedOperation`` inside an `update` body of this
    ///   suite, where waiting for the write would wait for itself.
    func flushSynchronously() throws {
        guard file != nil else { return }
        try refuseInsideTransaction("synchronize() or the exit flush")
        try ioSync { try commitPending() }
    }

    /// The keys written by the next flush, for messages.
    var pendingKeys: [String] { state.withLock { $0.pending.keys.map(\.string).sorted() } }

    /// Throws when called from a transaction body of this store (the only code of users that
    /// runs on its I/O queue): whatever would wait for the store's I/O would wait for itself.
    private func refuseInsideTransaction(_ what: String) throws(PreferenceError) {
        guard isOnIOQueue else { return }
        throw PreferenceError(
            code: .unsupportedOperation,
            message: "\(what) was called inside an update of the suite \(name); it would wait for the update that called it. Values set inside the update body are written right after it; call synchronize() after update returns.",
            path: file?.path)
    }

    /// Writes everything pending without blocking the caller's thread.
    func flush() async throws {
        guard file != nil else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            ioAsync { [self] in
                continuation.resume(with: Result { try commitPending() })
            }
        }
    }

    /// Runs `body` as a read-modify-write under the suite's file lock, on the freshest values.
    func update<R>(_ body: (inout PreferenceTransaction) throws -> R) throws -> R {
        try refuseInsideTransaction("update")
        return try withoutActuallyEscaping(body) { body in
            try ioSync { try commit(body)! }
        }
    }

    /// Writes the pending operations, if any. Runs under `ioExclusion` only.
    private func commitPending() throws {
        _ = try commit(nil as ((inout PreferenceTransaction) throws -> Void)?)
    }

    /// The write path: lock → re-read if changed → merge pending operations key by key → run the
    /// transaction → atomic write → unlock → tell observers. Returns `nil` when there was nothing to do.
    /// Runs under `ioExclusion` only.
    private func commit<R>(_ transaction: ((inout PreferenceTransaction) throws -> R)?) throws -> R? {
        guard let file else {
            // In memory: a transaction runs on the snapshot; there is nothing to persist.
            guard let transaction else { return nil }
            var tx = state.withLock { PreferenceTransaction(base: $0.values, registered: $0.registered) }
            let result = try transaction(&tx)
            apply(tx.operations)
            return result
        }
        let hasWork = state.withLock { s in
            guard transaction != nil || !s.pending.isEmpty else { return false }
            s.inFlight = s.pending
            s.pending = [:]
            return true
        }
        guard hasWork else { return nil }
        do {
            guard let dir = try file.openDirectory(creating: true) else { throw file.missingDirectory() }
            defer { dir.close() }
            let lockfd = try file.lock(in: dir)
            defer { Syscall.close(lockfd) }
            removeStaleTemporaryFilesOccasionally(file, in: dir)

            let (lastVersion, lastImage) = state.withLock { ($0.version, $0.image) }
            var quarantined: PreferenceError? = nil
            if try file.confirm(lastVersion, in: dir) == nil {
                switch try file.readSettled(in: dir, previous: lastImage) {
                case .missing:
                    adoptRead(.full([:]), version: .missing, image: nil)
                case .loaded(let values, let current, let image):
                    state.withLock { $0.statistics.fileReads += 1 }
                    adoptRead(values, version: current, image: image)
                case .corrupt(let error, looksLikePropertyList: true, _):
                    // It stayed broken: keep it beside the suite, and start from our last good state.
                    let aside = try file.moveAside(in: dir)
                    quarantined = PreferenceError(
                        code: .corruptFile,
                        message: "\(error.message) It stayed so for \(SuiteFile.settleQuiet), so it was moved to \(aside), and the suite was written anew from this process's last good values (\(state.withLock { $0.disk.count }) keys) and its changes. Keys only that file held are not in the suite: recover them from \(aside).",
                        path: file.path)
                case .corrupt(let error, looksLikePropertyList: false, _):
                    throw error
                }
            }
            // The transaction sees the file's values with the operations being written, without
            // the newer local ones still pending.
            var (operations, image, version) = state.withLock { ($0.inFlight, $0.image, $0.version) }
            var result: R? = nil
            var transactionKeys: Set<PlistKey> = []
            if let transaction {
                var tx = state.withLock { s in
                    PreferenceTransaction(
                        base: s.values,
                        overrides: Dictionary(uniqueKeysWithValues: s.pending.keys.map { ($0, s.inFlight[$0].map(\.value) ?? s.diskValue($0)) }),
                        registered: s.registered)
                }
                result = try transaction(&tx)
                for (key, operation) in tx.operations {
                    if let error = refusal(of: operation, forKey: key.string) { throw error }
                }
                operations.merge(tx.operations) { _, transaction in transaction }
                transactionKeys = Set(tx.operations.keys)
            }
            let mustWrite = quarantined != nil || state.withLock { s in operations.contains { s.diskValue($0.key) != $0.value.value } }
            if mustWrite {
                let bytes: [UInt8]
                if file.options.format == .binary, let current = image, let (encoded, next) = try? current.applying(operations) {
                    bytes = encoded
                    image = next
                } else {
                    var disk = state.withLock { $0.disk }
                    disk.apply(operations)
                    bytes = file.options.format.encode(.dictionary(disk))
                    image = bytes.starts(with: BinaryPropertyList.magic) ? SuiteImage(bytes: bytes, keys: Array(disk.storage.keys), canonical: true) : nil
                }
                if file.options.format == .xml, bytes.starts(with: BinaryPropertyList.magic) {
                    logger.warning("\(file.path) is written as a binary property list: a string in it holds a character XML cannot carry (a control character such as ESC or NUL, U+FFFE or U+FFFF).")
                }
                version = try file.write(bytes, in: dir)
                state.withLock { $0.statistics.fileWrites += 1 }
            }
            adoptWritten(operations, version: version, image: image, transactionKeys: transactionKeys)
            // Written, and the caller told: what the corrupt file alone held is not in the suite.
            if let quarantined { throw quarantined }
            return result
        } catch {
            // Put the operations back unless newer ones replaced them (after a quarantine they
            // were written: `adopt` emptied `inFlight`). After a failed transaction body they are
            // written by the next background flush; after an I/O failure, by the next write, flush
            // or exit (not in a loop against a full disk). A failure of the write itself reaches
            // failure observers here, once, whoever else hears of it.
            let retry = state.withLock { s in
                s.pending.merge(s.inFlight) { newer, _ in newer }
                s.inFlight = [:]
                return transaction != nil && !(error is PreferenceError) && !s.pending.isEmpty
            }
            if let error = error as? PreferenceError {
                logger.error("\(error)")
                report(error)
            }
            if retry { apply([:], forceFlush: true) }
            throw error
        }
    }

    /// Under the lock, at the first write of this process and then at most once a minute: a
    /// directory listing per write would cost more than the rare crash it cleans up after.
    private func removeStaleTemporaryFilesOccasionally(_ file: SuiteFile, in dir: OpenDirectory) {
        let due = state.withLock { s -> Bool in
            let now = ContinuousClock.now
            guard s.lastStaleScan.map({ now - $0 > .seconds(60) }) ?? true else { return false }
            s.lastStaleScan = now
            return true
        }
        guard due else { return }
        let removed = file.removeStaleTemporaryFiles(in: dir)
        if removed > 0 { logger.notice("Removed \(removed) temporary file(s) left in \(file.directory) by a writer that died mid-write") }
    }

    // MARK: Re-reading

    /// Called by the watcher with a burst of events already coalesced: re-reads on the calling
    /// thread when no I/O is running, otherwise queues one re-read behind the running work.
    /// Never blocks on the store's I/O.
    func scheduleReload() {
        if ioExclusion.withLockIfAvailable({ _ in reloadNow() }) != nil { return }
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

    /// Re-reads the file if its stamp changed. A file that does not parse keeps the last good
    /// snapshot and is reported (the next event, a complete write, is read again); other failures
    /// throw. Runs under `ioExclusion`, or from the registry before the store is shared.
    func reload() throws(PreferenceError) {
        guard let file else { return }
        guard let dir = try file.openDirectory(creating: false) else {
            // The directory is gone, and the suite with it.
            adoptRead(.full([:]), version: .missing, image: nil)
            return
        }
        defer { dir.close() }
        let (lastVersion, lastImage) = state.withLock { ($0.version, $0.image) }
        if let same = try file.confirm(lastVersion, in: dir) {
            state.withLock { $0.version = same }
            return
        }
        switch try file.read(in: dir, previous: lastImage) {
        case .missing: adoptRead(.full([:]), version: .missing, image: nil)
        case .loaded(let values, let version, let image):
            state.withLock { $0.statistics.fileReads += 1 }
            adoptRead(values, version: version, image: image)
        case .corrupt(let error, _, _):
            logger.warning("\(error.message)")
            report(error)
        }
    }

    /// Makes a file just read the state of the file: what changed in it reaches `values`, except
    /// where a local change not yet written hides it, and observers hear of it as external.
    private func adoptRead(_ read: SuiteValues, version: FileVersion, image: SuiteImage?) {
        var read = read
        // A key the incremental read calls new, though the suite has it: it occurs twice in the
        // file. The last one wins, as in a full decode.
        if case .changes(_, let added) = read, !added.isEmpty, state.withLock({ s in added.contains { s.diskValue($0) != nil } }),
            let (values, _) = try? PropertyListFormat.decodeSuite(version.content) {
            read = .full(values)
        }
        let synchronous = state.withLock { s in
            s.version = version
            s.image = image
            let delta: FileDelta
            switch read {
            case .full(let values): delta = s.delta(to: values)
            case .changes(let changes, _): delta = changes
            }
            var changes: [PreferenceChange] = []
            for (key, new) in delta {
                if let shadow = s.shadowed.index(forKey: key) {
                    s.shadowed.values[shadow] = new
                    continue
                }
                let old = new.map { s.values.storage.updateValue($0, forKey: key) } ?? s.values.storage.removeValue(forKey: key)
                if old != new, !s.observers.isEmpty {
                    changes.append(PreferenceChange(suite: name, key: key.string, oldValue: old, newValue: new, origin: .external))
                }
            }
            return publish(changes, in: s)
        }
        for deliver in synchronous { deliver() }
    }

    /// Makes a file just written (or found to hold `operations` already) the state of the file.
    /// A transaction's changes reach `values` here and are told to observers, on the I/O queue
    /// while `update` waits for it.
    private func adoptWritten(_ operations: Operations, version: FileVersion, image: SuiteImage?, transactionKeys: Set<PlistKey>) {
        let synchronous = state.withLock { s in
            s.version = version
            s.image = image
            s.inFlight = [:]
            var changes: [PreferenceChange] = []
            for (key, operation) in operations {
                let new = operation.value
                if s.pending[key] != nil {
                    // A newer local change still hides what was written.
                    s.shadowed[key] = .some(new)
                    continue
                }
                s.shadowed[key] = nil
                let old = new.map { s.values.storage.updateValue($0, forKey: key) } ?? s.values.storage.removeValue(forKey: key)
                if old != new, !s.observers.isEmpty {
                    changes.append(PreferenceChange(suite: name, key: key.string, oldValue: old, newValue: new, origin: transactionKeys.contains(key) ? .local : .external))
                }
            }
            return publish(changes, in: s)
        }
        for deliver in synchronous { deliver() }
    }

    // MARK: Observers

    /// Hands changes to matching observers. Called with the state locked, so every observer gets
    /// changes in the order the state went through them; delivery itself is asynchronous.
    /// Returns the deliveries to synchronous observers, for the caller to make once the state is
    /// unlocked (they may call back into the suite).
    private func publish(_ changes: [PreferenceChange], in s: State) -> [() -> Void] {
        guard !changes.isEmpty else { return [] }
        var synchronous: [() -> Void] = []
        for observer in s.observers.values {
            let matching: [PreferenceChange]
            if case .all = observer.filter { matching = changes } else { matching = changes.filter { observer.filter.matches($0.key) } }
            if matching.isEmpty { continue }
            if let now = observer.synchronous, matching.allSatisfy({ $0.origin == .local }) {
                synchronous.append { now(matching) }
            } else {
                observer.deliver(matching)
            }
        }
        return synchronous
    }

    /// Adds an observer; `initial` runs under the same lock, so no change slips between the two.
    func addObserver(
        _ filter: KeyFilter, deliver: @escaping @Sendable ([PreferenceChange]) -> Void,
        synchronous: (@Sendable ([PreferenceChange]) -> Void)? = nil, initial: (State) -> Void = { _ in }
    ) -> UInt64 {
        state.withLock { s in
            s.nextObserverID += 1
            s.observers[s.nextObserverID] = Observer(filter: filter, deliver: deliver, synchronous: synchronous)
            initial(s)
            return s.nextObserverID
        }
    }

    /// How many change and failure observers are registered.
    var observerCount: Int { state.withLock { $0.observers.count + $0.failureObservers.count } }

    func removeObserver(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    func addFailureObserver(_ deliver: @escaping @Sendable (PreferenceError) -> Void) -> UInt64 {
        state.withLock { s in
            s.nextObserverID += 1
            s.failureObservers[s.nextObserverID] = deliver
            return s.nextObserverID
        }
    }

    func removeFailureObserver(_ id: UInt64) {
        _ = state.withLock { $0.failureObservers.removeValue(forKey: id) }
    }

    /// Reports a failure that no caller is waiting for (a background write, a corrupt file).
    func report(_ error: any Error) {
        let failure = error as? PreferenceError ?? PreferenceError(code: .ioFailure, message: "\(error)", path: file?.path)
        state.withLock { s in
            for deliver in s.failureObservers.values { deliver(failure) }
        }
    }
}
