import Foundation
import SharedPrefs

/// 17. Deadlines: how long a call waits for a lock another holder keeps, as a multiple of the
/// lock timeout (the tests check only that nothing gives up early; how long is this row's).
extension Measures {
    mutating func deadlines() throws {
        let timeout = Duration.milliseconds(500)
        let seconds = Double(timeout / .milliseconds(1)) / 1000
        /// Holds the `flock` of each suite's lock file (another open file description of it,
        /// as another process's would be) while `body` runs.
        func holding<T>(_ names: [String], _ body: () throws -> T) throws -> T {
            let fds = names.map { open(directory.appending(path: ".\($0).plist.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
            defer { for fd in fds { close(fd) } }
            guard fds.allSatisfy({ $0 >= 0 && flock($0, LOCK_EX) == 0 }) else { throw BenchError("could not hold the lock files in \(directory.path)") }
            return try body()
        }
        func timed(_ body: () throws -> Void) rethrows -> Double {
            let start = now()
            try body()
            return Double(now() - start) / 1e9
        }
        let rounds = quick ? 3 : 10
        // synchronize() behind its own background write, both waiting for the held lock.
        let suite = try PreferenceSuite(fileURL: file("deadline"), options: .init(lockTimeout: timeout))
        var synchronizes: [Double] = []
        var updates: [Double] = []
        for i in 0..<rounds {
            try holding(["deadline"]) {
                suite.set(i, forKey: "k")
                synchronizes.append(timed { _ = suite.synchronize() } / seconds)
                updates.append(timed { _ = try? suite.update { $0["u"] = .integer(Int64(i)) } } / seconds)
            }
        }
        // The exit flush of 4 suites whose locks are held: one process each round.
        let names = (0..<4).map { "exit-\($0)" }
        var exits: [Double] = []
        for _ in 0..<rounds {
            try holding(names) {
                let child = try Child(["exit-flush", String(Int(timeout / .milliseconds(1)))] + names.map { file($0).path })
                guard let line = child.nextLine(timeout: 60), let took = Double(line.split(separator: " ").last ?? "") else { throw BenchError("the exit-flush child printed no time") }
                child.waitForExit()
                exits.append(took / 1e9 / seconds)
            }
        }
        for (id, name, samples) in [
            ("17.synchronize", "synchronize() behind a held lock (and its own background write), ÷ the lock timeout", synchronizes),
            ("17.update", "update behind a held lock, ÷ the lock timeout", updates),
            ("17.exit-flush", "the exit flush of 4 suites whose locks are held, from main's return, ÷ the lock timeout", exits),
        ] {
            let sorted = samples.sorted()
            rows.append(Row(
                id: id, group: "17. deadlines", name: name, n: samples.count,
                throughput: Quantity(value: sorted[sorted.count / 2], unit: "× timeout"),
                note: "lock timeout \(timeout); median of \(samples.count), worst \(String(format: "%.2f", sorted.last!))×; ≤ 1.2× means one timeout, not two (or four)",
                cost: sorted[sorted.count / 2]))
        }
    }
}
