import Foundation

/// The outcome of a program run to completion by ``run(_:_:environment:)``.
package struct ProcessResult {
    package var status: Int32
    package var output: String
}

/// Runs a program to completion without blocking a thread of the cooperative pool, with
/// `environment` added to this process's and standard input at `/dev/null`.
package func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    process.standardInput = FileHandle.nullDevice
    let log = FileManager.default.temporaryDirectory.appending(path: "sharedprefs-child-\(UUID().uuidString).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let handle = try FileHandle(forWritingTo: log)
    process.standardOutput = handle
    process.standardError = handle
    defer { try? FileManager.default.removeItem(at: log) }
    let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch { continuation.resume(throwing: error) }
    }
    try handle.close()
    return ProcessResult(status: status, output: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
}

/// The test child executable, built next to the test bundle by `swift test`.
package let childExecutable: URL = {
    let bundle = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    return bundle.deletingLastPathComponent().appending(path: "prefs-test-child")
}()
