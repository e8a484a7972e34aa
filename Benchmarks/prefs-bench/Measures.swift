import Foundation
@_spi(Benchmarks) import SharedPrefs
import SharedPrefsLocking

/// The measurements, each adding its rows. Every ratio divides by a floor or peer measured in
/// the same blocks as the row, the blocks' order rotated, their first changes discarded as
/// warm-up. `quick` shrinks every count (a smoke run).
struct Measures {
    let directory: URL
    let quick: Bool
    /// Blocks of each interleaved measurement: 5 (2 with `--quick`) unless `--blocks` says.
    let blocks: Int
    var rows: [Row] = []

    init(directory: URL, quick: Bool, blocks: Int?) {
        (self.directory, self.quick) = (directory, quick)
        self.blocks = blocks ?? (quick ? 2 : 5)
    }

    /// The blocks a run has unless `--blocks` says: each block holds the run's changes ÷ these,
    /// whatever the blocks run.
    var defaultBlocks: Int { quick ? 2 : 5 }

    /// The changes of each block discarded first.
    var warmUp: Int { quick ? 2 : 5 }

    func scaled(_ count: Int) -> Int { quick ? max(5, count / 20) : count }

    func file(_ name: String) -> URL { directory.appending(path: name + ".plist") }

    /// Where the rows that make thousands of files and measure no latency (9, 15) make them: a
    /// directory in memory (`/dev/shm`) where there is one. On ext4 mounted with `discard`, such
    /// files freed make writing files slow for minutes: the rows and runs after would measure it.
    var scratch: URL {
        let shm = URL(filePath: "/dev/shm")
        guard access(shm.path, W_OK) == 0 else { return directory }
        return shm.appending(path: directory.lastPathComponent)
    }

    /// The 100-key suite of the latency, fan-out and contention rows, encoded (its floors replace
    /// a file of the same bytes).
    static let suiteBytes = [UInt8](PlistValue.dictionary(realisticValues(100)).propertyListData(format: .binary))

    /// A suite holding `values`, written.
    func makeSuite(_ name: String, _ values: PlistDictionary = realisticValues(100), durability: PreferenceSuite.Durability = .full) throws -> PreferenceSuite {
        let suite = try PreferenceSuite(fileURL: file(name), options: .init(durability: durability))
        for (key, value) in values.swiftDictionary { suite.set(value, forKey: key) }
        guard suite.synchronize() else { throw BenchError("could not write the suite \(file(name).path)") }
        return suite
    }

    /// Reads what a child prints up to `end`: `S <sent>` for each change it sent, `L <sent>
    /// <latency>` for each it saw, `cpu <ns>`. A child that says nothing for `timeout` seconds is
    /// killed.
    func read(_ child: Child, timeout: Double = 60) -> (sent: [Int64], arrivals: [Int64: Int64], cpu: Int64?) {
        var sent: [Int64] = [], arrivals: [Int64: Int64] = [:], cpu: Int64? = nil
        var ended = false
        while let line = child.nextLine(timeout: timeout) {
            if line == "end" { ended = true; break }
            let fields = line.split(separator: " ")
            switch (fields.first, fields.count) {
            case ("S", 2): if let time = Int64(fields[1]) { sent.append(time) }
            case ("L", 3): if let time = Int64(fields[1]), let latency = Int64(fields[2]) { arrivals[time] = time + latency }
            case ("cpu", 2): cpu = Int64(fields[1])
            default: break
            }
        }
        if ended { child.waitForExit() } else { child.stop() }
        return (sent, arrivals, cpu)
    }

    // MARK: Arms

