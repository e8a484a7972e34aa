import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefs
import SharedPrefsLocking
import Synchronization

struct Tail: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print every change of every key as it happens, like inotifywait -m but per key.",
        discussion: """
            One record per changed key: time, suite, key, operation (set or removed), old and new \
            value. A queue overflow prints a resync record and a suite that cannot be read an error \
            record: nothing is dropped silently.

            --format letters: \(OutputStyle.formatLetters.sorted { $0.key < $1.key }.map { "%\($0.key) \($0.value)" }.joined(separator: "; ")).

            A named suite that does not exist is an error, unless --wait asks to wait for it.

            Every write to a suite has a number (seq in JSON and CSV, %q). --since N prints every \
            write after N first, from the suite's journal, then follows; --cursor FILE resumes \
            from the number saved in FILE and saves there the number of each write once its \
            records are written out, so a restarted tail misses nothing (a write may be printed \
            twice if the tail is killed in between). Where the journal cannot tell every write \
            since (it keeps at least the last 10,000), a gap record comes, then the suite's stored values \
            as initial records. Both follow one suite's own file: not changes of system layers, \
            nor suites on etcd.

            A reader of the output that falls behind by more than --backlog bytes (default 16M) \
            gets each key's latest change, merged, after an overflow record that says how many \
            changes were merged (as inotify's IN_Q_OVERFLOW): nothing is lost silently, and memory \
            stays within the backlog and one value per key.

            SIGTERM, SIGINT and SIGHUP end it after the record being written, so a reader never \
            gets half a record; the exit status is the signal's. A second signal ends it at once.

            Exit status: 0 after --count records, 1 on an error, 2 when --timeout passes with no record \
            (as inotifywait), 64 for a usage error. A closed pipe ends it with 0.

            Examples:
              prefs-watch settings
              prefs-watch --dir /srv/app/container --json
              prefs-watch group.com.example.app --prefix network. --initial
              prefs-watch settings --format '%s %k %e %o -> %n' --count 1 --timeout 10
              prefs-watch settings --json --cursor ~/.cache/settings.cursor --initial
              prefs-watch --etcd http://10.0.0.1:2379,http://10.0.0.2:2379 apps/demo/ --json
            """
    )

    @Argument(help: "Suite names, group suites (group.…) or .plist paths; with --etcd, key prefixes. With --group or --dir and none given: every suite there, including suites created later.", completion: Completions.suite)
    var suites: [String] = []

    @OptionGroup var location: LocationOptions

    @Option(name: .customLong("prefix"), help: ArgumentHelp("Only keys starting with this prefix (repeatable).", valueName: "prefix"))
    var prefixes: [String] = []

    @Option(name: .customLong("key"), help: ArgumentHelp("Only this key (repeatable).", valueName: "key"), completion: Completions.key)
    var keys: [String] = []

    @Flag(help: "JSON Lines: ts, seq (the write's number), record, suite, key, op, old, new (and message).")
    var json = false

    @Flag(help: "CSV: ts,seq,suite,key,op,old,new,message, quoted as inotifywait does.")
    var csv = false

    @Option(help: ArgumentHelp("Print every write after this number first (from the suite's journal), then follow. One suite.", valueName: "number"))
    var since: UInt64?

    @Option(help: ArgumentHelp("Resume from the number saved in this file, and save there the number of each write once printed. One suite.", valueName: "file"))
    var cursor: String?

    @Option(help: ArgumentHelp("Print each record with these % letters (see below).", valueName: "format"))
    var format: String?

    @Flag(name: .customShort("0"), help: "End records with NUL instead of a newline.")
    var nulTerminated = false

    @Flag(help: "Print the current values first (operation initial); with --cursor, when the file does not exist yet.")
    var initial = false

    @Flag(help: "Wait for a named suite, or the --group or --dir directory, that does not exist yet (without it, that is an error). A --dir directory that is empty or holds only Library is waited for until it shows whether it is a container.")
    var wait = false

    @Option(name: [.customShort("c"), .long], help: "Exit with 0 after this many records.")
    var count: Int?

    @Option(name: [.customShort("t"), .long], help: "Exit with 2 when no record arrives for this many seconds.")
    var timeout: Double?

    @Option(help: ArgumentHelp("Output held for a reader that falls behind, in bytes (K, M and G suffixes); past it, changes of a key are merged.", valueName: "size"), transform: Self.byteCount)
    var backlog: Int = 16 << 20

    #if InotifyTools
    @Flag(help: "Also print file-level inotify events of the watched directories (libinotifytools).")
    var raw = false
    #endif

    /// `16M`, `512K`, `1G` or a number of bytes.
    static func byteCount(_ text: String) throws -> Int {
        let units: [Character: Int] = ["K": 10, "M": 20, "G": 30]
        let shift = text.last.flatMap { units[Character($0.uppercased())] }
        guard let number = Int(shift == nil ? text : String(text.dropLast())), number > 0, number <= Int.max >> (shift ?? 0) else {
            throw ValidationError("--backlog takes a size in bytes greater than 0, with K, M or G for KiB, MiB or GiB (16M); not \"\(text)\".")
        }
        return number << (shift ?? 0)
    }

    func validate() throws {
        if [json, csv, format != nil].filter({ $0 }).count > 1 { throw ValidationError("Choose one of --json, --csv and --format.") }
        if let count, count < 1 { throw ValidationError("--count takes a number of records of at least 1.") }
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout takes a number of seconds greater than 0.") }
        if since != nil || cursor != nil {
            let option = since != nil ? "--since" : "--cursor"
            if suites.count != 1 { throw ValidationError("\(option) follows one suite's numbered writes: name exactly one suite.") }
            if location.etcd != nil { throw ValidationError("\(option) follows a suite file's journal; suites on etcd do not have one yet.") }
            if since != nil && initial { throw ValidationError("Choose --since or --initial: --since prints the writes after a number, --initial the current values.") }
            if since != nil && cursor != nil { throw ValidationError("Choose --since or --cursor: the cursor file holds the number to resume from.") }
        }
        if suites.isEmpty && location.group == nil && location.dir == nil {
            throw ValidationError(location.etcd == nil ? "Name at least one suite, or a --group or --dir to watch all of its suites." : "Name the key prefix of at least one suite on the etcd cluster.")
        }
        if let format {
            var iterator = format.makeIterator()
            while let character = iterator.next() {
                guard character == "%" else { continue }
                guard let letter = iterator.next(), OutputStyle.formatLetters[letter] != nil else {
                    throw ValidationError("--format: unknown letter after % in \"\(format)\"; see --help for the letters.")
                }
            }
        }
    }

    /// Whether the `--group` or `--dir` directory is there to be watched. A `--dir` directory
    /// must also tell what it is: a container (its Library/Preferences is there) or a directory of
    /// suites (something other than Library is in it). Empty, or with only Library, it may be a
    /// container whose `mkdir -p` is under way.
    func isResolved(_ directory: SuiteDirectory) -> Bool {
        guard let dir = location.dir else { return FileManager.default.fileExists(atPath: directory.url.path) }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return false }
        return names.contains { $0 != "Library" } || FileManager.default.fileExists(atPath: dir + "/Library/Preferences")
    }

    /// Runs on the main thread and then waits there; changes are turned into records on the
    /// thread that reads them (a reader thread), and written by one writer thread
    /// (``OutputWriter``). No dispatch queue and no Swift concurrency: run as tasks (one asleep,
    /// one per failure stream), an idle tail had six threads and libdispatch's timer thread
    /// re-armed a timer every second.
    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let style: OutputStyle = json ? .json : csv ? .csv : format.map { .format($0) } ?? .text
        let filters: [KeyFilter] = prefixes.map { .prefix($0) } + keys.map { .key($0) }
        OutputWriter.endOnSignals()
        let cursorFile = cursor.map(CursorFile.init)
        let writer = OutputWriter(style: style, terminator: nulTerminated ? 0 : 10, count: count, backlog: backlog, cursor: cursorFile)
        let session = TailSession(writer: writer, filters: filters, timeout: timeout)

        var appeared = false
        if suites.isEmpty, wait, let directory = try location.directory(), !isResolved(directory) {
            // Started before the directory is made (by the app it watches): look for it ten times
            // a second until it is there, then watch it. Every suite in it then is new.
            let what = FileManager.default.fileExists(atPath: directory.url.path) ? "is empty, or a container without its Library/Preferences yet" : "does not exist yet"
            printError("prefs-watch: \(directory.url.path) \(what); waiting for it.\n")
            while !isResolved(directory) { usleep(100_000) }
            appeared = true
        }
        if suites.isEmpty, let directory = try location.existingDirectory() {
            // Listen for new suites before listing, so none falls in between.
            let additions = try directory.observeSuiteAdditions { name in
                do {
                    session.attach(try directory.suite(named: name), announce: .asNew)
                } catch {
                    session.error(suite: name, path: directory.url.appending(path: name + ".plist").path, error)
                }
            }
            try openDirectory(directory, session, announce: appeared ? .asNew : initial ? .initial : .none)
            withExtendedLifetime(additions) { Self.waitForever() }
        } else {
            for spec in suites {
                if let suite = try location.etcdSuite(spec) {
                    session.attach(suite, announce: initial ? .initial : .none)
                    continue
                }
                let url = try location.fileURL(of: spec)
                if !FileManager.default.fileExists(atPath: url.path) {
                    // Waiting for a typo would be waiting forever: only when asked to.
                    guard wait else { throw failure("The suite \(spec) does not exist (no file at \(url.path)). Pass --wait to wait for it to be created; prefs-watch list shows the suites there are.") }
                    printError("prefs-watch: \(spec) does not exist yet (\(url.path)); waiting for it.\n")
                }
                let suite = try location.suite(spec, url)
                if since != nil || cursorFile != nil {
                    // A stream from 0 begins with a gap that brings every stored value.
                    let start = try cursorFile?.read() ?? since ?? (initial ? 0 : suite.sequence)
                    session.follow(suite, since: start)
                } else {
                    session.attach(suite, announce: initial ? .initial : .none)
                }
            }
            #if InotifyTools
            if raw { try RawEvents.start(directories: suites.map { try location.fileURL(of: $0).deletingLastPathComponent().path }, session) }
            #endif
            Self.waitForever()
        }
    }

    /// Blocks this thread until the process ends (`--count`, `--timeout`, a signal, a closed pipe).
    private static func waitForever() -> Never {
        while true { pause() }
    }

    private func openDirectory(_ directory: SuiteDirectory, _ session: TailSession, announce: TailSession.Announce) throws {
        for name in try directory.suiteNames() {
            session.attach(try directory.suite(named: name), announce: announce)
        }
        #if InotifyTools
        if raw { try RawEvents.start(directories: [directory.url.path], session) }
        #endif
    }
}

