// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "SharedPrefs",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SharedPrefs", targets: ["SharedPrefs"]),
        // @ObservablePrefs: a product of its own, because macros need swift-syntax (minutes to
        // build); the core library and prefs-watch never build it.
        .library(name: "SharedPrefsObservation", targets: ["SharedPrefsObservation"]),
        // Suites on an etcd v3 cluster (trait Etcd; without it the module is empty and builds no NIO).
        .library(name: "SharedPrefsEtcd", targets: ["SharedPrefsEtcd"]),
        // A suite as a swift-configuration provider (trait Configuration; without it the module is empty).
        .library(name: "SharedPrefsConfiguration", targets: ["SharedPrefsConfiguration"]),
        .executable(name: "prefs-watch", targets: ["prefs-watch"]),
        .executable(name: "AppGroupDemo", targets: ["AppGroupDemo"]),
        .executable(name: "prefs-bench", targets: ["prefs-bench"]),
    ],
    traits: [
        .trait(
            name: "Etcd",
            description: "SharedPrefsEtcd: suites on an etcd v3 cluster, through etcd's own gRPC API (grpc-swift-2 over SwiftNIO's HTTP/2)."
        ),
        .trait(
            name: "Configuration",
            description: "SharedPrefsConfiguration: a suite as an apple/swift-configuration provider (ConfigReader, watchValue, snapshots)."
        ),
        .trait(
            name: "InotifyTools",
            description: "prefs-watch tail --raw prints file-level inotify events through libinotifytools (GPL-2.0: a binary built with this trait is distributed under GPL-2.0 terms). Needs apt-get install libinotifytools0-dev."
        ),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
        // `swift package generate-documentation` (README); a plugin, built only when asked for.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // SharedPrefsEtcd, with the Etcd trait only.
        .package(url: "https://github.com/grpc/grpc-swift-2.git", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // SharedPrefsConfiguration, with the Configuration trait only.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
    ],
    targets: [
        .target(
            name: "SharedPrefs",
            dependencies: [
                "CSharedPrefsShims",
                "SharedPrefsLocking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            // The tests' fault hooks (TestingHooks), in debug builds only: nothing test-only runs
            // in a release write.
            swiftSettings: [.define("SHAREDPREFS_TESTING", .when(configuration: .debug))]
        ),
        // A SuiteBackend on an etcd v3 cluster; empty without the Etcd trait.
        .target(
            name: "SharedPrefsEtcd",
            dependencies: [
                "CSharedPrefsShims",
                "SharedPrefs",
                "SharedPrefsLocking",
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["Etcd"])),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport", condition: .when(traits: ["Etcd"])),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf", condition: .when(traits: ["Etcd"])),
                .product(name: "SwiftProtobuf", package: "swift-protobuf", condition: .when(traits: ["Etcd"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Etcd"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Etcd"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Etcd"])),
            ]
        ),
        // A suite as a ConfigProvider; empty without the Configuration trait.
        .target(
            name: "SharedPrefsConfiguration",
            dependencies: [
                "SharedPrefs",
                .product(name: "Configuration", package: "swift-configuration", condition: .when(traits: ["Configuration"])),
            ]
        ),
        .testTarget(
            name: "SharedPrefsConfigurationTests",
            dependencies: [
                "SharedPrefs", "SharedPrefsConfiguration", "SharedPrefsTestSupport",
                .product(name: "Configuration", package: "swift-configuration", condition: .when(traits: ["Configuration"])),
                // ProviderCompatTest: swift-configuration's own checks of a provider.
                .product(name: "ConfigurationTesting", package: "swift-configuration", condition: .when(traits: ["Configuration"])),
            ]
        ),
        // statfs(2) and eventfd(2), which Glibc's module map leaves out; ThreadSanitizer annotations.
        .target(name: "CSharedPrefsShims"),
        // `Lock`: Synchronization.Mutex made visible to ThreadSanitizer; every target's locks.
        .target(name: "SharedPrefsLocking", dependencies: ["CSharedPrefsShims"]),
        // @ObservablePrefs and its attributes and runtime; re-exports SharedPrefs.
        .target(
            name: "SharedPrefsObservation",
            dependencies: [
                "SharedPrefs",
                "SharedPrefsMacros",
                "SharedPrefsLocking",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The macros' implementation; declared in SharedPrefsObservation.
        .macro(
            name: "SharedPrefsMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        .executableTarget(
            name: "prefs-watch",
            dependencies: [
                "SharedPrefs",
                "SharedPrefsLocking",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
                .target(name: "CInotifyTools", condition: .when(traits: ["InotifyTools"])),
                .target(name: "SharedPrefsEtcd", condition: .when(traits: ["Etcd"])),
            ]
        ),
        .systemLibrary(
            name: "CInotifyTools",
            providers: [.apt(["libinotifytools0-dev"])]
        ),
        // The README's main job: a main process and helpers sharing one suite.
        .executableTarget(
            name: "AppGroupDemo",
            dependencies: [
                "SharedPrefsObservation", "SharedPrefsLocking", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .target(name: "SharedPrefsEtcd", condition: .when(traits: ["Etcd"])),
            ],
            path: "Examples/AppGroupDemo"
        ),
        // The benchmark: SharedPrefs beside UserDefaults, dconf and the kernel floor (release build).
        .executableTarget(
            name: "prefs-bench",
            dependencies: [
                "SharedPrefs", "SharedPrefsLocking", "CSharedPrefsShims",
                .target(name: "SharedPrefsEtcd", condition: .when(traits: ["Etcd"])),
            ],
            path: "Benchmarks/prefs-bench"
        ),
        // A child process for the multi-process tests; the tests find it next to their bundle.
        .executableTarget(
            name: "prefs-test-child",
            dependencies: ["SharedPrefsObservation"],
            path: "Tests/prefs-test-child",
            swiftSettings: [.define("SHAREDPREFS_TESTING", .when(configuration: .debug))]
        ),
        .testTarget(
            name: "SharedPrefsTests",
            dependencies: ["SharedPrefs", "SharedPrefsObservation", "SharedPrefsLocking", "SharedPrefsTestSupport"],
            swiftSettings: [.define("SHAREDPREFS_TESTING", .when(configuration: .debug))]
        ),
        // The store's logic on a scripted backend in memory: milliseconds, no files, no processes
        // (swift test --filter SharedPrefsUnitTests).
        .testTarget(name: "SharedPrefsUnitTests", dependencies: ["SharedPrefs", "SharedPrefsTestSupport"]),
        // What both test targets share: a recorder to await deliveries, the scripted backend.
        .target(
            name: "SharedPrefsTestSupport",
            dependencies: ["SharedPrefs", "SharedPrefsLocking", "CTestLogCapture", .product(name: "Logging", package: "swift-log")],
            path: "Tests/SharedPrefsTestSupport"
        ),
        // Routes the test process's log lines to SharedPrefsTestSupport's recorder at load, before any test.
        .target(name: "CTestLogCapture", path: "Tests/CTestLogCapture"),
        // The etcd suite against a real 3-member cluster (swift test --traits Etcd), and its child process.
        .executableTarget(name: "prefs-etcd-child", dependencies: ["SharedPrefsEtcd"], path: "Tests/prefs-etcd-child"),
        .testTarget(
            name: "SharedPrefsEtcdTests",
            dependencies: ["SharedPrefs", "SharedPrefsEtcd", "SharedPrefsObservation", "prefs-etcd-child"]
        ),
        // Built as a module with `.defaultIsolation(MainActor.self)` is (the flag, so that the
        // package keeps building with Swift 6.1): @ObservableDefaults(defaultIsolationIsMainActor:).
        .testTarget(
            name: "SharedPrefsMainActorTests",
            dependencies: ["SharedPrefsObservation", "SharedPrefsTestSupport"],
            swiftSettings: [.unsafeFlags(["-default-isolation", "MainActor"])]
        ),
        .testTarget(
            name: "SharedPrefsMacrosTests",
            dependencies: [
                "SharedPrefsMacros",
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
