import Foundation
@_spi(Benchmarks) import SharedPrefs
import SharedPrefsLocking
import CSharedPrefsShims
#if Etcd
import SharedPrefsEtcd
#endif

/// The roles this executable plays in the child processes the measurements start.
enum Role {
    /// `codec <keys> <rounds>`: the in-process work of one-key changes in a suite of `keys`
    /// (encode, re-read), in a loop, for a profiler (`valgrind --tool=callgrind`).
    static func codec(keys: Int, rounds: Int) throws {
        var values = PlistDictionary()
        for i in 0..<keys { values["key.\(i)"] = .string("value \(i)") }
        guard let image = try _BenchmarkHooks.image(PlistValue.dictionary(values).propertyListData(format: .binary).map { $0 }) else { return }
        var total = 0
        for round in 0..<rounds {
            let changed = try _BenchmarkHooks.encodeChange(image, key: "key.\(round % keys)", value: .string("changed \(round)"))
            total += try _BenchmarkHooks.changeCount(from: image, to: changed)
        }
        print(total)
    }

    /// `observe <plist> <key> [watcher-thread]`: records the arrival of every change of `key` (its
    /// value is the send time, or a string that begins with it) until "done" changes; prints
    /// `ready`, then `L <sent> <latency>` lines, `cpu <ns>` (the CPU time it used in between) and
    /// `end`. With `watcher-thread`, the handler runs where the change is read
    /// (`.synchronousExternalChanges`). `PREFS_BENCH_DROP_PERCENT=p` makes it a faulty observer
    /// that leaves out p % of the changes, the 5th of each 100 ÷ p first (the bench's test of its
    /// own accounting).
    static func observe(_ path: String, key: String, onWatcherThread: Bool) throws {
        let suite = try PreferenceSuite(fileURL: URL(filePath: path))
        let percent = Int(ProcessInfo.processInfo.environment["PREFS_BENCH_DROP_PERCENT"] ?? "") ?? 0
        let every = percent > 0 ? 100 / percent : 0
        let seen = Lock((pairs: [(Int64, Int64)](), count: 0))
        let done = DispatchSemaphore(value: 0)
        let token = suite.observe(.keys([key, "done"]), options: onWatcherThread ? .synchronousExternalChanges : []) { change in
            let arrival = now()
            _Stages.mark("H")
            guard change.key == key else {
                done.signal()
                return
            }
            let sent: Int64?
            switch change.newValue {
            case .integer(let time)?: sent = time
            case .string(let text)?: sent = Int64(text.prefix { $0 != " " })
            default: sent = nil
            }
            guard let sent else { return }
            seen.withLock { seen in
                seen.count += 1
                if every == 0 || (seen.count + every - 5) % every != 0 { seen.pairs.append((sent, arrival - sent)) }
            }
        }
        print("ready")
        fflush(nil)
        let cpuAtStart = cpuTime()
        _ = done.wait(timeout: .now() + 600)
        let cpu = cpuTime() - cpuAtStart
        for (sent, latency) in seen.withLock({ $0.pairs }) { print("L \(sent) \(latency)") }
        print("cpu \(cpu)")
        print("end")
        _Stages.dump()
        token.cancel()
    }

    /// `idle-observe <plist> <seconds> <windows> [watcher-thread]`: observes key "stamp" and
    /// prints `ready`; each time a change arrives, stays idle for `seconds` and prints `switches
    /// <n> threads <t>`: the context switches of all its threads meanwhile, those that ended too
    /// (`getrusage`), less the one of its own sleep; exits after `windows` of them.
    static func idleObserve(_ path: String, seconds: Double, windows: Int, onWatcherThread: Bool) throws {
        let suite = try PreferenceSuite(fileURL: URL(filePath: path))
        let seen = DispatchSemaphore(value: 0)
        let token = suite.observe(.key("stamp"), options: onWatcherThread ? .synchronousExternalChanges : []) { _ in seen.signal() }
        print("ready")
        fflush(nil)
        func switches() -> Int {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return usage.ru_nvcsw + usage.ru_nivcsw
        }
        for _ in 0..<windows {
            seen.wait()
            usleep(200_000)  // the delivery's own wake-ups end
            let before = switches()
            usleep(useconds_t(seconds * 1e6))
            let after = switches()
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
            print("switches \(after - before - 1) threads \(threads)")
            fflush(nil)
        }
        token.cancel()
    }

