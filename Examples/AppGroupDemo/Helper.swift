import Foundation
import SharedPrefs

/// A helper process: obeys one command per line on standard input and reports, one line each on
/// standard output with tab-separated fields, what it wrote and what it observed:
///
///     wrote <key> <value> <t>      saw <key> <old> <new> <t>      prefix <key> <t>      done <what>
///
/// `<t>` is CLOCK_MONOTONIC in nanoseconds, so the main process can compute latencies; `-` stands
/// for no value.
enum Helper {
    static func run(id: Int, suite: PreferenceSuite) async throws {
        let settings = DemoSettings(suite: suite)
        let say = Output()
        // Every key but the counter (which changes a thousand times).
        let watched = suite.observe(.all) { change in
            guard change.key != counterKey.name else { return }
            say("saw", change.key, render(change.oldValue), render(change.newValue), "\(monotonicNanoseconds())")
        }
        // A prefix-filtered observer: only this helper's own namespace.
        let own = suite.observe(.prefix("helper\(id).")) { change in
            say("prefix", change.key, "\(monotonicNanoseconds())")
        }
        say("ready")
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "theme":
                // The time is taken before the set: the write is on its way before `set` returns.
                let time = monotonicNanoseconds()
                settings.theme = Theme(rawValue: words[1]) ?? .system
                say("wrote", "demo.theme", words[1], "\(time)")
            case "increment":
                let count = Int(words[1]) ?? 0
                for _ in 0..<count { try await suite.update { $0[counterKey] += 1 } }
                say("done", "increment")
            case "forget-nickname":
                let time = monotonicNanoseconds()
                settings.nickname = nil
                say("wrote", "demo.nickname", "-", "\(time)")
            case "quit", nil:
                _ = (watched, own)
                return
            default:
                say("error", "unknown command \(line)")
            }
        }
        _ = (watched, own)
    }

    static func render(_ value: PlistValue?) -> String {
        value?.description ?? "-"
    }
}

/// Whole lines of tab-separated fields to standard output, one write each, so lines from
/// observer queues never mix.
struct Output: Sendable {
    func callAsFunction(_ fields: String...) {
        FileHandle.standardOutput.write(Data((fields.joined(separator: "\t") + "\n").utf8))
    }
}
