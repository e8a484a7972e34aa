import Dispatch
import SharedPrefsLocking

/// Keeps an observation alive; cancel it, or let it go out of scope, to stop the callbacks.
public final class PreferenceObservation: Sendable {
    private let cancellation: @Sendable () -> Void

    init(_ cancellation: @escaping @Sendable () -> Void) {
        self.cancellation = cancellation
    }

    /// Stops the callbacks. Changes already handed to the queue may still arrive.
    public func cancel() {
        cancellation()
    }

    deinit {
        cancellation()
    }
}

extension PreferenceSuite {
    /// Calls `handler` for every change of a key that passes `filter`, in this process or another.
    ///
    /// ```swift
    /// let token = suite.observe(.prefix("network.")) { change in
    ///     print("\(change.key): \(change.oldValue as Any) -> \(change.newValue as Any) (\(change.origin))")
    /// }
    /// ```
    ///
    /// Changes arrive in the order the suite went through them. Each observer has its own serial
    /// queue unless you pass one, so a slow handler delays only itself, never other observers or
    /// the writer.
    /// - Parameters:
    ///   - filter: `.key`, `.keys`, `.prefix` or `.all`.
    ///   - options: ``ObservationOptions/initial`` delivers the current values first;
    ///     ``ObservationOptions/synchronousLocalChanges`` delivers this process's own changes
    ///     before `set` returns; ``ObservationOptions/synchronousExternalChanges`` delivers other
    ///     processes' changes on the thread that read them, without a hand-over to `queue`.
    ///   - queue: Where `handler` runs; by default a private serial queue.
    ///   - handler: Called once per changed key.
    /// - Returns: A token; the observation ends when it is cancelled or released.
    public func observe(
        _ filter: KeyFilter, options: ObservationOptions = [], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (PreferenceChange) -> Void
    ) -> PreferenceObservation {
        observe(filter, options: options, queue: queue, initial: { $0 }, handler)
    }

    /// ``observe(_:options:queue:_:)`` with what ``ObservationOptions/initial`` delivers first
    /// made by `initial` from the observer's first values (``SuiteStore/State/initialChanges(_:suite:)``),
    /// under the same lock as the registration: no change slips in before it or between. With
    /// ``ObservationOptions/synchronousLocalChanges`` too, they are delivered before this returns,
    /// unless a change on another thread delivers them first, on its own (``FirstDelivery``).
    private func observe(
        _ filter: KeyFilter, options: ObservationOptions, queue: DispatchQueue?,
        initial: ([PreferenceChange]) -> [PreferenceChange], _ handler: @escaping @Sendable (PreferenceChange) -> Void
    ) -> PreferenceObservation {
        // By default a serial lane of the library's: a queue of libdispatch's where it runs,
        // threads of the library's in a forked child, where libdispatch's pool does not.
        let enqueue: Enqueue
        if let queue {
            enqueue = { queue.async(execute: $0) }
        } else {
            let lane = SuiteOwner(label: "SharedPrefs.observer.\(name)")
            enqueue = { lane.async($0) }
        }
        let (store, name) = (self.store, self.name)
        let first = options.contains(.initial) && options.contains(.synchronousLocalChanges) ? FirstDelivery() : nil
        let handle: @Sendable ([PreferenceChange]) -> Void = { changes in
            first?.deliver(to: handler)
            changes.forEach(handler)
        }
        let deliver: @Sendable ([PreferenceChange]) -> Void = { changes in enqueue { handle(changes) } }
        let now = options.contains(.synchronousLocalChanges) ? handle : nil
        let ordered = options.contains(.synchronousExternalChanges) ? OrderedDelivery(enqueue: enqueue, handle) : nil
        let id = store.addObserver(filter, deliver: deliver, synchronous: now, ordered: ordered) { state in
            guard options.contains(.initial) else { return }
            let current = initial(state.initialChanges(filter, suite: name))
            if let first {
                first.post(current)
            } else if current.isEmpty {
                return
            } else if let ordered {
                ordered.post(current)
                if !options.contains(.initialOnObservingThread) { ordered.deliverPendingOnQueue() }
            } else {
                deliver(current)
            }
        }
        if options.contains(.initialOnObservingThread) { ordered?.deliverPending() }
        first?.deliver(to: handler)
        return PreferenceObservation { store.removeObserver(id) }
    }

