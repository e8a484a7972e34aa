// A child process for the multi-process tests. It uses SharedPrefs exactly as an app would.
//
//   prefs-test-child set <plist> key=value…        sets keys, returns from main (exit flush), prints
//                                                  "exit flush took <ms> ms" after it
//   prefs-test-child set-exit <plist> key=value…   sets keys, then calls exit(0)
//   prefs-test-child hammer <plist> <id> <count>   <count> × (update: counter += 1; set p<id>.k<i>); lock timeout 60 s unless --lock-timeout-ms N
//   prefs-test-child observable <plist> theme=dark volume=9   sets properties of an @ObservablePrefs instance
//   prefs-test-child crash-loop <plist> [--stop-before-rename]
//       forever: update-increments "counter" ("confirmed <n>"), then sets "flushed" and
//       synchronizes ("flushed <n>"). --stop-before-rename: after the first round, the next write
//       prints "renaming <temporary file>" and stops there, the suite locked, until it is killed.
//   prefs-test-child watch <plist> [--fail-watches] [--block] [--block-failures] [--also <plist>]
//       prints "change <key> <value>" and "failure <code>" as they arrive; reads commands from
//       stdin: "hold" / "release" the watcher thread (a test hook), "write" sets "written" (to a
//       new number each time) and synchronizes (exits if that fails) and prints "held <descriptors in the directory>"
//       (once no reader confirms the write, within 1 s),
//       "try-write" does so and prints "written" or "not written", "dump" prints
//       "values k=v,…" (sorted), "watches" prints "watches <inotify watches of this process>";
//       exits at end of input. --fail-watches makes inotify_add_watch
//       fail with ENOSPC first. --block: a .synchronousExternalChanges handler prints "entered"
//       and blocks for good, and "added <suite>" is printed for each suite new in the directory.
//       --block-failures: instead of printing failures, a failure observer prints
//       "entered <code>" and blocks for good. --also: prints "also <key> <value>" for each change
//       of another suite.
//   prefs-test-child additions <directory> [--fail-watches]
//       prints "ready", then "added <suite>" for each suite that appears in the directory.
//   prefs-test-child many <directory> <count>
//       under a limit of 1,024 descriptors, opens <count> suites s0…, writes a key to each,
//       prints "ready <open descriptors>", then "change <key> <value>" for the last suite.
//   prefs-test-child churn <plist> <count>
//       <count> times: opens the suite by path, sets "n", synchronizes and lets the suite go
//       (an app that opens a suite per request); prints "churned <count>".
//   prefs-test-child writes <plist> <count>
//       after a first write, <count> more, each synchronized; prints "descriptors <before> <after>"
//       (the entries of /proc/self/fd) and "watches <inotify watches of this process>".
//   prefs-test-child fork-increments <plist> <count>   (lock timeout 60 s)
//       writes once, forks; parent and child each update-increment "counter" <count> times; the
//       parent waits for the child and prints "child <exit status>".
//   prefs-test-child fork-in-change-stream <plist>
//       forks while a thread delivers the first event of followChanges(since: 0) (its handler
//       holds it, in the parent only); in the child, a set of "k" to 2 comes through the stream
//       (as a write, or in a gap's content) within 10 s: exit status 0, 3 if not. Prints "child <exit status>" or "child hung".
//   prefs-test-child fork-in-update <plist>
//       an update body sets "forked" and forks a child that never runs another program and keeps
//       every descriptor until end of input; prints "written" once the update returned, and
//       waits for the child at end of input.
//   prefs-test-child user-defaults <name>
//       writes keys of every property-list type through Foundation's UserDefaults(suiteName:).
//   prefs-test-child layers <plist> <key>…
//       prints "failure <code> <message>" for each standing failure (system layers ignored), then
//       per key "<key> value=<value(forKey:)> int=<typed Int, default 5> source=<layer> writable=<bool>",
//       and "observable volume=<ChildSettings.volume>".
//   prefs-test-child layers-each <plist>… <key>
//       for each suite file, "<plist> <key> value=… int=… source=… writable=… observable=<ChildSettings.volume>".
//   prefs-test-child layer-write <plist> <key> <int>
//       sets the key through set, update and (for app.volume) @ObservablePrefs, and prints what
//       each did: "set <failure code or ok>", "update <error code or ok>", "observable <volume read back>".
//   prefs-test-child fork-busy <plist> <rounds>
//       forks <rounds> children while a thread sets keys and an observer hears them; each child
//       writes, updates and observes; prints "failed <count>; round <r>: <how>…".
//   prefs-test-child paced-writes <plist> <count>
//       <count> updates of "paced" (0, 1, …), each stopped before its rename: prints "renaming
//       <temporary file>", goes on at a line of standard input, then prints "written <i>" or
//       "failed <i> <message>".
//   prefs-test-child counter-writes <plist> <count> [<pause-µs>]
//       <count> updates that each increment "counter", with a pause after each (to spread them
//       over the time a test needs).
//   prefs-test-child consume <plist> <output>
//       follows suite.changes(since:) from the number on the last line of <output> (0 without
//       one), appending a line per event with one write(2): "write <seq> <new values>" or
//       "gap <from> <to> <counter>"; prints "from <number>" first, and "at <seq>" after each event.
//   --lock-timeout-ms N (any command): the suite's lock timeout. --launch-arguments: the suite
//       reads -key value pairs among the arguments (keys of "layers" end at the first of them).
//
// Values: int:5, real:1.5, bool:true, str:text (or plain text), date:<seconds since 1970>; "-" removes.
import Foundation
@_spi(Testing) import SharedPrefs
import SharedPrefsObservation

