#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import SharedPrefsLocking

/// A suite of preferences shared between processes: a property-list file in an app group's
/// container, read from memory, written atomically and merged per key, and watched so that every
/// process sees every other process's changes, key by key.
///
/// ```swift
/// let suite = try PreferenceSuite(suiteName: "settings", in: AppGroup(identifier: "group.com.example.app"))
/// suite.set(3, forKey: "retries")                 // visible here at once, on disk moments later
/// let token = suite.observe(.key("retries")) { change in
///     print(change.oldValue as Any, "->", change.newValue as Any, change.origin)
/// }
/// try suite.update { $0[.launchCount] += 1 }      // cross-process read-modify-write
/// ```
///
/// Every `PreferenceSuite` for the same file in one process shares one live store, so they see
/// each other's writes at once. Writes are coalesced and flushed in the background; ``flush()``
/// and ``synchronize()`` wait for them, and anything still pending is written when the process
/// exits normally.
public final class PreferenceSuite: Sendable {
    /// How a file-backed suite is written.
    public struct Options: Sendable, Hashable {
        /// The format new writes use; either format is read.
        public var format: PropertyListFormat
        /// Whether writes are fsynced.
        public var durability: Durability
        /// Permissions of files the suite creates: exactly this in a set-group-ID directory (a group
        /// container), so that every member of the group can use them whatever their umask; less
        /// the umask elsewhere. `0o660` lets the group share them.
        public var filePermissions: mode_t
        /// How long a write waits for another process to release the suite's lock before it fails
        /// with ``PreferenceError/Code/lockTimedOut`` (the values stay pending and are retried).
        public var lockTimeout: Duration
        /// The largest suite file that is read or written, in bytes. A larger file is refused with
        /// ``PreferenceError/Code/fileTooLarge`` and the last good values are kept.
        public var maximumFileSize: Int
        /// Whether `-key value` pairs among the process's arguments override the suite's values,
        /// as `UserDefaults`' argument domain does (``PreferenceLayer/launchArguments``; never
        /// written). The standard suite reads them.
        public var launchArguments: Bool = false

        /// - Parameters:
        ///   - format: `.binary` (default) or `.xml`.
        ///   - durability: `.full` (default) fsyncs each write and its directory; `.none` skips that.
        ///   - filePermissions: mode of new files (see ``filePermissions``); default `0o660`.
        ///   - lockTimeout: the longest wait for the suite's lock; default 5 seconds. A wait of over a
        ///     second is logged (notice level), naming the process that holds the lock. One of over
        ///     a century (`.seconds(.max)`) waits for as long as the lock is held.
        ///   - maximumFileSize: the largest suite file read or written; default 256 MiB (`Int.max`: no limit).
        public init(
            format: PropertyListFormat = .binary, durability: Durability = .full, filePermissions: mode_t = 0o660,
            lockTimeout: Duration = .seconds(5), maximumFileSize: Int = 256 << 20
        ) {
            self.format = format
            self.durability = durability
            self.filePermissions = filePermissions
            self.lockTimeout = lockTimeout
            self.maximumFileSize = maximumFileSize
        }
    }

    /// How hard a write tries to survive a crash of the machine (a process crash never loses a
    /// confirmed write either way: the rename is atomic).
    public enum Durability: Sendable, Hashable {
        /// `fsync` the new file before the rename and the directory after it.
        case full
        /// No `fsync`: faster, and a power loss may lose the last writes.
        case none
    }

    let store: SuiteStore

    /// What a suite has done in this process, for diagnostics and benchmarks.
    public struct Statistics: Sendable, Hashable {
        /// Suite files written (each a temporary file renamed over the suite).
        public var fileWrites = 0
        /// Suite files read because another writer changed them.
        public var fileReads = 0
        /// Other writers' changes taken from the suite's journal instead of reading the suite
        /// file (see <doc:ChangeStream>).
        public var journalReads = 0
    }

    /// What this suite's live store has done so far (shared by every object for the same file).
    public var statistics: Statistics { store.statistics }

