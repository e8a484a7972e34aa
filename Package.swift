// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "SharedPrefs",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SharedPrefs", targets: ["SharedPrefs"]),
        .executable(name: "prefs-latency", targets: ["prefs-latency"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
    ],
    targets: [
        .target(
            name: "SharedPrefs",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // A quick cross-process latency harness: set in one process, observer in another.
        .executableTarget(
            name: "prefs-latency",
            dependencies: ["SharedPrefs"],
            path: "Benchmarks/prefs-latency"
        ),
        // A child process for the multi-process tests; the tests find it next to their bundle.
        .executableTarget(
            name: "prefs-test-child",
            dependencies: ["SharedPrefs"],
            path: "Tests/prefs-test-child"
        ),
        .testTarget(
            name: "SharedPrefsTests",
            dependencies: ["SharedPrefs"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
