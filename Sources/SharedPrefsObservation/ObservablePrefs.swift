// The module of @ObservablePrefs: a separate product so that the core library and prefs-watch
// never build swift-syntax, which macros need. It re-exports SharedPrefs and Observation, so one
// `import SharedPrefsObservation` is all a settings class needs.
@_exported import Observation
@_exported import SharedPrefs

/// Turns a class into an `Observable` whose stored properties live in a shared suite: reads come
/// from the suite, writes persist to it, and when another process changes a key, exactly the
/// property of that key is mutated (and only it is invalidated).
///
/// ```swift
/// @ObservablePrefs(suiteName: "group.com.example.app", prefix: "app.")
/// final class Settings {
///     var theme: Theme = .system            // key "app.theme"
///     var volume = 5                        // key "app.volume"
///     @PrefsKey("user_name") var name: String? = nil   // key "app.user_name"
///     @ObservableOnly var isEditing = false // observable, not persisted
///     @Ignore var cache: [String] = []      // neither
/// }
///
/// let settings = Settings()                 // or Settings(suite: mySuite, prefix: "test.")
/// settings.volume = 7                       // persisted; other processes' instances update
/// ```
///
/// - Parameters:
///   - suiteName: The suite (as `PreferenceSuite(suiteName:)` reads it); `nil` is `PreferenceSuite/standard`.
///   - prefix: Put before every key. Letters, digits, `.`, `-`, `_`; white space around it is trimmed.
///   - ignoreExternalChanges: When `true`, changes made by other processes (and by other instances)
///     do not update this instance's properties until they are read again.
///   - autoInit: Generates `init(suite:prefix:ignoreExternalChanges:ignoredKeyPathsForExternalUpdates:)`
///     (`@ObservableDefaults`: `init(userDefaults:ignoreExternalChanges:prefix:ignoredKeyPathsForExternalUpdates:)`;
///     `@ObservableCloud`: `init(suite:prefix:syncImmediately:developmentMode:ignoredKeyPathsForExternalUpdates:)`;
///     each `nil` means the value given to the macro; the key paths name properties that do not
///     hear other processes' changes). When `false`, call `startObservingPrefs()` at the end of
///     your own init.
///   - observeFirst: Properties are observable only, and just those marked ``PrefsBacked()`` persist.
///   - didSetRunsOnExternalChanges: When `true`, a persisted property's `didSet` also runs when
///     another process (or instance) changes its key, after the property is updated, with
///     `oldValue` what it read as before; it runs where external changes are delivered (below).
///     Properties in `ignoredKeyPathsForExternalUpdates` hear nothing, so run nothing.
///   - defaultIsolationIsMainActor: Say `true` in a module built with
///     `.defaultIsolation(MainActor.self)`, where the class is main-actor isolated without the
///     attribute: changes then arrive on the main queue, as for a `@MainActor` class.
///
/// `willSet`/`didSet` on a persisted property run around this instance's own sets; by default
/// not when another process changes the key. An optional without a default defaults to `nil`.
///
/// `prefsSequence` is the suite's number (`PreferenceSuite.sequence`) as the properties read it:
/// a model that keeps something derived from them saves it, and after a restart catches up with
/// `suite.changes(since: saved)` (SharedPrefs' "Change stream" article).
///
/// Every persisted property needs a default value, which is captured once: reads fall back
/// stored → registered → declared default, so a key removed by another process reverts the
/// property to its default (with one mutation). A `@MainActor` class receives external changes on
/// the main queue; any other class on the library's watcher thread, right after it reads them
/// (`ObservationOptions/synchronousExternalChanges`: the observation registrar is thread-safe,
/// and calls `withObservationTracking`'s `onChange` there, as on any thread that mutates). No flag
/// is needed for either.
@attached(
    member,
    names: named(_$observationRegistrar), named(access), named(withMutation), named(_$prefs), named(prefsSequence), named(_$prefsDidChange),
    named(startObservingPrefs), named(init))
@attached(memberAttribute)
@attached(extension, conformances: Observable)
public macro ObservablePrefs(
    suiteName: String? = nil, prefix: String = "", ignoreExternalChanges: Bool = false, autoInit: Bool = true,
    observeFirst: Bool = false, didSetRunsOnExternalChanges: Bool = false,
    defaultIsolationIsMainActor: Bool = false
) = #externalMacro(module: "SharedPrefsMacros", type: "ObservablePrefsMacro")