    /// The changes of keys that pass `filter`, as an async sequence that ends when the task
    /// iterating it is cancelled.
    ///
    /// ```swift
    /// for await change in suite.changes(.key("theme")) { apply(change.newValue) }
    /// ```
    public func changes(_ filter: KeyFilter = .all) -> some AsyncSequence<PreferenceChange, Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: PreferenceChange.self)
        let store = self.store
        let id = store.addObserver(filter) { changes in
            for change in changes { continuation.yield(change) }
        }
        continuation.onTermination = { _ in store.removeObserver(id) }
        return stream
    }

    /// The changes of keys that start with `prefix` (keys may contain dots: `"window."`).
    public func changes(prefix: String) -> some AsyncSequence<PreferenceChange, Never> {
        changes(.prefix(prefix))
    }

    /// The typed value of a key each time it changes, starting with the current value when
    /// `initial` is `true`. Values resolve like the typed subscript (every layer → registered →
    /// default).
    ///
    /// ```swift
    /// for await theme in suite.values(for: .theme) { render(theme) }
    /// ```
    public func values<Value: PreferenceValue & Sendable>(
        for key: PreferenceKey<Value>, initial: Bool = true
    ) -> some AsyncSequence<Value, Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: PlistValue?.self)
        let store = self.store
        let id = store.addObserver(.key(key.name), deliver: { changes in
            for change in changes { continuation.yield(change.newValue) }
        }, initial: { state in
            if initial { continuation.yield(state.visible(PlistKey(key.name))) }
        })
        continuation.onTermination = { _ in store.removeObserver(id) }
        return stream.map { [self] stored in typedValue(key, stored: stored) }
    }

    /// Calls `handler` with the typed old and new value of `key` each time it changes, values
    /// resolved as the typed subscript reads them (stored → registered → default), as
    /// sindresorhus/Defaults' `observe(_:options:)` does. With ``ObservationOptions/initial``, the
    /// current value comes first (as both old and new).
    ///
    /// ```swift
    /// let token = suite.observe(.theme) { change in render(change.newValue) }
    /// ```
    public func observe<Value: PreferenceValue & Sendable>(
        _ key: PreferenceKey<Value>, options: ObservationOptions = [], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (TypedPreferenceChange<Value>) -> Void
    ) -> PreferenceObservation {
        // The initial value as a change from the value read to itself: it resolves as the typed
        // subscript does (layers → registered → default).
        observe(.key(key.name), options: options, queue: queue, initial: { first in
            first.map { PreferenceChange(suite: $0.suite, key: $0.key, oldValue: $0.newValue, newValue: $0.newValue, origin: .local) }
        }) { [self] change in
            handler(TypedPreferenceChange(
                oldValue: typedValue(key, stored: change.oldValue), newValue: typedValue(key, stored: change.newValue), origin: change.origin))
        }
    }

    /// Yields once for each batch of changes of any of `keys` (and first once at once, with
    /// `initial`): for code that recomputes from several settings, as Defaults' `updates(_:)`.
    /// A consumer that falls behind gets one yield for the batches it missed (it reads the
    /// values itself, so nothing is lost but the count).
    ///
    /// ```swift
    /// for await _ in suite.updates([PreferenceKey<Int>.volume, PreferenceKey<Bool>.muted]) { apply() }
    /// ```
    public func updates(_ keys: [any AnyPreferenceKey], initial: Bool = true) -> some AsyncSequence<Void, Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let store = self.store
        let id = store.addObserver(.keys(Set(keys.map(\.name))), deliver: { _ in continuation.yield() }, initial: { _ in
            if initial { continuation.yield() }
        })
        continuation.onTermination = { _ in store.removeObserver(id) }
        return stream
    }

    /// The typed values of several keys, together, each time any of them changes (first at once,
    /// with `initial`), as Defaults' `updates(key1, key2)` does: one element per change, in the
    /// order the suite went through them, each with the values as they were right after it.
    ///
    /// ```swift
    /// for await (volume, muted) in suite.updates(.volume, .muted) { mixer.apply(volume, muted) }
    /// ```
    public func updates<each Value: PreferenceValue & Sendable>(
        _ keys: repeat PreferenceKey<each Value>, initial: Bool = true
    ) -> some AsyncSequence<(repeat each Value), Never> {
        var names: [String] = []
        for key in repeat each keys { names.append(key.name) }
        return storedUpdates(of: names, initial: initial).map { [self] values in (repeat typedValue(each keys, stored: values[(each keys).name])) }
    }

    /// `updates(_:initial:)` of two keys. Swift 6.3 cannot take
    /// the elements of a parameter pack's sequence apart in a `for await (a, b) in` loop ("value
    /// pack expansion can only appear …"); this one's elements are a plain pair.
    public func updates<A: PreferenceValue & Sendable, B: PreferenceValue & Sendable>(
        _ a: PreferenceKey<A>, _ b: PreferenceKey<B>, initial: Bool = true
    ) -> some AsyncSequence<(A, B), Never> {
        storedUpdates(of: [a.name, b.name], initial: initial).map { [self] values in
            (typedValue(a, stored: values[a.name]), typedValue(b, stored: values[b.name]))
        }
    }

    /// `updates(_:initial:)` of three keys, for `for await (a, b, c) in`.
    public func updates<A: PreferenceValue & Sendable, B: PreferenceValue & Sendable, C: PreferenceValue & Sendable>(
        _ a: PreferenceKey<A>, _ b: PreferenceKey<B>, _ c: PreferenceKey<C>, initial: Bool = true
    ) -> some AsyncSequence<(A, B, C), Never> {
        storedUpdates(of: [a.name, b.name, c.name], initial: initial).map { [self] values in
            (typedValue(a, stored: values[a.name]), typedValue(b, stored: values[b.name]), typedValue(c, stored: values[c.name]))
        }
    }

    /// The values of the keys `names` as the process reads them, after each change of one of
    /// them (first at once, with `initial`): each element as the suite was right after its change.
    private func storedUpdates(of names: [String], initial: Bool) -> AsyncStream<PlistDictionary> {
        let (stream, continuation) = AsyncStream.makeStream(of: PlistDictionary.self)
        // The stored values of the keys, as of the change being delivered: each element carries
        // its own, never what a later change left.
        let current = Lock(PlistDictionary())
        let store = self.store
        let id = store.addObserver(.keys(Set(names)), deliver: { changes in
            for change in changes {
                continuation.yield(current.withLock { values in
                    values[change.key] = change.newValue
                    return values
                })
            }
        }, initial: { state in
            let values = PlistDictionary(names.compactMap { name in state.visible(PlistKey(name)).map { (name, $0) } })
            current.withLock { $0 = values }
            if initial { continuation.yield(values) }
        })
        continuation.onTermination = { _ in store.removeObserver(id) }
        return stream
    }

    /// Failures nobody was waiting for: a background write that failed, a suite file that does not
    /// parse (the last good values are kept), a stored value of the wrong type. It starts with the
    /// failures found in the stored values that still stand, found before it was made too.
    public func failures() -> some AsyncSequence<PreferenceError, Never> {
        let (stream, continuation) = AsyncStream.makeStream(of: PreferenceError.self)
        let observation = observeFailures { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    /// Calls `handler` with every failure nobody was waiting for: ``failures()`` without Swift
    /// concurrency. It is called first, at once, with the failures found in the stored values that
    /// still stand (a corrupt file, a value or key that cannot be read), however long ago they were
    /// found: a suite opened over them reports them to whoever subscribes later. The handler runs
    /// on the thread that met the failure (the watcher thread, a background write): return at once.
    /// - Returns: A token; the observation ends when it is cancelled or released.
    public func observeFailures(_ handler: @escaping @Sendable (PreferenceError) -> Void) -> PreferenceObservation {
        let store = self.store
        let id = store.addFailureObserver(handler)
        return PreferenceObservation { store.removeFailureObserver(id) }
    }
}

/// How `PreferenceSuite.observe(_:options:queue:_:)` delivers, for a key filter or a typed key.
public struct ObservationOptions: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// First, the current value of each key that passes the filter, as a change from absent to
    /// the value the process reads (every layer, as ``PreferenceSuite/value(forKey:)`` without
    /// registered defaults; origin `.local`), before any later change, whatever the other options
    /// (Defaults' `.initial`): every key that `.key` or `.keys` names, held or not (new value
    /// `nil`), and every key held that passes `.prefix` or `.all`. They arrive on the observer's
    /// queue; with ``synchronousLocalChanges``, on the thread that calls `observe`, before it
    /// returns (as a Combine `sink` on a `CurrentValueSubject` hears its value), unless another
    /// thread's change delivers them first, on that thread. A typed observer's first value is the
    /// one the typed subscript reads.
    public static let initial = ObservationOptions(rawValue: 1)

    /// This process's own changes are delivered on the thread that made them, before `set` (or
    /// `update`) returns, instead of on the queue. Other processes' changes still arrive on the
    /// queue. The handler may use the suite, but runs on the setter's thread: keep it short.
    public static let synchronousLocalChanges = ObservationOptions(rawValue: 2)

    /// Other processes' changes are delivered on the thread that read them, as soon as they are
    /// read, instead of being handed over to the queue: one thread wake-up less per change
    /// (6–30 µs at p50 in the benchmark's runs, BENCHMARKS.md).
    ///
    /// For a file suite that thread is one of the process's reader threads (`prefs.watcher` in a
    /// debugger or `top -H`; for an etcd suite, the thread of its watch). A handler that blocks
    /// holds that thread and its own observer's later changes, nothing else: the other readers
    /// go on reading every other suite's changes, and this suite's other observers get theirs.
    /// Still, use it for handlers that return at once (set a flag, resume a continuation, post to
    /// a queue of your own): a handler that waits keeps its thread. The handler may use the suite,
    /// even `synchronize()` and `update`, without waiting for itself.
    ///
    /// Changes still arrive in order, one at a time: this process's own changes (unless
    /// ``synchronousLocalChanges`` takes them) and other processes' changes read elsewhere (by a
    /// re-read queued behind this process's own write) go to the queue, after those already on
    /// their way. With ``synchronousLocalChanges`` too, the handler may run on the setter's
    /// thread while it runs on the watcher's.
    public static let synchronousExternalChanges = ObservationOptions(rawValue: 4)

    /// With ``initial`` and ``synchronousExternalChanges``: the first values are delivered on the
    /// thread that calls `observe`, before it returns (unless a reader thread delivers them first,
    /// with the changes after them), so that no other thread starts for them (`prefs-watch tail`).
    package static let initialOnObservingThread = ObservationOptions(rawValue: 1 << 30)
}

/// A change of one typed key: its value before and after, as the typed subscript reads them.
public struct TypedPreferenceChange<Value: PreferenceValue> {
    /// The value before the change (the default, if nothing was stored).
    public let oldValue: Value
    /// The value after the change.
    public let newValue: Value
    /// Who made the change.
    public let origin: PreferenceChange.Origin
}

extension TypedPreferenceChange: Sendable where Value: Sendable {}

/// A ``PreferenceKey`` of any value type, for APIs that take several keys at once.
public protocol AnyPreferenceKey {
    /// The key in the suite.
    var name: String { get }
}

extension PreferenceKey: AnyPreferenceKey {}
