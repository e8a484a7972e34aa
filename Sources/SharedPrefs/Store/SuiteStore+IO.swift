#if canImport(Glibc)
import Glibc
#endif
import SharedPrefsLocking

/// The store's I/O, each a job of its ``SuiteOwner``: writes (background flushes, `synchronize()`,
/// `update`) and re-reads.
extension SuiteStore {
    func scheduleBackgroundFlush() {
        owner.async { [self] in
            _Stages.mark("W")
            state.withLock { $0.flushScheduled = false }
            do {
                try commitPending(since: .now)
            } catch {
                // Reported by commit; written again when the backend says so.
                guard let error = error as? PreferenceError, let delay = backend.retryDelay(after: error) else { return }
                owner.async(after: delay) { [self] in apply([:], forceFlush: true) }
            }
        }
    }

    /// Runs `work` as the store's job on this thread once the jobs before it are done, waiting one
    /// ``SuiteBackend/timeout`` after `start` at most (longer while they are the suite's own reading
    /// and writing, with `start` moved on by that unless one gave up on the lock). `isBounded`: `work`
    /// runs no code of the app's. Throws ``PreferenceError/Code/unsupportedOperation`` from a job of
    /// this store, which would wait for itself; `reporting` reports that and a timed-out wait too.
    private func runAsJob<T>(
        _ what: String, since start: ContinuousClock.Instant, isBounded: Bool, reporting: Bool = false, _ work: (_ start: ContinuousClock.Instant) throws -> T
    ) throws -> T {
        let refusal: PreferenceError
        if owner.isCurrent {
            refusal = PreferenceError(
                code: .unsupportedOperation,
                message: "\(what) was called inside an update of the suite \(name); it would wait for the update that called it. Values set inside the update body are written right after it; call synchronize() after update returns.",
                path: backend.location)
        } else {
            do {
                // Once a job ahead gave up on the lock, the lock is held: waiting past the deadline would cost
                // two timeouts or more, so this one tries once.
                let timeouts = lockTimeouts.load(ordering: .acquiring)
                let lockHeld = { self.lockTimeouts.load(ordering: .acquiring) != timeouts }
                return try owner.sync(until: start + backend.timeout, isBounded: isBounded, pastDeadline: { !lockHeld() }) { overtime in
                    try work(lockHeld() ? start : start + overtime)
                }
            } catch is SuiteOwner.Busy {
                refusal = busy()
            }
        }
        if reporting { report(refusal) }
        throw refusal
    }

    /// The failure of a call whose turn did not come within the backend's timeout.
    private func busy() -> PreferenceError {
        let unwritten = pendingKeys
        return PreferenceError(
            code: .lockTimedOut,
            message: "Gave up after \(backend.timeout) waiting for the suite \(name)'s earlier write or update in this process to end (it waits for a lock or an answer, or an update body or failure observer of the app's is still running)."
                + (backend.holder.map { " \($0) A stopped or hung process, or one that only reads the lock file, holds it: end that process, or raise PreferenceSuite.Options.lockTimeout." } ?? "")
                + " The values stay pending and are written by the next flush."
                + (unwritten.isEmpty ? "" : " Not written yet: \(unwritten.joined(separator: ", "))."),
            path: backend.location)
    }

    /// Writes everything pending now; returns when it is on disk. Every failure is reported once.
    /// - Throws: ``PreferenceError/Code/unsupportedOperation`` inside an `update` body of this suite.
    package func flushSynchronously(since start: ContinuousClock.Instant = .now) throws {
        guard hasPendingWrites else { return }
        // One timeout in all, counted from `start`: waiting for a write already running (for
        // the same lock, maybe) counts too.
        try runAsJob("synchronize() or the exit flush", since: start, isBounded: true, reporting: true) { try commitPending(since: $0) }
    }

    /// Whether values set are not written yet.
    var hasPendingWrites: Bool { state.withLock { !$0.local.isEmpty || $0.flushScheduled } }

    /// The keys set and not written yet, for messages.
    var pendingKeys: [String] { state.withLock { $0.pendingKeys } }

