import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefs
import SharedPrefsLocking

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

            Exit status: 0 after --count records, 1 on an error, 2 when --timeout passes with no record \
            (as inotifywait), 64 for a usage error. A closed pipe ends it with 0.

            Examples:
              prefs-watch settings
              prefs-watch --dir /srv/app/container --json
              prefs-watch group.com.example.app --prefix network. --initial
              prefs-watch settings --format '%s %k %e %o -> %n' --count 1 --timeout 10
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

    @Flag(help: "JSON Lines: ts, seq, suite, key, op, old, new (and message).")
    var json = false

    @Flag(help: "CSV: ts,seq,suite,key,op,old,new,message, quoted as inotifywait does.")
    var csv = false

    @Option(help: ArgumentHelp("Print each record with these % letters (see below).", valueName: "format"))
    var format: String?

    @Flag(name: .customShort("0"), help: "End records with NUL instead of a newline.")
    var nulTerminated = false

    @Flag(help: "Print the current values first (operation initial).")
    var initial = false

    @Flag(help: "Wait for a named suite, or the --group or --dir directory, that does not exist yet (without it, that is an error).")
    var wait = false

    @Option(name: [.customShort("c"), .long], help: "Exit with 0 after this many records.")
    var count: Int?

    @Option(name: [.customShort("t"), .long], help: "Exit with 2 when no record arrives for this many seconds.")
    var timeout: Double?

    #if InotifyTools
    @Flag(help: "Also print file-level inotify events of the watched directories (libinotifytools).")
    var raw = false
    #endif

    func validate() throws {
        if [json, csv, format != nil].filter({ $0 }).count > 1 { throw ValidationError("Choose one of --json, --csv and --format.") }
        if let count, count < 1 { throw ValidationError("--count takes a number of records of at least 1.") }
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout takes a number of seconds greater than 0.") }
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

    /// Runs on the main thread and then waits there; changes are turned into records on the
    /// thread that reads them (a reader thread), and written by one writer thread
    /// (``OutputWriter``). No dispatch queue and no Swift concurrency: run as tasks (one asleep,
    /// one per failure stream), an idle tail had six threads and libdispatch's timer thread
    /// re-armed a timer every second.
    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        // SIGTERM, SIGINT and SIGHUP end a tail at once, whatever signal mask it inherited (a
        // parent that blocks them leaves them blocked in what it starts: a tail started by the
        // tests outlived their `terminate()`). One ignored on purpose (`nohup`) stays ignored.
        var ending = sigset_t()
        sigemptyset(&ending)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&ending, signal) }
        pthread_sigmask(SIG_UNBLOCK, &ending, nil)
        let style: OutputStyle = json ? .json : csv ? .csv : format.map { .format($0) } ?? .text
        let filters: [KeyFilter] = prefixes.map { .prefix($0) } + keys.map { .key($0) }
        let session = TailSession(style: style, terminator: nulTerminated ? 0 : 10, filters: filters, count: count, timeout: timeout)

        var appeared = false
        if suites.isEmpty, wait, let directory = try location.directory(), !FileManager.default.fileExists(atPath: directory.url.path) {
            // Started before the directory is made (by the app it watches): look for it ten times
            // a second until it is there, then watch it. Every suite in it then is new.
            printError("prefs-watch: \(directory.url.path) does not exist yet; waiting for it.\n")
            while !FileManager.default.fileExists(atPath: directory.url.path) { usleep(100_000) }
            // Made empty, it may be a container whose Library/Preferences comes next (mkdir -p):
            // one more look before it is resolved.
            if (try? FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty) == true { usleep(100_000) }
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
                session.attach(try location.suite(spec, url), announce: initial ? .initial : .none)
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

/// The running tail: records are numbered and queued for the writer under one lock, on the
/// thread that has them (a reader thread for changes), so they never interleave and `seq`
/// counts them in output order.
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

    private let style: OutputStyle
    private let terminator: UInt8
    private let filters: [KeyFilter]
    private let count: Int?
    private let timeout: Double?
    /// Ends the process after `timeout` without a record (only with `--timeout`). Safe: made in
    /// init, afterwards only rescheduled, which libdispatch allows from any thread.
    nonisolated(unsafe) private let timer: DispatchSourceTimer?
    private let state = Lock(State())
    /// The records numbered so far; held while one is numbered and queued.
    private let output = Lock(0)
    private let writer = OutputWriter()

    init(style: OutputStyle, terminator: UInt8, filters: [KeyFilter], count: Int?, timeout: Double?) {
        self.style = style
        self.terminator = terminator
        self.filters = filters
        self.count = count
        self.timeout = timeout
        if let timeout {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "prefs-watch.timeout"))
            timer.setEventHandler { exit(2) }
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
            emit(Record(suite: change.suite, path: path, key: change.key, operation: operation, old: change.oldValue, new: change.newValue, layer: layer))
        }
        let failures = suite.observeFailures { [self] failure in
            emit(Record(
                suite: suite.name, path: path, operation: failure.code == .watchOverflowed ? .resync : .error,
                message: failure.description))
        }
        state.withLock { $0.attached[suite.name] = (suite, changes, failures) }
    }

    /// Prints an error record for a suite that could not be opened.
    func error(suite: String, path: String, _ error: any Error) {
        emit(Record(suite: suite, path: path, operation: .error, message: "\(error)"))
    }

    /// Prints a file-level event (`--raw`).
    func raw(_ message: String) {
        emit(Record(suite: "", path: "", operation: .raw, message: message))
    }

    /// Numbers a record and queues it for the writer; after `--count` records, no more.
    private func emit(_ record: Record) {
        output.withLock { printed in
            guard count.map({ printed < $0 }) ?? true else { return }
            printed += 1
            var record = record
            record.seq = printed
            writer.write(style.render(record), terminator: terminator, thenExit: count == printed)
            if let timeout { timer?.schedule(deadline: .now() + timeout) }
        }
    }
}

/// The one thread that writes records to standard output. Records are queued in order, never
/// dropped, and written as fast as the reader of the output takes them: a reader that stops
/// stalls this thread alone, never the threads that read changes, and gets every record once it
/// reads again.
final class OutputWriter: Sendable {
    private let queued = Lock<(bytes: [UInt8], exit: Bool)>(([], false))
    private let ready = DispatchSemaphore(value: 0)

    init() {
        Threads.start(named: "prefs-watch.out") { [self] in run() }
    }

    /// Queues `text` and `terminator`; with `thenExit`, the process exits (status 0) once it is written.
    func write(_ text: String, terminator: UInt8, thenExit: Bool) {
        queued.withLock { queued in
            queued.bytes += text.utf8
            queued.bytes.append(terminator)
            queued.exit = queued.exit || thenExit
        }
        ready.signal()
    }

    private func run() {
        while true {
            ready.wait()
            let (bytes, exits) = queued.withLock { queued in
                defer { queued.bytes = [] }
                return (queued.bytes, queued.exit)
            }
            if !bytes.isEmpty { StandardOutput.write(bytes) }
            if exits { exit(0) }
        }
    }
}
