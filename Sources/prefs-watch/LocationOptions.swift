import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import SharedPrefs
import SystemPackage
#if Etcd
import SharedPrefsEtcd
#endif

/// `--group` / `--dir` / `--etcd`, and how a suite argument becomes a suite.
struct LocationOptions: ParsableArguments {
    @Option(name: .customLong("group"), help: ArgumentHelp("Look suite names up in this app group's container.", valueName: "id"), completion: Completions.group)
    var group: String?

    @Option(
        name: .customLong("dir"),
        help: ArgumentHelp(
            "Look suite names up in this directory (a container: its Library/Preferences is used when present).",
            valueName: "path"), completion: .directory)
    var dir: String?

    @Option(
        name: .customLong("etcd"),
        help: ArgumentHelp(
            "A suite on this etcd v3 cluster (client URLs, comma-separated): the suite argument is its key prefix.",
            valueName: "endpoints", visibility: Self.etcdVisibility))
    var etcd: String?

    @Option(name: .customLong("etcd-user"), help: ArgumentHelp(
        "etcd's user, as etcdctl's --user: NAME:PASSWORD, or NAME with the password in PREFS_WATCH_ETCD_PASSWORD (out of the process list).",
        valueName: "name[:password]", visibility: Self.etcdVisibility))
    var etcdUser: String?

    @Option(
        name: .customLong("etcd-cacert"),
        help: ArgumentHelp("The certificate authority (PEM) that signed the members' certificates, for https:// endpoints.", valueName: "file", visibility: Self.etcdVisibility),
        completion: .file())
    var etcdCACert: String?

    @Option(
        name: .customLong("etcd-cert"),
        help: ArgumentHelp("This client's certificate (PEM), with --etcd-key, for a cluster started with --client-cert-auth.", valueName: "file", visibility: Self.etcdVisibility),
        completion: .file())
    var etcdCert: String?

    @Option(name: .customLong("etcd-key"), help: ArgumentHelp("The private key (PEM) of --etcd-cert.", valueName: "file", visibility: Self.etcdVisibility), completion: .file())
    var etcdKey: String?

    @Option(name: .customLong("etcd-timeout"), help: ArgumentHelp(
        "How long each request to etcd may take (default 5; an update's, ten times that), as EtcdOptions.timeout.",
        valueName: "seconds", visibility: Self.etcdVisibility))
    var etcdTimeout: Double?

    /// The `--etcd…` options are shown only in builds that have them; elsewhere they are refused with how to build one.
    #if Etcd
    static let etcdVisibility = ArgumentVisibility.default
    #else
    static let etcdVisibility = ArgumentVisibility.hidden
    #endif

    @Flag(name: [.customShort("q"), .long], help: "Print no warnings of the library, only errors.")
    var quiet = false

    @Flag(name: .long, help: "Print what the library notices too (its info log lines).")
    var verbose = false

    @Option(help: ArgumentHelp("Wait this long at most for a suite's lock (default 5), as PreferenceSuite.Options.lockTimeout.", valueName: "seconds"))
    var lockTimeout: Double?

    func validate() throws {
        if [group != nil, dir != nil, etcd != nil].filter({ $0 }).count > 1 { throw ValidationError("Give one of --group, --dir and --etcd.") }
        #if !Etcd
        if etcd != nil {
            throw ValidationError("This prefs-watch was built without etcd support; build it with: swift build -c release --traits Etcd --product prefs-watch")
        }
        #endif
        if etcd == nil, etcdUser != nil || etcdCACert != nil || etcdCert != nil || etcdKey != nil || etcdTimeout != nil {
            throw ValidationError("--etcd-user, --etcd-cacert, --etcd-cert, --etcd-key and --etcd-timeout go with --etcd.")
        }
        if etcd != nil, lockTimeout != nil { throw ValidationError("An etcd suite has no lock: give --etcd-timeout, the time each request may take.") }
        for (name, seconds) in [("--lock-timeout", lockTimeout), ("--etcd-timeout", etcdTimeout)] {
            if let seconds, !(seconds > 0 && seconds <= 86_400) { throw ValidationError("\(name) takes a number of seconds greater than 0, at most 86400 (a day).") }
        }
        if quiet && verbose { throw ValidationError("Give --quiet or --verbose, not both.") }
        if quiet { CommandLineLog.set(.error) }
        if verbose { CommandLineLog.set(.info) }
    }