/// The running tail: records go to the writer on the thread that has them (a reader thread for
/// changes), which numbers them in output order.
final class TailSession: Sendable {
    enum Announce {
        /// Print nothing for the current values.
        case none
        /// Print the current values as `initial` records.
        case initial
        /// A suite that appeared after the start: its values are new, print them as `set` records.
        case asNew
    }

    private struct State {
        var attached: [String: (PreferenceSuite, changes: PreferenceObservation?, failures: PreferenceObservation?)] = [:]
    }

    private let writer: OutputWriter
    private let filters: [KeyFilter]
    private let timeout: Double?
    /// Ends the process after `timeout` without a record (only with `--timeout`). Safe: made in
    /// init, afterwards only rescheduled, which libdispatch allows from any thread.
    nonisolated(unsafe) private let timer: DispatchSourceTimer?
    private let state = Lock(State())

    init(writer: OutputWriter, filters: [KeyFilter], timeout: Double?) {
        self.writer = writer
        self.filters = filters
        self.timeout = timeout
        if let timeout {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "prefs-watch.timeout"))
            timer.setEventHandler { writer.exit(2) }
            timer.schedule(deadline: .now() + timeout)
            timer.resume()
            self.timer = timer
        } else {
            timer = nil
        }
    }

    private func passes(_ key: String) -> Bool {
        filters.isEmpty || filters.contains { $0.matches(key) }
    }

    /// Starts printing the suite's changes (and, per `announce`, its current values), once per
    /// suite name. Changes come on the thread that reads them (a reader thread): no queue; the
    /// writer thread prints them.
    func attach(_ suite: PreferenceSuite, announce: Announce) {
        let isNew = state.withLock { s in
            guard s.attached[suite.name] == nil else { return false }
            s.attached[suite.name] = (suite, nil, nil)
            return true
        }
        guard isNew else { return }
        let path = suite.fileURL?.path ?? suite.name
        // The current values come first, as the suite reads them, as changes of origin `.local`
        // (tail makes no change of its own), printed on this thread.
        let options: ObservationOptions = announce == .none ? [.synchronousExternalChanges] : [.initial, .initialOnObservingThread, .synchronousExternalChanges]
        let changes = suite.observe(.all, options: options) { [self] change in
            guard passes(change.key) else { return }
            let layer: PreferenceLayer? = if case .layer(let layer) = change.origin { layer } else { nil }
            let operation: Record.Operation = change.origin == .local && announce == .initial ? .initial : change.isRemoval ? .removed : .set
            emit(Record(sequence: change.sequence, suite: change.suite, path: path, key: change.key, operation: operation, old: change.oldValue, new: change.newValue, layer: layer))
        }
        state.withLock { $0.attached[suite.name] = (suite, changes, observeFailures(suite, path)) }
    }

    /// Prints the suite's writes after number `start`, one by one from its journal, then those to
    /// come (`--since`, `--cursor`): a gap record and the stored values where the journal cannot
    /// tell them. The last record of each carries its number for the cursor (a record of its own,
    /// not printed, where none passes the filters).
    func follow(_ suite: PreferenceSuite, since start: UInt64) {
        let path = suite.fileURL?.path ?? suite.name
        let changes = suite.followChanges(since: start) { [self] event in
            var records: [Record] = []
            switch event {
            case .write(let sequence, let changes):
                for change in changes where passes(change.key) {
                    records.append(Record(
                        sequence: sequence, suite: change.suite, path: path, key: change.key, operation: change.isRemoval ? .removed : .set,
                        old: change.oldValue, new: change.newValue))
                }
            case .gap(let from, let to, let contents):
                records.append(Record(
                    sequence: to, suite: suite.name, path: path, operation: .gap,
                    message: from == 0 ? "the stored values at \(to) follow" : "the writes after \(from) up to \(to) cannot be told one by one (the journal no longer reaches back, or a program that does not number its writes changed the suite); the stored values at \(to) follow"))
                for (key, value) in contents.sortedByKey where passes(key) {
                    records.append(Record(sequence: to, suite: suite.name, path: path, key: key, operation: .initial, new: value))
                }
            }
            guard var last = records.popLast() else {
                // Nothing passed the filters: the cursor moves all the same.
                return writer.write(Record(sequence: event.sequence, suite: suite.name, path: path, operation: .cursor, cursor: event.sequence))
            }
            last.cursor = event.sequence
            for record in records + [last] { emit(record) }
        }
        state.withLock { $0.attached[suite.name] = (suite, changes, observeFailures(suite, path)) }
    }

    /// Prints the suite's failures: `resync` for an overflow, `error` for the others.
    private func observeFailures(_ suite: PreferenceSuite, _ path: String) -> PreferenceObservation {
        suite.observeFailures { [self] failure in
            emit(Record(suite: suite.name, path: path, operation: failure.code == .watchOverflowed ? .resync : .error, message: failure.description))
        }
    }

    /// Prints an error record for a suite that could not be opened.
    func error(suite: String, path: String, _ error: any Error) {
        emit(Record(suite: suite, path: path, operation: .error, message: "\(error)"))
    }

    /// Prints a file-level event (`--raw`).
    func raw(_ message: String) {
        emit(Record(suite: "", path: "", operation: .raw, message: message))
    }

    /// Queues a record for the writer, and puts `--timeout` off.
    private func emit(_ record: Record) {
        writer.write(record)
        if let timeout { timer?.schedule(deadline: .now() + timeout) }
    }
}

