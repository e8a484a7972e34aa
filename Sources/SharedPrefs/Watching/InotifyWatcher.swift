#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims
import FoundationEssentials
import SharedPrefsLocking
import Synchronization
import SystemPackage

/// What a watched suite's subscriber is told (``SuiteBackend/subscribe(_:)``). Never called under
/// the watcher's lock: a sink may release its store, whose release unwatches (``Batch``).
typealias Sink = @Sendable (BackendEvent) -> Void

/// A watched suite: its path, for messages, and its sink.
typealias Watcher = (path: String, sink: Sink)

/// One inotify instance per process, one watch per directory, and reader threads that turn events
/// into store re-reads (a burst is one re-read; an overflow re-reads everything; a vanished
/// directory, a failed watch, or a network or FUSE file system is polled, with a warning).
///
/// Readers wait in one epoll instance on the inotify descriptor (`EPOLLONESHOT`: one wake-up per
/// event), a counting eventfd of shared-out work, and a poll timer armed only while something is
/// polled. A reader about to run work that may block starts another if none would be free (up to
/// ``maximumReaders``), so a blocked handler holds only its own thread. HowItWorks has the rest.
final class InotifyWatcher: Sendable {
    /// The process's watcher; in a child forked without exec, a new one that takes the parent's
    /// watches over (``init(takingOver:)``).
    static var shared: InotifyWatcher {
        let forks = sharedprefs_fork_count()
        return current.withLock { current in
            if let current, current.forks == forks { return current.watcher }
            let watcher = InotifyWatcher(takingOver: current?.watcher)
            // A child forked later takes over at once: its observers hear changes whether or not
            // it calls the library first (a pre-fork server's workers).
            if current == nil { sharedprefs_set_after_fork_in_child { _ = InotifyWatcher.shared } }
            current = (forks, watcher)
            return watcher
        }
    }
    private static let current = Lock<(forks: UInt, watcher: InotifyWatcher)?>(nil)