    /// Writes everything pending without blocking the caller's thread, after the store's earlier jobs,
    /// with a lock wait counted from the call.
    func flush() async throws {
        let start = ContinuousClock.now
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            owner.async { [self] in
                continuation.resume(with: Result { try commitPending(since: start) })
            }
        }
    }

    /// Runs `body` as a read-modify-write under the suite's file lock, on the freshest values.
    func update<R>(_ body: (inout PreferenceTransaction) throws -> R) throws -> R {
        let start = ContinuousClock.now
        return try withoutActuallyEscaping(body) { body in
            try runAsJob("update", since: start, isBounded: false) { try commit(body, since: $0)! }
        }
    }

    /// ``update(_:)`` without blocking the caller's thread: the body runs on the store's queue
    /// (never on Swift's cooperative pool), after the store's earlier jobs, waiting for them one
    /// ``SuiteBackend/timeout`` at most.
    func update<R: Sendable>(_ body: @escaping @Sendable (inout PreferenceTransaction) throws -> R) async throws -> R {
        let start = ContinuousClock.now
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            owner.async(until: start + backend.timeout) { [self] in
                continuation.resume(with: Result { try commit(body, since: start)! })
            } expired: { [self] in
                continuation.resume(throwing: busy())
            }
        }
    }

    /// Writes the pending operations, if any. A job of the owner's.
    func commitPending(since start: ContinuousClock.Instant) throws {
        _ = try commit(nil as ((inout PreferenceTransaction) throws -> Void)?, since: start)
    }

    /// The write path: the backend brings the values up to date under its lock (or compare-and-swap),
    /// the pending operations merge key by key, the transaction runs, the backend writes, observers
    /// hear. `nil` when there was nothing to do. A job of the owner's.
    /// - Parameter start: When the caller began to wait (the lock wait's deadline counts from it).
    private func commit<R>(_ transaction: ((inout PreferenceTransaction) throws -> R)?, since start: ContinuousClock.Instant) throws -> R? {
        // The pending operations become the ones being written. (One still taken by a write as
        // this job begins was taken by a thread of the parent's, in a forked child: that write
        // goes on in the parent only, so this one writes it, or what was set since.)
        let writing = state.withLock { s -> Operations? in
            var writing: Operations = [:]
            for (key, local) in s.local {
                let operation = local.operations.pending ?? local.operations.writing!
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
                            registered: s.registered, layers: s.layers)
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
                    // Values for locked keys are refused, every such key named; removals are not
                    // (see `record`).
                    let layers = state.withLock { $0.layers }
                    let locked = tx.operations.compactMap { key, operation in
                        operation.value == nil ? nil : layers?.lock(of: key).map { (key: key.string, lock: $0) }
                    }.sorted { $0.key < $1.key }
                    if let first = locked.first { throw lockedKey(locked.map(\.key), lockedBy: first.lock) }
                    operations.merge(tx.operations) { _, transaction in transaction }
                    transactionKeys = Set(tx.operations.keys)
                    reads = tx.reads
                }
                written = operations
                let changesSomething = state.withLock { s in operations.contains { s.storedValue($0.key) != $0.value.value } }
                return WritePlan(
                    operations: operations, changesSomething: changesSomething, reads: reads, isTransaction: transaction != nil,
                    stored: { self.state.withLock { $0.stored } }, storedValue: { key in self.state.withLock { $0.storedValue(key) } })
            }
            adoptWritten(written, transactionKeys: transactionKeys, committed: committed)
            for notice in committed.notices { reportNotice(notice) }
            if let failure = committed.failure { throw failure }
            return result
        } catch {
            // Put the operations back unless newer ones replaced them: the next flush writes them after a
            // failed body, the next write, flush or exit after an I/O failure (never a loop against a full
            // disk). A failure of the write itself reaches failure observers here, once.
            let (retry, unwritten) = state.withLock { s in
                for (key, local) in s.local where local.operations.writing != nil {
                    s.local[key]!.operations = .pending(local.operations.pending ?? local.operations.writing!)
                }
                return (transaction != nil && !(error is PreferenceError) && !s.local.isEmpty, s.pendingKeys)
            }
            if retry { apply([:], forceFlush: true) }
            guard var error = error as? PreferenceError else { throw error }
            if error.code == .lockTimedOut { lockTimeouts.add(1, ordering: .releasing) }
            if error.code == .lockTimedOut, !unwritten.isEmpty {
                error.message += " Not written yet: \(unwritten.joined(separator: ", "))."
            }
            logger.error("\(error)")
            report(error)
            throw error
        }
    }

    // MARK: Re-reading

    /// Called with a coalesced burst of events: re-reads on this thread when no job of the store runs,
    /// else queues one re-read behind it; never waits. Deliveries on this thread (``OrderedDelivery``)
    /// come once the job has ended, so handlers may `synchronize()` or `update`.
    package func scheduleReload() {
        _Stages.mark("R")
        var inline: [OrderedDelivery] = []
        let ran = owner.runIfIdle {
            state.withLock { $0.inlineDeliveries = (UInt(pthread_self()), [:]) }
            reloadNow()
            inline = state.withLock { s in
                defer { s.inlineDeliveries = nil }
                return Array(s.inlineDeliveries!.deliveries.values)
            }
        }
        if ran {
            for delivery in inline { delivery.deliverPending() }
            return
        }
        let schedule = state.withLock { s -> Bool in
            if s.reloadScheduled { return false }
            s.reloadScheduled = true
            return true
        }
        if schedule {
            owner.async { [self] in
                state.withLock { $0.reloadScheduled = false }
                reloadNow()
            }
        }
    }

    /// Re-reads the file if its stamp changed and tells observers what other writers changed;
    /// failures go to the log and to failure observers. A job of the owner's.
    func reloadNow() {
        do {
            try reload()
        } catch {
            logger.warning("\(error)")
            report(error)
        }
    }

    /// Reads what changed in the stored values; failures throw. A job of the owner's, or run
    /// before the store is shared.
    package func reload() throws(PreferenceError) {
        adopt(try backend.load())
    }

    /// Makes values just read the stored state: what changed in them reaches `values`, except
    /// where a local change not yet written hides it, and observers hear of it as external.
    /// A job of the owner's, or run before the store is shared.
    func adopt(_ loaded: Loaded) {
        for notice in state.withLock({ $0.stand(loaded) }) { reportNotice(notice) }
        guard let read = loaded.values else { return }
        change { s, changes in
            if loaded.fromJournal { s.statistics.journalReads += 1 } else { s.statistics.fileReads += 1 }
            let delta: FileDelta
            switch read {
            case .full(let values): delta = s.delta(to: values)
            // Changes the journal brought already (``FileBackend``) are not changes again.
            case .changes(let changes): delta = changes.filter { s.storedValue($0.key) != $0.value }
            }
            if !delta.isEmpty || loaded.sequence != s.fileSequence {
                s.generation += 1
                if loaded.sequence <= s.fileSequence, !backend.numbersEveryChange { s.unnumberedGeneration = s.generation }
            }
            s.sequence = max(s.sequence, loaded.sequence)
            s.fileSequence = loaded.sequence
            for (key, new) in delta {
                if s.local[key] != nil {
                    s.local[key]!.stored = new
                } else {
                    see(key, new, .external, sequence: loaded.sequence, in: &s, changes: &changes)
                }
            }
            // Changes from the journal stay on the image of the file read last.
            if !loaded.fromJournal { s.values.rebase(on: loaded.image, apart: s.local.keys) }
            _Stages.mark("P")
        }
    }

    /// Makes values just written (or found to hold `operations` already) the stored state.
    /// A transaction's changes reach `values` here and are told to observers, on the thread that
    /// runs the `update`, before it returns.
    private func adoptWritten(_ operations: Operations, transactionKeys: Set<PlistKey>, committed: Committed) {
        change { s, changes in
            s.sequence = max(s.sequence, committed.sequence)
            for (key, operation) in operations {
                if let pending = s.local[key]?.operations.pending {
                    // A newer local change still hides what was written.
                    s.local[key] = Local(stored: operation.value, operations: .pending(pending))
                } else {
                    s.local[key] = nil
                    see(key, operation.value, transactionKeys.contains(key) ? .local : .external, sequence: committed.sequence, in: &s, changes: &changes)
                }
            }
            if committed.wrote {
                s.fileSequence = committed.sequence
                s.generation += 1
                s.statistics.fileWrites += 1
                s.values.rebase(on: committed.image, apart: s.local.keys)
            }
        }
    }

    /// A failure a backend met that did not stop its read or write: logged and reported.
    private func reportNotice(_ notice: PreferenceError) {
        logger.warning("\(notice)")
        report(notice)
    }
}