/// The signal that ends the process (0 until one comes), and whether the writer is writing
/// records out: all that the signal handler touches (atomics: async-signal-safe).
private let endingSignal = Atomic<Int32>(0)
private let writingOut = Atomic<Bool>(false)

/// Dies of signal `number` (async-signal-safe), as the shell and whoever sent it expect.
private func dyingOf(_ number: Int32) -> Never {
    signal(number, SIG_DFL)
    var only = sigset_t()
    sigemptyset(&only)
    sigaddset(&only, number)
    pthread_sigmask(SIG_UNBLOCK, &only, nil)
    raise(number)
    _exit(128 + number)
}

/// The one thread that writes records to standard output, numbered in output order, as fast as
/// the reader of the output takes them: a reader that stops stalls this thread alone, never the
/// threads that read changes. What waits for it is bounded by the backlog: past it, the records
/// of each key are merged into one (the first old value, the last new one) and an `overflow`
/// record says how many were merged. Records are written whole, in writes of at most 64 KiB of
/// whole records, and the process ends only between two of them.
final class OutputWriter: Sendable {
    private struct Queue {
        var records: [Record] = []
        /// What `records` hold, roughly: their values, keys and messages.
        var bytes = 0
        /// Changes merged into others since the last overflow record.
        var merged = 0
        /// The size at which the records are merged next: the backlog, or twice what a merge
        /// left when that is more (records of many keys), so that merging stays linear.
        var mergeAt = 0
        /// The status to exit with once every queued record is written (`--timeout`).
        var exit: Int32?
        /// Whether the writer has records taken from the queue and not all written.
        var writing = false

