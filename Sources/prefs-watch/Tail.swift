import ArgumentParser
import Dispatch
import Foundation
import SharedPrefs
import SharedPrefsLocking

struct Tail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print every change of every key as it happens, like inotifywait -m but per key.",
        discussion: """
            One record per changed key: time, suite, key, operation (set or removed), old and new \
            value. A queue overflow prints a resync record and a suite that cannot be read an error \
            record: nothing is dropped silently.

            --format letters: \(OutputStyle.formatLetters.sorted { $0.key < $1.key }.map { "%\($0.key) \($0.value)" }.joined(separator: "; ")).

            Exit status: 0 after --count records, 1 on an error, 2 when --timeout passes with no record \
            (as inotifywait). A closed pipe ends it with 0.

            Examples:
              prefs-watch settings
              prefs-watch --dir /srv/app/container --json
              prefs-watch group.com.example.app --prefix network. --initial
              prefs-watch settings --format '%s %k %e %o -> %n' --count 1 --timeout 10
              prefs-watch --etcd http://10.0.0.1:2379,http://10.0.0.2:2379 apps/demo/ --json
            """
    )

    @Argument(help: "Suite names, group suites (group.…) or .plist paths; with --etcd, key prefixes. With --group or --dir and none given: every suite there, including suites created later.")
    var suites: [String] = []

    @OptionGroup var location: LocationOptions

    @Option(name: .customLong("prefix"), help: ArgumentHelp("Only keys starting with this prefix (repeatable).", valueName: "prefix"))
    var prefixes: [String] = []

    @Option(name: .customLong("key"), help: ArgumentHelp("Only this key (repeatable).", valueName: "key"))
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

    func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        let style: OutputStyle = json ? .json : csv ? .csv : format.map { .format($0) } ?? .text
        let filters: [KeyFilter] = prefixes.map { .prefix($0) } + keys.map { .key($0) }
        let session = TailSession(style: style, terminator: nulTerminated ? 0 : 10, filters: filters, count: count, timeout: timeout)

        if suites.isEmpty, let directory = try location.existingDirectory() {
            // Listen for new suites before listing, so none falls in between.
            let additions = try directory.suiteAdditions()
            try openDirectory(directory, session)
            for try await name in additions where !session.isAttached(name) {
                do {
                    session.attach(try directory.suite(named: name), announce: .asNew)
                } catch {
                    session.error(suite: name, path: directory.url.appending(path: name + ".plist").path, error)
                }
            }
        } else {
            for spec in suites {
                if let suite = try location.etcdSuite(spec) {
                    session.attach(suite, announce: initial ? .initial : .none)
                    continue
                }
                let url = try location.fileURL(of: spec)
                if !FileManager.default.fileExists(atPath: url.path) {
                    // Not an error (the suite may be created later), but a typo should not go unnoticed.
                    FileHandle.standardError.write(Data("prefs-watch: \(spec) does not exist yet (\(url.path)); waiting for it.\n".utf8))
                }
                session.attach(try location.suite(spec, url), announce: initial ? .initial : .none)
            }
            #if InotifyTools
            if raw { try RawEvents.start(directories: suites.map { try location.fileURL(of: $0).deletingLastPathComponent().path }, session) }
            #endif
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }

    private func openDirectory(_ directory: SuiteDirectory, _ session: TailSession) throws {
        for name in try directory.suiteNames() {
            session.attach(try directory.suite(named: name), announce: initial ? .initial : .none)
        }
        #if InotifyTools
        if raw { try RawEvents.start(directories: [directory.url.path], session) }
        #endif
    }
}

/// The running tail: one serial output queue for every suite, so records never interleave and
/// `seq` counts them in output order.
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
        var seq = 0
        var attached: [String: (PreferenceSuite, PreferenceObservation, Task<Void, Never>)] = [:]
    }

    let queue = DispatchQueue(label: "prefs-watch.output")
    private let style: OutputStyle
    private let terminator: UInt8
    private let filters: [KeyFilter]
    private let count: Int?
    private let timeout: Double?
    // Safe: the timer is made in init and afterwards touched only on `queue` (its handler and `emit`).
    nonisolated(unsafe) private let timer: DispatchSourceTimer?
    private let state = Lock(State())

    init(style: OutputStyle, terminator: UInt8, filters: [KeyFilter], count: Int?, timeout: Double?) {
        self.style = style
        self.terminator = terminator
        self.filters = filters
        self.count = count
        self.timeout = timeout
        if let timeout {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { exit(2) }
            timer.schedule(deadline: .now() + timeout)
            timer.resume()
            self.timer = timer
        } else {
            timer = nil
        }
    }

    func isAttached(_ name: String) -> Bool {
        state.withLock { $0.attached[name] != nil }
    }

    private func passes(_ key: String) -> Bool {
        filters.isEmpty || filters.contains { $0.matches(key) }
    }

    /// Starts printing the suite's changes (and, per `announce`, its current values).
    func attach(_ suite: PreferenceSuite, announce: Announce) {
        let path = suite.fileURL?.path ?? suite.name
        let token = suite.observe(.all, queue: queue) { [self] change in
            guard passes(change.key) else { return }
            emit(Record(
                suite: change.suite, path: path, key: change.key, operation: change.isRemoval ? .removed : .set,
                old: change.oldValue, new: change.newValue))
        }
        let failures = suite.failures()
        let task = Task { [self] in
            for await failure in failures {
                queue.async { [self] in
                    emit(Record(
                        suite: suite.name, path: path, operation: failure.code == .watchOverflowed ? .resync : .error,
                        message: failure.description))
                }
            }
        }
        state.withLock { $0.attached[suite.name] = (suite, token, task) }
        guard announce != .none else { return }
        queue.async { [self] in
            for (key, value) in suite.storedValues.sortedByKey where passes(key) {
                emit(Record(
                    suite: suite.name, path: path, key: key, operation: announce == .initial ? .initial : .set, new: value))
            }
        }
    }

    /// Prints an error record for a suite that could not be opened.
    func error(suite: String, path: String, _ error: any Error) {
        queue.async { [self] in emit(Record(suite: suite, path: path, operation: .error, message: "\(error)")) }
    }

    /// Prints a file-level event (`--raw`).
    func raw(_ message: String) {
        queue.async { [self] in emit(Record(suite: "", path: "", operation: .raw, message: message)) }
    }

    /// Numbers and prints a record. Runs on `queue` only.
    private func emit(_ record: Record) {
        var record = record
        record.seq = state.withLock { s in
            s.seq += 1
            return s.seq
        }
        StandardOutput.write(style.render(record), terminator: terminator)
        if let count, record.seq >= count { exit(0) }
        if let timeout { timer?.schedule(deadline: .now() + timeout) }
    }
}
