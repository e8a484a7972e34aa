/// Entry points for `prefs-bench` into internals it measures. Not API: may change at any time.
public enum _BenchmarkHooks {
    /// Decodes a suite file's bytes (either format).
    public static func decodeSuite(_ bytes: [UInt8]) throws -> [String: PlistValue] {
        try PropertyListFormat.decodeSuite(bytes)
    }

    /// The number of keys whose value differs between two snapshots.
    public static func diffCount(_ old: [String: PlistValue], _ new: [String: PlistValue]) -> Int {
        Diff.changes(from: old, to: new).count
    }
}
