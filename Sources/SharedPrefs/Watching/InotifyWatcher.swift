#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SharedPrefsLocking
import Synchronization

/// What a watched suite's subscriber is told (``SuiteBackend/subscribe(_:)``).
///
/// The watcher never calls a sink while it holds its lock: a sink may release the last reference
/// to its store (the app let the suite go meanwhile), and the store's release unwatches, which
/// takes that lock. Under the lock the watcher copies sinks out (``Batch``) and calls them once
/// the lock is let go.
typealias Sink = @Sendable (BackendEvent) -> Void

/// A watched suite: its path, for messages, and its sink.
typealias Watcher = (path: String, sink: Sink)

/// One inotify instance for the whole process, one watch per directory shared by every suite in
/// it, and one thread that turns events into store re-reads.
///
/// - A burst of events for one suite becomes one call of its sink, and one re-read
///   (``SuiteStore/scheduleReload()`` coalesces).
/// - `IN_Q_OVERFLOW` re-reads every suite; per-key diffing makes that exact.
/// - A directory that disappears is polled for until it comes back, then watched again.
/// - If inotify is unavailable or a watch cannot be added (`ENOSPC`, `EMFILE`), the suite is polled,
///   with a logged warning.
final class InotifyWatcher: Sendable {
    static let shared = InotifyWatcher()