    /// The number of the last write of the suite this process has read or made: every write by
    /// this library, in any process, gives the suite the next number, and the suite's file
    /// carries it; ``PreferenceChange/sequence`` tells which write made a change. `0` before any
    /// numbered write. A `set` gets its number when it is written (after ``synchronize()``, or
    /// once the background write is done), an `update` before it returns.
    public var sequence: UInt64 { store.sequence }

    /// The suite's name.
    public var name: String { store.name }

    /// The suite's file, or `nil` for an in-memory suite.
    public var fileURL: URL? { store.file.map { URL(filePath: $0.path) } }

    /// A suite on `store`, for other backends of this package (`SharedPrefsEtcd`).
    package init(store: SuiteStore) {
        self.store = store
    }

    /// Opens a suite like `UserDefaults(suiteName:)`: a name starting with `group.` is that app
    /// group's suite, in its container; any other name lives in `<root>/Preferences`.
    ///
    /// Returns `nil` (and logs why) when the name is invalid or the directory unusable; use
    /// ``init(suiteName:in:options:)`` to get the error instead.
    public convenience init?(suiteName: String) {
        do {
            try self.init(suiteName: suiteName, in: nil)
        } catch {
            logger.error("\(error)")
            return nil
        }
    }

    /// Opens a suite, creating its directory if needed.
    ///
    /// - Parameters:
    ///   - suiteName: Letters, digits, `.`, `-`, `_`; no leading dot; at most 200 bytes.
    ///   - group: The app group whose container holds the suite. When `nil`, a `group.…` name is
    ///     that group's own suite and any other name lives in `<root>/Preferences`.
    ///   - options: Format, durability and permissions. The first opening of a file in a process
    ///     sets them for every later one.
    /// - Throws: ``PreferenceError`` when the name is invalid or the directory cannot be created,
    ///   is insecure (writable by others without the sticky bit), or cannot be read.
    public convenience init(suiteName: String, in group: AppGroup?, options: Options = Options()) throws(PreferenceError) {
        let file = try SuiteFile.named(suiteName, in: group, options: options)
        let ownGroup = group?.identifier ?? (suiteName.hasPrefix("group.") ? suiteName : nil)
        try self.init(name: suiteName, layers: SystemLayerIdentity(suiteName: suiteName, group: ownGroup), file: file)
    }

    /// Opens the suite stored in `file`, sharing the live store of every other object for it.
    convenience init(name: String, layers: SystemLayerIdentity, file: SuiteFile) throws(PreferenceError) {
        self.init(store: try StoreRegistry.store(name: name, layers: layers, file: file))
    }

    /// Checks a suite name without opening anything: letters, digits, `.`, `-`, `_`; no leading
    /// dot; at most 200 bytes.
    /// - Throws: ``PreferenceError`` with code ``PreferenceError/Code/invalidName`` saying what is wrong.
    public static func validate(suiteName: String) throws(PreferenceError) {
        try SuiteName.validate(suiteName, what: "suite name")
    }

    /// Opens a suite stored in any property-list file. The suite's name is the file name without
    /// its extension; the file need not exist yet.
    /// - Throws: ``PreferenceError`` when the URL is not a file URL or names no valid file name,
    ///   or the directory is unusable.
    public convenience init(fileURL: URL, options: Options = Options()) throws(PreferenceError) {
        let (name, file) = try SuiteFile.at(fileURL, options: options)
        try self.init(name: name, layers: SystemLayerIdentity(suiteName: name, directory: file.location.path), file: file)
    }

    /// The stored values of a suite and the number of the write that made them (``sequence``),
    /// read once without opening it: nothing is created, locked or watched. The file is found
    /// and refused as an opened suite's is (links below the container, other owners, FIFOs,
    /// size, not a property list). `nil` when there is no file. For `prefs-watch`'s reading verbs.
    package static func readStored(suiteName: String, in group: AppGroup?) throws(PreferenceError) -> (values: PlistDictionary, sequence: UInt64)? {
        try SuiteFile.named(suiteName, in: group, options: Options()).readOnce()
    }

    /// ``readStored(suiteName:in:)`` for a suite in any property-list file.
    package static func readStored(fileURL: URL) throws(PreferenceError) -> (values: PlistDictionary, sequence: UInt64)? {
        try SuiteFile.at(fileURL, options: Options()).file.readOnce()
    }

