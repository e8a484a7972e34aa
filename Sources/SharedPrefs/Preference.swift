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

    /// The current value, then the value after every change.
    public func makeAsyncIterator() -> AsyncStream<Value>.Iterator {
        let values = suite.values(for: key, initial: true)
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self)
        let task = Task {
            for await value in values { continuation.yield(value) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream.makeAsyncIterator()
    }
}
