import CSharedPrefsShims
import FoundationEssentials
import SharedPrefsLocking

/// A suite stored in a property-list file (``SuiteFile``), watched with inotify, written under the
/// suite's lock file by an atomic replace.
final class FileBackend: SuiteBackend {
    let file: SuiteFile
    /// The file as last read or written, with its image when binary, so reads and writes work on what
    /// changed; `nil` until read or found missing. Under the store's I/O exclusion only, and kept with
    /// the process it was read in (a child forked meanwhile reads in full, ``known``). `followed`: the
    /// number the journal brought the store to since (``follow(in:after:)``).
    private let last = Lock<(version: FileVersion, image: SuiteImage?, process: UInt, followed: UInt64?)?>(nil)

    /// ``last``, if this process read or wrote it.
    private var known: (version: FileVersion, image: SuiteImage?, followed: UInt64?)? {
        last.withLock { last in last.flatMap { $0.process == sharedprefs_fork_count() ? ($0.version, $0.image, $0.followed) : nil } }
    }

    /// Makes `version` the file as last read or written.
    private func remember(_ version: FileVersion, _ image: SuiteImage?) {
        last.withLock { $0 = (version, image, sharedprefs_fork_count(), nil) }
    }
    /// The smallest suite file whose changes are taken from the journal (a 100-key one is read in fewer
    /// system calls: 1.07–1.22× slower through the journal, prefs-bench row 3; 10,000 keys: 0.83×).
    static let followedSize = 32 << 10
    /// When this process last looked for temporary files a dead writer left, or first wrote
    /// (``staleScanDue(journaled:lostWrite:)``).
    private let lastStaleScan = Lock<ContinuousClock.Instant?>(nil)

    init(file: SuiteFile) {
        self.file = file
    }

    var location: String? { file.path }

    var timeout: Duration { file.options.lockTimeout }

    func subscribe(_ sink: @escaping @Sendable (BackendEvent) -> Void) -> Subscription {
        let id = InotifyWatcher.shared.watch(file.location, fileName: file.fileName, sink)
        return Subscription { InotifyWatcher.shared.unwatch(id) }
    }