    /// This library's version (`prefs-watch --version` prints it; `CHANGELOG.md` lists what each
    /// version changed).
    public static let libraryVersion = "0.1.0"

    /// This program's own suite, named after the executable (like `UserDefaults.standard`), in
    /// `<root>/Preferences`. Falls back to an in-memory suite, with a logged error, if that
    /// directory cannot be used.
    public static let standard: PreferenceSuite = {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        var name = String(ProcessInfo.processInfo.processName.map { allowed.contains($0) ? $0 : "_" }.prefix(SuiteName.maximumBytes))
        if name.isEmpty || name.hasPrefix(".") { name = "app" + name }
        var options = Options()
        options.launchArguments = true
        let suite = (try? PreferenceSuite(suiteName: name, in: nil, options: options)) ?? .inMemory(name: name)
        suite.store.register(StandardSuiteDefaults.opened())
        return suite
    }()

    /// A suite that lives only in this object's memory: for tests and previews. It has the full
    /// API, observers included; ``flush()`` does nothing.
    /// - Parameter name: The name changes report.
    public static func inMemory(name: String = "in-memory") -> PreferenceSuite {
        PreferenceSuite(store: SuiteStore(name: name, backend: MemoryBackend()))
    }

    // MARK: Reading

    /// The value of a key, from the highest layer that holds it: a locked key's from the system
    /// layers, else the stored value, an administrator's or a package's default, the registered
    /// default (<doc:Layers>).
    public func value(forKey key: String) -> PlistValue? {
        store.value(forKey: key)
    }

    /// Where the value of `key` comes from (its layer and file), or `nil` when no layer holds it.
    public func source(ofKey key: String) -> PreferenceSource? {
        store.source(ofKey: key)
    }

    /// Whether a write to `key` is stored: `false` for a key a system layer locks (a write to it
    /// is refused with ``PreferenceError/Code/keyLocked``).
    public func isWritable(_ key: String) -> Bool {
        store.lock(of: key) == nil
    }

    /// The value as Foundation types (`String`, `Int`, `Double`, `Bool`, `Date`, `Data`, `[Any]`,
    /// `[String: Any]`), like `UserDefaults.object(forKey:)`.
    public func object(forKey key: String) -> Any? {
        value(forKey: key)?.foundationValue
    }

    /// A string; numbers are converted to their decimal text, like `UserDefaults`.
    public func string(forKey key: String) -> String? {
        value(forKey: key)?.userDefaultsString
    }

    /// An integer, converting reals (truncated), booleans and numeric strings; `0` otherwise.
    public func integer(forKey key: String) -> Int {
        value(forKey: key)?.userDefaultsInteger ?? 0
    }

    /// A double, converting integers, booleans and numeric strings; `0` otherwise.
    public func double(forKey key: String) -> Double {
        value(forKey: key)?.userDefaultsDouble ?? 0
    }

    /// A float, converted like ``double(forKey:)``.
    public func float(forKey key: String) -> Float {
        Float(double(forKey: key))
    }

    /// A boolean: `true` for `true`, non-zero numbers and the strings `YES`/`true`/`1`; else `false`.
    public func bool(forKey key: String) -> Bool {
        value(forKey: key)?.userDefaultsBool ?? false
    }

    /// Data, if the value is data.
    public func data(forKey key: String) -> Data? {
        if case .data(let v)? = value(forKey: key) { return v }
        return nil
    }

    /// A date, if the value is a date.
    public func date(forKey key: String) -> Date? {
        if case .date(let v)? = value(forKey: key) { return v }
        return nil
    }

    /// A URL from a stored string; an absolute path or `~/…` becomes a file URL.
    public func url(forKey key: String) -> URL? {
        guard let text = string(forKey: key) else { return nil }
        if text.hasPrefix("/") { return URL(filePath: text) }
        if text.hasPrefix("~") { return URL(filePath: Path.expandingTilde(text)) }
        return URL(string: text)
    }

    /// An array, as Foundation types.
    public func array(forKey key: String) -> [Any]? {
        if case .array(let v)? = value(forKey: key) { return v.map(\.foundationValue) }
        return nil
    }

