import Foundation
import SharedPrefsTestSupport
import Testing

@Suite("AppGroupDemo")
struct AppGroupDemoTests {
    let demo = childExecutable.deletingLastPathComponent().appending(path: "AppGroupDemo")

    @Test func theScenarioEndsWithAnExactCounterAndNothingLost() async throws {
        let directory = try TemporaryDirectory()
        let result = try await run(demo, ["--group-dir", directory.url.path, "--increments", "200"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("counter = 400 (expected 400, lost updates: 0)"))
        #expect(result.output.contains("properties invalidated: theme\n"))
        #expect(result.output.contains("lost updates: 0, cross-process latency"))
        #expect(result.output.contains("Result: OK"))
        // A container it was given is left in place, with the suite the processes shared.
        let suite = directory.url.appending(path: "Library/Preferences/settings.plist")
        #expect(try readSuiteFile(suite)["demo.counter"] == 400)
        // Run again on the kept container: the last run's values are removed and said so, the
        // scenario passes, and what it prints is what the suite holds, in time order.
        let again = try await run(demo, ["--group-dir", directory.url.path, "--increments", "100"])
        #expect(again.status == 0, "\(again.output)")
        #expect(again.output.contains("of an earlier run: they were removed") && again.output.contains("counter = 200 (expected 200, lost updates: 0)"), "\(again.output)")
        #expect(try readSuiteFile(suite)["demo.counter"] == 200)
        for output in [result.output, again.output] {
            let times = output.split(separator: "\n").compactMap { $0.firstMatch(of: #/^ *(\d+\.\d{3}) ms  /#).flatMap { Double($0.output.1) } }
            #expect(times.count >= 15 && times == times.sorted(), "\(output)")
        }
    }

    /// A helper killed in the middle: the main process says which one ended and exits, at once,
    /// not after a timeout, and the other helper with it.
    @Test func aHelperThatDiesEndsTheDemoWithAMessage() async throws {
        let directory = try TemporaryDirectory()
        let main = try Launched(demo, ["--group-dir", directory.url.path, "--increments", "1000000"])
        let started = try await main.records.wait(until: { $0.contains { $0.hasPrefix("3. Both helpers increment") } })
        let helpers = try #require(started.first { $0.contains("main process") }?.split(separator: " ").suffix(3))
        let (first, second) = (try #require(Int32(helpers.first!)), try #require(Int32(helpers.last!)))
        #expect(kill(first, SIGKILL) == 0)
        #expect(try await main.status(timeout: .seconds(30)) == 1)
        #expect(main.records.items.contains("Result: FAILED — helper 1 exited before it reported what the scenario waits for"), "\(main.records.items)")
        #expect(kill(second, 0) == -1 && errno == ESRCH, "helper 2 is still running")
    }

    @Test func interactiveModeSetsAndGetsWhileHelpersReport() async throws {
        let directory = try TemporaryDirectory()
        let script = "printf 'set demo.volume 42\\nget demo.volume\\nquit\\n' | '\(demo.path)' --interactive --group-dir '\(directory.url.path)'"
        let result = try await run(URL(filePath: "/bin/bash"), ["-c", "set -o pipefail; " + script])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("demo.volume = 42"))
    }
}

extension AppGroupDemoTests {
    /// The README's transcript is what the demo prints today, but for the numbers (times, PIDs).
    @Test func theReadmeTranscriptMatchesTheDemosOutput() async throws {
        let readme = try String(contentsOf: repositoryRoot.appending(path: "README.md"), encoding: .utf8)
        let opening = try #require(readme.range(of: "A real run on this machine (debug build):\n\n```text\n"))
        let closing = try #require(readme.range(of: "```", range: opening.upperBound..<readme.endIndex))
        var result = try await run(demo, [])
        #expect(result.status == 0, "\(result.output)")
        // The README ran with TMPDIR unset (/tmp); a run with it elsewhere prints that directory.
        var temporary = FileManager.default.temporaryDirectory.path(percentEncoded: false)
        while temporary.hasSuffix("/") { temporary.removeLast() }
        result.output = result.output.replacing(temporary + "/AppGroupDemo-", with: "/tmp/AppGroupDemo-")
        /// Lines with every run of digits as `#` and of spaces as one space, without the leading
        /// spaces that pad a time (which a run past 10 s does not have).
        func shape(_ text: some StringProtocol) -> [String] {
            text.split(separator: "\n").map { line in
                var out = ""
                for character in line.trimmingPrefix(while: \.isWhitespace) where !(character.isWholeNumber && out.last == "#") && !(character == " " && out.last == " ") {
                    out.append(character.isWholeNumber ? "#" : character)
                }
                return out
            }
        }
        /// The timeline lines of each section in any order: they print in time order, and which
        /// of two processes saw a change first varies from run to run.
        func sections(_ lines: [String]) -> [[String]] {
            lines.reduce(into: [[String]]()) { sections, line in
                if line.hasPrefix("#.# ms"), sections.last?.first?.hasPrefix("#.# ms") == true { sections[sections.count - 1].append(line) } else { sections.append([line]) }
            }.map { $0.sorted() }
        }
        #expect(sections(shape(readme[opening.upperBound..<closing.lowerBound])) == sections(shape(result.output)))
    }
}