    /// The etcd suite a suite argument (a key prefix) names, when `--etcd` is given. No offline
    /// cache: a command line tool says when the cluster does not answer rather than queueing.
    func etcdSuite(_ prefix: String) throws -> PreferenceSuite? {
        #if Etcd
        guard let etcd else { return nil }
        let endpoints = etcd.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var options = EtcdOptions(timeout: .milliseconds(Int64(((etcdTimeout ?? 5) * 1000).rounded(.up))), offlineCache: .none)
        if let etcdUser {
            let (name, password) = etcdUser.firstIndex(of: ":").map { (String(etcdUser[..<$0]), String(etcdUser[etcdUser.index(after: $0)...])) } ?? (etcdUser, nil)
            guard !name.isEmpty, let password = password ?? ProcessInfo.processInfo.environment["PREFS_WATCH_ETCD_PASSWORD"] else {
                throw ValidationError("--etcd-user \(name) needs a password: after a colon (--etcd-user \(name):PASSWORD), or in the environment variable PREFS_WATCH_ETCD_PASSWORD.")
            }
            options.credentials = .init(user: name, password: password)
        }
        if etcdCACert != nil || etcdCert != nil || etcdKey != nil {
            options.tls = .init(certificateAuthority: etcdCACert.map { URL(filePath: $0) }, certificate: etcdCert.map { URL(filePath: $0) }, privateKey: etcdKey.map { URL(filePath: $0) })
        }
        return try PreferenceSuite(etcd: endpoints, prefix: prefix, options: options)
        #else
        return nil
        #endif
    }

    /// A library message with the options it names as this command's: an etcd suite's user
    /// (`EtcdOptions.credentials`) is `--etcd-user`, its client certificate `--etcd-cert`, its
    /// timeout `--etcd-timeout`.
    static func inCommandLineTerms(_ message: String) -> String {
        message.replacing("EtcdOptions.credentials", with: "--etcd-user")
            .replacing("EtcdOptions.tls with a client certificate", with: "--etcd-cert and --etcd-key")
            .replacing("EtcdOptions.timeout", with: "--etcd-timeout")
    }

    /// Where a suite lives, for messages: its file, or its cluster and prefix.
    func place(_ spec: String, _ suite: PreferenceSuite) -> String {
        suite.fileURL?.path ?? "etcd \(etcd ?? "") prefix \(spec)"
    }

    /// The directory named by `--group` or `--dir`, which must exist: a mistyped group is an
    /// error, not an empty list. `nil` when neither is given.
    func existingDirectory() throws -> SuiteDirectory? {
        guard let directory = try directory() else { return nil }
        let path = directory.url.path
        let missing = group.map { "The app group \($0) has no container (no \(path)); check the identifier, or \"prefs-watch list\" for the groups there are (tail --wait waits for it)." }
            ?? "\(path) does not exist; check the directory (tail --wait waits for it)."
        try requireExisting(path, missing: missing)
        return directory
    }

    /// Every suite file of the `--group` or `--dir` directory (named by suite name), or of every
    /// group and the root's `Preferences` (named by path), for verbs that go through all suites.
    func everySuite(doing verb: String) throws -> [(place: String, url: URL)] {
        if etcd != nil {
            throw ValidationError("\(verb) goes through suite files; on etcd a suite is any key prefix (etcdctl get --prefix --keys-only \"\" shows the keys).")
        }
        if let directory = try existingDirectory() {
            return try directory.suiteNames().map { ($0, directory.url.appending(path: $0 + ".plist")) }
        }
        return try (SuiteDirectory.groups().map(SuiteDirectory.init(group:)) + [SuiteDirectory.ungrouped]).flatMap { directory in
            try directory.suiteNames().map { name in
                let url = directory.url.appending(path: name + ".plist")
                return (url.path, url)
            }
        }
    }