    /// `cold-read <plist>`: a one-shot process that opens a suite, reads key "k" and exits: 0 if it
    /// read 3 (what the bench wrote), 1 otherwise.
    static func coldRead(_ path: String) throws -> Int32 {
        let suite = try PreferenceSuite(fileURL: URL(filePath: path))
        let value = suite.integer(forKey: "k")
        print(value)
        return value == 3 ? 0 : 1
    }

    /// `cold-defaults <suite>`: the same with Foundation `UserDefaults`.
    static func coldDefaults(_ suiteName: String) -> Int32 {
        let value = UserDefaults(suiteName: suiteName)?.integer(forKey: "k") ?? -1
        print(value)
        return value == 3 ? 0 : 1
    }

    /// `visible <plist> <target>`: prints the time at which key "n" first holds `target`.
    static func visible(_ path: String, _ target: Int) throws {
        let suite = try PreferenceSuite(fileURL: URL(filePath: path))
        let seen = DispatchSemaphore(value: 0)
        let token = suite.observe(.key("n")) { change in
            if change.newValue == .integer(Int64(target)) { print("seen \(now())"); fflush(nil); seen.signal() }
        }
        print("ready")
        fflush(nil)
        _ = seen.wait(timeout: .now() + 600)
        token.cancel()
    }

    /// `floor <dir>`: the kernel floor. Watches the directory with inotify; each file renamed into
    /// it is named `f-<sent>`; prints `L <sent> <latency>` lines and `end` after `done`.
    static func floor(_ directory: String) {
        timeArrivals(in: directory) { buffer, count in
            var sent: [Int64] = []
            var offset = 0
            while offset < count {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let name = String(cString: (buffer + offset + MemoryLayout<inotify_event>.size).assumingMemoryBound(to: CChar.self))
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
                if name == "done" { return sent.isEmpty ? nil : sent + [-1] }
                if name.hasPrefix("f-"), let time = Int64(name.dropFirst(2)) { sent.append(time) }
            }
            return sent
        }
    }

    /// `replace-floor <dir> [hop]`: the floor of an atomic replace. Watches the directory; each
    /// time `s` is renamed into it, opens and reads it: the send time is in its first 8 bytes (`-1`
    /// ends); prints `L <sent> <latency>` lines and `end`. With `hop`, the arrival is taken on
    /// another thread, after a `DispatchQueue.async` to it: where a library runs its users'
    /// handlers, if not on the thread that reads the events.
    static func replaceFloor(_ directory: String, hop: Bool) {
        let path = directory + "/s"
        timeArrivals(in: directory, stampedAfterReading: true, hop: hop) { buffer, _ in
            let file = open(path, O_RDONLY | O_CLOEXEC)
            guard file >= 0 else { return [] }
            let count = read(file, buffer, 65536)
            close(file)
            guard count >= 8 else { return [] }
            let sent = buffer.loadUnaligned(as: Int64.self)
            return sent < 0 ? nil : [sent]
        }
    }

