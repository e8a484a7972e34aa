import Dispatch
import Logging
import SharedPrefs
import SharedPrefsLocking

private let logger = Logger(label: "SharedPrefs")

/// Runtime support for `@ObservablePrefs`: generated code calls it; you do not.
///
/// It holds the instance's suite and prefix, reads and writes typed values, and forwards changes
/// of the instance's keys to it.
public final class _PrefsStorage: Sendable {
    private struct Configuration {
        var suite: PreferenceSuite
        var prefix: String
        var ignoreExternalChanges: Bool
        var observation: PreferenceObservation?
        /// Values this instance wrote and has not yet heard back as local changes.
        var ownWrites: [String: [PlistValue?]] = [:]
    }

    private let configuration: Lock<Configuration>

    /// - Parameters:
    ///   - suiteName: As `PreferenceSuite(suiteName:)`; `nil` is ``PreferenceSuite/standard``. A
    ///     suite that cannot be opened is logged and replaced by an in-memory one.
    public init(suiteName: String?, prefix: String, ignoreExternalChanges: Bool) {
        let suite = suiteName.map { name in
            PreferenceSuite(suiteName: name) ?? {
                logger.error("@ObservablePrefs could not open suite \(name); values are kept in memory only")
                return PreferenceSuite.inMemory(name: name)
            }()
        } ?? PreferenceSuite.standard
        configuration = Lock(Configuration(suite: suite, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges))
    }

    /// The suite and the prefix, read together.
    private var current: (suite: PreferenceSuite, prefix: String) {
        configuration.withLock { ($0.suite, $0.prefix) }
    }

    /// The value of a property: stored → registered → the declared default.
    public func value<Value: PreferenceValue>(_ name: String, default defaultValue: Value) -> Value {
        let (suite, prefix) = current
        let key = prefix + name
        return suite.typedValue(PreferenceKey(key, default: defaultValue), stored: suite.storedValue(forKey: key))
    }

    /// Whether setting `newValue` would change what is stored.
    public func willChange<Value: PreferenceValue>(_ name: String, to newValue: Value) -> Bool {
        let (suite, prefix) = current
        return suite.storedValue(forKey: prefix + name) != newValue.plistValue
    }

    /// Persists a property through the suite's coalesced writer.
    public func set<Value: PreferenceValue>(_ newValue: Value, _ name: String) {
        let (suite, key) = configuration.withLock { c in
            let key = c.prefix + name
            c.ownWrites[key, default: []].append(newValue.plistValue)
            return (c.suite, key)
        }
        suite.set(newValue, forKey: key)
    }

    /// Points the instance at another suite, prefix or mode; `nil` keeps the current one.
    public func configure(suite: PreferenceSuite?, prefix: String?, ignoreExternalChanges: Bool?) {
        configuration.withLock { c in
            if let suite { c.suite = suite }
            if let prefix { c.prefix = prefix }
            if let ignoreExternalChanges { c.ignoreExternalChanges = ignoreExternalChanges }
        }
    }

    /// Forwards changes of `names` (without prefix) to `object`, unless external changes are
    /// ignored. Changes this instance made itself are not forwarded again.
    /// - Parameters:
    ///   - onMain: Deliver on the main queue (for `@MainActor` classes).
    ///   - notify: Called with the object and the property's name; it only tells the observation
    ///     registrar, which is thread-safe.
    public func observe<Object: AnyObject>(
        _ object: Object, names: Set<String>, onMain: Bool, notify: @escaping @Sendable (Object, String) -> Void
    ) {
        let (suite, prefix, ignore) = configuration.withLock { ($0.suite, $0.prefix, $0.ignoreExternalChanges) }
        let observation: PreferenceObservation?
        if ignore {
            observation = nil
        } else {
            let box = WeakBox(object)
            observation = suite.observe(.keys(Set(names.map { prefix + $0 })), queue: onMain ? .main : nil) { [weak self] change in
                guard let self, !self.isOwnWrite(change), let object = box.object else { return }
                notify(object, String(change.key.dropFirst(prefix.count)))
            }
        }
        configuration.withLock { $0.observation = observation }
    }

    private func isOwnWrite(_ change: PreferenceChange) -> Bool {
        guard change.origin == .local else { return false }
        return configuration.withLock { c in
            guard let index = c.ownWrites[change.key]?.firstIndex(of: change.newValue) else { return false }
            c.ownWrites[change.key]!.removeSubrange(...index)
            if c.ownWrites[change.key]!.isEmpty { c.ownWrites[change.key] = nil }
            return true
        }
    }
}

/// A weak reference handed to the observer's queue.
// Safe to send: the object is only passed to the generated `notify` closure, which calls the
// thread-safe ObservationRegistrar (`withMutation` with an empty body) and touches no state.
private final class WeakBox<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    init(_ object: Object) { self.object = object }
}
