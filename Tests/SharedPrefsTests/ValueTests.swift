import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

enum Theme: String, PreferenceValue, Codable { case system, light, dark }
enum Level: Int, PreferenceValue { case low = 1, high = 2 }
struct Window: Codable, Equatable, PreferenceValue {
    var width: Int
    var title: String
    var scale: Double?
}

extension PreferenceKey where Value == Theme { static let testTheme = PreferenceKey("theme", default: .system) }
extension PreferenceKey where Value == Int { static let volume = PreferenceKey("volume", default: 5) }

@Suite("Values and lookup order")
struct ValueTests {
    @Test func everySupportedTypeRoundTripsThroughTheTypedAPI() throws {
        let suite = PreferenceSuite.inMemory()
        func check<V: PreferenceValue & Equatable>(_ value: V, default fallback: V, _ name: String = #function) {
            let key = PreferenceKey<V>("k.\(V.self)", default: fallback)
            suite[key] = value
            #expect(suite[key] == value, "\(V.self)")
            #expect(V(plistValue: value.plistValue!) == value)
        }
        check("text", default: "")
        check(Int.min, default: 0)
        check(Int8(-8), default: 0)
        check(Int16(300), default: 0)
        check(Int32(-70_000), default: 0)
        check(Int64.max, default: 0)
        check(UInt(42), default: 0)
        check(UInt8(255), default: 0)
        check(UInt16(65_535), default: 0)
        check(UInt32.max, default: 0)
        check(UInt64.max, default: 0)
        check(3.25, default: 0.0)
        check(Float(1.5), default: 0)
        check(true, default: false)
        check(Date(timeIntervalSince1970: 12_345.5), default: Date(timeIntervalSince1970: 0))
        check(Data([9, 8]), default: Data())
        check(URL(string: "https://example.com/a?b=c")!, default: URL(string: "x:")!)
        check([1, 2, 3], default: [Int]())
        check(["a": [true]], default: [String: [Bool]]())
        check(Theme.dark, default: .system)
        check(Level.high, default: .low)
        check(Window(width: 640, title: "main", scale: nil), default: Window(width: 0, title: "", scale: 1))
        check(Optional("set"), default: nil)
    }

    @Test func rawRepresentableStoresItsRawValueAndCodableANestedPlist() {
        #expect(Theme.dark.plistValue == "dark")
        #expect(Level.high.plistValue == 2)
        #expect(Window(width: 1, title: "t", scale: 2).plistValue == ["width": 1, "title": "t", "scale": 2.0])
        #expect(UInt64.max.plistValue == .unsignedInteger(UInt64.max))
        // Earlier versions stored it as its decimal string: still read.
        #expect(UInt64(plistValue: .string("18446744073709551615")) == UInt64.max)
    }

    @Test func optionalNilRemovesTheKey() {
        let suite = PreferenceSuite.inMemory()
        let key = PreferenceKey<String?>("name")
        suite[key] = "x"
        #expect(suite.value(forKey: "name") == "x")
        suite[key] = nil
        #expect(suite.value(forKey: "name") == nil)
        #expect(suite[key] == nil)
    }

    @Test func lookupOrderIsStoredThenRegisteredThenDeclared() {
        let suite = PreferenceSuite.inMemory()
        #expect(suite[.volume] == 5)
        suite.register(defaults: ["volume": 7])
        #expect(suite[.volume] == 7)
        #expect(suite.integer(forKey: "volume") == 7)
        suite[.volume] = 9
        #expect(suite[.volume] == 9)
        suite.reset(.volume)
        #expect(suite[.volume] == 7)
        #expect(suite.storedValues["volume"] == nil)
    }

    @Test func aStoredValueOfTheWrongTypeFallsBackAndIsReported() async throws {
        let suite = PreferenceSuite.inMemory()
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        suite.register(defaults: ["volume": 7])
        suite.set("loud", forKey: "volume")
        #expect(suite[.volume] == 7)
        suite.register(defaults: ["volume": "also wrong"])
        #expect(suite[.volume] == 5)
        let reported = try await failures.wait(for: 1)
        #expect(reported[0].code == .unsupportedValue)
        #expect(reported[0].message.contains("\"volume\""))
        suite.set("dark", forKey: "theme")
        #expect(suite[.testTheme] == .dark)
        suite.set("purple", forKey: "theme")
        #expect(suite[.testTheme] == .system)
    }

    @Test func userDefaultsShapedGettersConvertLikeUserDefaults() {
        let suite = PreferenceSuite.inMemory()
        suite.set("42", forKey: "s")
        suite.set(3.9, forKey: "r")
        suite.set(true, forKey: "b")
        suite.set(["a", "b"], forKey: "strings")
        suite.set(["x": 1, "y": "z"] as [String: Any], forKey: "dict")
        suite.set("/tmp/file", forKey: "path")
        suite.set(Date(timeIntervalSince1970: 5), forKey: "date")
        #expect(suite.integer(forKey: "s") == 42)
        #expect(suite.integer(forKey: "r") == 3)
        #expect(suite.double(forKey: "s") == 42)
        #expect(suite.float(forKey: "r") == 3.9 as Float)
        #expect(suite.bool(forKey: "b"))
        #expect(suite.bool(forKey: "s"))
        #expect(!suite.bool(forKey: "missing"))
        #expect(suite.string(forKey: "r") == "3.9")
        #expect(suite.stringArray(forKey: "strings") == ["a", "b"])
        #expect(suite.array(forKey: "strings") as? [String] == ["a", "b"])
        #expect(suite.dictionary(forKey: "dict")?["y"] as? String == "z")
        #expect(suite.url(forKey: "path") == URL(filePath: "/tmp/file"))
        #expect(suite.date(forKey: "date") == Date(timeIntervalSince1970: 5))
        #expect(suite.data(forKey: "s") == nil)
        #expect(suite.object(forKey: "b") as? Bool == true)
        #expect(suite.dictionaryRepresentation().count == 7)
    }