    /// A dictionary, as Foundation types (see ``PlistValue/foundationValue`` for keys that differ
    /// only in Unicode normalization).
    public func dictionary(forKey key: String) -> [String: Any]? {
        if case .dictionary(let v)? = value(forKey: key) { return v.swiftDictionary.mapValues(\.foundationValue) }
        return nil
    }

    /// An array of strings, if the value is an array holding only strings.
    public func stringArray(forKey key: String) -> [String]? {
        guard case .array(let v)? = value(forKey: key) else { return nil }
        return [String](plistValue: .array(v))
    }

    /// Every key's value as ``value(forKey:)`` reads it (registered defaults, system layers, stored
    /// values, launch arguments, locks), as Foundation types (see ``PlistValue/foundationValue``
    /// for keys that differ only in Unicode normalization).
    public func dictionaryRepresentation() -> [String: Any] {
        resolvedValues.swiftDictionary.mapValues(\.foundationValue)
    }

    /// Every key's value as ``value(forKey:)`` reads it, through every layer (<doc:Layers>), as
    /// property-list values; ``storedValues`` has the suite's own.
    public var resolvedValues: PlistDictionary {
        store.resolvedValues
    }

    /// The stored value of one key (no registered default), for `@ObservablePrefs`' runtime.
    package func storedValue(forKey key: String) -> PlistValue? {
        store.storedValue(forKey: key)
    }

    /// The stored values (without registered defaults), exactly as property-list values, keys
    /// compared by their exact Unicode scalars.
    public var storedValues: PlistDictionary {
        store.storedValues
    }

    // MARK: Writing

    /// Stores a value, visible in this process at once and persisted in the background.
    /// `Optional.none` removes the key. A value with no stored form (a `Codable` value that fails
    /// to encode, a dictionary whose keys have no string form) is not stored: it is logged and
    /// reported to ``failures()``, and the key keeps its value.
    public func set<Value: PreferenceValue>(_ value: Value, forKey key: String) {
        guard let operation = value.storing else { return refuse(value, forKey: key, because: noStoredForm) }
        store.apply(operation, forKey: key)
    }

    /// Stores a Foundation property-list value, like `UserDefaults.set(_:forKey:)`; `nil` removes
    /// the key. A value a property list cannot hold is not stored: it is logged and reported to
    /// ``failures()``.
    public func set(_ value: Any?, forKey key: String) {
        guard let value else { return removeObject(forKey: key) }
        guard let plist = PlistValue(foundationValue: value) else {
            return refuse(value, forKey: key, because: "which a property list cannot hold. Conform the type to PreferenceValue (Codable or RawRepresentable) and use set(_:forKey:) with it")
        }
        store.apply(.set(plist), forKey: key)
    }

    /// Logs and reports a value that is not stored.
    private func refuse(_ value: Any, forKey key: String, because reason: String) {
        let error = PreferenceError(
            code: .unsupportedValue,
            message: "Not stored: the value for key \"\(key)\" in suite \(name) is a \(type(of: value)), \(reason).",
            path: fileURL?.path)
        logger.error("\(error)")
        store.report(error)
    }

    /// Removes a key; reads fall back to the registered default.
    public func removeObject(forKey key: String) {
        store.apply(.remove, forKey: key)
    }

    /// Removes every stored key.
    public func removeAll() {
        store.apply(storedValues.storage.mapValues { _ in .remove })
    }

    /// Removes every stored key that starts with `prefix` (matched as ``KeyFilter/prefix(_:)`` matches).
    public func removeValues(withPrefix prefix: String) {
        store.apply(storedValues.storage.filter { KeyFilter.prefix(prefix).matches($0.key.string) }.mapValues { _ in .remove })
    }

    /// Whether this is the first launch: `true` for exactly one call, in one process, however many
    /// processes ask at once, until `marker` is removed (SwiftVault's `isFirstLaunch()`, for a
    /// suite that processes share). The marker is written under the suite's lock before this
    /// returns (``update(_:)-30e7n``), so no second process can see a first launch too.
    /// - Parameter marker: The key that records the first launch; its value is when it was.
    /// - Throws: What ``update(_:)-30e7n`` throws (another process held the lock past the lock timeout).
    public func isFirstLaunch(marker: String = "SharedPrefs.firstLaunch") throws -> Bool {
        try update { transaction in
            guard transaction[marker] == nil else { return false }
            transaction[marker] = .date(Date())
            return true
        }
    }

