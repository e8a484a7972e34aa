/// A change of one key in a suite, delivered to observers whose filter matches the key.
///
/// ```swift
/// let token = suite.observe(.prefix("window.")) { change in
///     print(change.key, change.oldValue as Any, "->", change.newValue as Any, change.origin)
/// }
/// ```
public struct PreferenceChange: Sendable, Hashable, CustomStringConvertible {
    /// Where a change came from.
    public enum Origin: Sendable, Hashable {
        /// This process (a `set`, `removeObject`, or an `update` transaction).
        case local
        /// Another process, or a foreign writer (an editor, `plistlib`, `defaults`).
        case external
        /// A system layer: an administrator's or a package's defaults changed (``PreferenceLayer/administrator``,
        /// ``PreferenceLayer/vendor``), or the key was locked or unlocked (``PreferenceLayer/locked``:
        /// old and new value may then be equal; ``PreferenceSuite/isWritable(_:)`` tells which).
        case layer(PreferenceLayer)
    }

    /// The suite's name.
    public let suite: String
    /// The key that changed.
    public let key: String
    /// The value before the change; `nil` if the key was absent.
    public let oldValue: PlistValue?
    /// The value after the change; `nil` if the key was removed.
    public let newValue: PlistValue?
    /// Who made the change.
    public let origin: Origin
    /// The number of the write that made the change (``PreferenceSuite/sequence``): set for a
    /// change written by this library, in another process or in an `update` of this one; `nil`
    /// for a `set` of this process (heard at once, before it is written), a system layer's
    /// change, and a change by a writer that does not number its writes (an editor, `plistlib`).
    public let sequence: UInt64?

    /// Creates a change. Changes are made by suites; this is public for tests.
    public init(suite: String, key: String, oldValue: PlistValue?, newValue: PlistValue?, origin: Origin, sequence: UInt64? = nil) {
        self.suite = suite
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.origin = origin
        self.sequence = sequence
    }

    /// `true` when the key was removed.
    public var isRemoval: Bool { newValue == nil }

    /// Equal when every field is, the key compared by its exact Unicode scalars.
    public static func == (lhs: PreferenceChange, rhs: PreferenceChange) -> Bool {
        lhs.suite == rhs.suite && lhs.key.isExactly(rhs.key) && lhs.oldValue == rhs.oldValue
            && lhs.newValue == rhs.newValue && lhs.origin == rhs.origin && lhs.sequence == rhs.sequence
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(suite)
        hasher.combine(PlistKey(key))
        hasher.combine(oldValue)
        hasher.combine(newValue)
        hasher.combine(origin)
        hasher.combine(sequence)
    }

    public var description: String {
        "\(suite) \(key): \(oldValue?.description ?? "(none)") -> \(newValue?.description ?? "(removed)") [\(origin)\(sequence.map { " #\($0)" } ?? "")]"
    }
}

/// Which keys an observer hears about.
///
/// Keys may contain dots; a prefix is a plain string prefix (`"window."` matches `window.width`,
/// not `windows`). Observers of other keys hear nothing. Keys and prefixes match by their exact
/// Unicode scalars, as property lists tell keys apart: `"caf\u{E9}"` does not match a change
/// of `"cafe\u{301}"`.
public enum KeyFilter: Sendable, Hashable {
    /// Every key.
    case all
    /// One key.
    case key(String)
    /// Any of these keys.
    case keys(Set<String>)
    /// Keys that start with this prefix.
    case prefix(String)

    /// Whether a change of `key` passes the filter.
    public func matches(_ key: String) -> Bool {
        switch self {
        case .all: true
        case .key(let name): key.isExactly(name)
        // `contains` compares by canonical equivalence; the spelling must match exactly too.
        case .keys(let names): names.contains(key) && names.contains { $0.isExactly(key) }
        case .prefix(let prefix): key.utf8.starts(with: prefix.utf8)
        }
    }
}
