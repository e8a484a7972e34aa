// swift-tools-version: 6.1
// The in-process benchmarks (ordo-one/benchmark): cached reads, and the encode, re-read + diff and
// full decode of a one-key change per suite size, with wall clock and allocation counts, baselines
// and static thresholds. A package of its own, so that users of SharedPrefs never resolve it;
// `prefs-bench` (in the root package) keeps what crosses processes.
//
//     swift package --package-path Benchmarks/InProcess benchmark
//     swift package --package-path Benchmarks/InProcess benchmark thresholds check --metric mallocCountTotal
import PackageDescription

let package = Package(
    name: "SharedPrefsInProcessBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SharedPrefs", path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "SuiteCosts",
            dependencies: [
                .product(name: "SharedPrefs", package: "SharedPrefs"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/SuiteCosts",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
