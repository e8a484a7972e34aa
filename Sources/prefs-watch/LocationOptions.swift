import ArgumentParser
import Foundation
import SharedPrefs

/// `--group` / `--dir`, and how a suite argument becomes a suite.
struct LocationOptions: ParsableArguments {
    @Option(name: .customLong("group"), help: ArgumentHelp("Look suite names up in this app group's container.", valueName: "id"))
    var group: String?

    @Option(
        name: .customLong("dir"),
        help: ArgumentHelp(
            "Look suite names up in this directory (a container: its Library/Preferences is used when present).",
            valueName: "path"))
    var dir: String?

    func validate() throws {
        if group != nil && dir != nil { throw ValidationError("Give --group or --dir, not both.") }
    }

    /// The directory named by `--group` or `--dir`, if any.
    func directory() throws -> SuiteDirectory? {
        if let group { return SuiteDirectory(group: try AppGroup(identifier: group)) }
        guard let dir else { return nil }
        let url = URL(filePath: dir, directoryHint: .isDirectory)
        let preferences = url.appending(path: "Library/Preferences", directoryHint: .isDirectory)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: preferences.path, isDirectory: &isDirectory), isDirectory.boolValue {
            return SuiteDirectory(url: preferences)
        }
        return SuiteDirectory(url: url)
    }

    /// The file a suite argument names, without opening it (nothing is created).
    func fileURL(of spec: String) throws -> URL {
        if spec.contains("/") || spec.hasSuffix(".plist") {
            return URL(filePath: spec).standardizedFileURL
        }
        if let directory = try directory() {
            try validateName(spec)
            return directory.url.appending(path: spec + ".plist")
        }
        try validateName(spec)
        if spec.hasPrefix("group.") {
            return try AppGroup(identifier: spec).preferencesDirectory.appending(path: spec + ".plist")
        }
        return SuiteDirectory.ungrouped.url.appending(path: spec + ".plist")
    }

    /// Opens the suite a suite argument names.
    func open(_ spec: String) throws -> PreferenceSuite {
        try PreferenceSuite(fileURL: fileURL(of: spec))
    }

    /// Opens a suite that must already exist, for verbs that change it.
    func openExisting(_ spec: String) throws -> PreferenceSuite {
        let url = try fileURL(of: spec)
        guard FileManager.default.fileExists(atPath: url.path) else { throw missing(spec, url) }
        return try PreferenceSuite(fileURL: url)
    }

    /// Reads a suite's file directly, for verbs that only read: nothing is created or watched,
    /// and a file that is not a property list is an error that says so.
    func readValues(_ spec: String) throws -> (url: URL, values: [String: PlistValue]) {
        let url = try fileURL(of: spec)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw FileManager.default.fileExists(atPath: url.path)
                ? failure("Could not read \(url.path); check its permissions.") : missing(spec, url)
        }
        let root: PlistValue
        do { root = try PlistValue(propertyListData: data) } catch {
            throw failure("\(url.path): \(error.message)")
        }
        guard case .dictionary(let values) = root else {
            throw failure("\(url.path) holds a \(root.typeName); a suite has a dictionary at its root.")
        }
        return (url, values)
    }

    private func missing(_ spec: String, _ url: URL) -> ExitCode {
        failure("The suite \(spec) does not exist (no file at \(url.path)).")
    }

    /// Refuses a name that could escape its directory before any directory is touched.
    private func validateName(_ name: String) throws {
        try PreferenceSuite.validate(suiteName: name)
    }
}