    /// The kernel floor: `count` renames of a file made ahead into a watched directory, 2 ms
    /// apart; the observer process wakes on inotify. The send time is taken right before
    /// `renameat`: the new name, which carries it, is written into a buffer made ahead.
    func kernelFloorBlock(count: Int) throws -> Block {
        let dir = directory.appending(path: "floor")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let dirfd = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirfd >= 0 else { throw BenchError("could not open \(dir.path)") }
        defer { close(dirfd) }
        let observer = try Child(["floor", dir.path])
        try observer.ready()
        let payload = [UInt8](repeating: 1, count: 4096)
        var name = [CChar](repeating: 0, count: 32)
        var sent: [Int64] = []
        for _ in 0..<count {
            let prepared = openat(dirfd, ".prep", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            _ = payload.withUnsafeBytes { write(prepared, $0.baseAddress, $0.count) }
            close(prepared)
            let time = now()
            Self.floorName(time, into: &name)
            renameat(dirfd, ".prep", dirfd, name)
            sent.append(time)
            gap(2)
        }
        gap(50)  // the end comes well after the last change, never in the same read
        let done = openat(dirfd, ".prep", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        close(done)
        renameat(dirfd, ".prep", dirfd, "done")
        return Block(sent: sent, arrivals: [read(observer).arrivals])
    }

    /// Writes `f-<sent>` into `name`, NUL-terminated, without allocating.
    static func floorName(_ sent: Int64, into name: inout [CChar]) {
        var length = 1
        var rest = sent / 10
        while rest > 0 {
            length += 1
            rest /= 10
        }
        name[0] = 102  // f
        name[1] = 45  // -
        var digits = sent
        for i in stride(from: 1 + length, through: 2, by: -1) {
            name[i] = CChar(48 + digits % 10)
            digits /= 10
        }
        name[2 + length] = 0
    }

    /// How a replace floor replaces the file.
    enum Replace {
        /// A file made before the send time is taken is renamed over the old one, which is held
        /// open until then, so that the rename frees nothing: neither the allocation of an inode
        /// nor its freeing is timed (the design SharedPrefs had until Core II).
        case held
        /// Each change opens the directory and the lock file, creates a new file (`O_EXCL`),
        /// writes the suite's bytes, renames it over the old one (freeing it) and closes
        /// everything: the least a design that holds nothing between writes can do.
        case heldNothing
    }

    /// A replace floor with nothing of this library in it: `count` replaces of a file holding the
    /// 100-key suite's bytes (the send time in its first 8 bytes), `gapMs` apart; each observer
    /// process wakes on inotify, opens and reads the file.
    /// - Parameters:
    ///   - hop: Each observer hands the arrival over to another thread (`DispatchQueue.async`),
    ///     as a library does that runs its users' handlers off the thread that reads the events.
    ///   - writerHandsOver: The replace runs on another thread, under an `flock` of a lock file,
    ///     after a `DispatchQueue.async` from the thread that takes the send time: as a library
    ///     does whose `set` returns before any I/O, and that merges writes under a lock.
    func replaceBlock(_ replace: Replace, observers: Int, hop: Bool, writerHandsOver: Bool, count: Int, gapMs: Double) throws -> Block {
        let path = directory.appending(path: "replace").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirfd >= 0 else { throw BenchError("could not open \(path)") }
        defer { close(dirfd) }
        let write = Self.writeSuiteBytes
        let first = openat(dirfd, "s", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        write(first, 0)
        close(first)
        let children = try (0..<observers).map { _ in try Child(["replace-floor", path] + (hop ? ["hop"] : [])) }
        for child in children { try child.ready() }
        let heldLock = openat(dirfd, ".lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(heldLock) }
        let writer = DispatchQueue(label: "writer")
        nonisolated(unsafe) var replaced: CInt = -1
        let replaceOnce: @Sendable (Int64, CInt) -> Void = { sent, prepared in
            switch replace {
            case .held:
                if writerHandsOver { flock(heldLock, LOCK_EX) }
                write(prepared, sent)
                renameat(dirfd, ".tmp", dirfd, "s")
                replaced = prepared
                if writerHandsOver { flock(heldLock, LOCK_UN) }
            case .heldNothing:
                let dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                let lock = openat(dir, ".lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
                if writerHandsOver { flock(lock, LOCK_EX) }
                let temporary = ".tmp-\(sent)"
                let file = openat(dir, temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                write(file, sent)
                close(file)
                renameat(dir, temporary, dir, "s")
                if writerHandsOver { flock(lock, LOCK_UN) }
                close(lock)
                close(dir)
            }
        }
        var sent: [Int64] = []
        for _ in 0..<count {
            writer.sync {}  // the write before is done (it ended `gapMs` ago)
            if replaced >= 0 { close(replaced) }
            replaced = -1
            let prepared = replace == .held ? openat(dirfd, ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) : -1
            let time = now()
            if writerHandsOver {
                writer.async { replaceOnce(time, prepared) }
            } else {
                replaceOnce(time, prepared)
            }
            sent.append(time)
            gap(gapMs)
        }
        writer.sync {}
        if replaced >= 0 { close(replaced) }
        gap(50)  // the end comes well after the last change, never in the same read
        let last = openat(dirfd, ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        write(last, -1)
        close(last)
        renameat(dirfd, ".tmp", dirfd, "s")
        return Block(sent: sent, arrivals: children.map { read($0).arrivals })
    }

    /// Writes the 100-key suite's bytes to `fd`, the send time in their first 8.
    @Sendable static func writeSuiteBytes(_ fd: CInt, _ sent: Int64) {
        var bytes = suiteBytes
        withUnsafeBytes(of: sent) { bytes.replaceSubrange(0..<8, with: $0) }
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// Sets `key` of `suite` to the send time `count` times, `gapMs` apart, then "done"; each
    /// observer process takes the change's arrival in its handler. `onWatcherThread`: the observers use
    /// `ObservationOptions.synchronousExternalChanges`. `realistic`: the value is a string that
    /// begins with the send time and whose length changes (by 0 to 15 characters) each time, so
    /// that what follows it in the file moves.
    /// Returns the CPU time each observer used meanwhile too.
    /// `ready` is given the observers once all are ready, before the first change.
    func libraryBlock(
        _ suite: PreferenceSuite, key: String = "stamp", observers: Int = 1, count: Int, gapMs: Double = 2, onWatcherThread: Bool = false, realistic: Bool = false,
        environment: [String: String]? = nil, ready: ([Child]) -> Void = { _ in }
    ) throws -> (block: Block, cpu: [Int64]) {
        let children = try (0..<observers).map { _ in try Child(["observe", suite.fileURL!.path, key] + (onWatcherThread ? ["watcher-thread"] : []), environment: environment) }
        for child in children { try child.ready() }
        ready(children)
        var sent: [Int64] = []
        for i in 0..<count {
            _Stages.mark("S")
            let time = now()
            if realistic {
                suite.set("\(time) " + String(repeating: "x", count: i % 16), forKey: key)
            } else {
                suite.set(time, forKey: key)
            }
            sent.append(time)
            gap(gapMs)
        }
        gap(50)  // the end comes well after the last change, never in the same read
        suite.set(now(), forKey: "done")  // a new value each time: a suite is measured in several blocks
        let observed = children.map { read($0) }
        return (Block(sent: sent, arrivals: observed.map(\.arrivals)), observed.compactMap(\.cpu))
    }

    // MARK: 2. A loop of sets

    mutating func setLoop() throws {
        let count = quick ? 10_000 : 100_000
        let suite = try makeSuite("setloop")
        let writesBefore = suite.statistics.fileWrites
        let watcher = try Child(["visible", suite.fileURL!.path, String(count - 1)])
        try watcher.ready()
        let start = now()
        for i in 0..<count { suite.set(i, forKey: "n") }
        let end = now()
        let seen = watcher.nextLine().flatMap { Int64($0.split(separator: " ").last ?? "") } ?? end
        watcher.waitForExit()
        suite.synchronize()
        let writes = suite.statistics.fileWrites - writesBefore
        let rate = Double(count) / (Double(end - start) / 1e9)
        rows.append(Row(
            id: "2.set-loop", group: "2. set loop", name: "\(count) sets of one key in a 100-key suite, .full", n: count,
            throughput: Quantity(value: rate.rounded(), unit: "sets/s"),
            note: "\(writes) file writes; last value visible in another process \(ms(seen - end)) after the loop; target ≥ 2 M/s, ≤ 1,000 writes",
            cost: 1 / rate))
    }

    // MARK: 3. Cross-process latency, with its floors

    /// Row 3 and its three floors, interleaved: the kernel floor, the atomic replace under a lock
    /// with a thread hop on each side of a file made ahead (held) and of one made in each write
    /// (held nothing), then each library variant.
    mutating func remoteLatency() throws {
        // A peer that notices nothing, measured with the default blocks only (not in `--ab`'s runs).
        defer { if blocks == defaultBlocks { try? foundationAcrossProcesses() } }
        let variants: [(durability: PreferenceSuite.Durability, onWatcherThread: Bool)] = [(.none, false), (.none, true), (.full, false)]
        let suites = try variants.map { try makeSuite("latency-\($0.durability)\($0.onWatcherThread ? "-watcher" : "")", durability: $0.durability) }
        let perBlock = scaled(500) / defaultBlocks
        var tallies = Array(repeating: Tally(), count: 3 + variants.count)
        try interleave(arms: tallies.count, blocks: blocks) { arm in
            let count = warmUp + perBlock
            let block: Block
            switch arm {
            case 0: block = try kernelFloorBlock(count: count)
            case 1: block = try replaceBlock(.held, observers: 1, hop: true, writerHandsOver: true, count: count, gapMs: 2)
            case 2: block = try replaceBlock(.heldNothing, observers: 1, hop: true, writerHandsOver: true, count: count, gapMs: 2)
            default: block = try libraryBlock(suites[arm - 3], count: count, onWatcherThread: variants[arm - 3].onWatcherThread).block
            }
            tallies[arm].add(block, warmUp: warmUp)
        }
        let floor = Latencies(tallies[0].latencies).p50
        let held = Latencies(tallies[1].latencies).p50
        let heldNothing = Latencies(tallies[2].latencies).p50
        let group = "3. set → remote observer"
        let interleaving = "\(blocks) blocks of \(perBlock) after \(warmUp) of warm-up, rotated"
        rows.append(Row(id: "3.floor.kernel", group: group, name: "floor: rename → inotify read in another process", tally: tallies[0], note: "no decoding, no diff: the least any file-based design can do; \(interleaving) with the rows below"))
        let lockAndHops = "under flock, after a DispatchQueue.async from the thread that takes the send time (a set that returns before any I/O); the observer opens and reads the file, then hands over to another thread (DispatchQueue.async, where handlers run)"
        rows.append(Row(
            id: "3.floor.held", group: group, name: "floor: atomic replace of a file made ahead, held open (the held design's floor), a lock and a thread hop on each side",
            tally: tallies[1], note: "write the suite's bytes into a file made ahead, rename it over the old one, which is held open so the rename frees nothing; " + lockAndHops,
            ratio: ratio(held, floor), ratioTo: "the kernel floor"))
        rows.append(Row(
            id: "3.floor.held-nothing", group: group, name: "floor: atomic replace holding nothing (create, write, rename, close), a lock and a thread hop on each side",
            tally: tallies[2], note: "open the directory and the lock file, create a new file (O_EXCL), write the suite's bytes, rename it over the old one (freeing it), close everything; " + lockAndHops
                + String(format: "; the price of holding nothing: %.2f× the held floor", Double(heldNothing) / Double(max(1, held))),
            ratio: ratio(heldNothing, floor), ratioTo: "the kernel floor"))
        for (i, variant) in variants.enumerated() {
            let tally = tallies[3 + i]
            let measured = Latencies(tally.latencies)
            var row = Row(
                id: "3.\(variant.durability)\(variant.onWatcherThread ? ".watcher" : "")", group: group,
                name: "100-key suite, durability .\(variant.durability)" + (variant.onWatcherThread ? ", handler on the watcher thread (.synchronousExternalChanges)" : ""),
                tally: tally,
                note: String(format: "%.2f× the held floor, %.2f× the held-nothing floor", Double(measured.p50) / Double(max(1, held)), Double(measured.p50) / Double(max(1, heldNothing)))
                    + (variant.durability == .none ? "; target p50 ≤ 3× the kernel floor (\(µs(3 * floor))), p99 ≤ 10× (\(µs(10 * floor)))" : ""),
                ratio: ratio(measured.p50, floor), ratioTo: "the kernel floor")
            row.detail = ["heldFloorRatio": Double(measured.p50) / Double(max(1, held)), "heldNothingFloorRatio": Double(measured.p50) / Double(max(1, heldNothing))]
            if i == 0 {
                row.targets = [
                    Target(what: Target.all[0], figure: Double(measured.p50) / Double(max(1, floor)), bound: 3, atMost: true),
                    Target(what: Target.all[1], figure: Double(measured.p99) / Double(max(1, floor)), bound: 10, atMost: true),
                ]
            }
            rows.append(row)
        }
    }

    /// Foundation's `UserDefaults` on Linux as a cross-process peer: another process writes (and
    /// synchronizes) a suite; does this one notice, by notification or by reading again?
    mutating func foundationAcrossProcesses() throws {
        let count = 20
        let suiteName = "sharedprefs-bench-cross-\(getpid())"
        let defaults = UserDefaults(suiteName: suiteName)!
        defaults.set("initial", forKey: "stamp")
        defaults.synchronize()
        defer { defaults.removePersistentDomain(forName: suiteName) }
        let observer = try Child(["defaults-observe", suiteName, String(count)])
        try observer.ready()
        for i in 0..<count {
            defaults.set("value \(i)", forKey: "stamp")
            defaults.synchronize()
            gap(50)
        }
        let fields = observer.nextLine(timeout: 30)?.split(separator: " ").compactMap { Int($0) } ?? []
        observer.waitForExit()
        guard fields.count == 2 else { throw BenchError("the UserDefaults observer printed no count") }
        rows.append(Row(
            id: "3.userdefaults", group: "3. set → remote observer", name: "Foundation UserDefaults, set + synchronize → another process", n: count,
            note: "\(fields[0]) of \(count) didChangeNotifications arrived, and polling string(forKey:) every ms for 2 s more saw \(fields[1]) of \(count) new values: it does not notice other processes"))
    }

    // MARK: 4. The fsync pair

    /// What `.full` durability adds to a write at least: `fsync` of a written file and of its
    /// directory, here, now.
    mutating func fsyncPair() throws {
        let dir = directory.appending(path: "fsync")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let dirfd = open(dir.path, O_RDONLY | O_DIRECTORY)
        defer { close(dirfd) }
        var samples: [Int64] = []
        for i in 0..<scaled(200) {
            let fd = open(dir.appending(path: "f\(i % 2)").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = Self.suiteBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let start = now()
            fsync(fd)
            fsync(dirfd)
            samples.append(now() - start)
            close(fd)
        }
        let measured = Latencies(samples)
        rows.append(Row(
            id: "4.fsync-pair", group: "4. kernel floor", name: "fsync of the 100-key suite's \(Self.suiteBytes.count) bytes and its directory", n: measured.count,
            p50: µs(measured.p50), p99: µs(measured.p99), note: "what .full adds to a write at least", cdf: measured.cdf, cost: Double(measured.p50)))
    }

    // MARK: 6. Scale

    /// A realistic one-key change (a string whose length changes) of a key in the middle of the
    /// file, in suites of 10 to 100,000 keys, the sizes alternating from block to block, 20 ms
    /// between changes at every size: every entry after the changed one moves.
    mutating func scale() throws {
        let sizes = quick ? [10, 1000] : [10, 1000, 10_000, 100_000]
        var suites: [(suite: PreferenceSuite, key: String)] = []
        for keys in sizes {
            var values = PlistDictionary()
            for i in 0..<keys { values["key.\(i)"] = .string("value \(i)") }
            let suite = try makeSuite("scale-\(keys)", values, durability: .none)
            let order = try _BenchmarkHooks.keysInFileOrder([UInt8](Data(contentsOf: suite.fileURL!)))
            suites.append((suite, order[order.count / 2]))
        }
        var tallies = Array(repeating: Tally(), count: sizes.count)
        let perBlock = (quick ? 10 : 200) / defaultBlocks
        try interleave(arms: sizes.count, blocks: blocks) { arm in
            let count = warmUp + (sizes[arm] >= 100_000 ? perBlock / 2 : perBlock)
            tallies[arm].add(try libraryBlock(suites[arm].suite, key: suites[arm].key, count: count, gapMs: 20, realistic: true).block, warmUp: warmUp)
        }
        let smallest = Latencies(tallies[0].latencies).p50
        for (i, keys) in sizes.enumerated() {
            let bytes = try [UInt8](Data(contentsOf: suites[i].suite.fileURL!))
            let order = try _BenchmarkHooks.keysInFileOrder(bytes)
            let after = order.count - 1 - (order.firstIndex(of: suites[i].key) ?? order.count - 1)
            let p50 = Latencies(tallies[i].latencies).p50
            var row = Row(
                id: "6.scale-\(keys)", group: "6. scale", name: "one-key change in the middle (a string whose length changes) of a \(keys)-key suite → remote observer",
                tally: tallies[i], note: "a \(bytes.count < 10_240 ? "\(bytes.count)-byte" : "\(bytes.count / 1024) KiB") file; \(after) of its \(order.count) entries after the changed one",
                unit: ms)
            row.detail = ["entriesAfter": Double(after)]
            if keys == 10_000 {
                row.ratio = ratio(p50, smallest)
                row.ratioTo = "the same at 10 keys"
                row.targets = [Target(what: Target.all[5], figure: Double(p50) / Double(max(1, smallest)), bound: 2, atMost: true)]
            }
            if keys == 100_000 { row.targets = [Target(what: Target.all[6], figure: Double(p50) / 1e6, bound: 2, atMost: true)] }
            rows.append(row)
        }
    }

    // MARK: 7. Fan-out

    /// One writer, `observers` observer processes; each change counts at its slowest observer.
    /// Interleaved: the held replace floor read by as many processes, without and with a thread
    /// hop in each, then the library with its handlers on a queue and on the watcher thread.
    mutating func fanOut() throws {
        let observers = quick ? 4 : 16
        let suites = try [false, true].map { try makeSuite("fanout\($0 ? "-watcher" : "")", durability: .none) }
        var tallies = Array(repeating: Tally(), count: 4)
        var cpu = Array(repeating: [Int64](), count: 4)
        let perBlock = scaled(300) / defaultBlocks
        try interleave(arms: 4, blocks: blocks) { arm in
            let count = warmUp + perBlock
            switch arm {
            case 0, 1: tallies[arm].add(try replaceBlock(.held, observers: observers, hop: arm == 1, writerHandsOver: false, count: count, gapMs: 4), warmUp: warmUp)
            default:
                let (block, used) = try libraryBlock(suites[arm - 2], observers: observers, count: count, gapMs: 4, onWatcherThread: arm == 3)
                tallies[arm].add(block, warmUp: warmUp)
                cpu[arm] += used.map { $0 / Int64(count) }
            }
        }
        let floorP99 = Latencies(tallies[0].latencies).p99
        let hopP99 = Latencies(tallies[1].latencies).p99
        let group = "7. fan-out"
        rows.append(Row(id: "7.floor.held", group: group, name: "floor: atomic replace → inotify + read, slowest of \(observers) observer processes", tally: tallies[0], note: "the held floor of (3), read by as many processes"))
        rows.append(Row(id: "7.floor.held.hop", group: group, name: "floor: the same, then one thread hop in each observer", tally: tallies[1], note: "as a library does that runs its users' handlers off the thread that reads the events"))
        for arm in 2...3 {
            let measured = Latencies(tallies[arm].latencies)
            var row = Row(
                id: arm == 2 ? "7.library" : "7.library.watcher", group: group,
                name: "\(observers) observer processes, slowest of each change" + (arm == 3 ? ", handlers on the watcher thread (.synchronousExternalChanges)" : ""),
                tally: tallies[arm],
                note: String(format: "p99 %.2f× the floor with one thread hop in each", Double(measured.p99) / Double(max(1, hopP99)))
                    + "; CPU per change per observer \(µs(cpu[arm].isEmpty ? 0 : cpu[arm].reduce(0, +) / Int64(cpu[arm].count)))",
                ratio: ratio(measured.p99, floorP99), ratioTo: "the floor's p99")
            if arm == 2 {
                row.targets = [Target(what: Target.all[3], figure: Double(measured.p99) / Double(max(1, floorP99)), bound: 1.5, atMost: true)]
            }
            rows.append(row)
        }
    }
}