    @Test func aValueAPropertyListCannotHoldIsReportedNotStored() async throws {
        let suite = PreferenceSuite.inMemory()
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        suite.set(NSObject(), forKey: "object")
        #expect(suite.value(forKey: "object") == nil)
        #expect(try await failures.wait(for: 1)[0].code == .unsupportedValue)
    }

    @Test func aTypedValueWithNoStoredFormIsReportedAndLeavesTheKeyAlone() async throws {
        struct Point: Hashable { var x = 0 }
        struct Refuses: Codable, PreferenceValue {
            init() {}
            init(from decoder: any Decoder) throws { self.init() }
            func encode(to encoder: any Encoder) throws { throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "no")) }
        }
        let suite = PreferenceSuite.inMemory()
        let (failures, task) = suite.recordFailures()
        defer { task.cancel() }
        let points = PreferenceKey<[Point: Int]>("points", default: [:])
        suite.set(["kept": 1], forKey: "points")
        suite[points] = [Point(): 1]
        suite.set(Refuses(), forKey: "refused")
        let reports = try await failures.wait(for: 2)
        #expect(reports.map(\.code) == [.unsupportedValue, .unsupportedValue])
        #expect(reports[0].message.contains("points") && reports[0].message.contains("CodingKeyRepresentable"))
        #expect(suite.value(forKey: "points") == ["kept": 1] && suite.value(forKey: "refused") == nil)
        // In an update the whole update fails, and writes nothing.
        let count = PreferenceKey<Int>("count", default: 0)
        let error = #expect(throws: PreferenceError.self) {
            try suite.update { transaction in
                transaction[count] = 5
                transaction[points] = [Point(): 2]
            }
        }
        #expect(error?.code == .unsupportedValue && error?.message.contains("\"points\"") == true)
        #expect(suite[count] == 0 && suite.value(forKey: "points") == ["kept": 1])
        // nil at any depth of an optional still removes.
        suite.set(Optional<Optional<Int>>.some(nil), forKey: "points")
        #expect(suite.storedValues["points"] == nil)
    }

    @Test func dictionaryKeysAreStoredAsStringsAndAKeyThatDoesNotConvertBackReadsTheDefault() {
        enum Side: String, CodingKeyRepresentable { case left, right }
        let suite = PreferenceSuite.inMemory()
        suite[PreferenceKey<[Int: Bool]>("ints", default: [:])] = [3: true]
        suite[PreferenceKey<[UUID: Int]>("ids", default: [:])] = [UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!: 1]
        suite[PreferenceKey<[Side: Int]>("sides", default: [:])] = [.left: 1]
        #expect(suite.value(forKey: "ints") == ["3": true])
        #expect(suite.value(forKey: "ids") == ["E621E1F8-C36C-495A-93FC-0C247A3E6E5F": 1])
        #expect(suite.value(forKey: "sides") == ["left": 1])
        suite.set(["up": 1], forKey: "otherSides")
        #expect(suite[PreferenceKey<[Side: Int]>("otherSides", default: [.right: 9])] == [.right: 9])
    }

    @Test func removeAllAndRemoveValuesWithPrefix() {
        let suite = PreferenceSuite.inMemory()
        for key in ["a.1", "a.2", "ab", "b"] { suite.set(1, forKey: key) }
        suite.removeValues(withPrefix: "a.")
        #expect(Set(suite.storedValues.keys) == ["ab", "b"])
        suite.removeAll()
        #expect(suite.storedValues.isEmpty)
    }

    @Test func perKeyDiffReportsOnlyRealChanges() throws {
        let old: PlistDictionary = ["same": 1, "changed": "a", "removed": true, "nested": ["x": [1]]]
        let new: PlistDictionary = ["same": 1, "changed": "b", "added": 2.5, "nested": ["x": [1]]]
        let image = try #require(try SuiteImage.decode(BinaryPropertyList.encode(.dictionary(old))).image)
        let changes = try image.changes(to: BinaryPropertyList.encode(.dictionary(new))).delta.sorted { $0.key.string < $1.key.string }
        #expect(changes.map(\.key.string) == ["added", "changed", "removed"])
        #expect(changes.map(\.value) == [2.5, "b", nil])
    }

    @Test(arguments: ["", ".hidden", "a/b", "..", "../../etc/passwd", "a\0b", "sp ace", String(repeating: "x", count: 201), String(repeating: "x", count: 300), "ünï"])
    func invalidSuiteNamesAreRefusedWithAClearError(name: String) throws {
        let directory = try TemporaryDirectory()
        let group = try AppGroup(identifier: "group.test", containerURL: directory.url)
        let error = #expect(throws: PreferenceError.self) { try PreferenceSuite(suiteName: name, in: group) }
        #expect(error?.code == .invalidName)
        #expect(error?.message.contains("Use letters, digits") == true)
        #expect(PreferenceSuite(suiteName: name) == nil)
        // The failable initializer says why, as an error log line (a name of printable ASCII as it is).
        let printable = name.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 }
        let said = printable ? "error The suite name \"\(name)\" is not allowed" : "error The suite name \""
        #expect(capturedLogs.items.contains { $0.hasPrefix(said) && $0.contains("is not allowed") }, "no log line \(said)")
        #expect(throws: PreferenceError.self) { try AppGroup(identifier: name) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty, "something was created for \(name)")
    }
}
