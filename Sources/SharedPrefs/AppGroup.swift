import FoundationEssentials

/// An app group: a shared container directory that a main process and its helpers all use.
///
/// On Apple platforms an App Group container is provisioned by the system; here it is a directory
/// under `$SHAREDPREFS_ROOT` (default `$XDG_DATA_HOME/sharedprefs`, that is
/// `~/.local/share/sharedprefs`), or any directory you name.
///
/// ```swift
/// let group = try AppGroup(identifier: "group.com.example.app")
/// // ~/.local/share/sharedprefs/containers/group.com.example.app/Library/Preferences/
/// let suite = try PreferenceSuite(suiteName: "settings", in: group)
///
/// let elsewhere = try AppGroup(identifier: "group.com.example.app", containerURL: URL(filePath: "/srv/example"))
/// ```
public struct AppGroup: Sendable, Hashable {
    /// The group identifier, for example `group.com.example.app`.
    public let identifier: String
    /// The group's shared container.
    public let containerURL: URL

    /// The directory that holds the group's suites: `<container>/Library/Preferences`.
    public var preferencesDirectory: URL {
        containerURL.appending(path: "Library/Preferences", directoryHint: .isDirectory)
    }

    /// Where its suites are: `Library/Preferences` walked from the container without links, made
    /// `02770` when missing.
    var location: DirectoryLocation {
        DirectoryLocation(trusted: containerURL.path(percentEncoded: false), components: ["Library", "Preferences"], mode: 0o2770)
    }

    /// A group whose container lives under ``rootDirectory`` as `containers/<identifier>`.
    /// - Throws: ``PreferenceError/Code/invalidName`` if the identifier is not a valid name.
    public init(identifier: String) throws(PreferenceError) {
        try SuiteName.validate(identifier, what: "app group identifier")
        self.identifier = identifier
        self.containerURL = Self.rootDirectory.appending(path: "containers/\(identifier)", directoryHint: .isDirectory)
    }

    /// A group whose container is the directory you give, anywhere on the file system.
    /// - Throws: ``PreferenceError/Code/invalidName`` if the identifier is not a valid name.
    public init(identifier: String, containerURL: URL) throws(PreferenceError) {
        try SuiteName.validate(identifier, what: "app group identifier")
        self.identifier = identifier
        self.containerURL = containerURL.standardizedFileURL
    }

    /// Where containers and ungrouped suites live: `$SHAREDPREFS_ROOT`, else
    /// `$XDG_DATA_HOME/sharedprefs` (when it is an absolute path, as the XDG specification asks),
    /// else `$HOME/.local/share/sharedprefs` (the home directory of the user's passwd entry only
    /// when `HOME` is unset or not absolute).
    public static var rootDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let root = environment["SHAREDPREFS_ROOT"], !root.isEmpty {
            return URL(filePath: root, directoryHint: .isDirectory)
        }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(filePath: data, directoryHint: .isDirectory).appending(path: "sharedprefs", directoryHint: .isDirectory)
        }
        return URL(filePath: Path.home ?? "/", directoryHint: .isDirectory).appending(path: ".local/share/sharedprefs", directoryHint: .isDirectory)
    }
}

/// The rules for suite names and group identifiers: never a path.
enum SuiteName {
    static let maximumBytes = 200

    static func validate(_ name: String, what: String) throws(PreferenceError) {
        let problem: String? =
            if name.isEmpty { "it is empty" }
            else if name.utf8.count > maximumBytes { "it is \(name.utf8.count) bytes long (at most \(maximumBytes))" }
            else if name.hasPrefix(".") { "it starts with a dot" }
            else if let bad = name.unicodeScalars.first(where: { !isAllowed($0) }) {
                "it contains \(bad == "\0" ? "a NUL byte" : "\"\(bad.escaped(asASCII: true))\"")"
            }
            else { nil }
        if let problem {
            throw PreferenceError(
                code: .invalidName,
                message: "The \(what) \"\(name.unicodeScalars.map { $0.escaped(asASCII: true) }.joined())\" is not allowed: \(problem). Use letters, digits, '.', '-' and '_', not starting with a dot, at most \(maximumBytes) bytes.")
        }
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", ".", "-", "_": true
        default: false
        }
    }
}