#if !SHAREDPREFS_TESTING
/// A release build has no test hooks: the commands that need them say so.
enum TestingHooks {
    static func failWatches(errno: CInt) { fail("built without the library's test hooks: build it in debug") }
    static func beforeRename(_ body: (@Sendable (String) -> Void)?) { fail("built without the library's test hooks: build it in debug") }
    static func holdWatcher(_ held: Bool) { fail("built without the library's test hooks: build it in debug") }
}
#endif

func parse(_ text: String) -> PlistValue? {
    let (kind, rest) = text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? ("str", text)
    switch kind {
    case "int": return Int64(rest).map(PlistValue.integer)
    case "real": return Double(rest).map(PlistValue.real)
    case "bool": return .bool(rest == "true")
    case "date": return Double(rest).map { .date(Date(timeIntervalSince1970: $0)) }
    case "str": return .string(rest)
    default: return .string(text)
    }
}

enum ChildTheme: String, PreferenceValue { case system, light, dark }

/// The same keys as the tests' `AppSettings`, declared independently, as another program would.
@ObservablePrefs(prefix: "app.")
final class ChildSettings {
    var theme: ChildTheme = .system
    var volume = 5
}

/// Failures as a failure observer hears them (on whichever thread reports them).
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [PreferenceError] = []
    func append(_ error: PreferenceError) { lock.withLock { errors.append(error) } }
    var items: [PreferenceError] { lock.withLock { errors } }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("prefs-test-child: \(message)\n".utf8))
    exit(2)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The inotify watches this process has: the `inotify wd:` lines of its inotify descriptors' fdinfo.
func inotifyWatches() -> Int {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.reduce(0) { count, fd in
        guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)) == "anon_inode:inotify",
            let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + fd, encoding: .utf8)
        else { return count }
        return count + info.split(separator: "\n").count { $0.hasPrefix("inotify wd:") }
    }
}

/// When `set` returned from main (CLOCK_MONOTONIC, ns); registered before any suite is opened,
/// this exit handler runs after the library's exit flush and says how long that took.
nonisolated(unsafe) var mainReturned: Int64 = 0

/// The exit status of child `pid` (128 + the signal's number when a signal ended it), waited for
/// up to `seconds`; `nil` when it did not end by then (it is killed).
func waitForChild(_ pid: pid_t, seconds: Double) -> Int32? {
    var status: Int32 = 0
    let deadline = Date().addingTimeInterval(seconds)
    while waitpid(pid, &status, WNOHANG) == 0 {
        if Date() > deadline {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            return nil
        }
        usleep(1_000)
    }
    return status & 0x7F != 0 ? 128 + status & 0x7F : status >> 8
}

func monotonicNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
atexit {
    if mainReturned > 0 { say("exit flush took \((monotonicNow() - mainReturned) / 1_000_000) ms") }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else { fail("usage: prefs-test-child set|set-exit|hammer|crash-loop|observable|watch|additions|many <plist> …") }
var options = PreferenceSuite.Options()
// The writers that loop (`hammer`, `fork-increments`) test what is lost, not how long a turn at the
// lock takes: `flock` is not fair, and on two loaded cores one of eight writers in tight loops can
// lose the race for longer than the default 5 s.
if ["hammer", "fork-increments"].contains(arguments[0]) { options.lockTimeout = .seconds(60) }
if let index = arguments.firstIndex(of: "--lock-timeout-ms"), index + 1 < arguments.count, let ms = Int(arguments[index + 1]) {
    options.lockTimeout = .milliseconds(ms)
}
options.launchArguments = arguments.contains("--launch-arguments")

switch arguments[0] {
case "user-defaults":
    // Foundation's own UserDefaults, as a program that has not moved to SharedPrefs writes it.
    guard let defaults = UserDefaults(suiteName: arguments[1]) else { fail("no UserDefaults suite \(arguments[1])") }
    defaults.set(42, forKey: "int")
    defaults.set(1.5, forKey: "real")
    defaults.set(true, forKey: "bool")
    defaults.set("text", forKey: "string")
    defaults.set(Date(timeIntervalSince1970: 1_000_000), forKey: "date")
    defaults.set(Data([1, 2, 3]), forKey: "data")
    defaults.set(["a", "b"], forKey: "array")
    defaults.set(["nested": 1], forKey: "dictionary")
    defaults.set("theirs", forKey: "shared")
    guard defaults.synchronize() else { fail("synchronize failed") }
    exit(0)
case "standard-key":
    // A key made before the standard suite is opened registers its default there (Defaults'
    // keys register when made); one made after, at once. Run with SHAREDPREFS_ROOT set.
    _ = PreferenceKey<Int>(arguments[1], default: 7)
    let standard = PreferenceSuite.standard
    _ = PreferenceKey<String>(arguments[1] + "2", default: "later")
    say("\(standard.integer(forKey: arguments[1])) \(standard.string(forKey: arguments[1] + "2") ?? "nil") \(standard.storedValues.count)")
    exit(0)
case "additions":
    if arguments.contains("--fail-watches") { TestingHooks.failWatches(errno: ENOSPC) }
    let additions: any AsyncSequence<String, Never>
    do { additions = try SuiteDirectory(url: URL(filePath: arguments[1])).suiteAdditions() } catch { fail("\(error)") }
    say("ready")
    for await name in additions { say("added \(name)") }
    exit(0)
case "many":
    var limit = rlimit(rlim_cur: 1024, rlim_max: 1024)
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { fail("setrlimit failed") }
    guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: many <directory> <count>") }
    var suites: [PreferenceSuite] = []
    do {
        for i in 0..<count {
            let suite = try PreferenceSuite(fileURL: URL(filePath: arguments[1]).appending(path: "s\(i).plist"), options: .init(durability: .none))
            suite.set(i, forKey: "k")
            guard suite.synchronize() else { fail("synchronize of s\(i) failed") }
            suites.append(suite)
        }
    } catch {
        fail("suite \(suites.count): \(error)")
    }
    let token = suites[count - 1].observe(.all) { change in
        say("change \(change.key) \(change.newValue.map { "\($0)" } ?? "-")")
    }
    say("ready \((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1)")
    while readLine() != nil {}
    withExtendedLifetime((token, suites)) {}
    exit(0)
case "set-each":
    // set-each <plist>... [--lock-timeout-ms N]: sets k to 1 in each suite, then exits: the exit
    // flush writes them all.
    for path in arguments.dropFirst().prefix(while: { !$0.hasPrefix("--") }) {
        do { try PreferenceSuite(fileURL: URL(filePath: path), options: options).set(1, forKey: "k") } catch { fail("\(error)") }
    }
    mainReturned = monotonicNow()
    exit(0)
case "churn":
    guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: churn <plist> <count>") }
    for i in 0..<count {
        do {
            let suite = try PreferenceSuite(fileURL: URL(filePath: arguments[1]), options: .init(durability: .none))
            suite.set(i, forKey: "n")
            guard suite.synchronize() else { fail("synchronize failed at \(i)") }
        } catch {
            fail("open failed at \(i): \(error)")
        }
    }
    say("churned \(count)")
    exit(0)
default: break
}

let suite: PreferenceSuite
do {
    if arguments.contains("--fail-watches") {
        // A suite watched normally first, so that the watcher thread is already asleep when the
        // next one falls back to polling (it must be woken for it).
        _ = try PreferenceSuite(fileURL: URL(filePath: arguments[1] + ".warm-up"))
        TestingHooks.failWatches(errno: ENOSPC)
    }
    suite = try PreferenceSuite(fileURL: URL(filePath: arguments[1]), options: options)
} catch {
    fail("\(error)")
}

switch arguments[0] {
case "set", "set-exit":
    for assignment in arguments.dropFirst(2) where assignment.contains("=") {
        guard let equals = assignment.firstIndex(of: "=") else { fail("expected key=value, got \(assignment)") }
        let key = String(assignment[..<equals])
        let text = String(assignment[assignment.index(after: equals)...])
        if text == "-" {
            suite.removeObject(forKey: key)
        } else {
            guard let value = parse(text) else { fail("bad value \(text)") }
            suite.set(value, forKey: key)
        }
    }
    if arguments[0] == "set-exit" { exit(0) }
    mainReturned = monotonicNow()
case "first-launch":
    // Prints whether this process is the one that sees the suite's first launch.
    do { say("first \(try suite.isFirstLaunch())") } catch { fail("\(error)") }
case "hammer":
    guard arguments.count >= 4, let count = Int(arguments[3]) else { fail("usage: hammer <plist> <id> <count> [--lock-timeout-ms N]") }
    let id = arguments[2]
    let counter = PreferenceKey<Int>("counter", default: 0)
    for i in 0..<count {
        do {
            try suite.update { tx in
                tx[counter] += 1
                tx["p\(id).k\(i)"] = .integer(Int64(i))
            }
        } catch {
            fail("update failed: \(error)")
        }
    }
case "paced-writes":
    guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: paced-writes <plist> <count>") }
    TestingHooks.beforeRename { temporaryPath in
        say("renaming \(temporaryPath)")
        _ = readLine()
    }
    for i in 0..<count {
        do {
            try suite.update { $0["paced"] = .integer(Int64(i)) }
            say("written \(i)")
        } catch {
            say("failed \(i) \(error)")
        }
    }
case "crash-loop":
    let counter = PreferenceKey<Int>("counter", default: 0)
    while true {
        do {
            let value = try suite.update { tx -> Int in
                tx[counter] += 1
                return tx[counter]
            }
            // Written and renamed before update returned: a confirmed write.
            say("confirmed \(value)")
        } catch {
            fail("update failed: \(error)")
        }
        // A plain set, confirmed by synchronize (flush) returning.
        let value = suite.integer(forKey: "counter")
        suite.set(value, forKey: "flushed")
        guard suite.synchronize() else { fail("synchronize failed") }
        say("flushed \(value)")
        if arguments.contains("--stop-before-rename") {
            TestingHooks.beforeRename { temporaryPath in
                say("renaming \(temporaryPath)")
                while true { pause() }
            }
        }
    }
case "counter-writes":
    guard arguments.count >= 3, let count = Int(arguments[2]) else { fail("usage: counter-writes <plist> <count> [<pause-µs>]") }
    let pause = arguments.count > 3 ? useconds_t(arguments[3]) ?? 0 : 0
    let counter = PreferenceKey<Int>("counter", default: 0)
    for _ in 0..<count {
        do { try suite.update { $0[counter] += 1 } } catch { fail("update failed: \(error)") }
        if pause > 0 { usleep(pause) }
    }
case "consume":
    guard arguments.count == 3 else { fail("usage: consume <plist> <output>") }
    let output = arguments[2]
    let lastLine = (try? String(contentsOfFile: output, encoding: .utf8))?.split(separator: "\n").last?.split(separator: " ") ?? []
    let cursor = lastLine.count >= 3 ? UInt64(lastLine[lastLine[0] == "gap" ? 2 : 1]) ?? 0 : 0
    let fd = open(output, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fail("cannot open \(output)") }
    let done = DispatchSemaphore(value: 0)
    say("from \(cursor)")
    Task.detached {
        for await event in suite.changes(since: cursor) {
            let line: String
            switch event {
            case .gap(let from, let to, let contents): line = "gap \(from) \(to) \(contents["counter"]?.description ?? "-")\n"
            case .write(let sequence, let changes): line = "write \(sequence) \(changes.map { $0.newValue?.description ?? "-" }.joined(separator: ","))\n"
            }
            let written = line.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            guard written == line.utf8.count else { fail("write to \(output) failed") }
            say("at \(event.sequence)")
        }
        done.signal()
    }
    done.wait()
case "writes":
    guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: writes <plist> <count>") }
    func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
    suite.set(-1, forKey: "n")
    guard suite.synchronize() else { fail("the first write failed") }
    let before = descriptors()
    for i in 0..<count {
        suite.set(i, forKey: "n")
        guard suite.synchronize() else { fail("write \(i) failed") }
    }
    say("descriptors \(before) \(descriptors())")
    say("watches \(inotifyWatches())")
case "fork-increments":
    guard arguments.count == 3, let count = Int(arguments[2]) else { fail("usage: fork-increments <plist> <count>") }
    let counter = PreferenceKey<Int>("counter", default: 0)
    suite.set(0, forKey: "before")
    guard suite.synchronize() else { fail("the first write failed") }
    let pid = fork()
    guard pid >= 0 else { fail("fork failed") }
    for _ in 0..<count {
        do { try suite.update { $0[counter] += 1 } } catch { fail("update failed in the \(pid == 0 ? "child" : "parent"): \(error)") }
    }
    if pid == 0 { _exit(0) }
    var status: Int32 = 0
    guard waitpid(pid, &status, 0) == pid else { fail("waitpid failed") }
    say("child \(status)")
case "fork-busy":
    // Forks <rounds> children while this process is busy: a thread sets keys without pause (the
    // owner writes in the background), and observes them (reader threads re-read). Each child
    // sets a key and synchronizes, increments "counter" in an update, and waits for the change of
    // "echo" to its round that the parent writes after the fork, within 10 s; exit status 0 when
    // all three did, 1 to 3 for the first that failed. The parent gives each child 20 s.
    guard arguments.count == 3, let rounds = Int(arguments[2]) else { fail("usage: fork-busy <plist> <rounds>") }
    let counter = PreferenceKey<Int>("counter", default: 0)
    let busy = suite.observe(.prefix("busy.")) { _ in }
    Thread.detachNewThread {
        var i = 0
        while true {
            suite.set(i, forKey: "busy.\(i % 64)")
            i += 1
        }
    }
    var failures: [String] = []
    for round in 0..<rounds {
        let pid = fork()
        guard pid >= 0 else { fail("fork failed") }
        if pid == 0 {
            suite.set(round, forKey: "child.\(round)")
            guard suite.synchronize() else { exit(1) }
            do { try suite.update { $0[counter] += 1 } } catch { exit(2) }
            let heard = DispatchSemaphore(value: 0)
            let token = suite.observe(.key("echo"), options: .initial) { change in
                if change.newValue == .integer(Int64(round)) { heard.signal() }
            }
            guard heard.wait(timeout: .now() + 10) == .success else { exit(3) }
            withExtendedLifetime(token) {}
            exit(0)
        }
        suite.set(round, forKey: "echo")
        guard suite.synchronize() else { fail("the parent's write failed") }
        let status = waitForChild(pid, seconds: 20)
        if status != 0 { failures.append("round \(round): \(status.map { "exit status \($0)" } ?? "hung")") }
    }
    withExtendedLifetime(busy) {}
    say("failed \(failures.count)" + failures.map { "; \($0)" }.joined())
    exit(0)
case "fork-in-first-delivery":
    // Forks while a thread delivers an observer's first values (.initial and
    // .synchronousLocalChanges: its handler holds them). In the child, a set of the observed key
    // is delivered on the setting thread within 10 s: exit status 0, 3 if not. Prints "child <exit
    // status>", or "child hung" when the child did not end in 20 s.
    suite.set(1, forKey: "k")
    guard suite.synchronize() else { fail("the first write failed") }
    let (inHandler, release, heard) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
    let observing = Thread {
        let token = suite.observe(.key("k"), options: [.initial, .synchronousLocalChanges]) { change in
            if change.newValue == 1 {
                inHandler.signal()
                release.wait()
            } else if change.newValue == 2 {
                heard.signal()
            }
        }
        withExtendedLifetime(token) { while true { pause() } }
    }
    observing.start()
    inHandler.wait()
    let pid = fork()
    guard pid >= 0 else { fail("fork failed") }
    if pid == 0 {
        Thread.detachNewThread { suite.set(2, forKey: "k") }
        exit(heard.wait(timeout: .now() + 10) == .success ? 0 : 3)
    }
    release.signal()
    say("child \(waitForChild(pid, seconds: 20).map(String.init) ?? "hung")")
    exit(0)
case "fork-in-change-stream":
    suite.set(1, forKey: "k")
    guard suite.synchronize() else { fail("the first write failed") }
    let parent = getpid()
    let (inHandler, release, heard) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
    let following = suite.followChanges(since: 0) { event in
        switch event {
        case .write(_, let changes) where changes.contains(where: { $0.newValue == 2 }): heard.signal()
        case .gap(_, _, let contents) where contents["k"] == 2: heard.signal()
        default: break
        }
        if getpid() == parent, case .gap = event {
            inHandler.signal()
            release.wait()
        }
    }
    inHandler.wait()
    let pid = fork()
    guard pid >= 0 else { fail("fork failed") }
    if pid == 0 {
        Thread.detachNewThread {
            suite.set(2, forKey: "k")
            _ = suite.synchronize()
        }
        exit(heard.wait(timeout: .now() + 10) == .success ? 0 : 3)
    }
    release.signal()
    say("child \(waitForChild(pid, seconds: 20).map(String.init) ?? "hung")")
    withExtendedLifetime(following) {}
    exit(0)
case "fork-in-update":
    var child: pid_t = -1
    do {
        try suite.update { tx in
            tx["forked"] = 1
            child = fork()
            if child == 0 {
                // Only async-signal-safe calls in a child of a threaded process.
                var byte: UInt8 = 0
                while read(0, &byte, 1) > 0 {}
                _exit(0)
            }
        }
    } catch {
        fail("update failed: \(error)")
    }
    guard child > 0 else { fail("fork failed") }
    say("written")
    while readLine() != nil {}
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
case "observable":
    let settings = ChildSettings(suite: suite)
    for assignment in arguments.dropFirst(2) {
        let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { fail("expected property=value, got \(assignment)") }
        switch parts[0] {
        case "theme": settings.theme = ChildTheme(rawValue: parts[1]) ?? .system
        case "volume": settings.volume = Int(parts[1]) ?? 0
        default: fail("unknown property \(parts[0])")
        }
    }
case "layers":
    let failures = Collected()
    let token = suite.observeFailures { failures.append($0) }
    for failure in failures.items { say("failure \(failure.code) \(failure.message)") }
    for key in arguments.dropFirst(2).prefix(while: { !$0.hasPrefix("-") }) {
        let typed = suite[PreferenceKey<Int>(key, default: 5)]  // ChildSettings.volume's default
        say("\(key) value=\(suite.value(forKey: key).map { "\($0)" } ?? "-") int=\(typed) source=\(suite.source(ofKey: key)?.layer.rawValue ?? "-") writable=\(suite.isWritable(key))")
    }
    say("observable volume=\(ChildSettings(suite: suite).volume)")
    withExtendedLifetime(token) {}
case "layers-each":
    let key = arguments[arguments.count - 1]
    for path in arguments.dropFirst().dropLast() {
        let each: PreferenceSuite
        do { each = try PreferenceSuite(fileURL: URL(filePath: path)) } catch { fail("\(error)") }
        let typed = each[PreferenceKey<Int>(key, default: 5)]  // ChildSettings.volume's default
        say("\(path) \(key) value=\(each.value(forKey: key).map { "\($0)" } ?? "-") int=\(typed) source=\(each.source(ofKey: key)?.layer.rawValue ?? "-") writable=\(each.isWritable(key)) observable=\(ChildSettings(suite: each).volume)")
    }
    exit(0)
case "layer-write":
    // A value of `-` removes the key instead (removeObject, then update).
    let (key, value) = (arguments[2], Int(arguments[3]))
    let failures = Collected()
    let token = suite.observeFailures { failures.append($0) }
    let known = failures.items.count
    if let value { suite.set(value, forKey: key) } else { suite.removeObject(forKey: key) }
    say("set \(failures.items.dropFirst(known).first.map { "\($0.code) \($0.message)" } ?? "ok")")
    do {
        try suite.update { $0[key] = value.map { .integer(Int64($0)) } }
        say("update ok")
    } catch let error as PreferenceError {
        say("update \(error.code) \(error.message)")
    }
    if key == "app.volume", let value {
        let settings = ChildSettings(suite: suite)
        settings.volume = value
        say("observable \(settings.volume)")
    }
    guard suite.synchronize() else { fail("synchronize failed") }
    withExtendedLifetime(token) {}
case "watch":
    let token = suite.observe(.all) { change in
        let layer = if case .layer(let layer) = change.origin { " layer=\(layer)" } else { "" }
        say("change \(change.key) \(change.newValue.map { "\($0)" } ?? "-")\(layer)")
    }
    var blocking: [AnyObject] = []
    if arguments.contains("--block-failures") {
        blocking.append(suite.observeFailures { failure in
            say("entered \(failure.code)")
            DispatchSemaphore(value: 0).wait()
        })
    } else {
        let failures = suite.failures()
        // Detached: top-level code is on the main actor, whose thread blocks in readLine below.
        Task.detached {
            for await failure in failures { say("failure \(failure.code)") }
        }
    }
    if let also = arguments.firstIndex(of: "--also").map({ arguments[$0 + 1] }) {
        do {
            let other = try PreferenceSuite(fileURL: URL(filePath: also))
            blocking.append(other)
            blocking.append(other.observe(.all) { say("also \($0.key) \($0.newValue.map { "\($0)" } ?? "-")") })
        } catch { fail("\(error)") }
    }
    if arguments.contains("--block") {
        blocking.append(suite.observe(.all, options: .synchronousExternalChanges) { _ in
            say("entered")
            DispatchSemaphore(value: 0).wait()
        })
        do {
            blocking.append(try SuiteDirectory(url: URL(filePath: arguments[1]).deletingLastPathComponent())
                .observeSuiteAdditions { say("added \($0)") })
        } catch { fail("\(error)") }
    }
    say("ready")
    while let command = readLine() {
        switch command {
        case "hold": TestingHooks.holdWatcher(true)
        case "release": TestingHooks.holdWatcher(false)
        case "write":
            suite.set(Int(DispatchTime.now().uptimeNanoseconds), forKey: "written")
            guard suite.synchronize() else { fail("synchronize failed") }
            // How many files this process keeps open in the suite's directory after the write. A
            // reader thread of this process that saw the write's event may have the suite file
            // open for a moment to confirm it: counted until none is open, within a second.
            let directory = URL(filePath: arguments[1]).deletingLastPathComponent().path
            func held() -> Int {
                let links = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
                return links.filter { link in
                    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + link)) ?? ""
                    return target == directory || target.hasPrefix(directory + "/")
                }.count
            }
            let until = ContinuousClock.now + .seconds(1)
            var count = held()
            while count > 0, ContinuousClock.now < until {
                usleep(1_000)
                count = held()
            }
            say("held \(count)")
        case "try-write":
            suite.set(Int(DispatchTime.now().uptimeNanoseconds), forKey: "written")
            say(suite.synchronize() ? "written" : "not written")
        case "watches": say("watches \(inotifyWatches())")
        case "dump": say("values " + suite.dictionaryRepresentation().sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))
        default: fail("unknown watch command \(command)")
        }
        say("ok \(command)")
    }
    withExtendedLifetime((token, blocking)) {}
default:
    fail("unknown command \(arguments[0])")
}