    /// `IN_CREATE` notices a suite published with `link(2)`; `IN_ATTRIB` a mode or owner change, which
    /// decides whether a system layer counts.
    static let mask: UInt32 =
        UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)
        | UInt32(IN_ATTRIB) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
    /// How often polled suites and vanished directories are checked, in milliseconds.
    static let pollInterval = 100
    /// The most reader threads at once (sinks or listeners that may block at once).
    static let maximumReaders = 64
    /// The most readers kept free once their work is done: a third stays once two were busy at once,
    /// rather than a thread started and ended per change.
    static let freeReaders = 3

    private struct Directory {
        var location: DirectoryLocation
        /// Device and inode of the directory watched, to tell when its path leads elsewhere.
        var identity: FileIdentity?
        /// On a file system where inotify misses other machines' changes: polled for good.
        var pollOnly = false
        var path: String { location.path }
        /// The word of its bell (``Bell``) this process rings for the others or waits on.
        var bell: Int? = nil
        /// The bell's value when this process last heard it.
        var heard: UInt32 = 0
        /// The suites watched in it, by file name and subscription.
        var suites: [String: [UInt64: Watcher]] = [:]
        /// Told the name of every file written in or moved into the directory.
        var listeners: [UInt64: @Sendable (String) -> Void] = [:]
        /// Every suite's sink, with the suite's path.
        var sinks: [UInt64: Watcher] { suites.values.reduce(into: [:]) { $0.merge($1) { first, _ in first } } }
        var isUnused: Bool { suites.isEmpty && listeners.isEmpty }

        mutating func merge(_ other: Directory) {
            bell = bell ?? other.bell
            suites.merge(other.suites) { $0.merging($1) { first, _ in first } }
            listeners.merge(other.listeners) { first, _ in first }
        }
    }

    private struct State {
        var watched: [CInt: Directory] = [:]
        /// Directories vanished or unwatchable, by path, waiting to be watched again, and those polled
        /// for good (``Directory/pollOnly``).
        var vanished: [String: Directory] = [:]
        /// Listing of directories whose listeners are polled, by path.
        var listings: [String: Set<String>] = [:]
        /// Suites that could not be watched and are polled.
        var polled: [UInt64: Watcher] = [:]
        /// Directories heard through their bells, rung by another process of this user, by identity.
        var belled: [FileIdentity: Directory] = [:]
        /// The directories whose duty this process has (it holds their locks), by identity.
        var duties: Set<FileIdentity> = []
        /// The directories whose duty a thread of this process waits to take over.
        var standing: Set<FileIdentity> = []
        /// Threads that wait on bells (``waitOnBells()``), and how many of them run re-reads.
        var bellThreads = 0
        var bellsBusy = 0
        /// Of those, how many run re-reads that may run handlers (``bellGuard`` is armed then).
        var bellsGuarded = 0
        /// Watches on ancestors of watched directories, for `IN_MOVE_SELF` and `IN_DELETE_SELF` only.
        var ancestors: [String: CInt] = [:]
        /// Ancestors that moved or vanished, whose descendants are checked at the next poll tick.
        var movedAncestors: Set<String> = []
        /// The last subscription or listener identifier handed out.
        var nextID: UInt64 = 0
        /// Work a reader found for other readers, one count of `work` each, in order.
        var jobs: [@Sendable () -> Void] = []
        /// Reader threads, and how many run work that may block (the others wait or read events).
        var readers = 0
        var busy = 0
        var timerArmed = false

        var needsPolling: Bool { !vanished.isEmpty || !polled.isEmpty || !movedAncestors.isEmpty }

        /// The bells this process rings: those of the directories it is on duty for.
        var ringing: Set<Int> { Set(watched.values.compactMap(\.bell)) }

        /// Lets go of the duties no watched or vanished directory needs any more.
        mutating func settleDuties() {
            let needed = Set((Array(watched.values) + vanished.values).filter { $0.bell != nil }.compactMap(\.identity))
            for identity in duties.subtracting(needed) { Bell.shared?.releaseDuty(identity) }
            duties.formIntersection(needed)
        }

        /// Counts up to `wanted` more readers, within ``maximumReaders``; returns how many to start.
        mutating func start(_ wanted: Int) -> Int {
            let count = max(0, min(wanted, InotifyWatcher.maximumReaders - readers))
            readers += count
            return count
        }
    }

    /// The inotify instance, made at the first watch: -2 before, -1 where there is none.
    private let inotify: Atomic<CInt>
    private var fd: CInt { inotify.load(ordering: .acquiring) }
    /// Rung when the directories heard through bells change; the bell thread waits on it too.
    nonisolated(unsafe) private let control = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    /// Where the readers wait: `fd` (one-shot), `work`, and `timer` (one-shot).
    private let epoll: CInt
    /// Counts the jobs in ``State/jobs``: each read takes one.
    private let work: CInt
    /// Expires every ``pollInterval`` while something is polled.
    private let timer: CInt
    /// Armed while a bell thread runs re-reads that may run handlers (``InlineHandlers``): expiring
    /// with them still running, it starts another bell thread.
    private let bellGuard: CInt
    private let state = Lock(State())

    /// - Parameter old: The watcher of the process this one was forked from: its directories are
    /// watched anew at the first poll tick, and their suites re-read.
    private init(takingOver old: InotifyWatcher? = nil) {
        // Without an epoll instance, one reader polls everything (no inotify then).
        control.initialize(to: 0)
        switch Syscall.epollCreate() {
        case .success(let epoll):
            self.epoll = epoll
            inotify = Atomic(-2)
        case .failure(let errno):
            epoll = -1
            inotify = Atomic(-1)
            logger.warning("\(PreferenceError.system("epoll_create1", errno, path: "inotify", doing: "start watching with")) Every suite is polled every \(Self.pollInterval) ms instead.")
        }
        work = (try? Syscall.semaphoreDescriptor().get()) ?? -1
        timer = (try? Syscall.timerDescriptor().get()) ?? -1
        bellGuard = (try? Syscall.timerDescriptor().get()) ?? -1
        // One-shot, re-armed once a count is taken: one job wakes one reader, not every waiting one.
        _ = Syscall.epollAdd(self.epoll, work, once: true)
        _ = Syscall.epollAdd(self.epoll, timer, once: true)
        _ = Syscall.epollAdd(self.epoll, bellGuard, once: true)
        let readers = self.epoll >= 0 ? 2 : 1
        let inherited = old?.state.withLock { $0 }
        if let old {
            for fd in [old.fd, old.epoll, old.work, old.timer, old.bellGuard] where fd >= 0 { Syscall.close(fd) }
        }
        state.withLock { s in
            s.readers = readers
            guard let inherited else { return }
            (s.nextID, s.polled, s.listings) = (inherited.nextID, inherited.polled, inherited.listings)
            // Watched here anew at the first poll tick. The parent's duties are not this process's.
            for var dir in Array(inherited.vanished.values) + inherited.watched.values + inherited.belled.values {
                dir.bell = nil
                s.vanished[dir.path, default: Directory(location: dir.location, identity: dir.identity, pollOnly: dir.pollOnly)].merge(dir)
            }
            armTimer(&s)
        }
        for _ in 0..<readers { Threads.start(named: "prefs.watcher") { [self] in read() } }
    }

    /// File systems (statfs `f_type`) on which inotify misses other machines' writes: polled.
    static let fileSystemsWithoutRemoteEvents: [Int: String] = [
        0x6969: "NFS", 0x517B: "SMB", 0xFF53_4D42: "CIFS", 0xFE53_4D42: "SMB2", 0x6573_5546: "FUSE",
        0x0102_1997: "9P", 0x00C3_6400: "Ceph", 0x5346_414F: "AFS", 0x0BD0_0BD0: "Lustre",
        0x4750_4653: "GPFS", 0x0116_1970: "GFS2", 0x7461_636F: "OCFS2", 0x7375_7245: "Coda",
    ]

    /// The mask of ancestor watches: added to whatever the inode is watched for already.
    static let ancestorMask = UInt32(IN_MOVE_SELF) | UInt32(IN_DELETE_SELF) | UInt32(IN_ONLYDIR) | UInt32(IN_MASK_ADD)

    /// Why the directory at `location` is polled, if its file system is remote. Call it without the lock.
    private static func remoteFileSystem(_ location: DirectoryLocation) -> String? {
        guard case .success(let type) = Syscall.fileSystemType(location.path) else { return nil }
        return fileSystemsWithoutRemoteEvents[type]
    }

    /// The inotify instance, made on first use and armed in the epoll instance; -1 where there is none.
    private func inotifyDescriptor() -> CInt {
        if fd != -2 { return fd }
        let made = state.withLock { _ -> Result<CInt, Errno> in
            if fd != -2 { return .success(fd) }
            let made = Syscall.inotifyInit(CInt(IN_CLOEXEC | IN_NONBLOCK))
            if case .success(let fd) = made { _ = Syscall.epollAdd(epoll, fd, once: true) }
            inotify.store((try? made.get()) ?? -1, ordering: .releasing)
            return made
        }
        if case .failure(let errno) = made {
            logger.warning("\(PreferenceError.system("inotify_init1", errno, path: "inotify", doing: "start watching with")) Suites that no other process of this user watches are polled every \(Self.pollInterval) ms instead.")
        }
        return fd
    }

    /// Opens the directory at `location` by the link-refusing walk of every write. Call it without
    /// the lock.
    private func open(_ location: DirectoryLocation) -> Result<(OpenDirectory, FileIdentity?), PreferenceError> {
        do {
            guard let dir = try location.open(creating: false) else {
                return .failure(PreferenceError.system("open", .noSuchFileOrDirectory, path: location.path, doing: "watch"))
            }
            return .success((dir, (try? Syscall.fstat(dir.fd).get()).map(FileIdentity.init)))
        } catch {
            return .failure(error)
        }
    }

    /// Adds a watch on the directory open as `dir`, through its descriptor.
    private func addWatch(_ dir: OpenDirectory, _ location: DirectoryLocation) -> Result<CInt, PreferenceError> {
        let fd = inotifyDescriptor()
        guard fd >= 0 else {
            return .failure(PreferenceError(code: .watchFailed, message: "inotify is not available in this process.", path: location.path))
        }
        return Syscall.inotifyAddWatch(fd, dir.procPath, Self.mask)
            .mapError { PreferenceError.system("inotify_add_watch", $0, path: location.path, doing: "watch") }
    }

    /// Adds a watch on the directory at `location` (``open(_:)``, ``addWatch(_:_:)``).
    private func addWatch(_ location: DirectoryLocation) -> Result<(CInt, FileIdentity?), PreferenceError> {
        open(location).flatMap { dir, identity in
            defer { dir.close() }
            return addWatch(dir, location).map { ($0, identity) }
        }
    }

    /// How this process hears a directory.
    private enum Attachment {
        /// Through an inotify watch of its own; `duty`: the bell word it rings for the others.
        case watch(CInt, FileIdentity?, duty: Int?)
        /// Through its bell, which another process rings; `heard`: the bell's value before.
        case bell(FileIdentity, slot: Int, heard: UInt32)
    }

    /// Hears the directory at `location` through its bell where another process rings it, or else
    /// watches it and rings for the others. Call it without the lock.
    private func attach(_ location: DirectoryLocation) -> Result<Attachment, PreferenceError> {
        open(location).flatMap { dir, identity in
            defer { dir.close() }
            guard Bell.canWait, let bell = Bell.shared, let identity, epoll >= 0 else {
                return addWatch(dir, location).map { .watch($0, identity, duty: nil) }
            }
            let slot = bell.slot(of: identity)
            let heard = bell.value(slot)
            // A directory this process watches already (for a listener) stays watched; at most
            // FUTEX_WAITV_MAX bells are waited on, one word being the waiter's own.
            let watching = state.withLock { s in
                s.watched.values.contains { $0.identity == identity } || s.belled.count >= Int(FUTEX_WAITV_MAX) - 1
            }
            if !watching {
                guard bell.takeDuty(identity) else { return .success(.bell(identity, slot: slot, heard: heard)) }
                state.withLock { _ = $0.duties.insert(identity) }
            }
            let watch = addWatch(dir, location)
            if case .failure = watch { state.withLock { $0.settleDuties() } }
            return watch.map { .watch($0, identity, duty: watching ? nil : slot) }
        }
    }

    /// Watches the ancestors of `location` up to its trusted directory for moves and deletions.
    private func watchAncestors(of location: DirectoryLocation) {
        guard fd >= 0 else { return }
        var ancestor = location.trusted
        var added: [(String, CInt)] = []
        for component in location.components {
            if case .success(let wd) = Syscall.inotifyAddWatch(fd, ancestor, Self.ancestorMask) { added.append((ancestor, wd)) }
            ancestor += (ancestor == "/" ? "" : "/") + component
        }
        state.withLock { s in
            for (path, wd) in added { s.ancestors[path] = wd }
        }
    }

    /// Arms the poll timer while something is polled (under the state lock).
    private func armTimer(_ s: inout State) {
        guard s.needsPolling != s.timerArmed else { return }
        s.timerArmed = s.needsPolling
        Syscall.setTimer(timer, every: s.timerArmed ? Self.pollInterval : 0)
    }

    /// Starts watching `fileName` in the directory at `location`, or polls it when the directory
    /// is on a network or FUSE file system, or a watch cannot be added; `sink` hears of changes.
    /// - Returns: An identifier for ``unwatch(_:)``.
    func watch(_ location: DirectoryLocation, fileName: String, _ sink: @escaping Sink) -> UInt64 {
        let directory = location.path
        if let name = Self.remoteFileSystem(location) {
            logger.notice("\(directory) is on a \(name) file system, where inotify misses changes made by other machines; polling it every \(Self.pollInterval) ms.")
        } else {
            switch attach(location) {
            case .success(let attachment):
                let (id, bell) = state.withLock { s in
                    s.nextID += 1
                    var dir = Directory(location: location)
                    dir.suites[fileName] = [s.nextID: (location.path + "/" + fileName, sink)]
                    return (s.nextID, place(dir, attachment, &s))
                }
                attached(location, belled: bell)
                return id
            case .failure(let error):
                logger.warning("\(error) Polling every \(Self.pollInterval) ms instead.")
            }
        }
        return state.withLock { s in
            s.nextID += 1
            s.polled[s.nextID] = (directory + "/" + fileName, sink)
            armTimer(&s)
            return s.nextID
        }
    }

    /// Files `dir` as `attachment` says; its identity if it is heard through its bell.
    private func place(_ dir: Directory, _ attachment: Attachment, _ s: inout State) -> FileIdentity? {
        var dir = dir
        dir.bell = nil
        switch attachment {
        case .watch(let wd, let identity, let duty):
            s.watched[wd, default: Directory(location: dir.location, identity: identity, bell: duty)].merge(dir)
            return nil
        case .bell(let identity, let slot, let heard):
            s.belled[identity, default: Directory(location: dir.location, identity: identity, bell: slot, heard: heard)].merge(dir)
            return identity
        }
    }

    /// After the directory at `location` was placed (``place(_:_:_:)``): watches its ancestors
    /// if it is watched, or waits on its bell and for its duty.
    private func attached(_ location: DirectoryLocation, belled identity: FileIdentity?) {
        guard let identity else { return watchAncestors(of: location) }
        let (listening, standing) = state.withLock { s in
            defer { s.bellThreads = max(s.bellThreads, 1) }
            return (s.bellThreads > 0, !s.standing.insert(identity).inserted)
        }
        sharedprefs_futex_ring_private(control)
        if !listening { Threads.start(named: "prefs.bells") { [self] in waitOnBells() } }
        if !standing { Threads.start(named: "prefs.bell-duty") { [self] in standBy(identity) } }
    }

    /// How long re-reads run on a thread that waits on bells before another such thread starts.
    static let bellGuardInterval = 250

    /// The thread that waits on the bells of the directories heard through them (and on ``control``),
    /// and re-reads their suites itself (a hand-over would cost a second wake-up per change). While
    /// its re-reads may run handlers, ``bellGuard`` is armed (``guardBells()``).
    private func waitOnBells() {
        guard let bell = Bell.shared else { return }
        while true {
            let own = futex_waitv(val: UInt64(sharedprefs_atomic_load(control)), uaddr: UInt64(UInt(bitPattern: control)), flags: UInt32(FUTEX_32 | FUTEX_PRIVATE_FLAG), __reserved: 0)
            let belled = state.withLock { s in s.belled.map { (identity: $0.key, slot: $0.value.bell!, heard: $0.value.heard) } }
            var waiters = [own] + belled.map { bell.waiter($0.slot, expecting: $0.heard) }
            if sharedprefs_futex_waitv(&waiters, UInt32(waiters.count)) < 0, errno != EAGAIN, errno != EINTR {
                logger.warning("\(PreferenceError.system("futex_waitv", Errno(rawValue: errno), path: bell.path, doing: "wait on")) The suites heard through it are polled every \(Self.pollInterval) ms instead.")
                return state.withLock { s in
                    for dir in s.belled.values { s.polled.merge(dir.sinks) { first, _ in first } }
                    s.belled = [:]
                    s.bellThreads -= 1
                    armTimer(&s)
                }
            }
            var rung: [(identity: FileIdentity, value: UInt32, gone: Bool)] = []
            for (identity, slot, heard) in belled {
                let now = bell.value(slot)
                guard now != heard else { continue }
                // Where its path leads now, if it moved or went.
                var gone = false
                if Bell.moved(from: heard, to: now), let location = state.withLock({ $0.belled[identity]?.location }) {
                    if case .success(let (dir, found)) = open(location) {
                        dir.close()
                        gone = found != identity
                    } else {
                        gone = true
                    }
                }
                rung.append((identity, now, gone))
            }
            guard !rung.isEmpty else { continue }
            var batch = Batch()
            let guarded = InlineHandlers.count.load(ordering: .relaxed) > 0
            state.withLock { s in
                for (identity, value, gone) in rung where s.belled[identity] != nil {
                    s.belled[identity]!.heard = value
                    for sinks in s.belled[identity]!.suites.values { batch.add(sinks) }
                    guard gone, var dir = s.belled.removeValue(forKey: identity) else { continue }
                    dir.bell = nil
                    s.vanished[dir.path, default: Directory(location: dir.location, identity: identity)].merge(dir)
                }
                if rung.contains(where: \.gone) { armTimer(&s) }
                s.bellsBusy += 1
                if guarded {
                    s.bellsGuarded += 1
                    if s.bellsGuarded == 1 { Syscall.setTimer(bellGuard, every: Self.bellGuardInterval) }
                }
            }
            for job in batch.jobs { job() }
            let ends = state.withLock { s in
                s.bellsBusy -= 1
                if guarded {
                    s.bellsGuarded -= 1
                    if s.bellsGuarded == 0 { Syscall.setTimer(bellGuard, every: 0) }
                }
                let ends = s.bellThreads - s.bellsBusy > 1
                if ends { s.bellThreads -= 1 }
                return ends
            }
            if ends { return }
        }
    }

    /// When ``bellGuard`` expires: another thread that waits on bells, if every one runs re-reads.
    private func guardBells() {
        _ = Syscall.take(bellGuard)
        let start = state.withLock { s in
            guard s.bellThreads > 0, s.bellThreads == s.bellsBusy else { return false }
            s.bellThreads += 1
            return true
        }
        if start { Threads.start(named: "prefs.bells") { [self] in waitOnBells() } }
        Syscall.epollRearm(epoll, bellGuard)
    }

    /// Blocks until this process has the duty of the directory (the process on duty died or let it
    /// go), then hands it to the next poll tick, which watches it, re-reads and rings once.
    private func standBy(_ identity: FileIdentity) {
        guard let bell = Bell.shared else { return }
        let taken = bell.takeDuty(identity, waiting: true)
        state.withLock { s in
            s.standing.remove(identity)
            if taken { s.duties.insert(identity) }
            if var dir = s.belled.removeValue(forKey: identity) {
                if !taken { dir.bell = nil }
                s.vanished[dir.path, default: Directory(location: dir.location, identity: identity)].merge(dir)
            }
            s.settleDuties()
            armTimer(&s)
        }
        sharedprefs_futex_ring_private(control)
    }

    /// Stops a ``watch(_:fileName:_:)``; a directory's watch goes with its last suite.
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
            for identity in s.belled.keys {
                drop(&s.belled[identity]!)
                if s.belled[identity]!.isUnused { s.belled[identity] = nil }
            }
            var emptied: [CInt] = []
            for wd in s.watched.keys {
                drop(&s.watched[wd]!)
                if s.watched[wd]!.isUnused {
                    s.watched[wd] = nil
                    emptied.append(wd)
                }
            }
            s.settleDuties()
            return emptied
        }
        for wd in emptied { Syscall.inotifyRemoveWatch(fd, wd) }
    }

    /// Calls `listener` with the name of every file written, linked or moved into the directory at
    /// `location` (a name may come more than once); polls its listing where it cannot be watched.
    /// - Returns: An identifier for ``removeListener(_:)``.
    func addListener(_ location: DirectoryLocation, _ listener: @escaping @Sendable (String) -> Void) -> UInt64 {
        let directory = location.path
        let remote = Self.remoteFileSystem(location)
        let watch = remote == nil
            ? addWatch(location)
            : .failure(PreferenceError(code: .watchFailed, message: "\(directory) is on a \(remote!) file system, where inotify misses changes made by other machines.", path: directory))
        if case .failure(let error) = watch {
            logger.warning("\(error) Polling every \(Self.pollInterval) ms instead.")
        }
        let listing = remote != nil || watch.isFailure ? Self.listing(location) : []
        let id = state.withLock { s in
            s.nextID += 1
            switch watch {
            case .success(let (wd, identity)):
                s.watched[wd, default: Directory(location: location, identity: identity)].listeners[s.nextID] = listener
            case .failure:
                s.listings[directory] = s.listings[directory] ?? listing
                s.vanished[directory, default: Directory(location: location, pollOnly: remote != nil)].listeners[s.nextID] = listener
                armTimer(&s)
            }
            return s.nextID
        }
        if case .success = watch { watchAncestors(of: location) }
        return id
    }

    /// The names in a directory and their modification times, for polled listeners. Lists the
    /// directory: call it without the lock.
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

    // MARK: The readers

    /// A reader thread: waits for one of the epoll instance's descriptors, does what it asks,
    /// shares out what more it found, and waits again, unless enough readers are free already.
    private func read() {
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let ready = epoll >= 0 ? Syscall.epollWaitOne(epoll) : .success(timer)
            if epoll < 0 { usleep(useconds_t(Self.pollInterval) * 1000) }
            var batch = Batch()
            var job: (@Sendable () -> Void)? = nil
            switch ready {
            case .success(fd):
                // Reading events never blocks.
                _Stages.mark("N")
                #if SHAREDPREFS_TESTING
                while TestingHooks.watcherHeld.load(ordering: .relaxed) { usleep(1_000) }
                #endif
                readEvents(buffer, bufferSize, into: &batch)
                Syscall.epollRearm(epoll, fd)
            case .success(timer):
                // A poll tick asks file systems, which may hang: another reader stays free.
                start(state.withLock { $0.readers - $0.busy <= 1 && epoll >= 0 ? $0.start(1) : 0 })
                _ = Syscall.take(timer)
                pollTick(into: &batch)
                if epoll >= 0 { Syscall.epollRearm(epoll, timer) }
            case .success(bellGuard):
                guardBells()
            case .success(work):
                if Syscall.take(work) { job = state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() } }
                Syscall.epollRearm(epoll, work)
            default: break
            }
            // The other processes first. (Which renamed files a writer rang for is asked of the
            // file system here, outside the lock.)
            for (slot, path) in batch.renamed where !batch.rings.contains(slot) && !Self.rang(for: path, slot) {
                batch.rings.insert(slot)
            }
            if !batch.rings.isEmpty, let bell = Bell.shared {
                for slot in batch.rings { bell.ring(slot, moved: batch.moved.contains(slot)) }
            }
            // The first job here, the others to other readers (all here, without a way to share).
            var jobs = batch.jobs
            if job == nil, !jobs.isEmpty { job = jobs.removeFirst() }
            guard let job else { continue }
            let shared = epoll >= 0 && work >= 0 ? jobs : []
            if !shared.isEmpty { jobs = [] }
            begin(shared)
            job()
            for job in jobs { job() }
            if end() { return }
        }
    }

    /// Before work that may block: counts this reader busy, shares out `jobs`, and starts a reader
    /// for each and one more to stay free, less those free already.
    private func begin(_ jobs: [@Sendable () -> Void]) {
        let helpers = state.withLock { s in
            s.busy += 1
            s.jobs += jobs
            return epoll >= 0 ? s.start(jobs.count + 1 - (s.readers - s.busy)) : 0
        }
        if !jobs.isEmpty { Syscall.post(work, UInt64(jobs.count)) }
        start(helpers)
    }

    /// After ``begin(_:)``'s work: whether this reader ends (more than ``freeReaders`` would be
    /// free, this one among them).
    private func end() -> Bool {
        state.withLock { s in
            s.busy -= 1
            guard s.readers - s.busy > Self.freeReaders else { return false }
            s.readers -= 1
            return true
        }
    }

    /// Starts `count` reader threads (counted already by ``State/start(_:)``).
    private func start(_ count: Int) {
        for _ in 0..<count { Threads.start(named: "prefs.watcher") { [self] in read() } }
    }

    /// What one round of events asks for, gathered under the lock and acted on outside it.
    private struct Batch {
        var reload: [UInt64: Watcher] = [:]
        var created: [(@Sendable (String) -> Void, String)] = []
        var overflowed = false
        /// The bells to ring for the other processes, and those of them whose directory moved or
        /// went (the others look where it is only then).
        var rings: Set<Int> = []
        var moved: Set<Int> = []
        /// Files renamed into directories this process rings for: rung for unless a writer of
        /// this user rang already (``rang(for:_:)``).
        var renamed: [(slot: Int, path: String)] = []

        mutating func add(_ sinks: [UInt64: Watcher]) {
            reload.merge(sinks) { first, _ in first }
        }

        /// One job per suite to re-read and per listener to tell.
        var jobs: [@Sendable () -> Void] {
            let overflowed = overflowed
            return reload.values.map { (path, sink) -> @Sendable () -> Void in
                {
                    if overflowed {
                        sink(.failed(PreferenceError(
                            code: .watchOverflowed,
                            message: "The inotify event queue overflowed; \(path) was re-read and diffed again, so no change is lost, but quick successive changes may arrive as one. Raise fs.inotify.max_queued_events if this recurs.",
                            path: path)))
                    }
                    sink(.changed)
                }
            } + created.map { (listener, name) -> @Sendable () -> Void in { listener(name) } }
        }
    }

    /// Whether the file at `path` is the one a writer of this user rang the bell `slot` for.
    private static func rang(for path: String, _ slot: Int) -> Bool {
        guard let bell = Bell.shared, case .success(let st) = Syscall.lstatat(AT_FDCWD, path) else { return false }
        return bell.rang(for: UInt64(st.st_ino), slot)
    }

    /// Reads the events queued, until a read that did not fill the buffer (the queue was empty).
    private func readEvents(_ buffer: UnsafeMutableRawPointer, _ size: Int, into batch: inout Batch) {
        let mostOfOneEvent = MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1
        var count = size
        while count > size - mostOfOneEvent {
            count = Glibc.read(fd, buffer, size)
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
        var drop: CInt? = nil
        state.withLock { s in
            defer { armTimer(&s) }
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                logger.notice("inotify queue overflowed; re-reading every watched suite")
                batch.overflowed = true
                for dir in s.watched.values { batch.add(dir.sinks) }
                batch.rings.formUnion(s.ringing)
                return
            }
            if mask & (UInt32(IN_MOVE_SELF) | UInt32(IN_DELETE_SELF)) != 0 {
                for (path, ancestor) in s.ancestors where ancestor == wd {
                    s.movedAncestors.insert(path)
                    // The processes that hear directories below it through bells look again.
                    batch.rings.formUnion(s.ringing)
                    batch.moved.formUnion(s.ringing)
                }
            }
            guard var dir = s.watched[wd] else { return }
            // For the others: not for a hidden file (a lock, a temporary file: never a suite),
            // nor for a file a writer of this user renamed in and rang for already.
            if let slot = dir.bell, !name.hasPrefix(".") {
                if mask & UInt32(IN_MOVED_TO) == 0 { batch.rings.insert(slot) } else { batch.renamed.append((slot, dir.path + "/" + name)) }
            }
            if mask & (UInt32(IN_IGNORED) | UInt32(IN_MOVE_SELF) | UInt32(IN_DELETE_SELF)) != 0 {
                // The directory is gone (or moved away): its suites are gone from this path.
                // Wait for the path to come back; a moved directory's watch is dropped first.
                if mask & UInt32(IN_MOVE_SELF) != 0 { drop = wd }
                if let slot = dir.bell { batch.moved.insert(slot) }
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
            // The directory's own mode or owner changed: everything read through it may count
            // differently now.
            if name.isEmpty, mask & UInt32(IN_ATTRIB) != 0 { return batch.add(dir.sinks) }
            // This process's own writes too: their re-read finds the stamp of the version written.
            batch.add(dir.suites[name] ?? [:])
            if mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_CREATE)) != 0 {
                for listener in dir.listeners.values { batch.created.append((listener, name)) }
            }
        }
        if let drop { Syscall.inotifyRemoveWatch(fd, drop) }
    }

    /// Once per ``pollInterval`` while something is polled: revalidates below moved ancestors, watches
    /// directories that are back, tells polled listeners, re-reads polled suites. Outside the lock.
    private func pollTick(into batch: inout Batch) {
        let (moved, vanished, polled) = state.withLock { s in
            defer { s.movedAncestors = [] }
            return (s.movedAncestors, s.vanished, s.polled)
        }
        if !moved.isEmpty { revalidate(below: moved, into: &batch) }
        batch.add(polled)
        // Outside the lock: which directories are back, and what polled listeners' directories hold.
        var rearmed: [String: Attachment] = [:]
        var unwatchable: [String: PreferenceError] = [:]
        var listings: [String: Set<String>] = [:]
        for (path, dir) in vanished {
            // A directory with listeners is watched (``addListener(_:_:)``).
            if !dir.pollOnly {
                if !dir.listeners.isEmpty, case .success(let (wd, identity)) = addWatch(dir.location) {
                    rearmed[path] = .watch(wd, identity, duty: nil)
                } else if dir.listeners.isEmpty {
                    switch attach(dir.location) {
                    case .success(let attachment): rearmed[path] = attachment
                    case .failure(let error):
                        // Back, but no watch can be added (no inotify instance or watch left):
                        // its suites are polled, and its duty goes to a process that may have one.
                        if case .success(let (opened, _)) = open(dir.location) {
                            opened.close()
                            unwatchable[path] = error
                        }
                    }
                }
            }
            if !dir.listeners.isEmpty { listings[path] = Self.listing(dir.location) }
        }
        var stale: [CInt] = []
        var bells: [String: FileIdentity?] = [:]
        state.withLock { s in
            defer { armTimer(&s) }
            for (path, attachment) in rearmed {
                guard let dir = s.vanished.removeValue(forKey: path) else {
                    if case .watch(let wd, _, _) = attachment { stale.append(wd) }  // unwatched meanwhile
                    continue
                }
                bells.updateValue(place(dir, attachment, &s), forKey: path)
                // What changed meanwhile is heard here, and by the processes that hear the directory
                // through the bell this process rings now (a duty taken over, a directory back).
                batch.add(dir.sinks)
                if case .watch(_, _, let duty?) = attachment { batch.rings.insert(duty) }
            }
            for path in unwatchable.keys {
                guard let dir = s.vanished.removeValue(forKey: path) else { continue }
                s.polled.merge(dir.sinks) { first, _ in first }
                batch.add(dir.sinks)
            }
            s.settleDuties()
            // Listeners hear of what appeared while the directory was polled or gone.
            for (path, now) in listings {
                guard let before = s.listings[path], let dir = s.vanished[path] ?? s.watched.values.first(where: { $0.path == path }) else { continue }
                s.listings[path] = s.vanished[path] == nil ? nil : now
                for entry in now.subtracting(before) {
                    let name = String(entry.prefix { $0 != "\u{0}" })
                    for listener in dir.listeners.values { batch.created.append((listener, name)) }
                }
            }
            s.listings = s.listings.filter { s.vanished[$0.key]?.listeners.isEmpty == false }
        }
        for wd in stale where state.withLock({ $0.watched[wd] == nil }) { Syscall.inotifyRemoveWatch(fd, wd) }
        for dir in vanished.values { if let belled = bells[dir.path] { attached(dir.location, belled: belled) } }
        for error in unwatchable.values { logger.warning("\(error) Polling every \(Self.pollInterval) ms instead.") }
    }

    /// After ancestors moved: every watched directory whose path leads elsewhere now is dropped and
    /// waits like a vanished one; ancestor watches below are laid anew.
    private func revalidate(below moved: Set<String>, into batch: inout Batch) {
        func isBelowMoved(_ path: String) -> Bool { moved.contains { path == $0 || path.hasPrefix($0 == "/" ? "/" : $0 + "/") } }
        let affected = state.withLock { s in s.watched.filter { isBelowMoved($0.value.path) } }
        // Outside the lock: where each path leads now.
        let gone = affected.filter { _, dir in
            let now = (try? dir.location.open(creating: false)).flatMap { $0 }.map { opened in
                defer { opened.close() }
                return (try? Syscall.fstat(opened.fd).get()).map(FileIdentity.init)
            }
            return now == nil || now! != dir.identity
        }
        let dropped = state.withLock { s -> [CInt] in
            defer { armTimer(&s) }
            var dropped: [CInt] = []
            for wd in gone.keys {
                guard var dir = s.watched.removeValue(forKey: wd) else { continue }
                dropped.append(wd)
                dir.identity = nil
                if let existing = s.vanished[dir.path] { dir.merge(existing) }
                s.vanished[dir.path] = dir
                if !dir.listeners.isEmpty { s.listings[dir.path] = s.listings[dir.path] ?? [] }
                batch.add(dir.sinks)
            }
            for (path, wd) in s.ancestors where isBelowMoved(path) {
                if s.watched[wd] == nil { dropped.append(wd) }
                s.ancestors[path] = nil
            }
            return dropped
        }
        for wd in dropped { Syscall.inotifyRemoveWatch(fd, wd) }
        for dir in affected.values { watchAncestors(of: dir.location) }
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { true } else { false }
    }
}
