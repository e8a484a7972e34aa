#if SHAREDPREFS_STAGES
#if canImport(Glibc)
import Glibc
#endif
import SharedPrefsLocking
#endif

/// Timestamps of the stages a change goes through, for `Benchmarks/stages.py`. Compiled in only
/// with `-Xswiftc -DSHAREDPREFS_STAGES`; otherwise every call is empty. Not API: may change at
/// any time. SPI: `@_spi(Benchmarks) import SharedPrefs`.
@_spi(Benchmarks) public enum _Stages {
    #if SHAREDPREFS_STAGES
    /// Where `dump()` writes, from `SHAREDPREFS_STAGES`; no marks are kept without it.
    private static let directory: String? = getenv("SHAREDPREFS_STAGES").map { String(cString: $0) }
    private static let marks = Lock<[(UInt8, Int64)]>([])
    #endif

    /// Notes that a change reached `stage` (one ASCII letter) now, in `CLOCK_MONOTONIC` nanoseconds.
    @inline(__always)
    public static func mark(_ stage: Unicode.Scalar) {
        #if SHAREDPREFS_STAGES
        guard directory != nil else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let time = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        marks.withLock { $0.append((UInt8(ascii: stage), time)) }
        #endif
    }

    /// Writes this process's marks to `$SHAREDPREFS_STAGES/<pid>.txt`, one `<stage> <ns>` per line.
    public static func dump() {
        #if SHAREDPREFS_STAGES
        guard let directory, let file = fopen("\(directory)/\(getpid()).txt", "w") else { return }
        for (stage, time) in marks.withLock({ $0 }) { fputs("\(Character(Unicode.Scalar(stage))) \(time)\n", file) }
        fclose(file)
        #endif
    }
}