/// The spelling of fatbobman/ObservableDefaults, so that code written for it compiles by changing
/// the import. `limitToInstance` is accepted and has no effect: changes always cross processes
/// here, and an instance hears only its own keys (never a mere prefix convention).
@attached(
    member,
    names: named(_$observationRegistrar), named(access), named(withMutation), named(_$prefs), named(prefsSequence), named(_$prefsDidChange),
    named(startObservingPrefs), named(observerStarter), named(init))
@attached(memberAttribute)
@attached(extension, conformances: Observable)
public macro ObservableDefaults(
    autoInit: Bool = true, ignoreExternalChanges: Bool = false, suiteName: String? = nil, prefix: String? = nil,
    observeFirst: Bool = false, limitToInstance: Bool = true, didSetRunsOnExternalChanges: Bool = false,
    defaultIsolationIsMainActor: Bool = false
) = #externalMacro(module: "SharedPrefsMacros", type: "ObservablePrefsMacro")

/// The spelling of ObservableDefaults' `@ObservableCloud`, for code ported from iCloud key-value
/// storage: the same class macro as ``ObservablePrefs(suiteName:prefix:ignoreExternalChanges:autoInit:observeFirst:didSetRunsOnExternalChanges:defaultIsolationIsMainActor:)``.
/// There is no iCloud on Linux: give the instance a suite shared across machines, an etcd suite
/// (`SharedPrefsEtcd`), with `init(suite:)`; without one it uses `PreferenceSuite/standard`.
/// `developmentMode: true` keeps values in memory, as ObservableDefaults does; `syncImmediately`
/// is accepted and has no effect (every change is written at once and reaches every process).
/// For an `init` of your own (`autoInit: false`) it also generates ObservableDefaults'
/// `_developmentMode_`, `_prefix` and `_cloudObserver` (see ``CloudObservation``).
@attached(
    member,
    names: named(_$observationRegistrar), named(access), named(withMutation), named(_$prefs), named(prefsSequence), named(_$prefsDidChange),
    named(startObservingPrefs), named(_developmentMode_), named(_prefix), named(_cloudObserver), named(init))
@attached(memberAttribute)
@attached(extension, conformances: Observable)
public macro ObservableCloud(
    autoInit: Bool = true, prefix: String = "", observeFirst: Bool = false, syncImmediately: Bool = false,
    developmentMode: Bool = false, didSetRunsOnExternalChanges: Bool = false,
    defaultIsolationIsMainActor: Bool = false
) = #externalMacro(module: "SharedPrefsMacros", type: "ObservablePrefsMacro")

/// ObservableDefaults' cloud observer, for an `@ObservableCloud(autoInit: false)` class whose own
/// `init` starts it as ObservableDefaults' README does:
///
/// ```swift
/// init() {
///     if !_developmentMode_ {
///         _cloudObserver = CloudObservation(host: self, prefix: _prefix)
///     }
/// }
/// ```
///
/// Assigning one to `_cloudObserver` calls `startObservingPrefs()`; it holds nothing itself.
public struct CloudObservation: Sendable {
    /// The prefix it was made with (the instance's keys keep the prefix given to the macro).
    public let prefix: String
    public init(host: AnyObject, prefix: String) { self.prefix = prefix }
}

/// ObservableDefaults' `@CloudBacked`: ``PrefsBacked()``, optionally with a custom key.
@attached(peer)
public macro CloudBacked(keyValueStoreKey: String? = nil) = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// ObservableDefaults' `@CloudKey`: ``PrefsKey(_:)``.
@attached(peer)
public macro CloudKey(keyValueStoreKey: String? = nil) = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// sindresorhus/Defaults' `@ObservableDefault(.key)`: a property of an `@Observable` class backed
/// by a typed key, read and written in the key's suite (the one given to
/// `PreferenceKey/init(_:default:suite:)`, else `PreferenceSuite/standard`), and invalidated
/// when any process changes the key. Mark it `@ObservationIgnored`, as Defaults asks, and give it a
/// type and no value: the key holds the default.
///
/// ```swift
/// extension PreferenceKey where Value == String {
///     static let animal = PreferenceKey("animal", default: "cat", suite: shared)
/// }
///
/// @Observable
/// final class Model {
///     @ObservableDefault(.animal)
///     @ObservationIgnored
///     var animal: String
/// }
/// ```
///
/// Changes from other processes invalidate the property on the library's watcher thread (for a
/// `@MainActor` class too), as Observation calls `onChange` on the thread that mutates.
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(_$observableDefault_))
public macro ObservableDefault<Value: PreferenceValue>(_ key: PreferenceKey<Value>) =
    #externalMacro(module: "SharedPrefsMacros", type: "ObservableDefaultMacro")

