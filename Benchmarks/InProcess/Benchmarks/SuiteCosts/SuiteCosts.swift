import Benchmark
import Foundation
@_spi(Benchmarks) import SharedPrefs

// What one process spends, without crossing to another: a cached read (against Foundation's
// UserDefaults in the same process), and per suite size, what a one-key change costs the writer
// (encoding, unchanged objects copied) and each observer (re-read + per-key diff against the
// file it read last), with a full decode and a full encode beside them for comparison.
//
// The static thresholds (`Thresholds/`) hold allocation counts, checked to within one allocation
// at p90 (a buffer's growth can differ by one between machines: CI once measured 5 where this
// machine measures 6), so a check fails on a change of the code, never on timing noise.
// Wall-clock figures are reported, never checked. Names have no spaces (nor colons, for other
// systems' checkouts): they name the thresholds' files, and the tool writes a space as `_` but
// looks it up as a space.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .automatic,
        maxDuration: .seconds(2),
        maxIterations: 100_000,
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 1])]
    )

    // Cached reads: 1,000 reads per iteration of a stored integer in a 100-key suite.
    let reads = Benchmark.Configuration(
        metrics: Benchmark.defaultConfiguration.metrics, timeUnits: .nanoseconds, scalingFactor: .kilo,
        maxDuration: .seconds(2), thresholds: Benchmark.defaultConfiguration.thresholds)
    // Foundation's allocations are not ours to pin to one: within 5%.
    var peer = reads
    peer.thresholds = [.mallocCountTotal: .init(relative: [.p90: 5.0])]
    Benchmark("cached-read.typed-subscript", configuration: reads) { benchmark, suite in
        let key = PreferenceKey<Int>("number", default: 0)
        var sum = 0
        for _ in benchmark.scaledIterations { sum &+= suite[key] }
        blackHole(sum)
    } setup: { try readSuite() } teardown: { try? FileManager.default.removeItem(at: scratch) }
    Benchmark("cached-read.integer-forKey", configuration: reads) { benchmark, suite in
        var sum = 0
        for _ in benchmark.scaledIterations { sum &+= suite.integer(forKey: "number") }
        blackHole(sum)
    } setup: { try readSuite() } teardown: { try? FileManager.default.removeItem(at: scratch) }
    Benchmark("cached-read.UserDefaults-integer-forKey-peer", configuration: peer) { benchmark, defaults in
        var sum = 0
        for _ in benchmark.scaledIterations { sum &+= defaults.integer(forKey: "number") }
        blackHole(sum)
    } setup: { userDefaults() } teardown: { UserDefaults.standard.removePersistentDomain(forName: scratch.lastPathComponent) }

    // One-key changes per suite size.
    for keys in [10, 1_000, 10_000, 100_000] {
        Benchmark("encode-one-key-change.\(keys)-keys") { benchmark, file in
            for _ in benchmark.scaledIterations {
                blackHole(try? _BenchmarkHooks.encodeChange(file.image, key: "key.0", value: .string("changed")))
            }
        } setup: { try SuiteFile(keys: keys) }
        Benchmark("re-read+diff-one-key-change.\(keys)-keys") { benchmark, file in
            for _ in benchmark.scaledIterations {
                blackHole(try? _BenchmarkHooks.changeCount(from: file.image, to: file.changed))
            }
        } setup: { try SuiteFile(keys: keys) }
        Benchmark("full-decode.\(keys)-keys") { benchmark, file in
            for _ in benchmark.scaledIterations { blackHole(try? _BenchmarkHooks.decodeSuite(file.changed)) }
        } setup: { try SuiteFile(keys: keys) }
        Benchmark("full-encode.\(keys)-keys") { benchmark, file in
            for _ in benchmark.scaledIterations { blackHole(_BenchmarkHooks.encodeSuite(file.values)) }
        } setup: { try SuiteFile(keys: keys) }
    }
}

/// A binary suite of `keys` string values ("key.N" = "value N"), and the same suite with `key.0`
/// changed, as a writer makes it.
struct SuiteFile: @unchecked Sendable {
    let values: PlistDictionary
    let image: _BenchmarkHooks.Image
    let changed: [UInt8]

    init(keys: Int) throws {
        values = PlistDictionary((0..<keys).map { ("key.\($0)", PlistValue.string("value \($0)")) })
        guard let image = try _BenchmarkHooks.image(_BenchmarkHooks.encodeSuite(values)) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        self.image = image
        changed = try _BenchmarkHooks.encodeChange(image, key: "key.0", value: .string("changed"))
    }
}

/// Where the cached-read suite lives while its benchmark runs; also the UserDefaults suite's name.
let scratch = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-benchmarks-\(getpid())")

/// A 100-key suite in `scratch`, with `number` = 42 stored.
func readSuite() throws -> PreferenceSuite {
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    let suite = try PreferenceSuite(fileURL: scratch.appending(path: "reads.plist"))
    for i in 0..<100 { suite.set("value \(i)", forKey: "key.\(i)") }
    suite.set(42, forKey: "number")
    return suite
}

/// Foundation's UserDefaults with the same 100 keys and `number` = 42, in memory.
func userDefaults() -> UserDefaults {
    let defaults = UserDefaults(suiteName: scratch.lastPathComponent)!
    for i in 0..<100 { defaults.set("value \(i)", forKey: "key.\(i)") }
    defaults.set(42, forKey: "number")
    return defaults
}
