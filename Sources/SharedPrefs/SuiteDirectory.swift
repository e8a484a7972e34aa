#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// A directory of suites: an app group's `Library/Preferences`, `<root>/Preferences`, or any
/// directory of `.plist` files. Lists its suites and tells you when new ones appear.
///
/// ```swift
/// let directory = SuiteDirectory(group: try AppGroup(identifier: "group.com.example.app"))
/// for name in try directory.suiteNames() { print(name) }
/// for await name in try directory.suiteAdditions() { print("new suite", name) }
/// ```
public struct SuiteDirectory: Sendable, Hashable {
    /// The directory that holds the `.plist` files.
    public let url: URL
    /// How it is opened: a group's `Library/Preferences` from its container, without following links.
    let location: DirectoryLocation
    /// The app group whose container this is, when made from one: its suites' system layers.
    let group: String?

    /// The suites of any directory.
    public init(url: URL) {
        self.url = url.standardizedFileURL
        location = DirectoryLocation(trusted: self.url.path(percentEncoded: false))
        group = nil
    }

    /// The suites of an app group: its container's `Library/Preferences`.
    public init(group: AppGroup) {
        url = group.preferencesDirectory.standardizedFileURL
        location = group.location
        self.group = group.identifier
    }

    /// The suites that belong to no group: `<root>/Preferences`.
    public static var ungrouped: SuiteDirectory {
        SuiteDirectory(url: AppGroup.rootDirectory.appending(path: "Preferences", directoryHint: .isDirectory))
    }

    /// Every app group that has a container under ``AppGroup/rootDirectory``, sorted by identifier.
    public static func groups() -> [AppGroup] {
        let containers = AppGroup.rootDirectory.appending(path: "containers", directoryHint: .isDirectory)
        let names = (try? entries(containers.path(percentEncoded: false))) ?? []
        return names.sorted().compactMap { try? AppGroup(identifier: $0) }
    }

    private var path: String { url.path(percentEncoded: false).trimmingSuffix("/") }

    /// The names of the suites in the directory (files `<name>.plist` with a valid name), sorted.
    /// - Throws: ``PreferenceError`` when the directory cannot be read. A missing directory has no suites.
    public func suiteNames() throws(PreferenceError) -> [String] {
        try Self.entries(path).compactMap(Self.suiteName(ofFile:)).sorted()
    }

    /// The names in the directory at `path`; none if it does not exist.
    private static func entries(_ path: String) throws(PreferenceError) -> [String] {
        let opened = Syscall.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if case .failure(.noSuchFileOrDirectory) = opened { return [] }
        let fd = try opened.get("open", path: path, doing: "list the suites in")
        defer { Syscall.close(fd) }
        return try Syscall.directoryEntries(fd).get("readdir", path: path, doing: "list the suites in")
    }

    /// Opens a suite of this directory.
    /// - Throws: ``PreferenceError`` when the name is invalid or the directory unusable.
    public func suite(named name: String, options: PreferenceSuite.Options = .init()) throws(PreferenceError) -> PreferenceSuite {
        try SuiteName.validate(name, what: "suite name")
        let layers = group.map { SystemLayerIdentity(suiteName: name, group: $0) } ?? SystemLayerIdentity(suiteName: name, directory: location.path)
        return try PreferenceSuite(name: name, layers: layers, file: SuiteFile(location: location, fileName: name + ".plist", options: options))
    }

    /// The names of suites created in (or moved or linked into) the directory from now on, as they
    /// appear. Where inotify cannot watch the directory, its listing is polled every 100 ms, with
    /// a logged warning. The sequence ends when the task iterating it is cancelled.
    /// - Throws: ``PreferenceError`` when the directory does not exist or is unusable.
    public func suiteAdditions() throws(PreferenceError) -> some AsyncSequence<String, Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let observation = try observeSuiteAdditions { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    /// Calls `handler` with the name of every suite created in (or moved or linked into) the
    /// directory from now on: ``suiteAdditions()`` without Swift concurrency. The handler runs on
    /// the process's watcher thread: return at once.
    /// - Returns: A token; the observation ends when it is cancelled or released.
    /// - Throws: ``PreferenceError`` when the directory does not exist or is unusable.
    public func observeSuiteAdditions(_ handler: @escaping @Sendable (String) -> Void) throws(PreferenceError) -> PreferenceObservation {
        guard let dir = try location.open(creating: false) else {
            throw PreferenceError(code: .ioFailure, message: "Cannot watch \(path) for new suites: it does not exist. Create it, or check the group identifier or directory.", path: path, systemCall: "open", errno: .noSuchFileOrDirectory)
        }
        dir.close()
        let id = InotifyWatcher.shared.addListener(location) { fileName in
            if let name = Self.suiteName(ofFile: fileName) { handler(name) }
        }
        return PreferenceObservation { InotifyWatcher.shared.removeListener(id) }
    }

    /// `settings.plist` → `settings`; temporary, lock and corrupt-copy files → `nil`.
    static func suiteName(ofFile fileName: String) -> String? {
        guard fileName.hasSuffix(".plist"), !fileName.hasPrefix(".") else { return nil }
        let name = String(fileName.dropLast(6))
        return (try? SuiteName.validate(name, what: "suite name")) == nil ? nil : name
    }
}
