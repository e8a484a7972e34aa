import FoundationEssentials

/// What ``PreferenceSuite/importUserDefaults(suiteName:overwrite:)`` copied.
public struct UserDefaultsImport: Sendable, Equatable {
    /// The file Foundation's `UserDefaults` keeps the suite in; only read.
    public let source: URL
    /// The keys copied into the suite, sorted.
    public let copied: [String]
    /// The keys the suite held already and kept (without `overwrite`), sorted.
    public let kept: [String]
}

extension PreferenceSuite {
    /// Where Foundation's `UserDefaults(suiteName: name)` keeps its values on Linux:
    /// `$XDG_CONFIG_HOME/<name>.plist`, else `$HOME/.config/<name>.plist`, as Foundation finds
    /// them (the password database's home only without an absolute `HOME`). For
    /// `UserDefaults.standard`, the name is the executable's. A SharedPrefs suite of the same
    /// name is another file, in another directory: the two share nothing.
    public static func userDefaultsFileURL(suiteName name: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return URL(filePath: config, directoryHint: .isDirectory).appending(path: name + ".plist")
        }
        return URL(filePath: Path.home ?? "/", directoryHint: .isDirectory).appending(path: ".config/\(name).plist")
    }

    /// Copies the values Foundation's `UserDefaults(suiteName:)` keeps for `suiteName` on Linux
    /// (``userDefaultsFileURL(suiteName:)``) into this suite, in one ``update(_:)-30e7n``, each with its
    /// type. The source file is only read, never changed or removed; Foundation rewrites it in
    /// place without a lock, so stop the programs that write it first.
    ///
    /// ```swift
    /// let moved = try suite.importUserDefaults(suiteName: "com.example.app")
    /// print("copied \(moved.copied.count) keys from \(moved.source.path)")
    /// ```
    /// - Parameters:
    ///   - suiteName: The name the program passed to `UserDefaults(suiteName:)`.
    ///   - overwrite: Whether a key this suite holds already takes the `UserDefaults` value
    ///     (by default it keeps its own, listed in ``UserDefaultsImport/kept``).
    /// - Throws: ``PreferenceError``: ``PreferenceError/Code/invalidName`` for a name that is no
    ///   file name, ``PreferenceError/Code/ioFailure`` when there is no such file, and the
    ///   reading errors of a suite file (not a property list, too large, a link).
    @discardableResult
    public func importUserDefaults(suiteName: String, overwrite: Bool = false) throws(PreferenceError) -> UserDefaultsImport {
        try SuiteName.validate(suiteName, what: "UserDefaults suite name")
        let source = Self.userDefaultsFileURL(suiteName: suiteName)
        guard let values = try Self.readStored(fileURL: source)?.values else {
            throw PreferenceError(
                code: .ioFailure,
                message: "There is no UserDefaults suite \(suiteName): Foundation keeps it in \(source.path), and there is no file there. Check the name (and XDG_CONFIG_HOME, as the program that wrote it saw it).",
                path: source.path, systemCall: "open", errno: .noSuchFileOrDirectory)
        }
        let result: (copied: [String], kept: [String])
        do {
            result = try update { transaction in
            var copied: [String] = [], kept: [String] = []
            for (key, value) in values.sortedByKey {
                if !overwrite, transaction[key] != nil {
                    kept.append(key)
                } else {
                    transaction[key] = value
                    copied.append(key)
                }
            }
            return (copied, kept)
            }
        } catch let error as PreferenceError {
            throw error
        } catch {
            throw PreferenceError(code: .ioFailure, message: "\(error)", path: fileURL?.path)
        }
        return UserDefaultsImport(source: source, copied: result.copied, kept: result.kept)
    }
}