    /// Sets values that reads return when a key is not stored. They live in this process only.
    /// Values a property list cannot hold are skipped and logged.
    public func register(defaults: [String: Any]) {
        var converted = PlistDictionary()
        for (key, value) in defaults {
            if let plist = PlistValue(foundationValue: value) {
                converted[key] = plist
            } else {
                logger.error("register(defaults:) skipped key \"\(key)\" of suite \(name): a \(type(of: value)) is not a property-list value")
            }
        }
        store.register(converted)
    }

    /// Waits until every pending write is on disk. Like `UserDefaults.synchronize()` it blocks
    /// the caller; prefer ``flush()`` in async code.
    /// - Returns: `false` if a write failed (the error is also reported to ``failures()``).
    @discardableResult
    public func synchronize() -> Bool {
        do {
            try store.flushSynchronously()
            return true
        } catch {
            return false  // reported
        }
    }

    /// Waits until every pending write is on disk: after the suite's earlier work in this process
    /// (a background write of the same values, which ends within its own lock timeout), its own
    /// write gives up one lock timeout after the call.
    /// - Throws: ``PreferenceError`` when the write failed (``PreferenceError/Code/lockTimedOut``
    ///   names the lock's holder where the system shows it); the values stay pending and are
    ///   written by the next flush.
    public func flush() async throws {
        try await store.flush()
    }

    /// Runs a read-modify-write under the suite's file lock, on the freshest values from disk, and
    /// writes the result before returning: no other process's write can slip in between, so
    /// counters and lists never lose an update.
    ///
    /// ```swift
    /// let total = try suite.update { transaction -> Int in
    ///     let next = (transaction[.counter]) + 1
    ///     transaction[.counter] = next
    ///     return next
    /// }
    /// ```
    ///
    /// Pending writes of this process are written in the same step. The body runs on the
    /// calling thread, holding the suite's I/O exclusion: `update` or `synchronize()` of the same
    /// suite inside it throws ``PreferenceError/Code/unsupportedOperation`` instead of waiting for
    /// itself.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (nothing is written then), or a ``PreferenceError`` from the write.
    public func update<Result>(_ body: (inout PreferenceTransaction) throws -> Result) throws -> Result {
        try store.update(body)
    }

    /// ``update(_:)-30e7n`` for async code: the same read-modify-write under the suite's file lock,
    /// run on a thread of the suite's own instead of blocking the caller's, which is one of Swift's
    /// cooperative pool (a lock wait, an `fsync` or a cluster's answer there would hold a thread
    /// every task shares). It waits for the suite's earlier work in this process and for the lock
    /// one ``Options/lockTimeout`` at most (an etcd suite: its timeout), counted from the call.
    ///
    /// ```swift
    /// let launches = try await suite.update { $0[.launchCount] += 1; return $0[.launchCount] }
    /// ```
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (nothing is written then), or a ``PreferenceError`` from the write.
    public func update<Result: Sendable>(_ body: @escaping @Sendable (inout PreferenceTransaction) throws -> Result) async throws -> Result {
        try await store.update(body)
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) && count > suffix.count ? String(dropLast(suffix.count)) : self
    }
}

/// The fixed defaults of keys made for the standard suite before it was opened: a key registers
/// its default when it is made, as Defaults' keys do, without opening the suite for it.
enum StandardSuiteDefaults {
    /// `nil` once the standard suite is open.
    private static let pending = Lock<PlistDictionary?>([:])

    static func register(_ name: String, _ value: PlistValue) {
        let isOpen = pending.withLock { defaults in
            defaults?[name] = value
            return defaults == nil
        }
        if isOpen { PreferenceSuite.standard.store.register([name: value]) }
    }

    /// The defaults registered so far; later ones go to the open suite.
    static func opened() -> PlistDictionary {
        pending.withLock { defaults in
            defer { defaults = nil }
            return defaults ?? [:]
        }
    }
}
