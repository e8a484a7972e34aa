import Foundation
import Logging

/// Every log line of the test process (swift-log, any label), as `"<level> <message>"`. A passing
/// run prints none of them; `SHAREDPREFS_TEST_LOGS=1 swift test` prints them to standard error too.
package let capturedLogs = Recorder<String>()

/// Called once, by a constructor in CTestLogCapture, before any test runs.
@_cdecl("sharedprefs_tests_capture_logs")
func captureLogs() {
    LoggingSystem.bootstrap { _ in CapturingLogHandler() }
}

private struct CapturingLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider? = nil
    var logLevel: Logger.Level = .info
    private let echo = ProcessInfo.processInfo.environment["SHAREDPREFS_TEST_LOGS"] != nil

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = "\(event.level) \(event.message)"
        capturedLogs.record(line)
        if echo { FileHandle.standardError.write(Data("\(line)\n".utf8)) }
    }
}
