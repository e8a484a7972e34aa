import SharedPrefsLocking
import Synchronization

/// Entry points for `prefs-bench` into internals it measures. Not API: may change at any time.
public enum _BenchmarkHooks {
    /// Decodes a suite file's bytes (either format).
    public static func decodeSuite(_ bytes: [UInt8]) throws -> PlistDictionary {
        try PropertyListFormat.decodeSuite(bytes)
    }

    /// The number of keys whose value differs between two snapshots.
    public static func diffCount(_ old: PlistDictionary, _ new: PlistDictionary) -> Int {
        Diff.changes(from: old, to: new).count
    }
}

/// Faults the tests inject into this process's watcher and writer. Not API: may change at any time.
public enum _TestingHooks {
    static let watcherHeld = Atomic(false)
    static let failingWatchErrno = Atomic<CInt>(0)
    static let beforeRenameHook = Lock<(@Sendable (_ temporaryPath: String) -> Void)?>(nil)

    /// While `true`, the watcher thread reads no inotify events, so the kernel's queue fills up
    /// (an overflow without touching `fs.inotify.max_queued_events`).
    public static func holdWatcher(_ held: Bool) {
        watcherHeld.store(held, ordering: .sequentiallyConsistent)
    }

    /// Makes every later `inotify_add_watch` fail with `errno` (`ENOSPC`: the watch limit is
    /// reached); 0 stops it.
    public static func failWatches(errno: CInt) {
        failingWatchErrno.store(errno, ordering: .sequentiallyConsistent)
    }

    /// Calls `body` on the writing thread in every later write, after the temporary file is
    /// written (and synced) and before it is renamed over the suite, while the suite's lock is
    /// held; `nil` stops it. The crash test stops a writer there and kills it.
    public static func beforeRename(_ body: (@Sendable (_ temporaryPath: String) -> Void)?) {
        beforeRenameHook.withLock { $0 = body }
    }

    static func willRename(_ temporaryPath: String) {
        beforeRenameHook.withLock { $0 }?(temporaryPath)
    }
}