    /// The directory named by `--group` or `--dir`, if any.
    func directory() throws -> SuiteDirectory? {
        if let group { return SuiteDirectory(group: try AppGroup(identifier: group)) }
        guard let dir else { return nil }
        let url = URL(filePath: dir, directoryHint: .isDirectory)
        let preferences = url.appending(path: "Library/Preferences", directoryHint: .isDirectory)
        if isDirectory(preferences.path) == true {
            return SuiteDirectory(url: preferences)
        }
        return SuiteDirectory(url: url)
    }

    /// Whether a suite argument is a path: it has a `/` or ends in `.plist`, and neither `--group`
    /// nor `--dir` is given (with them, it is always a name).
    func isPath(_ spec: String) -> Bool {
        group == nil && dir == nil && (spec.contains("/") || spec.hasSuffix(".plist"))
    }

    /// The file a suite argument names, without opening it (nothing is created).
    func fileURL(of spec: String) throws -> URL {
        if isPath(spec) {
            return URL(filePath: spec).standardizedFileURL
        }
        if let directory = try directory() {
            // A name, never a path: `settings` or `settings.plist`, nothing with `/` or `..`.
            let name = spec.hasSuffix(".plist") ? String(spec.dropLast(6)) : spec
            try validateName(name)
            return directory.url.appending(path: name + ".plist")
        }
        try validateName(spec)
        if spec.hasPrefix("group.") {
            return try AppGroup(identifier: spec).preferencesDirectory.appending(path: spec + ".plist")
        }
        return SuiteDirectory.ungrouped.url.appending(path: spec + ".plist")
    }

    /// Opens the suite a suite argument names, for verbs that may create it. A path that does not
    /// end in `.plist` and does not exist is refused unless `create` is set: a mistyped path must
    /// not become a new file. An existing suite keeps its format and mode.
    func open(_ spec: String, create: Bool) throws -> PreferenceSuite {
        if let suite = try etcdSuite(spec) { return suite }
        let url = try fileURL(of: spec)
        // A mistyped path or --dir must not become a new file or directory tree: one rule, one
        // status (1) and one message for a folder, however it was named.
        let folder = isPath(spec) ? url.deletingLastPathComponent().path : dir
        if let folder, !create, !FileManager.default.fileExists(atPath: folder) {
            throw failure("The directory \(folder) does not exist; pass --create to create it and a suite in it.")
        }
        if isPath(spec), !spec.hasSuffix(".plist"), !create, !FileManager.default.fileExists(atPath: url.path) {
            throw failure("\(url.path) does not exist and does not end in .plist; pass --create to create a suite there.")
        }
        return try suite(spec, url, options: try options(keeping: url, refusingAnythingButASuite: true))
    }

    /// The suite behind a suite argument: a group's suite through the library's group path (the
    /// container walked without links, a new one made 02770 with files 0660, as every app makes
    /// it), anything else through its file.
    func suite(_ spec: String, _ url: URL, options: PreferenceSuite.Options? = nil) throws -> PreferenceSuite {
        let options = try options ?? self.options(keeping: url, refusingAnythingButASuite: false)
        if let (name, group) = try byName(spec) { return try PreferenceSuite(suiteName: name, in: group, options: options) }
        return try PreferenceSuite(fileURL: url, options: options)
    }

    /// The name and group of a suite argument that the library looks up by name (with `--group`
    /// in that group; without, a `group.…` name in its own group's container and any other in
    /// `<root>/Preferences`, each walked from the root as the library walks it); `nil` for one
    /// found by its file (a path, or a name with `--dir`).
    private func byName(_ spec: String) throws -> (name: String, group: AppGroup?)? {
        guard !isPath(spec) else { return nil }
        let name = spec.hasSuffix(".plist") ? String(spec.dropLast(6)) : spec
        if let group { return (name, try AppGroup(identifier: group)) }
        return dir == nil ? (name, nil) : nil
    }

