import Dispatch
import SharedPrefsLocking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A property backed by a suite, for code that does not use Observation.
///
/// ```swift
/// struct Player {
///     @Preference("volume", suite: .standard) var volume = 5
/// }
/// player.volume = 7                        // persisted, seen by other processes
/// for await volume in player.$volume { … } // current value, then every change
/// player.$volume.reset()                   // back to the default
/// ```
///
/// Reads go to the suite's live snapshot (stored → registered → the declared default), so a value
/// another process wrote is what the next read returns.
///
/// `for await` over `$volume` subscribes when the loop starts. To hear every change made after a
/// line of code, as a Combine `sink` does, subscribe on that line: ``observe(order:options:queue:_:)``
/// with a closure, or ``values(initial:)`` for a sequence to iterate later.
///
/// ```swift
/// let names = service.$name.values()   // subscribed here: "Pitt", then "François"
/// service.name = "François"
/// Task { for await name in names { print("Name: \(name)") } }
/// ```
@propertyWrapper
public struct Preference<Value: PreferenceValue & Sendable>: Sendable, AsyncSequence {
    /// The key and its declared default.
    public let key: PreferenceKey<Value>
    /// The suite the value lives in.
    public let suite: PreferenceSuite

    /// - Parameters:
    ///   - wrappedValue: The declared default.
    ///   - name: The key in the suite.
    ///   - suite: The suite; ``PreferenceSuite/standard`` by default.
    public init(wrappedValue: Value, _ name: String, suite: PreferenceSuite = .standard) {
        key = PreferenceKey(name, default: wrappedValue, suite: suite)
        self.suite = suite
    }

    /// A key from a `String`-backed enum, as SwiftVault's `enum Keys: String, UserDefaultKey`.
    public init<Key: RawRepresentable>(wrappedValue: Value, _ key: Key, suite: PreferenceSuite = .standard) where Key.RawValue == String {
        self.init(wrappedValue: wrappedValue, key.rawValue, suite: suite)
    }

    /// An optional property without `= nil`: its default is `nil`.
    public init(_ name: String, suite: PreferenceSuite = .standard) where Value: ExpressibleByNilLiteral {
        self.init(wrappedValue: nil, name, suite: suite)
    }

    /// An optional property from a `String`-backed enum's key, without `= nil`.
    public init<Key: RawRepresentable>(_ key: Key, suite: PreferenceSuite = .standard) where Value: ExpressibleByNilLiteral, Key.RawValue == String {
        self.init(wrappedValue: nil, key.rawValue, suite: suite)
    }

    public var wrappedValue: Value {
        get { suite[key] }
        nonmutating set {
            let place = WillSet.Place(suite, key.name, as: Value.self)
            let handlers = WillSet.handlers(at: place)
            // A locked key's set is refused: nobody is told of it.
            guard !handlers.isEmpty, suite.isWritable(key.name) else { return suite[key] = newValue }
            for handler in handlers { handler(newValue) }
            WillSet.told(place) { suite[key] = newValue }
        }
    }

    /// `$property`: the values as an async sequence, and ``reset()``.
    public var projectedValue: Preference<Value> { self }

    /// Removes the stored value, so reads return the registered or declared default.
    public func reset() {
        suite.reset(key)
    }