        /// One record a key: the first old value, the last new value; records without a key
        /// (errors, resyncs) kept as they are, in order.
        mutating func merge() {
            var first: [String: Int] = [:]
            var kept: [Record] = []
            for record in records {
                guard let key = record.key, [.set, .removed, .initial].contains(record.operation) else {
                    kept.append(record)
                    continue
                }
                let id = record.suite + "\u{0}" + key
                guard let index = first[id] else {
                    first[id] = kept.count
                    kept.append(record)
                    continue
                }
                kept[index].new = record.new
                kept[index].time = record.time
                kept[index].sequence = record.sequence
                kept[index].cursor = [kept[index].cursor, record.cursor].compactMap { $0 }.max()
                kept[index].layer = record.layer
                if kept[index].operation != .initial { kept[index].operation = record.new == nil ? .removed : .set }
                merged += 1
            }
            records = kept
            bytes = kept.reduce(0) { $0 + $1.footprint }
            mergeAt = max(mergeAt, 2 * bytes)
        }
    }

    private let style: OutputStyle
    private let terminator: UInt8
    private let count: Int?
    private let backlog: Int
    private let cursor: CursorFile?
    private let queue = Lock(Queue())
    private let ready = DispatchSemaphore(value: 0)

    init(style: OutputStyle, terminator: UInt8, count: Int?, backlog: Int, cursor: CursorFile?) {
        self.style = style
        self.terminator = terminator
        self.count = count
        self.backlog = backlog
        self.cursor = cursor
        Threads.start(named: "prefs-watch.out") { [self] in run() }
    }

