import Foundation
import Testing

@testable import SharedPrefs

/// The storage core's promises that the defects of issue 28 broke: nothing foreign under a lock,
/// nothing held between writes, one lock file for everyone.
@Suite("Core")
struct CoreTests {
    /// An app that opens a suite per request: open by path, set, synchronize, let it go, in four
    /// processes at once. The last reference of a suite could be dropped by the watcher thread
    /// while it held its own lock, and the suite's deinit took that lock again ("Recursive call
    /// to lock Mutex", 9 of 12 processes).
    @Test func suitesOpenedAndLetGoPerRequestNeverCrash() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("churn.plist")
        let count = underThreadSanitizer ? 200 : 1_500
        try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for _ in 0..<4 { group.addTask { try await run(childExecutable, ["churn", file.path, "\(count)"]) } }
            for try await result in group {
                #expect(result.status == 0 && result.output.contains("churned \(count)"), "\(result.output)")
            }
        }
    }
}