    /// The current value and every later one, subscribed now: whatever changes after this call
    /// is in the sequence, however late the loop over it starts (as a Combine `sink` hears
    /// everything after it). Values reach it in the order the suite went through them.
    public func values(initial: Bool = true) -> AsyncStream<Value> {
        let values = suite.values(for: key, initial: initial)
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self)
        let task = Task {
            for await value in values { continuation.yield(value) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Calls `handler` with the current value (with ``ObservationOptions/initial``, the default)
    /// and the value after each change, from this call on: PDefaults' and SwiftVault's
    /// `$name.sink { … }`. The handler runs on `queue` (a private serial queue by default), after
    /// the suite holds the value: a read of the property in it returns the value it was given.
    /// - Returns: A token; the observation ends when it is cancelled or released.
    ///
    /// With `order: .willSet`, a set made through a `@Preference` of the key in this process is
    /// heard before the suite holds it, while the property still reads the old value, on the
    /// setting thread (PDefaults' default, `@Published`'s order); ``PreferenceOrder`` says which
    /// changes that can be.
    public func observe(
        order: PreferenceOrder = .didSet, options: ObservationOptions = .initial, queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (Value) -> Void
    ) -> PreferenceObservation {
        guard order == .willSet else { return suite.observe(key, options: options, queue: queue) { handler($0.newValue) } }
        let place = WillSet.Place(suite, key.name, as: Value.self)
        let id = WillSet.add(at: place) { if let value = $0 as? Value { handler(value) } }
        // The other changes: this process's own on the setting thread, where one told already is
        // known, and other processes' on the queue.
        let rest = suite.observe(key, options: options.union(.synchronousLocalChanges), queue: queue) { change in
            if !WillSet.isBeingTold(place) { handler(change.newValue) }
        }
        return PreferenceObservation {
            rest.cancel()
            WillSet.remove(id, at: place)
        }
    }

    /// The current value, then the value after every change, subscribed when the iteration
    /// starts (``values(initial:)`` subscribes at once).
    public func makeAsyncIterator() -> AsyncStream<Value>.Iterator {
        values().makeAsyncIterator()
    }
}

/// When ``Preference/observe(order:options:queue:_:)`` tells a handler of a change.
public enum PreferenceOrder: Sendable {
    /// Once the suite holds the value: a read of the property in the handler returns it
    /// (PDefaults' `behavior: .didSet`, a `CurrentValueSubject`). Every observer's order.
    case didSet
    /// A set made through a `@Preference` of the key in this process: before the suite holds it,
    /// while the property still reads the old value, on the setting thread (PDefaults' default,
    /// `@Published`'s). Every other change (the suite's own setters, a transaction, another
    /// process) is heard once the suite holds it, as with ``didSet``: another process's value is
    /// in this one's memory before anyone here can be told of it.
    case willSet
}

/// The `.willSet` handlers of each key of each store, and the sets being told to them now.
enum WillSet {
    /// A key of a store, read as one type.
    struct Place: Hashable, Sendable {
        let store: ObjectIdentifier
        let key: String
        let type: ObjectIdentifier
        init<Value>(_ suite: PreferenceSuite, _ key: String, as type: Value.Type) {
            (store, self.key, self.type) = (ObjectIdentifier(suite.store), key, ObjectIdentifier(type))
        }
    }

    private static let state = Lock<(handlers: [Place: [UInt64: @Sendable (Any) -> Void]], next: UInt64, telling: Set<Telling>)>(([:], 0, []))

    /// A set being told, on the thread that makes it.
    private struct Telling: Hashable {
        let place: Place
        let thread: UInt
    }

    /// How many handlers there are: a set looks for them only when there are any.
    private static let count = Atomic(0)

    static func handlers(at place: Place) -> [@Sendable (Any) -> Void] {
        guard count.load(ordering: .acquiring) > 0 else { return [] }
        return state.withLock { $0.handlers[place].map { Array($0.values) } ?? [] }
    }

    static func add(at place: Place, _ handler: @escaping @Sendable (Any) -> Void) -> UInt64 {
        count.add(1, ordering: .releasing)
        return state.withLock { s in
            s.next += 1
            s.handlers[place, default: [:]][s.next] = handler
            return s.next
        }
    }

    static func remove(_ id: UInt64, at place: Place) {
        // The handler is let go once the lock is: its captures' deinits may be the app's code.
        let removed = state.withLock { s in
            defer { if s.handlers[place]?.isEmpty == true { s.handlers[place] = nil } }
            return s.handlers[place]?.removeValue(forKey: id)
        }
        if removed != nil { count.subtract(1, ordering: .releasing) }
    }

    /// Runs `set`, a set the handlers at `place` were told of already, so that their observers
    /// of the suite (called on this thread while it runs) do not tell it again.
    static func told(_ place: Place, _ set: () -> Void) {
        let telling = Telling(place: place, thread: UInt(pthread_self()))
        state.withLock { _ = $0.telling.insert(telling) }
        defer { state.withLock { _ = $0.telling.remove(telling) } }
        set()
    }

    static func isBeingTold(_ place: Place) -> Bool {
        state.withLock { $0.telling.contains(Telling(place: place, thread: UInt(pthread_self()))) }
    }
}
