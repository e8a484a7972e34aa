// A child process for SharedPrefsEtcd's tests (built with the Etcd trait; empty without it). Its
// offline cache is the default one, under $XDG_CACHE_HOME, which the tests point at a temporary
// directory, or the file `PREFS_ETCD_CHILD_CACHE` names. `PREFS_ETCD_CHILD_USER=name:password`
// opens it as that etcd user.
//
//   prefs-etcd-child increment <endpoints> <prefix> <n>   n × update { counter += 1 }, then "done"
//   prefs-etcd-child observe <endpoints> <prefix> <n>     prints "ready", then "change <key> <old> <new>"
//                                                         per change ("-" for none) and "failure <code>"
//                                                         per failure; exits after n changes and
//                                                         resynchronized failures
//   prefs-etcd-child get <endpoints> <prefix> <key>...    prints "<key> <value>" per key ("-" for none)
//   prefs-etcd-child set <endpoints> <prefix> <key>=<value>...
//                                                         sets each (an integer where it parses, "-"
//                                                         removes), and exits: the exit flush writes
//                                                         them, or queues them offline
//   prefs-etcd-child pulse <endpoints> <prefix> <n> [update]
//                                                         sets "p1"…"p<n>" to 1…n, each flushed once (or
//                                                         in one update each), never tried again by
//                                                         this program: prints "ready" after the
//                                                         first, "failed <k>" for each that failed (an
//                                                         update's error: not applied), then "longest
//                                                         <s>" (the longest one took) and, after one
//                                                         last flush, "done" (or "last flush failed")
//   prefs-etcd-child async-updates <endpoints> <prefix> <n>
//                                                         prints "ready", waits for a line on standard
//                                                         input, then runs n async updates of
//                                                         "counter" at once and prints "updated <ok>
//                                                         failed <n> longest <ms>"
//   prefs-etcd-child session <endpoints> <prefix>         prints "ready", then changes and failures as
//                                                         observe does, while it takes commands from
//                                                         standard input until its end: "set <key>=<value>...",
//                                                         "get <key>...", "flush" (prints "flushed" or
//                                                         "flush failed <code>")
//   prefs-etcd-child observe-many <endpoints> <base> <n> <last>
//                                                         observes "k" in the n suites <base><i>/;
//                                                         prints "ready", and once each has heard
//                                                         <last>, "suite <i> <v1>,<v2>,..." (the values
//                                                         it heard, in order) for each, and exits
//   prefs-etcd-child storm <endpoints> <prefix>          prints "ready"; until its standard input ends: sets 1, 2, 4 … or
//                                                         128 of the keys k0…k199 to the round's number
//                                                         (one in ten removed instead) and flushes, every
//                                                         40 ms; then flushes once more and prints "done"
//                                                         (or "last flush failed")
//   prefs-etcd-child changes <endpoints> <prefix> <since> follows suite.changes(since:): prints "write
//                                                         <seq> <key>=<new>,..." per write and "gap
//                                                         <from> <to> <key>=<value>,..." per gap (keys
//                                                         in order), until it is killed
#if Etcd
import Foundation
import SharedPrefs
import SharedPrefsEtcd
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: prefs-etcd-child increment|observe|get|set <endpoints> <prefix> ...\n".utf8))
    exit(2)
}
let endpoints = arguments[2].split(separator: ",").map(String.init)
let rest = Array(arguments.dropFirst(4))
/// One line to the test, unbuffered.
@Sendable func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

@Sendable func text(_ value: PlistValue?) -> String {
    switch value {
    case nil: "-"
    case .integer(let n)?: "\(n)"
    case .string(let s)?: s
    case let other?: "\(other)"
    }
}

/// Sets each `key=value` (an integer where it parses, "-" removes).
func assign(_ assignments: some Sequence<String>, in suite: PreferenceSuite) {
    for assignment in assignments {
        let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { continue }
        if parts[1] == "-" { suite.removeObject(forKey: parts[0]) } else if let n = Int(parts[1]) { suite.set(n, forKey: parts[0]) } else { suite.set(parts[1], forKey: parts[0]) }
    }
}

/// `PREFS_ETCD_CHILD_USER=name:password`: the etcd user the suite is opened as.
let credentials = ProcessInfo.processInfo.environment["PREFS_ETCD_CHILD_USER"].map {
    let parts = $0.split(separator: ":", maxSplits: 1).map(String.init)
    return EtcdOptions.Credentials(user: parts[0], password: parts.count > 1 ? parts[1] : "")
}

