import ArgumentParser
import Foundation
import SharedPrefs
#if Etcd
import SharedPrefsEtcd
#endif

/// A main process and two helper processes sharing one app-group suite, in one command.
@main
struct AppGroupDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "AppGroupDemo",
        abstract: "A main process and two helpers share settings through one SharedPrefs suite.",
        discussion: """
            Runs a scripted scenario and prints a timeline: who wrote what, who observed what, and \
            how many microseconds later. Watch the same run from another terminal with \
            prefs-watch --dir <container> (use --group-dir and --keep to choose and keep it).
            """)

    @Option(help: ArgumentHelp("The app-group container to use (default: a new temporary one).", valueName: "path"))
    var groupDir: String?

    @Flag(help: "Keep the temporary container afterwards.")
    var keep = false

    @Flag(help: "Skip the scenario: type set <key> <value>, get <key> or quit, and see what the helpers see.")
    var interactive = false

    @Option(help: "How many times each helper increments the shared counter.")
    var increments = 500

    @Option(help: ArgumentHelp("Share the suite through this etcd v3 cluster (client URLs, comma-separated) instead of a container; needs the Etcd trait: swift run --traits Etcd AppGroupDemo --etcd ….", valueName: "endpoints"))
    var etcd: String?

    @Option(help: ArgumentHelp("The suite's key prefix on the etcd cluster (default: a new one per run).", valueName: "prefix"))
    var prefix: String?

    @Option(help: .hidden) var role = "main"
    @Option(help: .hidden) var id = 0

    func validate() throws {
        guard ["main", "helper"].contains(role) else { throw ValidationError("--role is main or helper.") }
        guard increments >= 0 else { throw ValidationError("--increments takes a number of at least 0.") }
        #if !Etcd
        if etcd != nil { throw ValidationError("This AppGroupDemo was built without etcd support; run it with: swift run --traits Etcd AppGroupDemo --etcd \(etcd!)") }
        #endif
        if etcd != nil && groupDir != nil { throw ValidationError("Give --etcd or --group-dir, not both.") }
    }

    /// The shared suite: on the etcd cluster under `prefix`, else `settings` in the container's group.
    private func openSuite(container: URL, prefix: String) throws -> PreferenceSuite {
        #if Etcd
        if let etcd {
            let endpoints = etcd.split(separator: ",").map(String.init)
            return try PreferenceSuite(etcd: endpoints, prefix: prefix, options: EtcdOptions(offlineCache: .none))
        }
        #endif
        return try PreferenceSuite(suiteName: "settings", in: AppGroup(identifier: "group.sharedprefs.demo", containerURL: container))
    }

    func run() async throws {
        let container = groupDir.map { URL(filePath: $0, directoryHint: .isDirectory) }
            ?? FileManager.default.temporaryDirectory.appending(path: "AppGroupDemo-\(getpid())", directoryHint: .isDirectory)
        let prefix = prefix ?? "sharedprefs-demo/\(UUID().uuidString)/"
        let suite = try openSuite(container: container, prefix: prefix)
        if role == "helper" { return try await Helper.run(id: id, suite: suite) }
        signal(SIGPIPE, SIG_IGN)  // a helper that died is reported by the wait for it

        // A kept container holds the last run's values: a change to the same value changes
        // nothing, and nobody would hear it. The scenario starts from its defaults, the counter
        // from 0, so that what it prints is what the suite holds.
        let leftOver = try await suite.update { values in
            let old = values.values.keys.filter { $0.hasPrefix("demo.") || $0.hasPrefix("helper") }
            for key in old { values[key] = nil }
            return old.count
        }
        let removeContainer = groupDir == nil && !keep && etcd == nil
        defer { if removeContainer { try? FileManager.default.removeItem(at: container) } }
        let settings = DemoSettings(suite: suite)
        let events = EventLog()
        let executable = URL(filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let place = etcd.map { ["--etcd", $0, "--prefix", prefix] } ?? ["--group-dir", container.path]
        let helpers = try (1...2).map { try HelperProcess(id: $0, executable: executable, place: place, events: events) }
        var failed = true  // until the scenario says otherwise
        defer { for helper in helpers { helper.stop(now: failed) } }
        for helper in helpers { _ = try await events.first(after: 0) { $0.source == "helper \(helper.id)" && $0.words == ["ready"] } }

        print("AppGroupDemo: suite \(suite.fileURL?.path ?? "on etcd \(etcd ?? "") under \(prefix)")")
        print("  main process \(getpid()), helpers \(helpers.map { String($0.pid) }.joined(separator: " and "))")
        print("  watch it live: prefs-watch \(etcd.map { "--etcd \($0) \(prefix)" } ?? "--dir \(container.path)")")
        if leftOver > 0 { print("  the suite held \(leftOver) value(s) of an earlier run: they were removed, so the run starts from the defaults") }
        if interactive {
            failed = false  // the helpers are idle: they quit when told
            return try await Interactive.run(suite: suite, events: events)
        }

        var demo = Demo(settings: settings, suite: suite, helpers: helpers, events: events)
        do {
            try await demo.run(increments: increments)
        } catch {
            demo.failures.append("\(error)")
        }
        demo.summary()
        failed = !demo.failures.isEmpty
        if failed { throw ExitCode.failure }
    }
}

/// `--interactive`: set and get keys by hand while the helpers report what they see.
enum Interactive {
    static func run(suite: PreferenceSuite, events: EventLog) async throws {
        print("Type: set <key> <value> | get <key> | quit")
        let printer = Task {
            var next = events.count
            while !Task.isCancelled {
                let event = try await events.first(after: next, timeout: .seconds(3600)) { _ in true }
                next += 1
                switch event.words.first {
                case "saw" where event.words.count == 5:
                    let w = event.words
                    print("  \(event.source) saw \(w[1]): \(w[2] == "-" ? "(not set)" : w[2]) -> \(w[3] == "-" ? "(removed)" : w[3])")
                case "prefix" where event.words.count == 3:
                    print("  \(event.source)'s prefix observer (helper\(event.source.suffix(1)).) saw \(event.words[1])")
                default: break
                }
            }
        }
        defer { printer.cancel() }
        while let line = readLine() {
            let words = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch (words.first, words.count) {
            case ("set", 3):
                let value: PlistValue = Int64(words[2]).map(PlistValue.integer) ?? Double(words[2]).map(PlistValue.real) ?? .string(words[2])
                suite.set(value, forKey: words[1])
                try await suite.flush()
            case ("get", 2):
                print("  \(words[1]) = \(suite.value(forKey: words[1])?.description ?? "(not set)")")
            case ("quit", _):
                return
            default:
                print("  Type: set <key> <value> | get <key> | quit")
            }
        }
    }
}

/// `print`, then flushed: the timeline appears as it happens, also through a pipe (where the C
/// library would hold it until the buffer fills or the process exits).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    Swift.print(items.map { "\($0)" }.joined(separator: separator), terminator: terminator)
    fflush(nil)
}
