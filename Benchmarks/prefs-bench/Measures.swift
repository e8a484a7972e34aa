import Foundation
import SharedPrefs
import SharedPrefsLocking
#if Etcd
import SharedPrefsEtcd
#endif

/// The measurements, each returning its rows. `quick` shrinks every count (a smoke run).
struct Measures {
    let directory: URL
    let quick: Bool
    var rows: [Row] = []
    var floorP50: Int64 = 0
    var fullP50: Int64 = 0
    var fsyncPairP50: Int64 = 0
    /// The floor of an atomic replace, read by one observer (p50; and with a lock and a thread hop
    /// on each side) and by 16 (p99; and with one thread hop in each), and how many replaces one
    /// process makes per second without and with the fsync pair.
    var replace = (p50: Int64(0), handedOverP50: Int64(0), fanOutP99: Int64(0), fanOutHopP99: Int64(0), rate: 0.0, fullRate: 0.0)

    func scaled(_ count: Int) -> Int { quick ? max(5, count / 20) : count }

    func file(_ name: String) -> URL { directory.appending(path: name + ".plist") }

    /// A suite of `keys` string values ("key.0" …), flushed.
    func makeSuite(_ name: String, keys: Int, durability: PreferenceSuite.Durability = .full) throws -> PreferenceSuite {
        let suite = try PreferenceSuite(fileURL: file(name), options: .init(durability: durability))
        for i in 0..<keys { suite.set("value \(i)", forKey: "key.\(i)") }
        guard suite.synchronize() else { throw CocoaError(.fileWriteUnknown) }
        return suite
    }

    /// Reads the `L <sent> <latency>` lines a child prints, up to `end`.
    func latencies(from child: Child) -> [(sent: Int64, latency: Int64)] {
        var pairs: [(Int64, Int64)] = []
        var cpu: Int64?
        while let line = child.nextLine(), line != "end" {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[0] == "L", let a = Int64(fields[1]), let b = Int64(fields[2]) { pairs.append((a, b)) }
            if fields.count == 2, fields[0] == "cpu" { cpu = Int64(fields[1]) }
        }
        child.waitForExit()
        if let cpu, !pairs.isEmpty { observerCPU.withLock { $0.append(cpu / Int64(pairs.count)) } }
        return pairs
    }

    /// The CPU time per change of each observer process read by ``latencies(from:)`` since the
    /// last ``takeObserverCPU()``.
    let observerCPU = Lock<[Int64]>([])

    /// The mean of ``observerCPU`` (ns), emptied.
    func takeObserverCPU() -> Int64 {
        observerCPU.withLock { all in
            defer { all = [] }
            return all.isEmpty ? 0 : all.reduce(0, +) / Int64(all.count)
        }
    }

