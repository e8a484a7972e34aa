#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// A layer a value is looked up in, highest first: ``locked``, ``launchArguments``, ``suite``,
/// ``administrator``, ``vendor``, ``registered``. See <doc:Layers>.
public enum PreferenceLayer: String, Sendable, Hashable, CustomStringConvertible {
    /// A key an administrator or a package locked: its value is the system layers' (else the
    /// registered or declared default), whatever the suite's file holds, and writes are refused.
    case locked
    /// `-key value` among the process's arguments (``PreferenceSuite/Options/launchArguments``):
    /// this process only, never written.
    case launchArguments
    /// The suite's own file (or etcd prefix): what `set`, `update` and other processes write.
    case suite
    /// An administrator's defaults: `/etc/sharedprefs/<suite>.plist`.
    case administrator
    /// Defaults a package ships: `<dir>/sharedprefs/<suite>.plist` for each of `$XDG_DATA_DIRS`.
    case vendor
    /// `register(defaults:)`, and the defaults `PreferenceKey`s declare.
    case registered

    public var description: String { rawValue }
}

/// Where a key's value comes from: its layer, and the file that holds it (`nil` for values
/// registered in this process, and for a suite in memory).
public struct PreferenceSource: Sendable, Hashable, CustomStringConvertible {
    public let layer: PreferenceLayer
    public let path: String?
    /// For a ``PreferenceLayer/locked`` key: the file that locks it.
    public let lockPath: String?

    public var description: String {
        [layer.rawValue, path, lockPath.map { "locked by \($0)" }].compactMap { $0 }.joined(separator: ", ")
    }
}