    /// The lock file's holder, from `/proc/locks`.
    var holder: String? {
        guard case .success(let st) = Syscall.stat(file.lockPath) else { return nil }
        return LockHolder.find(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)).map { "Its lock \(file.lockPath) is held by \($0)." }
    }

    /// Another writer holds the lock: try again in a second, for as long as it does.
    func retryDelay(after error: PreferenceError) -> Duration? {
        error.code == .lockTimedOut ? .seconds(1) : nil
    }

    /// Re-reads the file if its stamp changed. A file that does not parse keeps the last good snapshot
    /// and is reported; other failures throw.
    func load() throws(PreferenceError) -> Loaded {
        // The directory gone, the suite is gone with it.
        guard let dir = try file.openDirectory(creating: false) else { return adopt(.missing) }
        defer { dir.close() }
        return try load(in: dir)
    }

    /// ``load()`` in the suite's directory, open.
    func load(in dir: OpenDirectory) throws(PreferenceError) -> Loaded {
        let known = known
        var size: Int64 = 0
        if let known, let same = try file.confirm(known.version, in: dir, size: &size) {
            last.withLock { $0?.version = same }
            return Loaded()
        }
        if let known, size >= Self.followedSize, let followed = follow(in: dir, after: known.followed ?? PropertyListFormat.sequence(of: known.version.content)) {
            return followed
        }
        return adopt(try file.read(in: dir, previous: known?.image))
    }

    /// The writes after `start` from the journal instead of the file: when the file is binary, numbered
    /// N (header and trailer read), at least ``followedSize``, and the journal tells every write from
    /// `start` to N in full. `nil` otherwise: the file is read. The file read or written last stays the
    /// base that the next read or write compares with.
    private func follow(in dir: OpenDirectory, after start: UInt64) -> Loaded? {
        guard let number = file.sequence(in: dir, minimumSize: Self.followedSize), number > start, let records = history(after: start, through: number, in: dir) else { return nil }
        // Each key once, with its last value, in the order of the records (each in key order).
        var (delta, index): (FileDelta, [PlistKey: Int]) = ([], [:])
        for record in records {
            for change in record.changes {
                guard change.kept else { return nil }
                let key = PlistKey(change.key)
                if let at = index[key] {
                    delta[at].value = change.new
                } else {
                    index[key] = delta.count
                    delta.append((key, change.new))
                }
            }
        }
        last.withLock { $0?.followed = number }
        var loaded = Loaded(.changes(delta))
        loaded.sequence = number
        loaded.fromJournal = true
        return loaded
    }

    /// The write path: the directory opened from its trusted base, the lock file and then the suite file
    /// locked, re-read if changed, plan, journal record, atomic write, unlock, bell, `fsync`, close.
    func commit(since start: ContinuousClock.Instant, _ plan: (Loaded) throws -> WritePlan) throws -> Committed {
        guard let dir = try file.openDirectory(creating: true) else { throw file.missingDirectory() }
        defer { dir.close() }
        // Opened before the lock, which is held for no more than the write needs; made only for a
        // write that is made (below), so that a refused file leaves its directory as it was.
        var writes = file.openWritesDirectory(in: dir, creating: false)
        defer { if let writes { Syscall.close(writes) } }
        _Stages.mark("D")
        let deadline = start + file.options.lockTimeout
        var lock: SuiteFile.LockFile? = try file.lock(in: dir, until: deadline)
        defer { lock?.unlock() }
        var suiteLock = try file.lockSuiteFile(in: dir, until: deadline)
        defer { suiteLock?.unlock() }
        _Stages.mark("L")

        let known = known
        var loaded = Loaded()
        var corrupt: PreferenceError? = nil
        let confirmed = try known.flatMap { known throws(PreferenceError) in try file.confirm(known.version, in: dir, locked: suiteLock) }
        if confirmed == nil {
            switch try file.readSettled(in: dir, previous: known?.image, locked: suiteLock, until: deadline) {
            case .corrupt(let error, looksLikePropertyList: true, _) where known == nil:
                // A suite written without the keys of a file never read would lose them all.
                throw PreferenceError(
                    code: .corruptFile,
                    message: "\(error.message) This process has never read a good version of it, so it wrote nothing rather than a suite without the keys that file may hold; the values stay pending. If it stays so, move it aside (mv \(file.path) \(file.path).broken) and write again: keys only it held can be recovered from it.",
                    path: file.path)
            case .corrupt(let error, looksLikePropertyList: true, _):
                // It stayed broken: keep it beside the suite, and start from our last good state.
                corrupt = error
            case .corrupt(let error, looksLikePropertyList: false, _):
                throw error
            case let contents:
                loaded = adopt(contents)
            }
        }
        _Stages.mark("C")
        let plan = try plan(loaded)
        var failure: PreferenceError? = nil
        if let corrupt {
            let aside = try file.moveAside(in: dir)
            failure = PreferenceError(
                code: .corruptFile,
                message: "\(corrupt.message) It stayed so with no program writing it, so it was moved to \(aside), and the suite was written anew from this process's last good values (\(plan.stored().count) keys) and its changes. Keys only that file held are not in the suite: recover them from \(aside).",
                path: file.path)
        }
        guard plan.changesSomething || failure != nil else { return Committed(wrote: false) }
        // The new file, and how its image is made of its bytes once it is in place.
        var newFile: FileBytes
        let image: ([UInt8]) -> SuiteImage?
        if file.options.format == .binary, let current = self.known?.image, let new = try? current.writing(plan.operations) {
            newFile = new.file
            // Not `new` itself: its bytes shared would be copied when the file is numbered.
            image = { [keys = new.keys, same = new.sameKeys] in SuiteImage(bytes: $0, keys: keys, canonical: true, sameKeys: same) }
        } else {
            var disk = plan.stored()
            disk.apply(plan.operations)
            let bytes = file.options.format.encode(.dictionary(disk))
            let binary = bytes.starts(with: BinaryPropertyList.magic)
            if file.options.format == .xml, binary {
                logger.warning("\(file.path) is written as a binary property list: a string in it holds a character XML cannot carry (a control character such as ESC or NUL, U+FFFE or U+FFFF).")
            }
            newFile = FileBytes(bytes)
            image = { [keys = Array(disk.storage.keys)] in binary ? SuiteImage(bytes: $0, keys: keys, canonical: true) : nil }
        }
        // The write's number: one more than the file's or the journal's last, whichever is
        // larger (a crash between a record and its file, a writer that does not number files).
        // Its record is in the journal before the file is renamed in.
        try file.checkSize(newFile.count)
        if writes == nil { writes = file.openWritesDirectory(in: dir) }
        let journal = Journal.open(file, in: dir, writes: writes)
        defer { journal?.close() }
        let tail = journal?.tail() ?? Journal.Tail()
        let base = PropertyListFormat.sequence(of: self.known?.version.content ?? [])
        let sequence = max(base, tail.last) + 1
        if let journal {
            let changes = plan.operations.compactMap { key, operation -> Journal.Record.Change? in
                let old = plan.storedValue(key)
                return old == operation.value ? nil : .init(key: key.string, old: old, new: operation.value)
            }
            let record = Journal.Record(sequence: sequence, base: base, pid: sharedprefs_pid(), time: Date(), changes: changes)
            try journal.append(record, after: tail, file: file)
        }
        newFile.number(sequence)
        let version = try file.write(newFile, in: dir, through: writes, as: file.temporaryName(sequence), removingStale: staleScanDue(journaled: tail.size > 0, lostWrite: tail.last > base))
        // Renamed in and checked: the next writer may go on while this one rings, syncs the
        // directory and lets the file it replaced go (freeing it, which is slow, last).
        lock?.unlock()
        lock = nil
        if let bell = Bell.shared { bell.ring(bell.slot(of: dir.identity)) }
        file.syncDirectory(dir)
        suiteLock?.unlock()
        suiteLock = nil
        let written = image(version.content)
        remember(version, written)
        // Written, and the caller told once it is adopted: what the corrupt file alone held is not in the suite.
        var committed = Committed(wrote: true, failure: failure)
        committed.image = written
        committed.sequence = sequence
        return committed
    }

    /// The writes after `start` through `end`, in order, from the journal; `nil` when it cannot tell them
    /// all. From `0`: the writes since a file without a number.
    func history(after start: UInt64, through end: UInt64) -> [Journal.Record]? {
        guard let dir = try? file.openDirectory(creating: false) else { return nil }
        defer { dir.close() }
        return history(after: start, through: end, in: dir)
    }

    private func history(after start: UInt64, through end: UInt64, in dir: OpenDirectory) -> [Journal.Record]? {
        let writes = file.openWritesDirectory(in: dir, creating: false)
        defer { if let writes { Syscall.close(writes) } }
        var records: [UInt64: Journal.Record] = [:]
        for directory in [writes, dir.fd].compactMap({ $0 }) {
            for record in Journal.read(file, in: dir, directory: directory, after: start) { records[record.sequence] = record }
        }
        var chain: [Journal.Record] = []
        var number = end
        while number > start {
            guard let record = records[number] else { return nil }
            chain.append(record)
            number = record.base
        }
        return number == start ? chain.reversed() : nil
    }

    /// Remembers the file just read (or found missing) as the last version, and returns its
    /// values. A file that does not parse leaves the last version as it was, and is a notice.
    private func adopt(_ contents: SuiteFileContents) -> Loaded {
        switch contents {
        case .loaded(let values, let version, let image):
            remember(version, image)
            var loaded = Loaded(values)
            loaded.image = image
            loaded.sequence = PropertyListFormat.sequence(of: version.content)
            return loaded
        case .missing:
            remember(.missing, nil)
            return Loaded(.full([:]))
        case .corrupt(let error, looksLikePropertyList: false, _):
            return Loaded(notices: [error])
        case .corrupt(let error, looksLikePropertyList: true, _):
            let kept = known == nil
                ? " Nothing was read from it, and nothing is written there until it is a property list again."
                : " The last good values are kept; if it stays that way, the next write moves it aside as \(file.fileName).corrupt-<time>."
            return Loaded(notices: [PreferenceError(code: error.code, message: error.message + kept, path: error.path)])
        }
    }

    /// Whether this write sweeps dead writers' temporary files: at once when the journal holds a record
    /// the file does not carry (`lostWrite`: a writer died before its rename); else at most once a
    /// minute, from a minute after a process's first write (a one-shot tool lists nothing); and at the
    /// first write without a journal that tells.
    private func staleScanDue(journaled: Bool, lostWrite: Bool) -> SuiteFile.StaleSweep? {
        lastStaleScan.withLock { last -> SuiteFile.StaleSweep? in
            let now = ContinuousClock.now
            let sweep: SuiteFile.StaleSweep? =
                lostWrite ? .listingAnew : last.map { now - $0 > .seconds(60) ? .listed : nil } ?? (journaled ? nil : .listed)
            if sweep != nil || last == nil { last = now }
            return sweep
        }
    }
}