    /// `IN_CREATE` notices a suite published with `link(2)`. It costs no extra wake-up per write:
    /// writers create their temporary file unnamed (`O_TMPFILE`) and link it in right before the
    /// rename, so its creation is read together with the rename.
    static let mask: UInt32 =
        UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)
        | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
    /// How often polled suites and vanished directories are checked.
    static let pollInterval: Int32 = 100

    private struct Directory {
        var location: DirectoryLocation
        /// Device and inode of the directory watched, to tell when its path leads elsewhere.
        var identity: FileIdentity?
        var path: String { location.path }
        /// The suites watched in it, by file name and subscription.
        var suites: [String: [UInt64: Watcher]] = [:]
        /// Told the name of every file written in or moved into the directory.
        var listeners: [UInt64: @Sendable (String) -> Void] = [:]
        /// Every suite's sink, with the suite's path.
        var sinks: [UInt64: Watcher] { suites.values.reduce(into: [:]) { $0.merge($1) { first, _ in first } } }
        var isUnused: Bool { suites.isEmpty && listeners.isEmpty }

        mutating func merge(_ other: Directory) {
            suites.merge(other.suites) { $0.merging($1) { first, _ in first } }
            listeners.merge(other.listeners) { first, _ in first }
        }
    }

    private struct State {
        var watched: [CInt: Directory] = [:]
        /// Directories that vanished (or cannot be watched), by path, waiting to be watched again.
        var vanished: [String: Directory] = [:]
        /// Listing of directories whose listeners are polled, by path.
        var listings: [String: Set<String>] = [:]
        /// Suites that could not be watched and are polled.
        var polled: [UInt64: Watcher] = [:]
        /// Watches on the ancestors of watched directories, by path, for `IN_MOVE_SELF` and
        /// `IN_DELETE_SELF` only: renaming a container away moves no watched directory itself.
        var ancestors: [String: CInt] = [:]
        /// Ancestors that moved or vanished, whose descendants are checked at the next poll tick.
        var movedAncestors: Set<String> = []
        /// The last subscription or listener identifier handed out.
        var nextID: UInt64 = 0
    }

    private let fd: CInt
    /// An eventfd that wakes the watcher thread from an endless `poll` when a suite starts being
    /// polled (or -1 if none could be made: the thread then never sleeps longer than a poll interval).
    private let wakeFD: CInt
    private let state = Lock(State())

    private init() {
        switch Syscall.inotifyInit(CInt(IN_CLOEXEC | IN_NONBLOCK)) {
        case .success(let fd): self.fd = fd
        case .failure(let errno):
            fd = -1
            let error = PreferenceError.system("inotify_init1", errno, path: "inotify", doing: "start watching with")
            logger.warning("\(error)")
        }
        wakeFD = (try? Syscall.eventDescriptor().get()) ?? -1
        Thread.start(named: "prefs.watcher") { [self] in run(generation: 0) }
    }

    /// Which thread runs the watcher's loop: the generation counts the threads it moved to, and
    /// `loopThread` is the `pthread_self` of the current one.
    private let generation = Atomic<UInt64>(0)
    private static let loopThread = Atomic<UInt>(0)

    /// Moves the watcher's loop to a new thread if `heldThread` runs it (a sink has held it for
    /// ``HandlerWatchdog/bound``); the held thread leaves the loop once its sink returns. The
    /// new thread has every suite re-read first: the held thread's round may hold their changes.
    /// Returns whether it moved.
    static func replace(heldThread: UInt) -> Bool {
        guard heldThread != 0, loopThread.compareExchange(expected: heldThread, desired: 0, ordering: .acquiringAndReleasing).exchanged else { return false }
        let watcher = shared
        let next = watcher.generation.add(1, ordering: .acquiringAndReleasing).newValue
        Thread.start(named: "prefs.watcher") { watcher.run(generation: next, rereadingEverySuite: true) }
        return true
    }

    /// File systems (statfs `f_type`) on which inotify reports only what this machine does
    /// through that mount, never writes by other machines or through other paths: suites on them
    /// are polled.
    static let fileSystemsWithoutRemoteEvents: [Int: String] = [
        0x6969: "NFS", 0x517B: "SMB", 0xFF53_4D42: "CIFS", 0xFE53_4D42: "SMB2", 0x6573_5546: "FUSE",
        0x0102_1997: "9P", 0x00C3_6400: "Ceph", 0x5346_414F: "AFS", 0x0BD0_0BD0: "Lustre",
        0x4750_4653: "GPFS", 0x0116_1970: "GFS2", 0x7461_636F: "OCFS2", 0x7375_7245: "Coda",
    ]

    /// The mask of ancestor watches: added to whatever the inode is watched for already.
    static let ancestorMask = UInt32(IN_MOVE_SELF) | UInt32(IN_DELETE_SELF) | UInt32(IN_ONLYDIR) | UInt32(IN_MASK_ADD)

    /// Adds a watch on the directory at `location`, opened by the same link-refusing walk as
    /// every write, and watched through its descriptor: a link swapped in below the trusted
    /// directory is never watched.
    private func addWatch(_ location: DirectoryLocation) -> Result<(CInt, FileIdentity?), PreferenceError> {
        guard fd >= 0 else {
            return .failure(PreferenceError(code: .watchFailed, message: "inotify is not available in this process.", path: location.path))
        }
        let dir: OpenDirectory
        do {
            guard let opened = try location.open(creating: false) else {
                return .failure(PreferenceError.system("open", .noSuchFileOrDirectory, path: location.path, doing: "watch"))
            }
            dir = opened
        } catch {
            return .failure(error)
        }
        defer { dir.close() }
        let identity = (try? Syscall.fstat(dir.fd).get()).map(FileIdentity.init)
        return Syscall.inotifyAddWatch(fd, dir.procPath, Self.mask)
            .map { ($0, identity) }
            .mapError { PreferenceError.system("inotify_add_watch", $0, path: location.path, doing: "watch") }
    }

    /// Watches the ancestors of the directory at `location` below and including its trusted
    /// directory (never above it) for being moved or deleted. Under the state lock.
    private func watchAncestors(of location: DirectoryLocation, in s: inout State) {
        var ancestor = location.trusted
        for component in location.components {
            if s.ancestors[ancestor] == nil, case .success(let wd) = Syscall.inotifyAddWatch(fd, ancestor, Self.ancestorMask) {
                s.ancestors[ancestor] = wd
            }
            ancestor += (ancestor == "/" ? "" : "/") + component
        }
    }

    /// After ancestors moved or vanished: every watched directory below one whose path no longer
    /// leads to the directory watched is dropped and waits, like a vanished one, for its path to
    /// come back; the ancestor watches below the moved ones are laid anew for the paths as they
    /// are now. Under the state lock.
    private func revalidate(_ s: inout State, into batch: inout Batch) {
        let moved = s.movedAncestors
        s.movedAncestors = []
        func isBelowMoved(_ path: String) -> Bool { moved.contains { path == $0 || path.hasPrefix($0 == "/" ? "/" : $0 + "/") } }
        let affected = s.watched.filter { isBelowMoved($0.value.path) }
        for (wd, var dir) in affected {
            let now = (try? dir.location.open(creating: false)).flatMap { $0 }.map { opened in
                defer { opened.close() }
                return (try? Syscall.fstat(opened.fd).get()).map(FileIdentity.init)
            }
            guard now == nil || now! != dir.identity else { continue }
            Syscall.inotifyRemoveWatch(fd, wd)
            s.watched[wd] = nil
            dir.identity = nil
            if let existing = s.vanished[dir.path] { dir.merge(existing) }
            s.vanished[dir.path] = dir
            if !dir.listeners.isEmpty { s.listings[dir.path] = s.listings[dir.path] ?? [] }
            batch.add(dir.sinks)
        }
        for (path, wd) in s.ancestors where isBelowMoved(path) {
            if s.watched[wd] == nil { Syscall.inotifyRemoveWatch(fd, wd) }
            s.ancestors[path] = nil
        }
        for dir in affected.values { watchAncestors(of: dir.location, in: &s) }
    }

    /// Starts watching `fileName` in the directory at `location`, or polls it when the directory
    /// is on a network or FUSE file system, or a watch cannot be added; `sink` hears of changes.
    /// - Returns: An identifier for ``unwatch(_:)``.
    func watch(_ location: DirectoryLocation, fileName: String, _ sink: @escaping Sink) -> UInt64 {
        let directory = location.path
        if case .success(let type) = Syscall.fileSystemType(directory), let name = Self.fileSystemsWithoutRemoteEvents[type] {
            logger.notice("\(directory) is on a \(name) file system, where inotify misses changes made by other machines; polling it every \(Self.pollInterval) ms.")
        } else {
            switch addWatch(location) {
            case .success(let (wd, identity)):
                return state.withLock { s in
                    s.nextID += 1
                    s.watched[wd, default: Directory(location: location, identity: identity)].suites[fileName, default: [:]][s.nextID] = (location.path + "/" + fileName, sink)
                    watchAncestors(of: location, in: &s)
                    return s.nextID
                }
            case .failure(let error):
                logger.warning("\(error) Polling every \(Self.pollInterval) ms instead.")
            }
        }
        let id = state.withLock { s in
            s.nextID += 1
            s.polled[s.nextID] = (directory + "/" + fileName, sink)
            return s.nextID
        }
        wake()
        return id
    }

    /// Wakes the watcher thread from an endless `poll`, to start polling.
    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Stops a ``watch(_:fileName:_:)``; a directory's watch goes when its last suite does.
    /// (Searches every directory: the watch descriptor changes when a vanished directory returns.)
    func unwatch(_ id: UInt64) {
        state.withLock { _ = $0.polled.removeValue(forKey: id) }
        removeFromEveryDirectory { dir in
            for name in dir.suites.keys where dir.suites[name]?.removeValue(forKey: id) != nil {
                if dir.suites[name]?.isEmpty == true { dir.suites[name] = nil }
            }
        }
    }

    /// Applies `drop` to every directory, watched or vanished, and removes the watches that
    /// nothing uses any more.
    private func removeFromEveryDirectory(_ drop: (inout Directory) -> Void) {
        let emptied = state.withLock { s -> [CInt] in
            for path in s.vanished.keys {
                drop(&s.vanished[path]!)
                if s.vanished[path]!.isUnused { s.vanished[path] = nil }
            }
            var emptied: [CInt] = []
            for wd in s.watched.keys {
                drop(&s.watched[wd]!)
                if s.watched[wd]!.isUnused {
                    s.watched[wd] = nil
                    emptied.append(wd)
                }
            }
            return emptied
        }
        for wd in emptied { Syscall.inotifyRemoveWatch(fd, wd) }
    }

    /// Calls `listener` with the name of every file written in, linked into or moved into the
    /// directory at `location` (a name may come more than once). Where the directory cannot be
    /// watched (no inotify instance or watch left, a network file system), its listing is polled
    /// instead, with a logged warning, as suites are.
    /// - Returns: An identifier for ``removeListener(_:)``.
    func addListener(_ location: DirectoryLocation, _ listener: @escaping @Sendable (String) -> Void) -> UInt64 {
        let directory = location.path
        var watch: Result<(CInt, FileIdentity?), PreferenceError>
        if case .success(let type) = Syscall.fileSystemType(directory), let name = Self.fileSystemsWithoutRemoteEvents[type] {
            watch = .failure(PreferenceError(code: .watchFailed, message: "\(directory) is on a \(name) file system, where inotify misses changes made by other machines.", path: directory))
        } else {
            watch = addWatch(location)
        }
        if case .failure(let error) = watch {
            logger.warning("\(error) Polling every \(Self.pollInterval) ms instead.")
        }
        let id = state.withLock { s in
            s.nextID += 1
            switch watch {
            case .success(let (wd, identity)):
                s.watched[wd, default: Directory(location: location, identity: identity)].listeners[s.nextID] = listener
                watchAncestors(of: location, in: &s)
            case .failure:
                s.listings[directory] = s.listings[directory] ?? Self.listing(location)
                s.vanished[directory, default: Directory(location: location)].listeners[s.nextID] = listener
            }
            return s.nextID
        }
        wake()
        return id
    }

    /// The names in a directory and their modification times, for polled listeners.
    private static func listing(_ location: DirectoryLocation) -> Set<String> {
        guard let dir = try? location.open(creating: false) else { return [] }
        defer { dir.close() }
        let names = (try? Syscall.directoryEntries(dir.fd).get()) ?? []
        return Set(names.map { name in
            let st = try? Syscall.lstatat(dir.fd, name).get()
            return "\(name)\u{0}\(st?.modificationNanoseconds ?? 0)\u{0}\(st?.st_ino ?? 0)"
        })
    }

    /// Removes a listener; a directory's watch goes when nothing else uses it.
    func removeListener(_ id: UInt64) {
        removeFromEveryDirectory { $0.listeners[id] = nil }
    }

    // MARK: The watcher thread

    private func run(generation mine: UInt64, rereadingEverySuite: Bool = false) {
        Self.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        var lastTick = ContinuousClock.now - .seconds(1)
        if rereadingEverySuite {
            let watchers = state.withLock { s in (s.watched.values.map(\.sinks) + s.vanished.values.map(\.sinks) + [s.polled]).flatMap(\.values) }
            for watcher in watchers { watcher.sink(.changed) }
        }
        while generation.load(ordering: .acquiring) == mine {
            let needsPolling = state.withLock { !$0.vanished.isEmpty || !$0.polled.isEmpty || !$0.movedAncestors.isEmpty }
            var ready = false
            if fd >= 0 {
                var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
                let sleepsForever = !needsPolling && wakeFD >= 0
                _ = poll(&descriptors, 2, sleepsForever ? -1 : Self.pollInterval)
                ready = descriptors[0].revents != 0
                if ready { _Stages.mark("N") }
                if descriptors[1].revents != 0 {
                    var count: UInt64 = 0
                    _ = read(wakeFD, &count, 8)
                }
            } else {
                usleep(UInt32(Self.pollInterval) * 1000)
            }
            while TestingHooks.watcherHeld.load(ordering: .relaxed) { usleep(1_000) }
            var batch = Batch()
            if ready { readEvents(buffer, bufferSize, into: &batch) }
            // At most once per poll interval, however many events arrive: a neighbour renaming
            // directories in a loop must not keep this thread from delivering changes.
            if needsPolling, ContinuousClock.now - lastTick >= .milliseconds(Int(Self.pollInterval)) {
                lastTick = ContinuousClock.now
                pollTick(into: &batch)
            }
            for (path, sink) in batch.reload.values {
                if batch.overflowed {
                    sink(.failed(PreferenceError(
                        code: .watchOverflowed,
                        message: "The inotify event queue overflowed; \(path) was re-read and diffed again, so no change is lost, but quick successive changes may arrive as one. Raise fs.inotify.max_queued_events if this recurs.",
                        path: path)))
                }
                sink(.changed)
                // Moved to another thread while the sink ran: that one does the rest.
                if generation.load(ordering: .acquiring) != mine { return }
            }
            for (listener, name) in batch.created { listener(name) }
        }
    }

    /// What one round of events asks for, gathered under the lock and acted on outside it.
    private struct Batch {
        var reload: [UInt64: Watcher] = [:]
        var created: [(@Sendable (String) -> Void, String)] = []
        var overflowed = false

        mutating func add(_ sinks: [UInt64: Watcher]) {
            reload.merge(sinks) { first, _ in first }
        }
    }

    /// Reads the events queued, until a read that did not fill the buffer: the queue was empty
    /// then, and what comes later wakes `poll` again (which saves the read that would only say
    /// `EAGAIN`).
    private func readEvents(_ buffer: UnsafeMutableRawPointer, _ size: Int, into batch: inout Batch) {
        let mostOfOneEvent = MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1
        var count = size
        while count > size - mostOfOneEvent {
            count = read(fd, buffer, size)
            guard count > 0 else { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = buffer + offset + MemoryLayout<inotify_event>.size
                let name = event.len > 0 ? String(cString: nameStart.assumingMemoryBound(to: CChar.self)) : ""
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
                handle(wd: event.wd, mask: event.mask, name: name, into: &batch)
            }
        }
    }

    private func handle(wd: CInt, mask: UInt32, name: String, into batch: inout Batch) {
        state.withLock { s in
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                logger.notice("inotify queue overflowed; re-reading every watched suite")
                batch.overflowed = true
                for dir in s.watched.values { batch.add(dir.sinks) }
                return
            }
            if mask & (UInt32(IN_MOVE_SELF) | UInt32(IN_DELETE_SELF)) != 0 {
                for (path, ancestor) in s.ancestors where ancestor == wd { s.movedAncestors.insert(path) }
            }
            guard var dir = s.watched[wd] else { return }
            if mask & (UInt32(IN_IGNORED) | UInt32(IN_MOVE_SELF) | UInt32(IN_DELETE_SELF)) != 0 {
                // The directory is gone (or moved away): its suites are gone from this path.
                // Wait for the path to come back; a moved directory's watch is dropped first.
                if mask & UInt32(IN_MOVE_SELF) != 0 { Syscall.inotifyRemoveWatch(fd, wd) }
                s.watched[wd] = nil
                if !dir.isUnused {
                    if let existing = s.vanished[dir.path] { dir.merge(existing) }
                    s.vanished[dir.path] = dir
                }
                // Listeners of a vanished directory hear of whatever appears once it is back.
                if !dir.listeners.isEmpty { s.listings[dir.path] = s.listings[dir.path] ?? [] }
                batch.add(dir.sinks)
                return
            }
            // This process's own writes too: their re-read finds the stamp of the version written.
            batch.add(dir.suites[name] ?? [:])
            if mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_CREATE)) != 0 {
                for listener in dir.listeners.values { batch.created.append((listener, name)) }
            }
        }
    }

    /// Re-arms vanished directories that are back, tells polled listeners of new or rewritten
    /// files, and re-reads polled suites (a re-read only stats the file unless it changed).
    private func pollTick(into batch: inout Batch) {
        state.withLock { s in
            if !s.movedAncestors.isEmpty { revalidate(&s, into: &batch) }
            for (path, dir) in s.vanished {
                let rearmed = addWatch(dir.location)
                if case .success(let (wd, identity)) = rearmed {
                    s.vanished[path] = nil
                    var merged = s.watched[wd] ?? Directory(location: dir.location, identity: identity)
                    merged.merge(dir)
                    s.watched[wd] = merged
                    watchAncestors(of: dir.location, in: &s)
                    batch.add(dir.sinks)
                }
                // Listeners hear of what appeared while the directory was polled or gone.
                guard !dir.listeners.isEmpty, let before = s.listings[path] else { continue }
                let now = Self.listing(dir.location)
                s.listings[path] = s.vanished[path] == nil ? nil : now
                for entry in now.subtracting(before) {
                    let name = String(entry.prefix { $0 != "\u{0}" })
                    for listener in dir.listeners.values { batch.created.append((listener, name)) }
                }
            }
            s.listings = s.listings.filter { s.vanished[$0.key]?.listeners.isEmpty == false }
            batch.add(s.polled)
        }
    }
}
