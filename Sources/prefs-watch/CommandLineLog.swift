import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Synchronization

/// The library's log lines as prefs-watch prints them: one label (`prefs-watch: warning: …`) on
/// standard error, at the level `--quiet` or `--verbose` chose (warnings by default).
struct CommandLineLog: LogHandler {
    static let level = Atomic<UInt8>(UInt8(Logger.Level.allCases.firstIndex(of: .warning)!))

    /// Routes every logger of the process here; call before anything logs. On a terminal the
    /// library's notices are shown too (a wait for a lock held by another process, naming it).
    static func bootstrap() {
        if isatty(STDERR_FILENO) == 1 { set(.notice) }
        LoggingSystem.bootstrap { _ in CommandLineLog() }
    }

    /// Runs `work`; on a terminal, if it takes over a second, says `what` is going on meanwhile.
    static func progress<T>(_ what: @autoclosure () -> String, _ work: () throws -> T) rethrows -> T {
        guard isatty(STDERR_FILENO) == 1, current <= .notice else { return try work() }
        let line = "prefs-watch: \(what())…\n"
        let note = DispatchWorkItem { printError(line) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 1, execute: note)
        defer { note.cancel() }
        return try work()
    }

    /// The level lines are printed from.
    static var current: Logger.Level { Logger.Level.allCases[Int(level.load(ordering: .relaxed))] }

    static func set(_ level: Logger.Level) {
        Self.level.store(UInt8(Logger.Level.allCases.firstIndex(of: level)!), ordering: .relaxed)
    }

    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider? = nil
    var logLevel: Logger.Level {
        get { Self.current }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The error lines printed, so that an error the command then fails with is not printed twice.
    private static let errors = Mutex<Set<String>>([])

    static func wasPrinted(_ message: String) -> Bool {
        errors.withLock { $0.contains(message) }
    }

    func log(event: LogEvent) {
        let message = "\(event.message)"
        if event.level >= .error { _ = Self.errors.withLock { $0.insert(message) } }
        let label = event.level >= .error ? "" : "\(event.level): "
        printError("prefs-watch: \(label)\(message)\n")
    }
}