/// The system layers of one suite: administrator and vendor defaults and locks, from files only
/// root (or, under `SHAREDPREFS_SYSTEM_ROOT`, the running user) may write. In each system directory
/// `D` (`/etc/sharedprefs`, then each `$XDG_DATA_DIRS/sharedprefs`): `D/<suite>.plist` holds
/// defaults, `D/locks/<suite>` locked keys one per line (`prefix*`, `#` comments); an app group's
/// suite looks in `D/<group>/`. Layers.md has the whole.
package struct SystemLayers: Sendable, Equatable {
    /// The defaults of every system layer, the higher layer's value kept.
    var defaults = PlistDictionary()
    /// Each default's layer and file.
    var sources: [PlistKey: PreferenceSource] = [:]
    /// Locked keys, and the locks file of each.
    var lockedKeys: [PlistKey: String] = [:]
    /// Locked prefixes, and the locks file of each.
    var lockedPrefixes: [(prefix: String, path: String)] = []
    /// The process's `-key value` arguments, for a suite that reads them.
    var arguments = PlistDictionary()

    /// Layers held in memory, for a store given its layers directly (the unit tests' sources):
    /// each default's layer is the highest that holds it; `locked` names keys and `prefix*`es.
    package init(administrator: PlistDictionary = [:], vendor: PlistDictionary = [:], locked: [String] = [], arguments: PlistDictionary = [:]) {
        for (layer, values) in [(PreferenceLayer.administrator, administrator), (.vendor, vendor)] {
            for (key, value) in values.storage where defaults.storage[key] == nil {
                defaults.storage[key] = value
                sources[key] = PreferenceSource(layer: layer, path: nil, lockPath: nil)
            }
        }
        for entry in locked {
            if entry.hasSuffix("*") { lockedPrefixes.append((String(entry.dropLast()), "memory")) } else { lockedKeys[PlistKey(entry)] = "memory" }
        }
        self.arguments = arguments
    }

    var isEmpty: Bool { defaults.storage.isEmpty && lockedKeys.isEmpty && lockedPrefixes.isEmpty && arguments.storage.isEmpty }

    /// The locks file that locks `key`, if one does.
    func lock(of key: PlistKey) -> String? {
        if let path = lockedKeys[key] { return path }
        return lockedPrefixes.first { key.string.utf8.starts(with: $0.prefix.utf8) }?.path
    }

    /// The value of `key` above registered defaults for a suite whose file holds `stored(key)`: a
    /// locked key's from the system defaults, any other's from the launch arguments, the suite, else
    /// the system defaults. The one rule every read follows.
    func value(of key: PlistKey, stored: (PlistKey) -> PlistValue?) -> PlistValue? {
        if lock(of: key) != nil { return defaults.storage[key] }
        return arguments.storage[key] ?? stored(key) ?? defaults.storage[key]
    }

    /// The value of `key` and where it comes from, registered defaults aside, for a suite whose file
    /// holds `stored`: for ``PreferenceSuite/source(ofKey:)`` and `prefs-watch read --explain`.
    package func explain(_ key: PlistKey, stored: (PlistKey) -> PlistValue?, file: String?) -> (value: PlistValue?, source: PreferenceSource?) {
        let value = value(of: key, stored: stored)
        if let lock = lock(of: key) { return (value, PreferenceSource(layer: .locked, path: sources[key]?.path, lockPath: lock)) }
        if arguments.storage[key] != nil { return (value, PreferenceSource(layer: .launchArguments, path: nil, lockPath: nil)) }
        if stored(key) != nil { return (value, PreferenceSource(layer: .suite, path: file, lockPath: nil)) }
        return (value, sources[key])
    }

    /// Every lock, as written in its locks file (`prefix*` for a prefix), and that file.
    package var locks: [(key: String, path: String)] {
        lockedKeys.map { ($0.key.string, $0.value) }.sorted { $0.key < $1.key } + lockedPrefixes.map { ($0.prefix + "*", $0.path) }
    }

    /// Whether `newer` drops something these layers hold: a default, a lock or a prefix lock (a
    /// value changed, or anything added, is no loss).
    func loses(to newer: SystemLayers) -> Bool {
        defaults.storage.keys.contains { newer.defaults.storage[$0] == nil } || lockedKeys.keys.contains { newer.lockedKeys[$0] == nil }
            || lockedPrefixes.contains { old in !newer.lockedPrefixes.contains { $0.prefix == old.prefix } }
    }

    /// Every key these layers name (prefix locks aside): the keys a change of them may touch.
    var keys: Set<PlistKey> { Set(defaults.storage.keys).union(lockedKeys.keys).union(arguments.storage.keys) }

    package static func == (lhs: SystemLayers, rhs: SystemLayers) -> Bool {
        lhs.defaults == rhs.defaults && lhs.sources == rhs.sources && lhs.lockedKeys == rhs.lockedKeys && lhs.arguments == rhs.arguments
            && lhs.lockedPrefixes.map(\.prefix) == rhs.lockedPrefixes.map(\.prefix) && lhs.lockedPrefixes.map(\.path) == rhs.lockedPrefixes.map(\.path)
    }
}

/// Which suite's system layers: its name, and its app group's identifier.
package struct SystemLayerIdentity: Sendable, Hashable {
    package var suiteName: String
    package var group: String?
    /// Whether the system directories' files apply: for a suite where suites live (see
    /// ``init(suiteName:directory:launchArguments:)``), not for a file elsewhere of that name.
    package var readsFiles = true
    /// Whether the process's `-key value` arguments apply too.
    package var launchArguments = false

    package init(suiteName: String, group: String?, launchArguments: Bool = false) {
        self.suiteName = suiteName
        self.group = group
        self.launchArguments = launchArguments
    }

    /// The system layers of `suiteName` in `directory` (absolute): only where suites live, the user's
    /// `<root>/Preferences` or a group's container (then the group's); none for a file elsewhere (a
    /// backup, a staging copy), whatever its name.
    package init(suiteName: String, directory: String, launchArguments: Bool = false) {
        self.init(suiteName: suiteName, group: nil, launchArguments: launchArguments)
        let root = AppGroup.rootDirectory.standardizedFileURL.path(percentEncoded: false).trimmingSuffix("/")
        let directory = URL(filePath: directory, directoryHint: .isDirectory).standardizedFileURL.path(percentEncoded: false).trimmingSuffix("/")
        let parts = directory.hasPrefix(root + "/") ? directory.dropFirst(root.count + 1).split(separator: "/", omittingEmptySubsequences: false) : []
        if parts == ["Preferences"] { return }
        if parts.count == 4, parts[0] == "containers", parts[2] == "Library", parts[3] == "Preferences", (try? SuiteName.validate(String(parts[1]), what: "")) != nil {
            group = String(parts[1])
            return
        }
        readsFiles = false
    }

    /// Whose system layers apply, and why, in words (`prefs-watch read --explain`).
    package var rule: String {
        guard readsFiles else { return "none: the file is not where suites live (the user's preferences directory or an app group's container), so no system layer applies to it, whatever its name" }
        return "those of suite \(suiteName)" + (group.map { " in app group \($0)" } ?? "")
    }
}