/// Stores the property under a custom key (the class's prefix is still put before it).
@attached(peer)
public macro PrefsKey(_ key: String) = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// Persists the property: needed in `observeFirst` mode, optional otherwise.
@attached(peer)
public macro PrefsBacked() = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// Makes the property observable but not persisted. `willSet`/`didSet` are allowed.
@attached(accessor, names: named(init), named(get), named(set), named(_modify))
@attached(peer, names: prefixed(_))
public macro ObservableOnly() = #externalMacro(module: "SharedPrefsMacros", type: "ObservableOnlyMacro")

/// Neither observed nor persisted: a plain stored property.
@attached(peer)
public macro Ignore() = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// ObservableDefaults' spelling of ``PrefsKey(_:)``.
@attached(peer)
public macro DefaultsKey(userDefaultsKey: String) = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// ObservableDefaults' spelling of ``PrefsBacked()``, optionally with a custom key.
@attached(peer)
public macro DefaultsBacked(userDefaultsKey: String? = nil) = #externalMacro(module: "SharedPrefsMacros", type: "MarkerMacro")

/// Added by `@ObservablePrefs` to each persisted property: the accessors that read and write the
/// suite, and the peer that keeps the declared default. Not for direct use.
@attached(accessor, names: named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _PrefsProperty(_ key: String) = #externalMacro(module: "SharedPrefsMacros", type: "PrefsPropertyMacro")

/// ObservableDefaults' marker for types a property may have: here, a `PreferenceValue`. (Plain
/// `RawRepresentable` and `Codable` types need no marker at all in `@ObservablePrefs` classes.)
/// A protocol rather than a type alias, so that a type may also name `PreferenceValue` itself.
public protocol UserDefaultsPropertyListValue: PreferenceValue {}

/// ObservableDefaults' marker for `Codable` types: a `Codable` `PreferenceValue`, stored as a
/// nested property list. A protocol rather than a type alias, so that `struct User: Codable,
/// CodableUserDefaultsPropertyListValue` (as ObservableDefaults' own tests write it) compiles.
public protocol CodableUserDefaultsPropertyListValue: Codable, PreferenceValue {}

/// ObservableDefaults' marker for the types an `@ObservableCloud` property may have: here, as
/// ``UserDefaultsPropertyListValue``, a `PreferenceValue`.
public protocol CloudPropertyListValue: PreferenceValue {}

/// ObservableDefaults' marker for `Codable` types of `@ObservableCloud` properties (its README's
/// `struct UserProfile: CodableCloudPropertyListValue`): a `Codable` `PreferenceValue`, as
/// ``CodableUserDefaultsPropertyListValue``.
public protocol CodableCloudPropertyListValue: Codable, PreferenceValue {}

/// ObservableDefaults' wrapper for an optional `Codable` value, so that its models compile
/// unchanged. Plain optionals (`var user: User? = nil`) work here too, and are simpler.
/// `.none` stores nothing (the key is removed).
public enum Nullable<T: Codable & Equatable>: Equatable, ExpressibleByNilLiteral {
    case none
    case some(T)

    /// The wrapped value, or `nil`.
    public var value: T? {
        if case .some(let value) = self { return value }
        return nil
    }

    /// Whether a value is wrapped.
    public var hasValue: Bool { value != nil }

    /// `.some(value)`, or `.none` for `nil`.
    public static func from(value: T?) -> Nullable<T> { value.map(Nullable.some) ?? .none }

    /// The wrapped value transformed, or `.none`.
    public func map<U: Codable & Equatable>(_ transform: (T) -> U) -> Nullable<U> { .from(value: value.map(transform)) }

    /// The wrapped value, or `defaultValue`.
    public func valueOrDefault(_ defaultValue: T) -> T { value ?? defaultValue }

    public init(nilLiteral: ()) { self = .none }
}

extension Nullable: PreferenceValue {
    public var plistValue: PlistValue? { value.flatMap { try? PlistCoding.encode($0) } }
    public init?(plistValue: PlistValue) {
        guard let value = try? PlistCoding.decode(T.self, from: plistValue) else { return nil }
        self = .some(value)
    }
}

/// Encoded as its optional value, so that it is one of the `Codable` types
/// (``CodableCloudPropertyListValue``, ``CodableUserDefaultsPropertyListValue``) as in ObservableDefaults.
extension Nullable: Codable, CodableUserDefaultsPropertyListValue, CodableCloudPropertyListValue {
    public init(from decoder: any Decoder) throws {
        self = .from(value: try decoder.singleValueContainer().decode(T?.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

extension Nullable: Sendable where T: Sendable {}