    /// Whose system layers apply to the suite a suite argument names, by the library's one rule:
    /// those of a suite where suites live (a name, a group's suite), none for a file elsewhere.
    func layerIdentity(_ spec: String) throws -> SystemLayerIdentity {
        #if Etcd
        if etcd != nil {
            guard let identity = PreferenceSuite.layerIdentity(prefix: spec) else { throw ValidationError("The prefix \(spec) names no suite for system layers (its parts joined by dots must be a suite name).") }
            return identity
        }
        #endif
        let url = try fileURL(of: spec)
        return SystemLayerIdentity(suiteName: url.deletingPathExtension().lastPathComponent, directory: url.deletingLastPathComponent().path(percentEncoded: false))
    }

    /// The system layers `identity` names (``layerIdentity(_:)``), their problems logged as the library's
    /// warnings are (`--quiet` leaves them out; an etcd suite's layers are the host's files too).
    func systemLayers(_ identity: SystemLayerIdentity) -> SystemLayers {
        let (layers, _, problems) = SystemLayers.load(identity)
        for problem in problems { Logger(label: "prefs-watch").warning("\(problem)") }
        return layers
    }

    /// Opens a suite that must already exist, for verbs that change it.
    func openExisting(_ spec: String) throws -> PreferenceSuite {
        if let suite = try etcdSuite(spec) { return suite }
        let url = try fileURL(of: spec)
        try requireExisting(url.path, missing: missingSuite(spec, url))
        return try suite(spec, url, options: try options(keeping: url, refusingAnythingButASuite: true))
    }

    /// Options that keep an existing suite file's format (XML stays XML) and permissions, from
    /// one read of it. With `refusingAnythingButASuite`, an existing file that is not a property
    /// list with a dictionary at its root is refused before anything (a lock file, a suite
    /// object) is made beside it. The library refuses such a file too; checking first leaves its
    /// directory exactly as it was. (A file that looks like a property list but does not parse is
    /// left to the library.)
    private func options(keeping url: URL, refusingAnythingButASuite refusing: Bool) throws -> PreferenceSuite.Options {
        var options = PreferenceSuite.Options()
        if let lockTimeout { options.lockTimeout = .milliseconds(Int64((lockTimeout * 1000).rounded(.up))) }
        guard let (data, mode) = try contents(of: url, changing: refusing) else { return options }
        options.filePermissions = mode & 0o777
        if !data.starts(with: Array("bplist".utf8)), data.prefix(64).contains(UInt8(ascii: "<")) { options.format = .xml }
        guard refusing, !data.isEmpty else { return options }
        let root: PlistValue
        do { root = try PlistValue(propertyListData: data) } catch {
            // One that looks like a property list may be half-written: the library waits for its
            // writer, and never writes over one it could not read.
            if PropertyListFormat.looksLikePropertyList(Array(data)) { return options }
            throw failure("\(url.path) is not a property list (\(error.message)); prefs-watch changes only property-list files, so it was left exactly as it was.")
        }
        guard case .dictionary = root else {
            throw failure("\(url.path) holds a \(root.typeName); a suite has a dictionary at its root, so it was left exactly as it was.")
        }
        return options
    }