do {
    let cache = ProcessInfo.processInfo.environment["PREFS_ETCD_CHILD_CACHE"].map { EtcdOptions.OfflineCache.file(URL(filePath: $0)) }
    let suite = try PreferenceSuite(etcd: endpoints, prefix: arguments[3], options: EtcdOptions(timeout: .seconds(2), offlineCache: cache ?? .automatic, credentials: credentials))
    switch arguments[1] {
    case "increment":
        for _ in 0..<(Int(rest.first ?? "") ?? 0) {
            try suite.update { transaction in
                guard case .integer(let n)? = transaction["counter"] else {
                    transaction["counter"] = .integer(1)
                    return
                }
                transaction["counter"] = .integer(n + 1)
            }
        }
        say("done")
    case "async-updates":
        let counter = PreferenceKey<Int>("counter", default: 0)
        say("ready")
        _ = readLine()
        // On the pool, from a task; this (main) thread waits, as a program's main thread may.
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var report = ""
        Task.detached {
            let clock = ContinuousClock()
            let outcomes = await withTaskGroup(of: (Bool, Duration).self) { group in
                for _ in 0..<(Int(rest.first ?? "") ?? 64) {
                    group.addTask {
                        let start = clock.now
                        do {
                            try await suite.update { $0[counter] += 1 }
                            return (true, clock.now - start)
                        } catch {
                            return (false, clock.now - start)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let ok = outcomes.filter(\.0).count
            let longest = outcomes.map(\.1).max() ?? .zero
            report = "updated \(ok) failed \(outcomes.count - ok) longest \(Int(longest / .milliseconds(1)))"
            finished.signal()
        }
        finished.wait()
        say(report)
    case "observe":
        let seen = DispatchSemaphore(value: 0)
        let token = suite.observe(.all) { change in
            say("change \(change.key) \(text(change.oldValue)) \(text(change.newValue))")
            seen.signal()
        }
        let failures = suite.failures()
        Task.detached {
            for await failure in failures {
                say("failure \(failure.code)")
                if failure.code == .resynchronized { seen.signal() }
            }
        }
        say("ready")
        for _ in 0..<(Int(rest.first ?? "") ?? 0) { seen.wait() }
        token.cancel()
    case "observe-many":
        let (count, last) = (Int(rest[0]) ?? 0, Int(rest[1]) ?? 0)
        final class Heard: @unchecked Sendable {
            let lock = NSLock()
            var values: [[Int]]
            init(_ count: Int) { values = Array(repeating: [], count: count) }
        }
        let heard = Heard(count)
        let done = DispatchSemaphore(value: 0)
        let kept = try (0..<count).map { i in
            let suite = try PreferenceSuite(etcd: endpoints, prefix: "\(arguments[3])\(i)/", options: EtcdOptions(timeout: .seconds(2)))
            return (suite, suite.observe(.key("k")) { change in
                guard case .integer(let n)? = change.newValue else { return }
                heard.lock.withLock { heard.values[i].append(Int(n)) }
                if n == Int64(last) { done.signal() }
            })
        }
        say("ready")
        for _ in 0..<count { done.wait() }
        for (i, values) in heard.lock.withLock({ heard.values }).enumerated() { say("suite \(i) \(values.map(String.init).joined(separator: ","))") }
        withExtendedLifetime(kept) {}
    case "get":
        for key in rest { say("\(key) \(text(suite.value(forKey: key)))") }
    case "set":
        assign(rest, in: suite)
    case "pulse":
        var longest: Duration = .zero
        // Each write once: what is not lost is the library's doing (a failed flush leaves its
        // value pending for the next one; a failed update applied nothing), not a retry loop's.
        final class Outcome: @unchecked Sendable { var flushed = false }  // written before the signal, read after the wait
        func flushOnce() -> Bool {
            let outcome = Outcome()
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                outcome.flushed = (try? await suite.flush()) != nil
                done.signal()
            }
            done.wait()
            return outcome.flushed
        }
        for n in 1...(Int(rest.first ?? "") ?? 1) {
            let start = ContinuousClock.now
            if rest.dropFirst().first == "update" {
                if (try? suite.update({ $0["p\(n)"] = .integer(Int64(n)) })) == nil { say("failed \(n)") }
            } else {
                suite.set(n, forKey: "p\(n)")
                if !flushOnce() { say("failed \(n)") }
            }
            longest = max(longest, ContinuousClock.now - start)
            if n == 1 { say("ready") }
            Thread.sleep(forTimeInterval: 0.01)
        }
        say("longest \(longest.components.seconds).\(String(format: "%03d", longest.components.attoseconds / 1_000_000_000_000_000))")
        say(flushOnce() ? "done" : "last flush failed")
    case "storm":
        say("ready")
        let ended = Mutex(false)
        Thread.detachNewThread {
            while readLine() != nil {}
            ended.withLock { $0 = true }
        }
        var round = 0
        while !ended.withLock({ $0 }) {
            round += 1
            for _ in 0..<(1 << Int.random(in: 0...7)) {
                let key = "k\(Int.random(in: 0..<200))"
                if Int.random(in: 0..<10) == 0 { suite.removeObject(forKey: key) } else { suite.set(round, forKey: key) }
            }
            // A flush that fails leaves its values pending for the next.
            suite.synchronize()
            Thread.sleep(forTimeInterval: 0.04)
        }
        say(suite.synchronize() ? "done" : "last flush failed")
    case "changes":
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            for await event in suite.changes(since: UInt64(rest.first ?? "") ?? 0) {
                switch event {
                case .write(let sequence, let changes):
                    say("write \(sequence) " + changes.map { "\($0.key)=\(text($0.newValue))" }.joined(separator: ","))
                case .gap(let from, let to, let contents):
                    say("gap \(from) \(to) " + contents.keys.sorted().map { "\($0)=\(text(contents[$0]))" }.joined(separator: ","))
                }
            }
            done.signal()
        }
        done.wait()
    case "session":
        let token = suite.observe(.all) { change in say("change \(change.key) \(text(change.oldValue)) \(text(change.newValue))") }
        let failures = suite.failures()
        Task.detached { for await failure in failures { say("failure \(failure.code)") } }
        say("ready")
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            switch words.first {
            case "set": assign(words.dropFirst(), in: suite)
            case "get": for key in words.dropFirst() { say("\(key) \(text(suite.value(forKey: key)))") }
            case "flush":
                let done = DispatchSemaphore(value: 0)
                Task.detached {
                    do { try await suite.flush(); say("flushed") } catch { say("flush failed \((error as? PreferenceError)?.code.description ?? "\(error)")") }
                    done.signal()
                }
                done.wait()
            default: say("unknown command \(line)")
            }
        }
        token.cancel()
    default:
        FileHandle.standardError.write(Data("unknown command \(arguments[1])\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("prefs-etcd-child: \(error)\n".utf8))
    exit(1)
}
#endif
