import SharedPrefsLocking
import Synchronization

/// Entry points for the benchmarks (`Benchmarks/`) into internals they measure: SPI
/// (`@_spi(Benchmarks) import SharedPrefs`), not API; may change at any time.
@_spi(Benchmarks) public enum _BenchmarkHooks {
    /// Decodes a suite file's bytes (either format) in full.
    public static func decodeSuite(_ bytes: [UInt8]) throws -> PlistDictionary {
        try PropertyListFormat.decodeSuite(bytes).values
    }

    /// Encodes `values` in full as a binary suite file, as a first write does.
    public static func encodeSuite(_ values: PlistDictionary) -> [UInt8] {
        BinaryPropertyList.encode(.dictionary(values))
    }

    /// A binary suite file, decoded, ready to be compared with its next version.
    public struct Image {
        let image: SuiteImage
    }

    public static func image(_ bytes: [UInt8]) throws -> Image? {
        try SuiteImage.decode(bytes).image.map(Image.init)
    }

    /// The incremental re-read of `bytes` against `image`, as a watcher makes it: the number of
    /// keys whose value changed.
    public static func changeCount(from image: Image, to bytes: [UInt8]) throws -> Int {
        try image.image.changes(to: bytes).delta.count
    }

    /// The top-level keys of a binary suite file, in the order of its root dictionary (the order
    /// its values are laid out in, for a file this library wrote).
    public static func keysInFileOrder(_ bytes: [UInt8]) throws -> [String] {
        try SuiteImage.decode(bytes).image?.keys.map(\.string) ?? []
    }

    /// `bytes` with `key` set to `value`, encoded as a writer does it: unchanged objects copied.
    public static func encodeChange(_ image: Image, key: String, value: PlistValue) throws -> [UInt8] {
        try image.image.applying([PlistKey(key): .set(value)]).bytes
    }
}

#if SHAREDPREFS_TESTING
/// Faults tests inject into the watcher and writer: test-only SPI (`@_spi(Testing)`), compiled
/// only into debug builds (`SHAREDPREFS_TESTING`). Not API.
@_spi(Testing) public enum TestingHooks {
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

    /// Calls `body` in every later write after the temporary file is written and before its rename,
    /// under the lock; `nil` stops it. The crash test kills a writer there.
    public static func beforeRename(_ body: (@Sendable (_ temporaryPath: String) -> Void)?) {
        beforeRenameHook.withLock { $0 = body }
    }

    static func willRename(_ temporaryPath: String) {
        beforeRenameHook.withLock { $0 }?(temporaryPath)
    }
}
#endif
