#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import FoundationEssentials
import SharedPrefsLocking
import SystemPackage

/// The result of reading a suite file.
enum SuiteFileContents {
    /// No file: the suite is empty.
    case missing
    /// A good file, and its image when it is a binary one.
    case loaded(SuiteValues, FileVersion, SuiteImage?)
    /// A file that does not parse: a foreign writer mid-write, or garbage. `looksLikePropertyList`
    /// is `false` for a file that is plainly something else, which is never moved aside.
    case corrupt(PreferenceError, looksLikePropertyList: Bool, stamp: FileStamp)
}

/// The on-disk protocol of one suite: `<suite>.plist`, its lock file `.<suite>.plist.lock` and
/// temporary files (``temporaryName(_:)``), opened relative to a directory's descriptor with
/// `O_NOFOLLOW | O_CLOEXEC` and never blocking: a FIFO planted there is an error, not a hang.
struct SuiteFile: Sendable {
    let location: DirectoryLocation
    let fileName: String
    let options: PreferenceSuite.Options

    var directory: String { location.path }
    var path: String { directory + "/" + fileName }
    var lockName: String { "." + fileName + ".lock" }
    var lockPath: String { directory + "/" + lockName }
    var journalName: String { "." + fileName + ".journal" }

    /// The file of the suite `suiteName`: in `group`'s container; with no group, a `group.…`
    /// name's own container, any other name in `<root>/Preferences`.
    static func named(_ suiteName: String, in group: AppGroup?, options: PreferenceSuite.Options) throws(PreferenceError) -> SuiteFile {
        try SuiteName.validate(suiteName, what: "suite name")
        let location: DirectoryLocation
        let ownGroup: AppGroup? = suiteName.hasPrefix("group.") ? try AppGroup(identifier: suiteName) : nil
        if let group = group ?? ownGroup {
            // The container is trusted as given; Library/Preferences below it is walked without links.
            location = group.location
        } else {
            location = DirectoryLocation(trusted: AppGroup.rootDirectory.path(percentEncoded: false), components: ["Preferences"], mode: 0o700)
        }
        return SuiteFile(location: location, fileName: suiteName + ".plist", options: options)
    }

    /// The file at `fileURL`, whose directory is trusted as given, and the suite's name (the file
    /// name without `.plist`).
    static func at(_ fileURL: URL, options: PreferenceSuite.Options) throws(PreferenceError) -> (name: String, file: SuiteFile) {
        guard fileURL.isFileURL else {
            throw PreferenceError(code: .invalidName, message: "\(fileURL) is not a file URL; pass URL(filePath:).")
        }
        let path = fileURL.standardizedFileURL.path(percentEncoded: false)
        let fileName = Path.lastComponent(path)
        try SuiteName.validate(fileName, what: "suite file name")
        let name = fileName.hasSuffix(".plist") ? String(fileName.dropLast(6)) : fileName
        return (name, SuiteFile(location: DirectoryLocation(trusted: Path.parent(path)), fileName: fileName, options: options))
    }

    /// Reads the file once, without a store; `nil` when it (or its directory) does not exist. A
    /// file that does not parse is an error.
    func readOnce() throws(PreferenceError) -> (values: PlistDictionary, sequence: UInt64)? {
        guard let dir = try openDirectory(creating: false) else { return nil }
        defer { dir.close() }
        switch try read(in: dir) {
        case .missing: return nil
        case .loaded(.full(let values), let version, _): return (values, PropertyListFormat.sequence(of: version.content))
        case .loaded(.changes, _, _): return nil  // only against a previous image, which there is none of
        case .corrupt(let error, _, _): throw error
        }
    }

    /// Opens the suite's directory (see ``DirectoryLocation``); `nil` when it is missing and
    /// `creating` is `false`.
    func openDirectory(creating: Bool) throws(PreferenceError) -> OpenDirectory? {
        try location.open(creating: creating)
    }

    /// The error for a directory that vanished while it was being created.
    func missingDirectory() -> PreferenceError {
        PreferenceError(code: .ioFailure, message: "\(directory) disappeared while it was being opened; check what removes it.", path: directory)
    }

    // MARK: Checks

    /// In a directory every user can write, refuses a file owned by someone other than this
    /// user or root: anyone could have planted it there, with values of their choosing.
    func checkOwner(_ st: stat, of filePath: String, in dir: OpenDirectory) throws(PreferenceError) {
        guard Trust.refusal(of: st, as: .sharedFile(in: dir)) != nil else { return }
        throw PreferenceError(
            code: .untrustedFile,
            message: "Refusing to use \(filePath): it is owned by uid \(st.st_uid), and \(directory) is writable by every user, so that user may have planted it. Remove the file if you do not trust its owner, or keep shared suites in a group container (mode 02770) instead.",
            path: filePath)
    }

    func notRegular(_ st: stat, path: String) -> PreferenceError {
        let kind: String
        switch st.st_mode & S_IFMT {
        case S_IFLNK:
            return PreferenceError(
                code: .symbolicLink,
                message: "\(path) is a symbolic link; SharedPrefs never follows links in a container. Remove the link.",
                path: path)
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFDIR: kind = "a directory"
        case S_IFCHR, S_IFBLK: kind = "a device"
        default: kind = "not a regular file"
        }
        return PreferenceError(
            code: .notRegularFile,
            message: "\(path) is \(kind), where SharedPrefs keeps a regular file; nothing was read or written. Remove it (rm \(path)) if you did not put it there.",
            path: path)
    }

    func tooLarge(_ size: Int64) -> PreferenceError {
        PreferenceError(
            code: .fileTooLarge,
            message: "The suite file \(path) is \(size) bytes, more than PreferenceSuite.Options.maximumFileSize (\(options.maximumFileSize)); it was not read, and the last good values are kept. Remove or shrink the file, or raise the limit.",
            path: path)
    }

    /// The first bytes of a file, for a message: printable ASCII as text, the rest as hex.
    static func describe(_ bytes: ArraySlice<UInt8>) -> String {
        if bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) { return "\"" + String(decoding: bytes, as: UTF8.self) + "\"" }
        return "0x" + bytes.map { $0.padded(2, radix: 16) }.joined()
    }
}