    /// `futex-floor <dir>`: the floor of many observer processes. Waits on the futex word at the
    /// start of `<dir>/bell` (mapped shared and read-only: a waiter needs no more); each wake, opens and reads `<dir>/s`: the send time
    /// is in its first 8 bytes (`-1` ends, `0` is the file before the first change); prints
    /// `ready`, `L <sent> <latency>` lines, `cpu <ns>` and `end`. Holds no inotify instance.
    static func futexFloor(_ directory: String) {
        let bell = open(directory + "/bell", O_RDONLY | O_CLOEXEC)
        guard bell >= 0, let mapping = mmap(nil, 4096, PROT_READ, MAP_SHARED, bell, 0), mapping != MAP_FAILED else {
            print("error bell")
            return
        }
        close(bell)
        let word = mapping.assumingMemoryBound(to: CUnsignedInt.self)
        print("ready")
        fflush(nil)
        let cpuAtStart = cpuTime()
        var pairs: [(Int64, Int64)] = []
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 8)
        var last: Int64 = 0
        while true {
            let seen = sharedprefs_atomic_load(word)
            let file = open(directory + "/s", O_RDONLY | O_CLOEXEC)
            let count = file >= 0 ? read(file, buffer, 65536) : -1
            if file >= 0 { close(file) }
            let arrival = now()
            let sent = count >= 8 ? buffer.loadUnaligned(as: Int64.self) : 0
            if sent < 0 { break }
            if sent != last, sent > 0 { pairs.append((sent, arrival - sent)) }
            last = sent
            _ = sharedprefs_futex_wait_shared(word, seen)
        }
        let cpu = cpuTime() - cpuAtStart
        for (sent, latency) in pairs { print("L \(sent) \(latency)") }
        print("cpu \(cpu)")
        print("end")
    }

    /// Blocks in `read` on an inotify descriptor watching `directory` for renames into it, and
    /// hands each batch of events to `sent`, which returns the send times it names (`nil`, or a
    /// last time of -1 after them: the end). The arrival is taken when `read` returns, or after
    /// `sent` when `stampedAfterReading`.
    private static func timeArrivals(
        in directory: String, stampedAfterReading: Bool = false, hop: Bool = false,
        _ sent: (_ buffer: UnsafeMutableRawPointer, _ count: Int) -> [Int64]?
    ) {
        let handlers = DispatchQueue(label: "handlers")
        let handed = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var handedAt: Int64 = 0
        let fd = inotify_init1(CInt(IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, directory, UInt32(IN_MOVED_TO)) >= 0 else {
            print("error inotify")
            return
        }
        print("ready")
        fflush(nil)
        let cpuAtStart = cpuTime()
        var pairs: [(Int64, Int64)] = []
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 8)
        while true {
            let count = read(fd, buffer, 65536)
            var arrival = now()
            guard count > 0, let times = sent(buffer, count) else { break }
            if stampedAfterReading { arrival = now() }
            if hop {
                handlers.async { handedAt = now(); handed.signal() }
                handed.wait()
                arrival = handedAt
            }
            for time in times where time >= 0 { pairs.append((time, arrival - time)) }
            if times.contains(-1) { break }
        }
        let cpu = cpuTime() - cpuAtStart
        for (sent, latency) in pairs { print("L \(sent) \(latency)") }
        print("cpu \(cpu)")
        print("end")
    }

    /// Prints `ready`, then waits for `go <start> <end>` on its standard input and sleeps until
    /// `start`: the barrier of processes that contend. Returns `end`.
    static func barrier() -> Int64 {
        print("ready")
        fflush(nil)
        let fields = (readLine() ?? "").split(separator: " ").compactMap { Int64($0) }
        guard fields.count == 2 else { exit(1) }
        sleep(until: fields[0])
        return fields[1]
    }

    /// `contend <plist> none|full`: after the barrier, `update` increments of "counter" until the
    /// end; prints `count <n>`.
    static func contend(_ path: String, durability: PreferenceSuite.Durability) throws {
        let suite = try PreferenceSuite(fileURL: URL(filePath: path), options: .init(durability: durability))
        let counter = PreferenceKey<Int>("counter", default: 0)
        let end = barrier()
        var count = 0
        while now() < end {
            try suite.update { $0[counter] += 1 }
            count += 1
        }
        print("count \(count)")
    }

    /// `contend-floor <dir> [durable]`: the bare floor of `contend`: after the barrier, until the
    /// end, take `flock` on the directory's lock file, read the file `s`, write it anew beside it
    /// (`fsync` it, when durable), rename it over, (`fsync` the directory,) unlock; prints
    /// `count <n>`.
    static func contendFloor(_ directory: String, durable: Bool) {
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let lock = openat(dirfd, ".lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        let temporary = ".tmp.\(getpid())"
        var buffer = [UInt8](repeating: 0, count: 65536)
        let end = barrier()
        var count = 0
        while now() < end {
            flock(lock, LOCK_EX)
            let file = openat(dirfd, "s", O_RDONLY | O_CLOEXEC)
            let size = file >= 0 ? read(file, &buffer, buffer.count) : 0
            if file >= 0 { close(file) }
            let out = openat(dirfd, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            _ = write(out, buffer, max(size, 64))
            if durable { fsync(out) }
            close(out)
            renameat(dirfd, temporary, dirfd, "s")
            if durable { fsync(dirfd) }
            flock(lock, LOCK_UN)
            count += 1
        }
        print("count \(count)")
    }

    /// `set-sync <path> <n>`: one `set` + `synchronize()` to warm up, then `n` more: run under
    /// `strace -c` with 0 and with n, the difference is what the n cost.
    static func setSync(_ path: String, _ count: Int) throws {
        let suite = try PreferenceSuite(fileURL: URL(filePath: path))
        for i in 0...count {
            suite.set(i, forKey: "k")
            guard suite.synchronize() else { throw CocoaError(.fileWriteUnknown) }
        }
    }

    /// `many-suites <dir> <n>`: under a limit of 1,024 descriptors, opens, writes and observes n
    /// suites, all kept; prints `suites <done> <descriptors open>`.
    static func manySuites(_ directory: String, _ count: Int) {
        var limit = rlimit(rlim_cur: 1024, rlim_max: 1024)
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = min(limit.rlim_max, 1024)
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        var kept: [(PreferenceSuite, PreferenceObservation)] = []
        for i in 0..<count {
            guard let suite = try? PreferenceSuite(fileURL: URL(filePath: directory).appending(path: "m\(i).plist")) else { break }
            let token = suite.observe(.key("k")) { _ in }
            suite.set(i, forKey: "k")
            guard suite.synchronize() else { break }
            kept.append((suite, token))
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        print("suites \(kept.count) \(descriptors)")
    }

    /// `memory <dir> <n>...`: reads (and so watches) the suites `s0.plist` … of `dir` in order,
    /// after a warm-up suite; at each `n` suites, prints `<n> <resident bytes> <heap bytes in use>`;
    /// then `end`.
    static func memory(_ directory: String, _ counts: [Int]) throws {
        // One suite first, read and so watched: what the first suite of a process sets up once
        // (the watcher thread, the inotify instance, the runtime's first allocations) is not a
        // cost of each suite.
        let warmUp = try PreferenceSuite(fileURL: URL(filePath: directory).appending(path: "warm-up.plist"))
        blackHole([warmUp.storedValues.count])
        var suites: [PreferenceSuite] = []
        for count in counts {
            while suites.count < count {
                let suite = try PreferenceSuite(fileURL: URL(filePath: directory).appending(path: "s\(suites.count).plist"))
                blackHole(suite.storedValues.count)
                suites.append(suite)
            }
            print("\(count) \(residentBytes()) \(sharedprefs_heap_in_use())")
        }
        print("end")
    }

    /// `dconf-client <peer> <count>`: run under `dbus-run-session`. dconf through its client
    /// library (Benchmarks/dconf-peer.c): one peer process writes (`S <sent>` lines), another
    /// hears the "changed" signal (`L <sent> <latency>` lines); prints both, and `end`.
    static func dconfClient(_ peer: String, _ count: Int) throws {
        let watch = try Child(["watch"], executable: URL(filePath: peer))
        if watch.nextLine(timeout: 30) == "ready" {
            let writer = try Child(["write", String(count), "2000"], executable: URL(filePath: peer))
            while let line = writer.nextLine(timeout: 60) { print(line) }
            writer.waitForExit()
            while let line = watch.nextLine(timeout: 30), line != "end" { print(line) }
        }
        watch.stop()
        print("end")
        fflush(nil)
    }

    /// `defaults-observe <suite> <count>`: whether Foundation's `UserDefaults` in this process
    /// notices another process's writes: counts `didChangeNotification`s and values seen by
    /// polling `string(forKey:)`, for 2 s after the writer's last write.
    static func defaultsObserve(_ suiteName: String, _ count: Int) {
        let defaults = UserDefaults(suiteName: suiteName)!
        let notified = Lock(0)
        let observer = NotificationCenter.default.addObserver(forName: UserDefaults.didChangeNotification, object: nil, queue: nil) { _ in
            notified.withLock { $0 += 1 }
        }
        let initial = defaults.string(forKey: "stamp")
        print("ready")
        fflush(nil)
        var seen: Set<String> = []
        let deadline = now() + Int64(count) * 50_000_000 + 2_000_000_000
        while now() < deadline {
            if let value = defaults.string(forKey: "stamp"), value != initial { seen.insert(value) }
            gap(1)
        }
        NotificationCenter.default.removeObserver(observer)
        print("seen \(notified.withLock { $0 }) \(seen.count)")
    }

    /// `dconf-cli <count>`: run under `dbus-run-session`. Writes a timestamp with `dconf write`
    /// and waits for `dconf watch` to print it; prints `S <sent>` for each write, `L <sent>
    /// <latency> <since the write command exited>` for each seen, and `end`.
    static func dconfCLI(_ count: Int) throws {
        let dconf = URL(filePath: "/usr/bin/dconf")
        let watch = try Child(["watch", "/sharedprefs-bench/"], executable: dconf)
        defer { watch.stop() }
        func write(_ value: String) throws {
            try Child(["write", "/sharedprefs-bench/stamp", "'\(value)'"], executable: dconf).waitForExit()
        }
        func printed(_ value: String) -> Bool {
            while let line = watch.nextLine(timeout: 2) { if line.contains(value) { return true } }
            return false
        }
        // dconf watch has no ready signal: write until it prints.
        var ready = false
        for attempt in 0..<50 where !ready {
            try write("warmup-\(attempt)")
            ready = printed("warmup-\(attempt)")
        }
        for _ in 0..<count where ready {
            let sent = now()
            print("S \(sent)")
            try write(String(sent))
            let exited = now()
            if printed(String(sent)) {
                let arrival = now()
                print("L \(sent) \(arrival - sent) \(max(0, arrival - exited))")
            }
            gap(2)
        }
        print("end")
    }

    #if Etcd
    /// `etcd-observe <endpoints> <prefix> [<cache file>]`: prints `ready`, then `change <value>`
    /// for each change of "stamp" in the etcd suite, until killed. With a cache file, the suite
    /// keeps its offline cache there (as by default, in `~/.cache`), else none.
    static func etcdObserve(_ endpoints: String, _ prefix: String, cache: String?) throws {
        let options = EtcdOptions(offlineCache: cache.map { .file(URL(filePath: $0)) } ?? .none)
        let suite = try PreferenceSuite(etcd: endpoints.split(separator: ",").map(String.init), prefix: prefix, options: options)
        let token = suite.observe(.key("stamp")) { change in
            if case .integer(let n)? = change.newValue { print("change \(n)"); fflush(nil) }
        }
        print("ready")
        fflush(nil)
        while true { withExtendedLifetime(token) { _ = sleep(3600) } }
    }
    #endif

    #if Etcd
    /// `etcd-observe-many <endpoints> <base> <n>`: observes `stamp` in the n suites `<base><i>/`;
    /// prints `ready`, then `change <i> <value>` for each change.
    static func etcdObserveMany(_ endpoints: String, _ base: String, _ count: Int) throws {
        let urls = endpoints.split(separator: ",").map(String.init)
        let kept = try (0..<count).map { i in
            let suite = try PreferenceSuite(etcd: urls, prefix: "\(base)\(i)/", options: EtcdOptions(offlineCache: .none))
            return (suite, suite.observe(.key("stamp")) { change in
                if case .integer(let n)? = change.newValue { print("change \(i) \(n)"); fflush(nil) }
            })
        }
        print("ready")
        fflush(nil)
        while true { withExtendedLifetime(kept) { _ = sleep(3600) } }
    }
    #endif

    /// `exit-flush <timeout-ms> <plist>...`: sets a key in each suite and returns from main;
    /// the exit flush writes them (or gives up); at its end, prints `took <ns>` from main's return.
    static func exitFlush(_ timeoutMilliseconds: Int, _ paths: [String]) {
        // Registered before any suite opens (and the library's exit hook with it): runs after it.
        atexit {
            let line = Array("took \(now() - exitFlushStarted)\n".utf8)
            _ = write(1, line, line.count)
        }
        let options = PreferenceSuite.Options(lockTimeout: .milliseconds(timeoutMilliseconds))
        for path in paths { (try? PreferenceSuite(fileURL: URL(filePath: path), options: options))?.set(1, forKey: "k") }
        exitFlushStarted = now()
    }
}

/// When the `exit-flush` role returned from its work.
nonisolated(unsafe) private var exitFlushStarted: Int64 = 0