extension SystemLayers {
    /// The largest system layer file read: they hold defaults and key names, not data.
    static let maximumFileSize = 1 << 20

    /// The system directories, highest first: the administrator's, then the vendors'.
    static func directories(environment: [String: String] = ProcessInfo.processInfo.environment) -> (directories: [(PreferenceLayer, String)], trustsUser: Bool) {
        if let root = environment["SHAREDPREFS_SYSTEM_ROOT"], root.hasPrefix("/") {
            let base = root.hasSuffix("/") ? String(root.dropLast()) : root
            return ([(.administrator, base + "/etc/sharedprefs"), (.vendor, base + "/usr/local/share/sharedprefs"), (.vendor, base + "/usr/share/sharedprefs")], true)
        }
        let data = (environment["XDG_DATA_DIRS"] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        let vendors = (data.isEmpty ? ["/usr/local/share", "/usr/share"] : data).map { (PreferenceLayer.vendor, ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/sharedprefs") }
        return ([(.administrator, "/etc/sharedprefs")] + vendors, false)
    }

    /// A place whose changes change these layers: a name in a directory.
    package struct Watched: Hashable, Sendable {
        var directory: String
        var name: String
    }

    /// Reads a suite's system layers; a file or directory that does not count (a link, a FIFO, another
    /// owner, writable by others, too large, no property list) is named in `problems`.
    package static func load(_ identity: SystemLayerIdentity) -> (layers: SystemLayers, watched: Set<Watched>, problems: [PreferenceError]) {
        var layers = SystemLayers()
        var watched = Set<Watched>()
        var problems: [PreferenceError] = []
        guard identity.readsFiles else { return (layers, watched, problems) }
        let (directories, trustsUser) = directories()
        let reader = Reader(trustsUser: trustsUser)
        for (layer, base) in directories {
            var path = base
            let known = problems.count
            guard var dir = reader.openDirectory(path, problems: &problems) else {
                // Refused, not missing: watched, for the change of mode or owner that fixes it.
                if problems.count > known { watched.insert(Watched(directory: path, name: identity.suiteName + ".plist")) }
                continue
            }
            if let group = identity.group {
                watched.insert(Watched(directory: path, name: group))
                let sub = reader.openDirectory(group, in: dir, path: path + "/" + group, problems: &problems)
                dir.close()
                guard let sub else { continue }
                (dir, path) = (sub, path + "/" + group)
            }
            defer { dir.close() }
            let fileName = identity.suiteName + ".plist"
            watched.insert(Watched(directory: path, name: fileName))
            watched.insert(Watched(directory: path, name: "locks"))
            if let bytes = reader.read(fileName, in: dir, path: path + "/" + fileName, problems: &problems) {
                let file = path + "/" + fileName
                do throws(PreferenceError) {
                    guard case .dictionary(let values) = try PlistValue(propertyListData: Data(bytes)) else {
                        throw PreferenceError(code: .corruptFile, message: "\(file) holds no dictionary at its root.", path: file)
                    }
                    for (key, value) in values.storage where layers.defaults.storage[key] == nil {
                        layers.defaults.storage[key] = value
                        layers.sources[key] = PreferenceSource(layer: layer, path: file, lockPath: nil)
                    }
                } catch {
                    problems.append(PreferenceError(code: error.code, message: "Ignored the system layer \(file): \(error.message) Fix or remove it (its owner's job).", path: file))
                }
            }
            if let locks = reader.openDirectory("locks", in: dir, path: path + "/locks", problems: &problems) {
                defer { locks.close() }
                watched.insert(Watched(directory: path + "/locks", name: identity.suiteName))
                let file = path + "/locks/" + identity.suiteName
                if let bytes = reader.read(identity.suiteName, in: locks, path: file, problems: &problems) {
                    // UTF-8, a byte-order mark skipped; anything else (UTF-16, Latin-1) locks
                    // nothing it seems to name, so it is refused as a whole.
                    let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
                    guard !text.contains(0), let text = String(validating: text, as: UTF8.self) else {
                        problems.append(reader.ignored(file, "it is not UTF-8 text (UTF-16, or another encoding); write one key per line in UTF-8"))
                        continue
                    }
                    for line in text.split(whereSeparator: \.isNewline) {
                        let entry = String(line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmed)
                        if entry.isEmpty { continue }
                        if entry.hasSuffix("*") {
                            layers.lockedPrefixes.append((String(entry.dropLast()), file))
                        } else if layers.lockedKeys[PlistKey(entry)] == nil {
                            layers.lockedKeys[PlistKey(entry)] = file
                        }
                    }
                }
            }
        }
        return (layers, watched, problems)
    }

    /// Opens and trusts system directories and files: owned by root (or the running user under a
    /// test root), writable by nobody else, never through a link, never blocking on a FIFO.
    private struct Reader {
        var trustsUser: Bool

        func openDirectory(_ path: String, problems: inout [PreferenceError]) -> OpenDirectory? {
            guard case .success(let fd) = Syscall.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) else { return nil }
            return trusted(fd, path: path, directory: true, problems: &problems)
        }

        func openDirectory(_ name: String, in dir: OpenDirectory, path: String, problems: inout [PreferenceError]) -> OpenDirectory? {
            switch Syscall.openat(dir.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) {
            case .success(let fd): return trusted(fd, path: path, directory: true, problems: &problems)
            case .failure(let errno) where errno.rawValue == ELOOP || errno.rawValue == ENOTDIR:
                problems.append(ignored(path, "it is a symbolic link or not a directory"))
                return nil
            case .failure: return nil
            }
        }

        func read(_ name: String, in dir: OpenDirectory, path: String, problems: inout [PreferenceError]) -> [UInt8]? {
            let fd: CInt
            switch Syscall.openat(dir.fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) {
            case .success(let descriptor): fd = descriptor
            case .failure(let errno) where errno.rawValue == ELOOP:
                problems.append(ignored(path, "it is a symbolic link"))
                return nil
            case .failure(let errno) where errno.rawValue == ENOENT: return nil
            case .failure(let errno):
                problems.append(ignored(path, "it cannot be opened (\(errno))"))
                return nil
            }
            guard let file = trusted(fd, path: path, directory: false, problems: &problems) else { return nil }
            defer { file.close() }
            switch Syscall.readAll(file.fd, sizeHint: 4096, limit: SystemLayers.maximumFileSize + 1) {
            case .success(let bytes) where bytes.count <= SystemLayers.maximumFileSize: return bytes
            case .success:
                problems.append(ignored(path, "it is larger than \(SystemLayers.maximumFileSize) bytes"))
                return nil
            case .failure(let errno):
                problems.append(ignored(path, "it cannot be read (\(errno))"))
                return nil
            }
        }

        /// `fd` if it is a directory (or a regular file) that root (or this user) owns and nobody
        /// else may write; closed and named in `problems` otherwise.
        private func trusted(_ fd: CInt, path: String, directory: Bool, problems: inout [PreferenceError]) -> OpenDirectory? {
            guard case .success(let st) = Syscall.fstat(fd) else {
                Syscall.close(fd)
                return nil
            }
            if case .systemLayer(let problem)? = Trust.refusal(of: st, as: .systemLayer(directory: directory, trustsUser: trustsUser)) {
                Syscall.close(fd)
                problems.append(ignored(path, problem))
                return nil
            }
            return OpenDirectory(fd: fd, status: st)
        }

        func ignored(_ path: String, _ why: String) -> PreferenceError {
            PreferenceError(
                code: .untrustedFile,
                message: "Ignored the system layer \(path): \(why). A system layer counts only when root owns it and nobody else may write it, so that no user can plant an administrator's default or lock; fix its owner and mode (chown root: and chmod go-w), or remove it.",
                path: path)
        }
    }
}