    /// The bytes and mode of a suite file that the command reads itself; `nil` when there is no
    /// file. Never follows a link or blocks; a file that is not a regular file, or larger than any
    /// reader of the library accepts, is an error that says so, and nothing is read.
    private func contents(of url: URL, changing: Bool) throws -> (Data, mode_t)? {
        let path = url.path
        let nothingChanged = changing ? " Nothing was changed." : ""
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        if st.st_mode & S_IFMT == S_IFLNK {
            throw failure("\(path) is a symbolic link, which SharedPrefs never follows: it could lead anywhere.\(nothingChanged) Replace it with the file itself.")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw failure("\(path) is not a regular file; prefs-watch reads and changes only property-list files.\(nothingChanged)")
        }
        let limit = PreferenceSuite.Options().maximumFileSize
        guard Int64(st.st_size) <= Int64(limit) else {
            throw failure("\(path) is \(st.st_size) bytes, more than a suite may be (\(limit) bytes: PreferenceSuite.Options.maximumFileSize), so it was not read.\(nothingChanged) Remove or shrink it.")
        }
        let fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        // Said as the library says it, for every verb.
        guard fd >= 0 else { throw PreferenceError.system("openat", Errno(rawValue: errno), path: path, doing: "open the suite file") }
        defer { close(fd) }
        // Read to the size it had: a suite file is replaced, not changed in place.
        switch Syscall.readAll(fd, sizeHint: Int(st.st_size), limit: limit, sizeIsExact: true) {
        case .success(let bytes) where bytes.count <= limit: return (Data(bytes), st.st_mode)
        case .success: throw holdsTooMuch(path, limit: limit, unchanged: nothingChanged)
        case .failure(let error): throw failure("Could not read \(path): \(error).\(nothingChanged)")
        }
    }

    /// Reads a suite's file directly, for verbs that only read: nothing is created or watched,
    /// and a file that is not a property list is an error that says so.
    /// The suite's stored values, where they are, and the number of the write that made them.
    func readValues(_ spec: String) throws -> (place: String, values: PlistDictionary, sequence: UInt64) {
        if let suite = try etcdSuite(spec) { return (place(spec, suite), suite.storedValues, suite.sequence) }
        let url = try fileURL(of: spec)
        try requireExisting(url.path, missing: missingSuite(spec, url))
        // Through the library's reader: the same path resolution and refusals as an opened suite.
        let stored = try byName(spec).map { try PreferenceSuite.readStored(suiteName: $0.name, in: $0.group) }
            ?? PreferenceSuite.readStored(fileURL: url)
        guard let stored else { throw failure(missingSuite(spec, url)) }
        return (url.path, stored.values, stored.sequence)
    }

    private func missingSuite(_ spec: String, _ url: URL) -> String {
        "The suite \(spec) does not exist (no file at \(url.path))."
    }

    /// Fails with `missing` only when `path` does not exist: a directory on the way that this
    /// user may not search is "permission denied", naming the path.
    private func requireExisting(_ path: String, missing: String) throws {
        var st = stat()
        guard stat(path, &st) != 0 else { return }
        let reason = errno
        if reason == ENOENT || reason == ENOTDIR { throw failure(missing) }
        throw failure("Cannot reach \(path): \(String(cString: strerror(reason))). Check the permissions of its directories (ls -ld).")
    }

    /// Refuses a name that could escape its directory before any directory is touched.
    private func validateName(_ name: String) throws {
        try PreferenceSuite.validate(suiteName: name)
    }
}

/// Reads what `fd` holds, up to the most a suite may be (``PreferenceSuite/Options/maximumFileSize``):
/// more is an error that names the limit, and no more than the limit is ever held in memory.
/// `source` names it in messages; `unchanged` ends them (" Nothing was changed.", or empty).
func readSuiteBytes(_ fd: CInt, from source: String, unchanged: String = "") throws -> Data {
    let limit = PreferenceSuite.Options().maximumFileSize
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count == 0 { return data }
        if count < 0 {
            if errno == EINTR { continue }
            throw failure("Could not read \(source): \(String(cString: strerror(errno))).\(unchanged)")
        }
        guard data.count + count <= limit else { throw holdsTooMuch(source, limit: limit, unchanged: unchanged) }
        data.append(contentsOf: buffer[..<count])
    }
}

/// Says that `source` holds more than a suite may be (`limit` bytes) and was read no further; the exit status to throw.
private func holdsTooMuch(_ source: String, limit: Int, unchanged: String) -> ExitCode {
    failure("\(source) holds more than a suite may be (\(limit) bytes: PreferenceSuite.Options.maximumFileSize); it was not read further.\(unchanged)")
}