    /// Sets "stamp" to the send time `count` times, `gapMs` apart, then "done"; returns the
    /// observers' latencies. `onWatcherThread`: the observers use
    /// `ObservationOptions.synchronousExternalChanges`. `realistic`: the value is a string that
    /// begins with the send time and whose length changes (by 0 to 15 characters) each time, so
    /// that what follows it in the file moves.
    func remoteLatencies(_ suite: PreferenceSuite, observers: Int = 1, count: Int, gapMs: Double = 2, onWatcherThread: Bool = false, realistic: Bool = false) throws -> [[(sent: Int64, latency: Int64)]] {
        let children = try (0..<observers).map { _ in try Child(["observe", suite.fileURL!.path] + (onWatcherThread ? ["watcher-thread"] : [])) }
        for child in children { guard child.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) } }
        for i in 0..<count {
            _Stages.mark("S")
            if realistic {
                suite.set("\(now()) " + String(repeating: "x", count: i % 16), forKey: "stamp")
            } else {
                suite.set(now(), forKey: "stamp")
            }
            gap(gapMs)
        }
        suite.set(now(), forKey: "done")  // a new value each time: a suite may be measured in several blocks
        return children.map(latencies(from:))
    }

    /// For each change that every observer saw, the latency of the slowest of them.
    func slowestOfEach(_ observers: [[(sent: Int64, latency: Int64)]]) -> [Int64] {
        var slowest: [Int64: (count: Int, latency: Int64)] = [:]
        for observer in observers {
            for (sent, latency) in observer {
                let seen = slowest[sent, default: (0, 0)]
                slowest[sent] = (seen.count + 1, max(seen.latency, latency))
            }
        }
        return slowest.values.filter { $0.count == observers.count }.map(\.latency)
    }

    // MARK: 2. A loop of sets

    mutating func setLoop() throws {
        let count = quick ? 10_000 : 100_000
        let suite = try makeSuite("setloop", keys: 100)
        let writesBefore = suite.statistics.fileWrites
        let watcher = try Child(["visible", suite.fileURL!.path, String(count - 1)])
        guard watcher.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) }
        let start = now()
        for i in 0..<count { suite.set(i, forKey: "n") }
        let end = now()
        let seen = watcher.nextLine().flatMap { Int64($0.split(separator: " ").last ?? "") } ?? end
        watcher.waitForExit()
        suite.synchronize()
        let writes = suite.statistics.fileWrites - writesBefore
        let rate = Double(count) / (Double(end - start) / 1e9)
        rows.append(Row(group: "2. set loop", name: "\(count) sets of one key, .full", n: count, throughput: Quantity(value: rate.rounded(), unit: "sets/s"), note: "\(writes) file writes; last value visible in another process \(ms(seen - end)) after the loop; target ≥ 2 M/s, ≤ 1,000 writes"))
    }

    // MARK: 3 and 4. Cross-process latency and the kernel floor

    mutating func kernelFloor() throws {
        let count = scaled(500)
        let measured = Latencies(try kernelFloorSamples(count: count))
        floorP50 = measured.p50
        rows.append(Row(
            group: "4. kernel floor", name: "rename → inotify read in another process", n: measured.count, sent: count, p50: µs(floorP50), p99: µs(measured.p99),
            note: "no decoding, no diff: the least any file-based design can do", cdf: measured.cdf))
    }

    /// `count` renames of a file made ahead into a watched directory, 2 ms apart; the observer
    /// process's latencies. The send time is taken right before `renameat`: the new name, which
    /// carries it, is written into a buffer made ahead.
    func kernelFloorSamples(count: Int) throws -> [Int64] {
        let dir = directory.appending(path: "floor")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let dirfd = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirfd >= 0 else { throw CocoaError(.fileReadUnknown) }
        defer { close(dirfd) }
        let observer = try Child(["floor", dir.path])
        guard observer.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) }
        let payload = [UInt8](repeating: 1, count: 4096)
        var name = [CChar](repeating: 0, count: 32)
        for _ in 0..<count {
            let prepared = openat(dirfd, ".prep", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            _ = payload.withUnsafeBytes { write(prepared, $0.baseAddress, $0.count) }
            close(prepared)
            let sent = now()
            Self.floorName(sent, into: &name)
            renameat(dirfd, ".prep", dirfd, name)
            gap(2)
        }
        let done = openat(dirfd, ".prep", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        close(done)
        renameat(dirfd, ".prep", dirfd, "done")
        return latencies(from: observer).map(\.latency)
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

    /// Row 3 and its floors, interleaved: in each of five blocks (one with `--quick`), the
    /// kernel floor, the atomic replace under a lock with a thread hop on each side (the row's
    /// work minus the library), then each library variant; every ratio divides by floors taken in
    /// the same minutes, never by one sampled once per run.
    mutating func remoteLatency() throws {
        defer { try? foundationAcrossProcesses() }
        let blocks = quick ? 1 : 5
        let perBlock = scaled(500) / blocks
        let variants: [(durability: PreferenceSuite.Durability, onWatcherThread: Bool)] = [(.none, false), (.none, true), (.full, false)]
        let suites = try variants.map { try makeSuite("latency-\($0.durability)\($0.onWatcherThread ? "-watcher" : "")", keys: 100, durability: $0.durability) }
        var floor: [Int64] = [], lockAndHops: [Int64] = []
        var library = Array(repeating: [Int64](), count: variants.count)
        for _ in 0..<blocks {
            floor += try kernelFloorSamples(count: perBlock)
            lockAndHops += try replaceSamples(observers: 1, hop: true, writerHandsOver: true, count: perBlock, gapMs: 2)
            for (i, variant) in variants.enumerated() {
                library[i] += try remoteLatencies(suites[i], count: perBlock, onWatcherThread: variant.onWatcherThread)[0].map(\.latency)
            }
        }
        let sent = blocks * perBlock
        let (floorMeasured, replaceMeasured) = (Latencies(floor), Latencies(lockAndHops))
        replace.handedOverP50 = replaceMeasured.p50
        let floorP50 = floorMeasured.p50
        rows.append(Row(
            group: "3. set → remote observer", name: "floor: rename → inotify read in another process, interleaved with the rows below",
            n: floorMeasured.count, sent: sent, p50: µs(floorP50), p99: µs(floorMeasured.p99),
            note: "the kernel floor, in \(blocks) blocks between theirs" + Row.loss(floorMeasured.count, of: sent), cdf: floorMeasured.cdf))
        rows.append(Row(
            group: "3. set → remote observer", name: "floor: atomic replace under a lock, a thread hop on each side, interleaved",
            n: replaceMeasured.count, sent: sent, p50: µs(replaceMeasured.p50), p99: µs(replaceMeasured.p99),
            ratio: ratio(replaceMeasured.p50, floorP50), ratioTo: "the interleaved kernel floor",
            note: "the row's work minus the library: " + Self.replaceFloorNote(hop: true, writerHandsOver: true) + Row.loss(replaceMeasured.count, of: sent),
            cdf: replaceMeasured.cdf))
        for (i, variant) in variants.enumerated() {
            let measured = Latencies(library[i])
            if variant.durability == .full { fullP50 = measured.p50 }
            var row = Row(
                group: "3. set → remote observer",
                name: "100-key suite, durability .\(variant.durability)" + (variant.onWatcherThread ? ", handler on the watcher thread (.synchronousExternalChanges)" : ""),
                n: measured.count, sent: sent, p50: µs(measured.p50), p99: µs(measured.p99),
                ratio: ratio(measured.p50, floorP50), ratioTo: "the interleaved kernel floor",
                cdf: measured.cdf)
            row.note = String(format: "%.1f× the interleaved replace floor with a lock and a hop on each side", Double(measured.p50) / Double(max(1, replaceMeasured.p50)))
                + (variant.durability == .none ? "; target p50 ≤ 3× floor (\(µs(3 * floorP50))), p99 ≤ 10× floor (\(µs(10 * floorP50)))" : "")
                + row.lossText
            if i == 0 {
                row.targets = [
                    Target(what: Target.all[0], figure: Double(measured.p50) / Double(max(1, floorP50)), bound: 3, atMost: true),
                    Target(what: Target.all[1], figure: Double(measured.p99) / Double(max(1, floorP50)), bound: 10, atMost: true),
                ]
            }
            rows.append(row)
        }
    }

    /// What `.full` durability adds to a write at least: `fsync` of a written file and of its
    /// directory, here, now.
    mutating func fsyncPair() throws {
        let dir = directory.appending(path: "fsync")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let dirfd = open(dir.path, O_RDONLY | O_DIRECTORY)
        defer { close(dirfd) }
        let payload = [UInt8](repeating: 1, count: 2_600)  // a 100-key suite
        var samples: [Int64] = []
        for i in 0..<scaled(200) {
            let fd = open(dir.appending(path: "f\(i % 2)").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let start = now()
            fsync(fd)
            fsync(dirfd)
            samples.append(now() - start)
            close(fd)
        }
        let measured = Latencies(samples)
        fsyncPairP50 = measured.p50
        rows.append(Row(group: "4. kernel floor", name: "fsync of a 2.6 KB file and its directory", n: measured.count, p50: µs(measured.p50), p99: µs(measured.p99), note: "what .full adds to a write at least", cdf: measured.cdf))
    }

    /// Replaces `s` in the directory `dirfd` the way any atomic-replace design must at least: a
    /// 2.6 KB file (the send time in its first 8 bytes) renamed over it; the fsync pair too when
    /// `durable`. The file is `prepared` (made before the send time was taken) or made now, and
    /// is closed now, or returned open when `keepingOpen`.
    @discardableResult
    func replaceFile(in dirfd: CInt, sent: Int64, durable: Bool = false, prepared: CInt? = nil, keepingOpen: Bool = false) -> CInt {
        var payload = [UInt8](repeating: 1, count: 2_600)
        withUnsafeBytes(of: sent) { payload.replaceSubrange(0..<8, with: $0) }
        let fd = prepared ?? openat(dirfd, ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        _ = payload.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if durable { fsync(fd) }
        if !keepingOpen { close(fd) }
        renameat(dirfd, ".tmp", dirfd, "s")
        if durable { fsync(dirfd) }
        return keepingOpen ? fd : -1
    }

    /// The directory of the atomic-replace floor, created and opened.
    func openReplaceDirectory() throws -> CInt {
        let dir = directory.appending(path: "replace")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let fd = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CocoaError(.fileReadUnknown) }
        return fd
    }

    /// The floor of an atomic replace, with nothing of this library in it: `replaceFile`, then
    /// each observer process wakes on inotify, opens and reads the file. Measured right before
    /// the row it bounds: this machine's noise drifts within minutes. The file is made before the
    /// send time is taken, and the file it replaces is held open until then, so that the rename
    /// does not free it: neither the allocation of an inode nor its freeing is on the timed path.
    /// (SharedPrefs did so until Core II; it now makes the file and lets the old one go within
    /// each write, so this floor leaves out costs the library has: see BENCHMARKS.md, "Core II".)
    /// - Parameters:
    ///   - hop: Each observer hands the arrival over to another thread (`DispatchQueue.async`),
    ///     as a library does that runs its users' handlers off the thread that reads the events.
    ///   - writerHandsOver: The replace runs on another thread, under an `flock` of a lock file
    ///     held open, after a `DispatchQueue.async` from the thread that takes the send time: as
    ///     a library does whose `set` returns before any I/O, and that merges writes under a lock.
    mutating func replaceLatency(observers: Int, hop: Bool = false, writerHandsOver: Bool = false, count: Int, gapMs: Double) throws {
        _ = takeObserverCPU()
        let measured = Latencies(try replaceSamples(observers: observers, hop: hop, writerHandsOver: writerHandsOver, count: count, gapMs: gapMs))
        switch (observers, hop) {
        case (1, false): replace.p50 = measured.p50
        case (1, true): replace.handedOverP50 = measured.p50
        case (_, false): replace.fanOutP99 = measured.p99
        case (_, true): replace.fanOutHopP99 = measured.p99
        }
        let cpu = takeObserverCPU()
        let fanOut = observers > 1
        rows.append(Row(
            group: "4. kernel floor",
            name: (observers == 1 ? "atomic replace → inotify + read in another process" : "atomic replace → inotify + read, slowest of \(observers) observer processes")
                + (writerHandsOver ? ", under a lock, with a thread hop before the replace and after the read" : hop ? ", then one thread hop" : ""),
            n: measured.count, sent: count, p50: µs(measured.p50), p99: µs(measured.p99), ratio: ratio(fanOut ? measured.p99 : measured.p50, floorP50), ratioTo: fanOut ? "the kernel floor (p99)" : "the kernel floor",
            note: Self.replaceFloorNote(hop: hop, writerHandsOver: writerHandsOver)
                + (fanOut ? ", measured right before (7); CPU per change per observer \(µs(cpu))" : ""),
            cdf: measured.cdf))
    }

    /// What a replace floor row measures, for its note.
    static func replaceFloorNote(hop: Bool, writerHandsOver: Bool) -> String {
        "write a file made ahead, rename it over the old (held open, so not freed by the rename); the observer opens and reads it: the least an atomic-replace design can do"
            + (writerHandsOver ? "; the replace runs on another thread (DispatchQueue.async), under flock, as a library does whose set returns before any I/O and that merges writes under a lock" : "")
            + (hop ? "; then hands over to another thread (DispatchQueue.async), as a library does that runs its users' handlers off the thread that reads the events" : "")
    }

    /// The replace floor's latencies: for each change every observer saw, the slowest's.
    func replaceSamples(observers: Int, hop: Bool = false, writerHandsOver: Bool = false, count: Int, gapMs: Double) throws -> [Int64] {
        let dirfd = try openReplaceDirectory()
        defer { close(dirfd) }
        replaceFile(in: dirfd, sent: 0)
        let children = try (0..<observers).map { _ in try Child(["replace-floor", directory.appending(path: "replace").path] + (hop ? ["hop"] : [])) }
        for child in children { guard child.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) } }
        let lock = openat(dirfd, ".lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(lock) }
        let writer = DispatchQueue(label: "writer")
        nonisolated(unsafe) var replaced: CInt = -1
        let bench = self
        let replaceOnce: @Sendable (Int64, CInt) -> Void = { sent, prepared in
            if writerHandsOver { flock(lock, LOCK_EX) }
            replaced = bench.replaceFile(in: dirfd, sent: sent, prepared: prepared, keepingOpen: true)
            if writerHandsOver { flock(lock, LOCK_UN) }
        }
        for _ in 0..<count {
            writer.sync {}  // the write before is done (it ended 2 ms ago)
            if replaced >= 0 { close(replaced) }
            let prepared = openat(dirfd, ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            if writerHandsOver {
                let sent = now()
                writer.async { replaceOnce(sent, prepared) }
            } else {
                replaceOnce(now(), prepared)
            }
            gap(gapMs)
        }
        writer.sync {}
        if replaced >= 0 { close(replaced) }
        replaceFile(in: dirfd, sent: -1)
        return slowestOfEach(children.map(latencies(from:)))
    }

    /// How many atomic replaces one process makes per second, alone, without and with the fsync
    /// pair: what 8 processes taking turns under a lock cannot exceed.
    mutating func replaceRates() throws {
        let dirfd = try openReplaceDirectory()
        defer { close(dirfd) }
        for durable in [false, true] {
            let seconds = quick ? 0.5 : 2.0
            let end = now() + Int64(seconds * 1e9)
            var count = 0
            while now() < end {
                replaceFile(in: dirfd, sent: 0, durable: durable)
                count += 1
            }
            let rate = Double(count) / seconds
            if durable { replace.fullRate = rate } else { replace.rate = rate }
            rows.append(Row(
                group: "4. kernel floor", name: "atomic replaces in a loop, one process, no lock" + (durable ? ", with the fsync pair" : ""), n: count,
                throughput: Quantity(value: rate.rounded(), unit: "replaces/s"), note: "what (8) .\(durable ? "full" : "none") cannot go above, measured right before it"))
        }
    }

    // MARK: 5. dconf

    mutating func dconf(install: Bool) throws {
        let available = { FileManager.default.isExecutableFile(atPath: "/usr/bin/dconf") && FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-run-session") }
        if !available() && install {
            let apt = Process()
            apt.executableURL = URL(filePath: "/bin/sh")
            apt.arguments = ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dconf-cli dconf-service dbus libdconf-dev pkg-config >/dev/null"]
            try apt.run()
            apt.waitUntilExit()
        }
        guard available() else {
            rows.append(Row(group: "5. dconf", name: "dconf write → dconf watch", n: 0, note: "skipped: dconf or dbus-run-session not installed (run with --install-dconf)"))
            return
        }
        try dconfClientLibrary()
        let session = try Child(["--", executable.path, "dconf-inner", String(scaled(200))], executable: URL(filePath: "/usr/bin/dbus-run-session"))
        let pairs = latencies(from: session)
        let total = Latencies(pairs.map(\.sent))
        let afterExit = Latencies(pairs.map(\.latency))
        guard total.count > 0 else {
            rows.append(Row(group: "5. dconf", name: "dconf write → dconf watch", n: 0, note: "failed: no change arrived"))
            return
        }
        rows.append(Row(group: "5. dconf", name: "dconf write (CLI) → dconf watch", n: total.count, p50: µs(total.p50), p99: µs(total.p99), ratio: ratio(fullP50, total.p50), ratioTo: "(SharedPrefs .full ÷ this)", note: "includes starting the dconf CLI; target SharedPrefs .full ≤ ½"))
        rows.append(Row(group: "5. dconf", name: "… counted from the write command's exit", n: afterExit.count, p50: µs(afterExit.p50), p99: µs(afterExit.p99), ratio: ratio(fullP50, afterExit.p50), ratioTo: "(SharedPrefs .full ÷ this)", note: "the service's write → notify alone"))
    }

    /// dconf as its users meet it: a write through libdconf (as GSettings makes it) → the
    /// "changed" signal in another process, both in one D-Bus session with dconf-service.
    mutating func dconfClientLibrary() throws {
        let name = "libdconf write → \"changed\" signal in another process"
        let peer = directory.appending(path: "dconf-peer")
        let source = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "dconf-peer.c")
        let compile = Process()
        compile.executableURL = URL(filePath: "/bin/sh")
        compile.arguments = ["-c", "cc -O2 '\(source.path)' $(pkg-config --cflags --libs dconf) -o '\(peer.path)' 2>/dev/null"]
        try compile.run()
        compile.waitUntilExit()
        guard compile.terminationStatus == 0 else {
            rows.append(Row(group: "5. dconf", name: name, n: 0, note: "skipped: could not compile \(source.lastPathComponent) (needs cc, pkg-config and libdconf-dev: run with --install-dconf)"))
            return
        }
        let session = try Child(["--", executable.path, "dconf-client", peer.path, String(scaled(500))], executable: URL(filePath: "/usr/bin/dbus-run-session"))
        let measured = Latencies(latencies(from: session).map(\.latency))
        rows.append(Row(
            group: "5. dconf", name: name, n: measured.count, p50: µs(measured.p50), p99: µs(measured.p99),
            ratio: ratio(fullP50, measured.p50), ratioTo: "(SharedPrefs .full ÷ this)",
            note: "the client library, \(scaled(500)) writes 2 ms apart (Benchmarks/dconf-peer.c); target SharedPrefs .full ≤ ⅓", cdf: measured.cdf,
            targets: fullP50 > 0 && measured.p50 > 0 ? [Target(what: Target.all[2], figure: Double(fullP50) / Double(measured.p50), bound: 0.33, atMost: true)] : nil))
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
        guard observer.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) }
        for i in 0..<count {
            defaults.set("value \(i)", forKey: "stamp")
            defaults.synchronize()
            gap(50)
        }
        let fields = observer.nextLine(timeout: 30)?.split(separator: " ").compactMap { Int($0) } ?? []
        observer.waitForExit()
        guard fields.count == 2 else { throw CocoaError(.featureUnsupported) }
        rows.append(Row(
            group: "3. set → remote observer", name: "Foundation UserDefaults, set + synchronize → another process", n: count,
            note: "\(fields[0]) of \(count) didChangeNotifications arrived, and polling string(forKey:) every ms for 2 s more saw \(fields[1]) of \(count) new values: it does not notice other processes"))
    }

    // MARK: 6. Scale

    /// A realistic one-key change (a string whose length changes) in suites of 10 to 100,000
    /// keys, each size with the same 20 ms between changes.
    mutating func scale() throws {
        var p50s: [Int: Int64] = [:]
        for keys in quick ? [10, 1000] : [10, 1000, 10_000, 100_000] {
            let suite = try makeSuite("scale-\(keys)", keys: keys, durability: .none)
            let count = scaled(keys >= 100_000 ? 100 : 200)
            let measured = Latencies(try remoteLatencies(suite, count: count, gapMs: 20, realistic: true)[0].map(\.latency))
            p50s[keys] = measured.p50
            let bytes = try FileManager.default.attributesOfItem(atPath: suite.fileURL!.path)[.size] as? Int ?? 0
            var row = Row(
                group: "6. scale", name: "one-key change (a string whose length changes) in a \(keys)-key suite → remote observer", n: measured.count, sent: count,
                p50: ms(measured.p50), p99: ms(measured.p99))
            row.note = "a \(bytes < 10_240 ? "\(bytes)-byte" : "\(bytes / 1024) KiB") file; its in-process costs: Benchmarks/InProcess" + row.lossText
            if keys == 10_000, let small = p50s[10] {
                row.ratio = ratio(measured.p50, small)
                row.ratioTo = "the same at 10 keys"
                row.targets = [Target(what: Target.all[5], figure: Double(measured.p50) / Double(max(1, small)), bound: 2, atMost: true)]
            }
            if keys == 100_000 { row.targets = [Target(what: Target.all[6], figure: Double(measured.p50) / 1e6, bound: 2, atMost: true)] }
            rows.append(row)
        }
    }

    // MARK: 7. Fan-out

    mutating func fanOut() throws {
        let observers = quick ? 4 : 16
        try replaceLatency(observers: observers, count: scaled(300), gapMs: 4)
        try replaceLatency(observers: observers, hop: true, count: scaled(300), gapMs: 4)
        for onWatcherThread in [false, true] {
            let suite = try makeSuite("fanout\(onWatcherThread ? "-watcher" : "")", keys: 100, durability: .none)
            _ = takeObserverCPU()
            let all = try remoteLatencies(suite, observers: observers, count: scaled(300), gapMs: 4, onWatcherThread: onWatcherThread)
            let cpu = takeObserverCPU()
            let measured = Latencies(slowestOfEach(all))
            var row = Row(
                group: "7. fan-out",
                name: "\(observers) observer processes, slowest of each change" + (onWatcherThread ? ", handlers on the watcher thread (.synchronousExternalChanges)" : ""),
                n: measured.count, sent: scaled(300), p50: µs(measured.p50), p99: µs(measured.p99),
                ratio: ratio(measured.p99, replace.fanOutP99), ratioTo: "the bare replace floor's p99 with as many observer processes",
                cdf: measured.cdf)
            row.note = String(format: "p99 %.1f× that floor with one thread hop in each", Double(measured.p99) / Double(max(1, replace.fanOutHopP99)))
                + "; CPU per change per observer \(µs(cpu)); changes every observer saw" + row.lossText
            if !onWatcherThread {
                row.targets = [Target(what: Target.all[3], figure: Double(measured.p99) / Double(max(1, replace.fanOutP99)), bound: 1.5, atMost: true)]
            }
            rows.append(row)
        }
    }

    // MARK: 8. Contention

    mutating func contention() throws {
        let processes = 8
        let seconds = quick ? 1.0 : 5.0
        try replaceRates()
        let floorRate = try contentionFloor(processes: processes, seconds: seconds)
        for durability in [PreferenceSuite.Durability.full, .none] {
            let file = file("contended-\(durability)")
            _ = try PreferenceSuite(fileURL: file)
            let deadline = now() + Int64(seconds * 1e9) + 300_000_000
            let children = try (0..<processes).map { _ in try Child(["contend", file.path, String(deadline), "\(durability)"]) }
            for child in children { _ = child.nextLine() }
            var total = 0
            for child in children {
                total += Int(child.nextLine(timeout: seconds + 60)?.split(separator: " ").last ?? "") ?? 0
                child.waitForExit()
            }
            let stored = try PreferenceSuite(fileURL: file).update { $0[PreferenceKey<Int>("counter", default: 0)] }
            let rate = Double(total) / seconds
            // Every update of .full waits for its fsync pair, one at a time under the lock.
            let bound = fsyncPairP50 > 0 ? 1e9 / Double(fsyncPairP50) : 0
            rows.append(Row(
                group: "8. contention", name: "\(processes) processes × update increments for \(Int(seconds)) s, .\(durability)", n: total,
                throughput: Quantity(value: rate.rounded(), unit: "updates/s"),
                ratio: durability == .full && bound > 0 ? rate / bound : nil, ratioTo: "the fsync-bound rate",
                note: "lost updates: \(total - stored) (must be 0); " + (durability == .full
                    ? String(format: "fsync-bound rate %.0f/s (1 ÷ the fsync pair); target ≥ 90%% of it", bound)
                    : "target ≥ 10,000/s")
                    + (replace.rate > 0 ? String(format: "; %.0f%% of one process's loop of atomic replaces", 100 * rate / (durability == .full ? replace.fullRate : replace.rate)) : "")
                    + String(format: "; %.2f× the bare 8-process loop above", rate / floorRate),
                targets: durability == .none ? [Target(what: Target.all[4], figure: rate / floorRate, bound: 0.8, atMost: false)] : nil))
        }
    }

    /// The bare floor of the contention rows: `processes` processes taking turns under one
    /// `flock`, each turn reading a 100-key file and replacing it; returns replaces per second.
    mutating func contentionFloor(processes: Int, seconds: Double) throws -> Double {
        let dir = directory.appending(path: "contend-floor")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var values = PlistDictionary()
        for i in 0..<100 { values["key.\(i)"] = .string("value \(i)") }
        try PlistValue.dictionary(values).propertyListData(format: .binary).write(to: dir.appending(path: "s"))
        let deadline = now() + Int64(seconds * 1e9) + 300_000_000
        let children = try (0..<processes).map { _ in try Child(["contend-floor", dir.path, String(deadline)]) }
        for child in children { _ = child.nextLine() }
        var total = 0
        for child in children {
            total += Int(child.nextLine(timeout: seconds + 60)?.split(separator: " ").last ?? "") ?? 0
            child.waitForExit()
        }
        let rate = Double(total) / seconds
        rows.append(Row(
            group: "8. contention", name: "floor: \(processes) processes × (flock, read, write a new file, rename) for \(Int(seconds)) s", n: total,
            throughput: Quantity(value: rate.rounded(), unit: "replaces/s"), note: "no library: the least a merge under one lock can cost"))
        return rate
    }

    // MARK: 9. Memory

    mutating func memory() throws {
        let count = 100
        let dir = directory.appending(path: "memory")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var values = PlistDictionary()
        for i in 0..<100 { values["key.\(i)"] = .string("value \(i)") }
        let data = PlistValue.dictionary(values).propertyListData(format: .binary)
        for i in 0..<count { try data.write(to: dir.appending(path: "s\(i).plist")) }
        try data.write(to: dir.appending(path: "warm-up.plist"))
        let child = try Child(["memory", dir.path, String(count)])
        let fields = child.nextLine()?.split(separator: " ").compactMap { Int($0) } ?? []
        child.waitForExit()
        guard fields.count == 2 else { return }
        let perSuite = Double(fields[1] - fields[0]) / 1024 / Double(count)
        rows.append(Row(
            group: "9. memory", name: "a process watching \(count) suites of 100 keys, after one warm-up suite", n: count,
            note: String(format: "RSS %.1f MiB → %.1f MiB: %.1f KiB per suite; target ≤ 16 KiB", Double(fields[0]) / 1_048_576, Double(fields[1]) / 1_048_576, perSuite),
            targets: [Target(what: Target.all[8], figure: perSuite, bound: 16, atMost: true)]))
    }

    /// 13. A cached read, in this process: `integer(forKey:)` of a 100-key suite against the same
    /// of Foundation `UserDefaults` (Benchmarks/InProcess has the allocation counts).
    mutating func cachedRead() throws {
        let count = quick ? 100_000 : 2_000_000
        let suite = try makeSuite("cached", keys: 100)
        suite.set(7, forKey: "k")
        let defaults = UserDefaults(suiteName: "prefs-bench-cached-\(getpid())")!
        defer { defaults.removePersistentDomain(forName: "prefs-bench-cached-\(getpid())") }
        defaults.set(7, forKey: "k")
        func time(_ read: () -> Int) -> Double {
            var total = 0
            let start = now()
            for _ in 0..<count { total &+= read() }
            blackHole(total)
            return Double(now() - start) / Double(count)
        }
        _ = (time { suite.integer(forKey: "k") }, time { defaults.integer(forKey: "k") })  // warm-up
        let ours = time { suite.integer(forKey: "k") }
        let theirs = time { defaults.integer(forKey: "k") }
        rows.append(Row(
            group: "13. cached read", name: "integer(forKey:) of a 100-key suite, \(count) times", n: count,
            throughput: Quantity(value: (1e9 / ours).rounded(), unit: "reads/s"),
            note: String(format: "%.0f ns a read; Foundation UserDefaults %.0f ns: %.1f× faster; target ≥ 20×", ours, theirs, theirs / ours),
            targets: [Target(what: Target.all[9], figure: theirs / ours, bound: 20, atMost: false)]))
    }

    /// 12. An observer process left idle after one change: how often it wakes (the context
    /// switches of all its threads) in 10 s.
    mutating func idleWakeUps() throws {
        let suite = try makeSuite("idle", keys: 10, durability: .none)
        let seconds = quick ? 1.0 : 10.0
        for onWatcherThread in [false, true] {
            let child = try Child(["idle-observe", suite.fileURL!.path, String(seconds)] + (onWatcherThread ? ["watcher-thread"] : []))
            guard child.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) }
            suite.set(now(), forKey: "stamp")
            let fields = child.nextLine(timeout: seconds + 60)?.split(separator: " ") ?? []
            child.waitForExit()
            guard fields.count == 4, let switches = Int(fields[1]) else { throw CocoaError(.featureUnsupported) }
            let per10s = Double(switches) * 10 / seconds
            rows.append(Row(
                group: "12. idle", name: "an observer process idle for \(Int(seconds)) s after one change" + (onWatcherThread ? ", handler on the watcher thread (.synchronousExternalChanges)" : ""), n: 1,
                throughput: Quantity(value: per10s, unit: "wake-ups per 10 s"),
                note: "context switches of all its threads, ended ones too (getrusage), less its own sleep; \(fields[3]) threads at the end; target ≤ 2 in 10 s",
                targets: onWatcherThread ? nil : [Target(what: Target.all[10], figure: per10s, bound: 2, atMost: true)]))
        }
    }

    /// 14. System calls (`strace -f -c`): of one `set` + `synchronize()` in a running process, and
    /// of a one-shot `prefs-watch write` over `prefs-watch --version` (where prefs-watch is built
    /// beside this executable).
    mutating func systemCalls() throws {
        let strace = "/usr/bin/strace"
        guard FileManager.default.isExecutableFile(atPath: strace) else {
            rows.append(Row(group: "14. system calls", name: "not measured", n: 0, note: "strace is not installed (apt-get install strace)"))
            return
        }
        /// The system calls `arguments` makes, threads and children included.
        func calls(_ arguments: [String]) throws -> Int {
            let output = directory.appending(path: "strace.txt")
            let child = try Child(["-f", "-c", "-o", output.path, "--"] + arguments, executable: URL(filePath: strace))
            child.waitForExit()
            let report = try String(contentsOf: output, encoding: .utf8)
            guard let total = report.split(separator: "\n").last(where: { $0.hasSuffix(" total") }),
                let count = total.split(separator: " ").dropFirst(3).first.flatMap({ Int($0) })
            else { throw CocoaError(.fileReadCorruptFile) }
            return count
        }
        let suite = file("syscalls").path
        let updates = 100
        let perSet = Double(try calls([executable.path, "set-sync", suite, String(updates)]) - calls([executable.path, "set-sync", suite, "0"])) / Double(updates)
        rows.append(Row(
            group: "14. system calls", name: "one set + synchronize() in a running process (a one-key suite, .full)", n: updates,
            throughput: Quantity(value: perSet, unit: "system calls"),
            note: "strace -f -c of \(updates) against none, after one to warm up"))
        let prefsWatch = executable.deletingLastPathComponent().appending(path: "prefs-watch")
        guard FileManager.default.isExecutableFile(atPath: prefsWatch.path) else {
            rows.append(Row(group: "14. system calls", name: "one-shot prefs-watch write: not measured", n: 0, note: "no prefs-watch beside \(executable.path): swift build -c release --product prefs-watch"))
            return
        }
        let write = try calls([prefsWatch.path, "write", file("cli").path, "k", "-int", "2", "--create"])
        let version = try calls([prefsWatch.path, "--version"])
        rows.append(Row(
            group: "14. system calls", name: "one-shot prefs-watch write, over prefs-watch --version", n: 1,
            throughput: Quantity(value: Double(write - version), unit: "system calls"),
            note: "\(write) in all, --version \(version); release build (issue 28 bounds the debug build: ≤ 60)"))
    }

    /// 15. How many suites one process opens, writes and observes under `ulimit -n 1024`.
    mutating func suitesPerProcess() throws {
        let count = quick ? 1_000 : 10_000
        let child = try Child(["many-suites", directory.path, String(count)])
        let fields = child.nextLine(timeout: 600)?.split(separator: " ") ?? []
        child.waitForExit()
        guard fields.count == 3, let done = Int(fields[1]), let open = Int(fields[2]) else { throw CocoaError(.featureUnsupported) }
        rows.append(Row(
            group: "15. descriptors", name: "suites opened, written and observed by one process under ulimit -n 1024", n: done,
            throughput: Quantity(value: Double(done), unit: "suites"),
            note: "\(done) of \(count) tried; \(open) descriptors open with all of them kept"))
    }

    /// 11. Cold start: a process that opens a suite, reads one key and exits, against the same with
    /// Foundation `UserDefaults`, alternating, each timed from its start to its exit here.
    mutating func coldStart() throws {
        let file = file("cold")
        try PlistValue.dictionary(["k": 3]).propertyListData(format: .binary).write(to: file)
        // posix_spawn and waitpid, with the output to /dev/null: Foundation's Process adds tens
        // of milliseconds of its own to a process this short.
        func run(_ arguments: [String]) throws -> Int64 {
            let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            var pid: pid_t = 0
            let start = now()
            guard posix_spawn(&pid, executable.path, &actions, nil, argv, environ) == 0 else { throw CocoaError(.executableLoad) }
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            return now() - start
        }
        var ours: [Int64] = [], peer: [Int64] = []
        for _ in 0..<(quick ? 5 : 21) {
            ours.append(try run(["cold-read", file.path]))
            peer.append(try run(["cold-defaults", "prefs-bench-cold-\(getpid())"]))
        }
        let (a, b) = (Latencies(ours), Latencies(peer))
        rows.append(Row(
            group: "11. cold start", name: "open a suite, read one key, exit", n: ours.count, p50: µs(a.p50), p99: µs(a.p99),
            ratio: ratio(a.p50, b.p50), ratioTo: "Foundation UserDefaults",
            note: "the same with UserDefaults(suiteName:): p50 \(µs(b.p50)), alternating; target ≤ 1.1×",
            targets: [Target(what: Target.all[7], figure: Double(a.p50) / Double(max(1, b.p50)), bound: 1.1, atMost: true)]))
    }

    #if Etcd
    /// 10. A put through an etcd suite → an observer in another process: through SharedPrefs's
    /// watch, and through etcd's own (`etcdctl watch`), of the same puts. Both observers print a
    /// line per change and this process stamps its arrival, so each path has the same pipe hop.
    mutating func etcd(_ endpoints: String) throws {
        let prefix = "prefs-bench/\(UUID().uuidString)/"
        let suite = try PreferenceSuite(etcd: endpoints.split(separator: ",").map(String.init), prefix: prefix, options: EtcdOptions(offlineCache: .none))
        let ours = try Child(["etcd-observe", endpoints, prefix])
        guard ours.nextLine() == "ready" else { throw CocoaError(.featureUnsupported) }
        let peer = try Child(["--endpoints", endpoints, "watch", "--prefix", prefix + "stamp", "-w", "json"], executable: URL(filePath: "/usr/bin/etcdctl"), environment: ["ETCDCTL_API": "3"])
        /// The arrival of the line that carries `value`, skipping older ones; nil after `timeout`.
        func arrival(of value: Int64, from child: Child, timeout: Double, _ parse: (String) -> Int64?) -> Int64? {
            while let (line, arrival) = child.nextTimedLine(timeout: timeout) {
                if parse(line) == value { return arrival }
            }
            return nil
        }
        let fromOurs: (String) -> Int64? = { Int64($0.split(separator: " ").last ?? "") }
        let fromPeer: (String) -> Int64? = { line in
            struct Response: Decodable { struct Event: Decodable { struct KV: Decodable { var value: Data? }; var kv: KV }; var Events: [Event]? }
            guard let response = try? JSONDecoder().decode(Response.self, from: Data(line.utf8)), let bytes = response.Events?.last?.kv.value,
                case .integer(let n)? = try? PlistValue(propertyListData: bytes) else { return nil }
            return n
        }
        // Warm-up: until both watches deliver (etcdctl's starts on its own time).
        var value: Int64 = 0
        repeat {
            value -= 1
            suite.set(value, forKey: "stamp")
            _ = suite.synchronize()
        } while arrival(of: value, from: peer, timeout: 1, fromPeer) == nil || arrival(of: value, from: ours, timeout: 1, fromOurs) == nil
        var (oursLatencies, peerLatencies): ([Int64], [Int64]) = ([], [])
        for i in 1...Int64(scaled(500)) {
            let sent = now()
            suite.set(i, forKey: "stamp")
            _ = suite.synchronize()
            if let at = arrival(of: i, from: peer, timeout: 10, fromPeer) { peerLatencies.append(at - sent) }
            if let at = arrival(of: i, from: ours, timeout: 10, fromOurs) { oursLatencies.append(at - sent) }
            gap(2)
        }
        ours.stop()
        peer.stop()
        let (o, p) = (Latencies(oursLatencies), Latencies(peerLatencies))
        rows.append(Row(group: "10. etcd (3 members)", name: "put → etcdctl watch (etcd's own)", n: p.count, p50: µs(p.p50), p99: µs(p.p99), note: "the same puts", cdf: p.cdf))
        rows.append(Row(
            group: "10. etcd (3 members)", name: "put → SharedPrefs observer in another process", n: o.count, p50: µs(o.p50), p99: µs(o.p99),
            ratio: ratio(o.p50, p.p50), ratioTo: "etcdctl watch p50",
            note: "overhead p50 \(µs(o.p50 - p.p50)) (target ≤ 0.5 ms); p99 \(µs(o.p99)) (target ≤ 20 ms)", cdf: o.cdf))
    }

    /// 10. The same puts reaching `observers` processes, each with its own SharedPrefs suite on
    /// the cluster: every delivery's latency, the slowest observer's p99, and changes missed.
    mutating func etcdFanOut(_ endpoints: String, observers: Int) throws {
        let prefix = "prefs-bench/\(UUID().uuidString)/"
        let suite = try PreferenceSuite(etcd: endpoints.split(separator: ",").map(String.init), prefix: prefix, options: EtcdOptions(offlineCache: .none))
        let children = try (0..<observers).map { _ in try Child(["etcd-observe", endpoints, prefix]) }
        defer { for child in children { child.stop() } }
        for child in children where child.nextLine() != "ready" { throw CocoaError(.featureUnsupported) }
        let parse: (String) -> Int64? = { Int64($0.split(separator: " ").last ?? "") }
        func arrival(of value: Int64, from child: Child, timeout: Double) -> Int64? {
            while let (line, arrival) = child.nextTimedLine(timeout: timeout) {
                if parse(line) == value { return arrival }
            }
            return nil
        }
        // Warm-up: until every watch delivers.
        var value: Int64 = 0
        var pending = children
        while !pending.isEmpty && value > -20 {
            value -= 1
            suite.set(value, forKey: "stamp")
            _ = suite.synchronize()
            pending = pending.filter { arrival(of: value, from: $0, timeout: 2) == nil }
        }
        var latencies = Array(repeating: [Int64](), count: observers)
        let puts = scaled(100)
        for i in 1...Int64(puts) {
            let sent = now()
            suite.set(i, forKey: "stamp")
            _ = suite.synchronize()
            for (k, child) in children.enumerated() {
                if let at = arrival(of: i, from: child, timeout: 5) { latencies[k].append(at - sent) }
            }
            gap(20)
        }
        let all = Latencies(latencies.flatMap { $0 })
        let p99s = latencies.map { Latencies($0).p99 }.sorted()
        let delivered = latencies.map(\.count).reduce(0, +)
        rows.append(Row(
            group: "10. etcd (3 members)", name: "put → \(observers) SharedPrefs observers, each its own process", n: delivered, sent: observers * puts,
            p50: µs(all.p50), p99: µs(p99s.last ?? 0),
            note: "p99 is the slowest observer's (median observer's p99 \(µs(p99s[p99s.count / 2]))); missed \(observers * puts - delivered) of \(observers * puts) (must be 0)",
            cdf: all.cdf))
    }
    #endif
}
