import Dispatch
import Foundation
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
        /// `nil` until first used: an instance given its suite at `init` never opens the macro's.
        var openedSuite: PreferenceSuite?
        let suiteName: String?
        /// `@ObservableCloud(developmentMode: true)`: an in-memory suite unless one is given.
        let inMemory: Bool
        var prefix: String
        var ignoreExternalChanges: Bool
        var observation: PreferenceObservation?
        /// Values this instance wrote and has not yet heard back as local changes.
        var ownWrites: [String: [PlistValue?]] = [:]

        /// The suite, opened now if nothing was configured.
        var suite: PreferenceSuite {
            mutating get {
                if let openedSuite { return openedSuite }
                if inMemory {
                    openedSuite = PreferenceSuite.inMemory(name: suiteName ?? "development")
                    return openedSuite!
                }
                let suite = suiteName.map { name in
                    PreferenceSuite(suiteName: name) ?? {
                        logger.error("@ObservablePrefs could not open suite \(name); values are kept in memory only")
                        return PreferenceSuite.inMemory(name: name)
                    }()
                } ?? PreferenceSuite.standard
                openedSuite = suite
                return suite
            }
        }
    }

    private let configuration: Lock<Configuration>

    /// - Parameters:
    ///   - suiteName: As `PreferenceSuite(suiteName:)`; `nil` is `PreferenceSuite/standard`. It
    ///     is opened when first used, unless ``configure(suite:prefix:ignoreExternalChanges:)``
    ///     gave another suite first. A suite that cannot be opened is logged and replaced by an
    ///     in-memory one.
    ///   - inMemory: Use an in-memory suite unless another is configured (development mode).
    public init(suiteName: String?, prefix: String, ignoreExternalChanges: Bool, inMemory: Bool = false) {
        // White space around a name is trimmed, as ObservableDefaults does; none left is the standard suite.
        let name = suiteName?.trimmingCharacters(in: .whitespacesAndNewlines)
        configuration = Lock(Configuration(suiteName: name?.isEmpty == false ? name : nil, inMemory: inMemory, prefix: prefix, ignoreExternalChanges: ignoreExternalChanges))
    }

    /// The suite and the prefix, read together.
    private var current: (suite: PreferenceSuite, prefix: String) {
        configuration.withLock { ($0.suite, $0.prefix) }
    }

    /// The suite's number (`PreferenceSuite.sequence`), for the macro's `prefsSequence`.
    public var sequence: UInt64 { current.suite.sequence }

    /// The value of a property: stored → registered → the declared default.
    public func value<Value>(_ name: String, default defaultValue: Value, _ codec: _PrefsCodec<Value>) -> Value {
        let (suite, prefix) = current
        let key = prefix + name
        return suite.typedValue(forKey: key, default: defaultValue, stored: suite.storedValue(forKey: key), decode: codec.decode)
    }

    /// Whether setting `newValue` would change the property's value: what it reads as (stored,
    /// registered or the default), not only what is stored.
    public func willChange<Value>(_ name: String, to newValue: Value, default defaultValue: Value, _ codec: _PrefsCodec<Value>) -> Bool {
        codec.encode(value(name, default: defaultValue, codec)) != codec.encode(newValue)
    }

    /// Whether `change` changes what the property reads as (stored → registered → default).
    public func changesValue<Value>(_ change: PreferenceChange, default defaultValue: Value, _ codec: _PrefsCodec<Value>) -> Bool {
        let suite = current.suite
        return codec.encode(suite.reading(change.oldValue, change.key, defaultValue, codec))
            != codec.encode(suite.reading(change.newValue, change.key, defaultValue, codec))
    }

    /// What the property read as before `change`: its `didSet`'s `oldValue`.
    public func oldValue<Value>(_ change: PreferenceChange, default defaultValue: Value, _ codec: _PrefsCodec<Value>) -> Value {
        current.suite.reading(change.oldValue, change.key, defaultValue, codec)
    }

    /// Persists a property through the suite's coalesced writer.
    public func set<Value>(_ newValue: Value, _ name: String, _ codec: _PrefsCodec<Value>) {
        let stored = codec.encode(newValue)
        let (suite, key) = configuration.withLock { c in
            let key = c.prefix + name
            c.ownWrites[key, default: []].append(stored)
            return (c.suite, key)
        }
        suite.set(stored, forKey: key)
    }

    /// Points the instance at another suite, prefix or mode; `nil` keeps the current one.
    public func configure(suite: PreferenceSuite?, prefix: String?, ignoreExternalChanges: Bool?) {
        configuration.withLock { c in
            if let suite { c.openedSuite = suite }
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
        _ object: Object, names: Set<String>, onMain: Bool, notify: @escaping @Sendable (Object, String, PreferenceChange) -> Void
    ) {
        let (suite, prefix, ignore) = configuration.withLock { ($0.suite, $0.prefix, $0.ignoreExternalChanges) }
        let observation: PreferenceObservation?
        if ignore {
            observation = nil
        } else {
            let box = WeakBox(object)
            // Off the main actor, the registrar is called where the change was read (one thread
            // hop less), as Observation calls `onChange` on the thread that mutates.
            let options: ObservationOptions = onMain ? [] : .synchronousExternalChanges
            observation = suite.observe(.keys(Set(names.map { prefix + $0 })), options: options, queue: onMain ? .main : nil) { [weak self] change in
                guard let self, !self.isOwnWrite(change), let object = box.object else { return }
                notify(object, String(decoding: change.key.utf8.dropFirst(prefix.utf8.count), as: UTF8.self), change)
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

/// How `@ObservablePrefs` stores a property's type: generated code picks one with
/// `_PrefsStorage.codec(_:)`; you do not.
///
/// `PreferenceValue` types store their `PreferenceValue/plistValue`. So that ObservableDefaults
/// models compile unchanged, a plain `RawRepresentable` (`enum Theme: String`) stores its raw
/// value and a plain `Codable` (`struct People: Codable`) a nested property list, without
/// declaring `PreferenceValue`; `Optional`s of either store nothing for `nil`.
public struct _PrefsCodec<Value> {
    let encode: (Value) -> PlistValue?
    let decode: (PlistValue) -> Value?
}

extension _PrefsStorage {
    public static func codec<Value: PreferenceValue>(_: Value) -> _PrefsCodec<Value> {
        _PrefsCodec(encode: \.plistValue, decode: Value.init(plistValue:))
    }

    public static func codec<Value: RawRepresentable>(_: Value) -> _PrefsCodec<Value> where Value.RawValue: PreferenceValue {
        rawCodec()
    }

    /// Both `PreferenceValue` and `RawRepresentable`: the type's own conformance decides.
    public static func codec<Value: RawRepresentable & PreferenceValue>(_: Value) -> _PrefsCodec<Value> where Value.RawValue: PreferenceValue {
        _PrefsCodec(encode: \.plistValue, decode: Value.init(plistValue:))
    }

    @_disfavoredOverload
    public static func codec<Value: Codable>(_: Value) -> _PrefsCodec<Value> {
        codableCodec()
    }

    public static func codec<Wrapped: RawRepresentable>(_: Wrapped?) -> _PrefsCodec<Wrapped?> where Wrapped.RawValue: PreferenceValue {
        optional(rawCodec())
    }

    public static func codec<Wrapped: RawRepresentable & PreferenceValue>(_: Wrapped?) -> _PrefsCodec<Wrapped?> where Wrapped.RawValue: PreferenceValue {
        _PrefsCodec(encode: \.plistValue, decode: { Wrapped?(plistValue: $0) })
    }

    @_disfavoredOverload
    public static func codec<Wrapped: Codable>(_: Wrapped?) -> _PrefsCodec<Wrapped?> {
        optional(codableCodec())
    }

    private static func rawCodec<Value: RawRepresentable>() -> _PrefsCodec<Value> where Value.RawValue: PreferenceValue {
        _PrefsCodec(encode: { $0.rawValue.plistValue }, decode: { Value.RawValue(plistValue: $0).flatMap(Value.init(rawValue:)) })
    }

    private static func codableCodec<Value: Codable>() -> _PrefsCodec<Value> {
        _PrefsCodec(encode: { try? PlistCoding.encode($0) }, decode: { try? PlistCoding.decode(Value.self, from: $0) })
    }

    /// `nil` stores nothing (the key is removed); a stored value decodes as `some`.
    private static func optional<Wrapped>(_ codec: _PrefsCodec<Wrapped>) -> _PrefsCodec<Wrapped?> {
        _PrefsCodec(encode: { $0.flatMap(codec.encode) }, decode: { codec.decode($0).map(Optional.some) })
    }
}

extension _PrefsStorage {
    /// Whether an `@ObservableOnly` property's observers hear of a set: not when an `Equatable`
    /// value or the same object is set again, as Observation's own `@Observable` decides.
    public static func shouldNotify<Value>(_ old: Value, _ new: Value) -> Bool { true }
    public static func shouldNotify<Value: Equatable>(_ old: Value, _ new: Value) -> Bool { old != new }
    public static func shouldNotify<Value: AnyObject>(_ old: Value, _ new: Value) -> Bool { old !== new }
    public static func shouldNotify<Value: Equatable & AnyObject>(_ old: Value, _ new: Value) -> Bool { old != new }
}

/// Runtime support for `@ObservableDefault`: generated code calls it; you do not.
public final class _ObservableDefaultStorage: Sendable {
    private let observation = Lock<PreferenceObservation?>(nil)

    public init() {}

    /// The key's value in its suite.
    public static func value<Value>(_ key: PreferenceKey<Value>) -> Value {
        (key.suite ?? .standard)[key]
    }

    /// Writes the key in its suite.
    public static func set<Value>(_ newValue: Value, _ key: PreferenceKey<Value>) {
        (key.suite ?? .standard)[key] = newValue
    }

    /// At the first call, starts invalidating `keyPath` of `object` (held weakly) whenever any
    /// process changes `key`; later calls do nothing.
    public func start<Value, Object: Observable & AnyObject, Member>(
        _ key: PreferenceKey<Value>, _ object: Object, _ keyPath: KeyPath<Object, Member>, _ registrar: ObservationRegistrar
    ) {
        guard observation.withLock({ $0 == nil }) else { return }
        let target: any Mutating = MutationTarget(object, keyPath, registrar)
        let started = (key.suite ?? .standard).observe(.keys([key.name]), options: .synchronousExternalChanges) { _ in target.mutate() }
        // Another thread's first access may have started one meanwhile: keep that one.
        let extra = observation.withLock { current -> PreferenceObservation? in
            if current == nil {
                current = started
                return nil
            }
            return started
        }
        extra?.cancel()
    }
}

/// What an observation invalidates, its type erased so that the handler captures no metatype.
private protocol Mutating: Sendable {
    func mutate()
}

/// What an observation invalidates: one property of an object, through its registrar.
// Safe to send: the object is only passed to the thread-safe ObservationRegistrar's `withMutation`
// with an empty body, and the key path is only read.
private final class MutationTarget<Object: Observable & AnyObject, Member>: Mutating, @unchecked Sendable {
    weak var object: Object?
    let keyPath: KeyPath<Object, Member>
    let registrar: ObservationRegistrar

    init(_ object: Object, _ keyPath: KeyPath<Object, Member>, _ registrar: ObservationRegistrar) {
        (self.object, self.keyPath, self.registrar) = (object, keyPath, registrar)
    }

    func mutate() {
        guard let object else { return }
        registrar.withMutation(of: object, keyPath: keyPath) {}
    }
}

extension PreferenceSuite {
    /// What a property of `key` reads as with `stored` stored there: stored → registered → default.
    fileprivate func reading<Value>(_ stored: PlistValue?, _ key: String, _ defaultValue: Value, _ codec: _PrefsCodec<Value>) -> Value {
        typedValue(forKey: key, default: defaultValue, stored: stored, decode: codec.decode)
    }
}
