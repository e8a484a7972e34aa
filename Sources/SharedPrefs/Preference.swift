import Dispatch

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
/// line of code, as a Combine `sink` does, subscribe on that line: ``observe(options:queue:_:)``
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
        nonmutating set { suite[key] = newValue }
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
    public func observe(
        options: ObservationOptions = .initial, queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (Value) -> Void
    ) -> PreferenceObservation {
        suite.observe(key, options: options, queue: queue) { handler($0.newValue) }
    }

    /// The current value, then the value after every change, subscribed when the iteration
    /// starts (``values(initial:)`` subscribes at once).
    public func makeAsyncIterator() -> AsyncStream<Value>.Iterator {
        values().makeAsyncIterator()
    }
}
