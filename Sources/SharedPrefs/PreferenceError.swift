import SystemPackage

/// The one error type of SharedPrefs: what happened, to which path, through which system call,
/// and what to do about it.
///
/// ```swift
/// do {
///     let suite = try PreferenceSuite(suiteName: "settings", in: AppGroup(identifier: "group.com.example.app"))
/// } catch let error as PreferenceError where error.code == .insecureDirectory {
///     print(error)   // names the directory and the chmod that fixes it
/// }
/// ```
public struct PreferenceError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. New codes may be added; switch with a `default` case.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        /// A code named `name`; the backends of this package (`SharedPrefsEtcd`) add their own.
        package init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A suite name or group identifier is not allowed (characters, length, leading dot).
        public static let invalidName = Code("invalidName")
        /// A directory is writable by others without the sticky bit, so anyone could replace a suite.
        public static let insecureDirectory = Code("insecureDirectory")
        /// A symbolic link stands where a suite, lock or temporary file should be.
        public static let symbolicLink = Code("symbolicLink")
        /// A suite or lock file in a directory that every user can write (sticky bit) is owned by
        /// another user, who may have planted it.
        public static let untrustedFile = Code("untrustedFile")
        /// Permission was denied by the file system.
        public static let permissionDenied = Code("permissionDenied")
        /// A system call failed for another reason (disk full, read-only file system, I/O error).
        public static let ioFailure = Code("ioFailure")
        /// A suite file looks like a property list but does not parse, or has no dictionary at its
        /// root, or is a reference bomb. A writer that finds it so, once no program is writing it,
        /// moves it aside, or writes nothing if this process never read a good version of it.
        public static let corruptFile = Code("corruptFile")
        /// A file where a suite should be is plainly not a property list (no `bplist` header, no
        /// XML property-list prolog, not empty): it is left exactly as it is, and nothing is written.
        public static let notPropertyList = Code("notPropertyList")
        /// A FIFO, socket, device or directory stands where a suite or lock file should be.
        public static let notRegularFile = Code("notRegularFile")
        /// A suite file is larger than ``PreferenceSuite/Options/maximumFileSize``, or a write
        /// would make it so.
        public static let fileTooLarge = Code("fileTooLarge")
        /// A write to a key that a system layer locks (see <doc:Layers>); nothing was written.
        public static let keyLocked = Code("keyLocked")
        /// The suite's lock stayed held by another process for ``PreferenceSuite/Options/lockTimeout``.
        public static let lockTimedOut = Code("lockTimedOut")
        /// A value cannot be stored in a property list.
        public static let unsupportedValue = Code("unsupportedValue")
        /// Watching for changes failed; the suite falls back to polling.
        public static let watchFailed = Code("watchFailed")
        /// The kernel's event queue overflowed: every suite was re-read and diffed again, so no
        /// change is lost, but successive changes of a key may arrive as one.
        public static let watchOverflowed = Code("watchOverflowed")
        /// No longer reported: a ``ObservationOptions/synchronousExternalChanges`` handler that
        /// blocks holds only its own thread, and delays only its own observer.
        @available(*, deprecated, message: "Not reported any more: a handler that blocks delays only its own observer.")
        public static let handlerHeldWatcher = Code("handlerHeldWatcher")
        /// The operation needs a file, but the suite lives only in memory, or the call is not
        /// allowed where it was made (for example `update` inside another `update`).
        public static let unsupportedOperation = Code("unsupportedOperation")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do, in one or two sentences.
    public var message: String
    /// The file or directory concerned, if any.
    public var path: String?
    /// The system call that failed, if any (`renameat`, `inotify_add_watch`, …).
    public var systemCall: String?
    /// The `errno` the system call returned, if any.
    public var errno: Errno?

    /// Creates an error. Most errors are made by the library; this is public for tests and adapters.
    public init(code: Code, message: String, path: String? = nil, systemCall: String? = nil, errno: Errno? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.systemCall = systemCall
        self.errno = errno
    }

    public var description: String {
        var text = message
        if let systemCall, let errno {
            text += " [\(systemCall): \(errno) (errno \(errno.rawValue))]"
        }
        return text
    }
}

extension PreferenceError {
    /// Maps a failed system call on `path` to an error whose message says what to do.
    package static func system(_ call: String, _ errno: Errno, path: String, doing action: String) -> PreferenceError {
        let code: Code
        let advice: String
        switch errno {
        case .permissionDenied, .notPermitted:
            code = .permissionDenied
            advice = "Check the owner and mode of \(path) and its directory (ls -ld), or run as a member of the group that owns the container."
        case .tooManySymbolicLinkLevels:
            code = .symbolicLink
            advice = "\(path) is a symbolic link; SharedPrefs never follows links in a container. Remove the link."
        case .noSpace where call == "inotify_add_watch":
            code = .watchFailed
            advice = "The per-user inotify watch limit is reached; raise fs.inotify.max_user_watches (sysctl -w fs.inotify.max_user_watches=524288). Polling is used meanwhile."
        case .tooManyOpenFiles where call == "inotify_init1":
            code = .watchFailed
            advice = "The per-user inotify instance limit is reached; raise fs.inotify.max_user_instances. Polling is used meanwhile."
        case .noSpace, .diskQuotaExceeded:
            code = .ioFailure
            advice = "The file system holding \(path) is full or over quota; free space and the pending values will be written on the next flush."
        case .readOnlyFileSystem:
            code = .ioFailure
            advice = "\(path) is on a read-only file system; put the suite in a writable directory."
        case .isDirectory:
            code = .notRegularFile
            advice = "A directory stands where SharedPrefs keeps a file; remove it if you did not put it there."
        case .notDirectory:
            code = .ioFailure
            advice = "A component of \(path) is not a directory; remove the file that stands in its place."
        default:
            code = .ioFailure
            advice = "Check that \(path) is reachable and the disk is healthy."
        }
        return PreferenceError(
            code: code, message: "Could not \(action) \(path): \(errno). \(advice)",
            path: path, systemCall: call, errno: errno)
    }
}

extension Result where Failure == Errno {
    /// Returns the value, or throws a `PreferenceError` that names the call, the path and the remedy.
    func get(_ call: String, path: String, doing action: String) throws(PreferenceError) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let errno): throw PreferenceError.system(call, errno, path: path, doing: action)
        }
    }
}