    /// Queues `record`.
    func write(_ record: Record) {
        queue.withLock { queue in
            queue.records.append(record)
            queue.bytes += record.footprint
            if queue.bytes > max(backlog, queue.mergeAt) { queue.merge() }
        }
        ready.signal()
    }

    /// Exits with `status` once every queued record is written.
    func exit(_ status: Int32) {
        let now = queue.withLock { queue -> Bool in
            queue.exit = status
            return !queue.writing && queue.records.isEmpty
        }
        if now { Glibc.exit(status) }
        ready.signal()
    }

    /// SIGTERM, SIGINT and SIGHUP end the process after the record being written, dying of the
    /// signal, whatever signal mask it inherited (a parent that blocks them leaves them blocked
    /// in what it starts); a second one ends it at once. One ignored on purpose (`nohup`) stays
    /// ignored. The handler touches atomics only, and the writer looks at them around each write.
    static func endOnSignals() {
        var ending = sigset_t()
        sigemptyset(&ending)
        for number in [SIGTERM, SIGINT, SIGHUP] {
            var old = sigaction()
            sigaction(number, nil, &old)
            if unsafeBitCast(old.__sigaction_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) { continue }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                if endingSignal.exchange(number, ordering: .sequentiallyConsistent) != 0 || !writingOut.load(ordering: .sequentiallyConsistent) {
                    dyingOf(number)
                }
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART  // a write it interrupts goes on
            sigaction(number, &action, nil)
            sigaddset(&ending, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &ending, nil)
    }

    /// Writes `bytes` whole, and then saves `number` in the cursor file, unless a signal came:
    /// then the process dies of it, before or after both.
    private func writeOut(_ bytes: [UInt8], saving number: UInt64?) {
        writingOut.store(true, ordering: .sequentiallyConsistent)
        if case let number = endingSignal.load(ordering: .sequentiallyConsistent), number != 0 { dyingOf(number) }
        if !bytes.isEmpty { StandardOutput.write(bytes) }
        if let number, let cursor { cursor.save(number) }
        writingOut.store(false, ordering: .sequentiallyConsistent)
        if case let number = endingSignal.load(ordering: .sequentiallyConsistent), number != 0 { dyingOf(number) }
    }

    private func run() {
        var written = 0
        while true {
            ready.wait()
            while true {
                let (records, merged, exit) = queue.withLock { queue in
                    defer { (queue.records, queue.bytes, queue.merged, queue.mergeAt) = ([], 0, 0, 0) }
                    queue.writing = !queue.records.isEmpty
                    return (queue.records, queue.merged, queue.exit)
                }
                if records.isEmpty {
                    if let exit { Glibc.exit(exit) }
                    break
                }
                var batch: [UInt8] = []
                var saving: UInt64? = nil
                var all = records
                // Merged records carry later writes' values where earlier ones were: the number
                // is saved once all of them are out, the largest they carry.
                let mergedCursor = merged > 0 ? records.compactMap(\.cursor).max() : nil
                if merged > 0 {
                    all.insert(Record(suite: "", path: "", operation: .overflow, message: "\(merged) change(s) merged: the reader of this output fell more than \(backlog) bytes behind; each key's latest value follows"), at: 0)
                }
                for var record in all {
                    if merged == 0 { saving = record.cursor ?? saving }
                    if record.operation == .cursor { continue }
                    written += 1
                    record.record = written
                    batch += style.render(record).utf8
                    batch.append(terminator)
                    if batch.count >= 65_536 || count == written {
                        writeOut(batch, saving: saving)
                        (batch, saving) = ([], nil)
                        if count == written { Glibc.exit(0) }
                    }
                }
                if !batch.isEmpty || (mergedCursor ?? saving) != nil { writeOut(batch, saving: mergedCursor ?? saving) }
                queue.withLock { $0.writing = false }
            }
        }
    }
}

/// `--cursor`: the file that holds the number of the last write a tail printed, written by the
/// writer thread alone, whole (a new file renamed over it), so that a tail killed at any moment
/// leaves the old number or the new one.
struct CursorFile: Sendable {
    let path: String

