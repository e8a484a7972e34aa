#if Configuration
import Configuration
import Foundation
import SharedPrefs

/// A suite as a swift-configuration provider: a `ConfigReader` reads its keys as the suite reads
/// them (every layer: locks, launch arguments, the suite's file, administrators' and packages'
/// defaults, registered defaults), and its watches hear other processes' changes.
///
/// ```swift
/// let suite = try PreferenceSuite(suiteName: "server", in: AppGroup(identifier: "group.com.example.server"))
/// let config = ConfigReader(providers: [EnvironmentVariablesProvider(), PreferenceSuiteProvider(suite: suite)])
/// try await config.watchInt(forKey: "http.timeout") { updates in for await timeout in updates { print(timeout as Any) } }
/// ```
///
/// A configuration key's components joined with `.` name the suite's key (`http.timeout`). A value
/// reads as the type asked for where the suite's own accessors (`integer(forKey:)` and its kin,
/// as `UserDefaults`) convert it: a number as a string, a real as an integer (truncated), a
/// boolean as 1 or 0, a numeric string as a number, `YES`/`true`/`NO`/`false` or a number as a
/// boolean, data as bytes. Where they would fall back to `0`, `false` or `nil`, the lookup throws.
public struct PreferenceSuiteProvider: ConfigProvider {
    public let suite: PreferenceSuite

    public init(suite: PreferenceSuite) {
        self.suite = suite
    }

    public var providerName: String { "PreferenceSuiteProvider[\(suite.name)]" }

    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try Self.lookup(suite.value(forKey: Self.name(key)), key: key, type: type)
    }

    public func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey, type: ConfigType,
        updatesHandler: nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        let name = Self.name(key)
        let (stream, continuation) = AsyncStream<Result<LookupResult, any Error>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let suite = suite
        // The current value first, under the observer's registration: no change slips between.
        let token = suite.observe(.key(name), options: .initial) { _ in
            continuation.yield(Result { try Self.lookup(suite.value(forKey: name), key: key, type: type) })
        }
        defer {
            token.cancel()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    public func snapshot() -> any ConfigSnapshot {
        Snapshot(providerName: providerName, values: suite.resolvedValues)
    }

    public func watchSnapshot<Return: ~Copyable>(
        updatesHandler: nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        let (stream, continuation) = AsyncStream<any ConfigSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (suite, providerName) = (suite, providerName)
        continuation.yield(Snapshot(providerName: providerName, values: suite.resolvedValues))
        let token = suite.observe(.all) { _ in continuation.yield(Snapshot(providerName: providerName, values: suite.resolvedValues)) }
        defer {
            token.cancel()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    /// The suite's values at one moment.
    struct Snapshot: ConfigSnapshot {
        let providerName: String
        let values: PlistDictionary

        func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
            try PreferenceSuiteProvider.lookup(values[PreferenceSuiteProvider.name(key)], key: key, type: type)
        }
    }

    static func name(_ key: AbsoluteConfigKey) -> String { key.components.joined(separator: ".") }

    static func lookup(_ value: PlistValue?, key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        guard let value else { return LookupResult(encodedKey: name(key), value: nil) }
        guard let content = content(value, as: type) else {
            throw PreferenceError(
                code: .unsupportedValue,
                message: "The key \"\(name(key))\" holds a \(value.typeName), which does not read as \(type.rawValue). Write a value of that type to the key, or read it as another type.",
                path: nil)
        }
        return LookupResult(encodedKey: name(key), value: ConfigValue(content, isSecret: false))
    }

    /// `value` as `type`, converted as the suite's `UserDefaults` accessors convert (the same
    /// rule); `nil` when it does not convert.
    static func content(_ value: PlistValue, as type: ConfigType) -> ConfigContent? {
        func bytes(_ value: PlistValue) -> [UInt8]? {
            if case .data(let v) = value { return Array(v) }
            return nil
        }
        func array<T>(_ item: (PlistValue) -> T?) -> [T]? {
            guard case .array(let items) = value else { return nil }
            let converted = items.compactMap(item)
            return converted.count == items.count ? converted : nil
        }
        switch type {
        case .string: return value.userDefaultsString.map(ConfigContent.string)
        case .int: return value.userDefaultsInteger.map(ConfigContent.int)
        case .double: return value.userDefaultsDouble.map(ConfigContent.double)
        case .bool: return value.userDefaultsBool.map(ConfigContent.bool)
        case .bytes: return bytes(value).map(ConfigContent.bytes)
        case .stringArray: return array(\.userDefaultsString).map(ConfigContent.stringArray)
        case .intArray: return array(\.userDefaultsInteger).map(ConfigContent.intArray)
        case .doubleArray: return array(\.userDefaultsDouble).map(ConfigContent.doubleArray)
        case .boolArray: return array(\.userDefaultsBool).map(ConfigContent.boolArray)
        case .byteChunkArray: return array(bytes).map(ConfigContent.byteChunkArray)
        }
    }
}
#endif