    /// The number saved, or `nil` when there is no file yet. Never follows a symbolic link or
    /// blocks on a FIFO.
    func read() throws -> UInt64? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw failure("Cannot read the cursor file \(path.displayed): \(String(cString: strerror(errno))). --cursor takes a regular file of its own (not a symbolic link); check its permissions.")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw failure("The cursor file \(path.displayed) is not a regular file. --cursor takes a file of its own, which tail writes.")
        }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        let text = String(decoding: bytes.prefix(max(count, 0)), as: UTF8.self).filter { !$0.isWhitespace }
        guard count >= 0, let number = UInt64(text) else {
            throw failure("The cursor file \(path.displayed) does not hold a write number (it holds \(PlistValue.string(String(text.prefix(20))).description)). Remove it to start anew (with --initial for the current values), or write into it the number to resume after.")
        }
        return number
    }

    /// Saves `number`. A failure is said once on standard error, and the tail goes on: a restart
    /// then prints again what was printed since the last number saved.
    func save(_ number: UInt64) {
        let temporary = path + ".tmp-\(getpid())"
        var error: Int32 = 0
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
        if fd < 0 {
            error = errno
        } else {
            if case .failure(let failure) = Syscall.writeAll(fd, Array("\(number)\n".utf8)) { error = failure.rawValue }
            if close(fd) != 0, error == 0 { error = errno }
            if error == 0, rename(temporary, path) != 0 { error = errno }
            if error != 0 { unlink(temporary) }
        }
        if error != 0, !Self.failed.exchange(true, ordering: .relaxed) {
            printError("prefs-watch: cannot save the cursor in \(path.displayed): \(String(cString: strerror(error))); a restart will print again what was printed since the number last saved.\n")
        }
    }

    private static let failed = Atomic<Bool>(false)
}
