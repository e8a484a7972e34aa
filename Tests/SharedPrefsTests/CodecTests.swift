import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

@Suite("Property-list codecs")
struct CodecTests {
    static let sample: PlistDictionary = [
        "string": "héllo <&> wörld 🎉",
        "ascii": "plain",
        "empty": "",
        "int.small": 7,
        "int.negative": -42,
        "int.large": .integer(Int64.max),
        "int.min": .integer(Int64.min),
        "int.u16": 40_000,
        "int.u32": 3_000_000_000,
        "real": 1.5,
        "real.negative": -0.25,
        "real.huge": 1e300,
        "bool.true": true,
        "bool.false": false,
        "date": .date(Date(timeIntervalSince1970: 1_700_000_000)),
        "data": .data(Data([0, 1, 2, 255])),
        "data.long": .data(Data(repeating: 7, count: 300)),
        "array": [1, "two", 3.0, [true]],
        "array.empty": [],
        "dict": ["nested": ["deep": 1], "name": "x"],
        "dict.empty": [:],
        "key.with.dots": "dots",
        "long": .string(String(repeating: "x", count: 70_000)),
    ]

    @Test(arguments: [PropertyListFormat.binary, .xml])
    func everyValueTypeRoundTrips(format: PropertyListFormat) throws {
        let bytes = format.encode(.dictionary(Self.sample))
        #expect(try PropertyListFormat.decodeSuite(bytes).values == Self.sample)
    }

    @Test func binaryHandlesMoreThan255ObjectsAndWideOffsets() throws {
        var values: PlistDictionary = [:]
        for i in 0..<70_000 { values["key.\(i)"] = .integer(Int64(i)) }
        #expect(try PropertyListFormat.decodeSuite(BinaryPropertyList.encode(.dictionary(values))).values == values)
    }

    @Test func nanEqualsItselfSoItNeverLooksLikeAChange() throws {
        let values: PlistDictionary = ["nan": .real(.nan), "inf": .real(-.infinity)]
        #expect(try PropertyListFormat.decodeSuite(PropertyListFormat.binary.encode(.dictionary(values))).values == values)
        let image = try #require(try SuiteImage.decode(PropertyListFormat.binary.encode(.dictionary(values))).image)
        #expect(try image.changes(to: PropertyListFormat.binary.encode(.dictionary(values))).delta.isEmpty)
    }

    @Test func foundationReadsWhatWeWrite() throws {
        struct Settings: Codable, Equatable {
            var string: String
            var array: [Double]
            var dict: [String: Int]
        }
        let values: PlistDictionary = ["string": "x", "array": [1.5, 2.5], "dict": ["a": 1]]
        for format in [PropertyListFormat.binary, .xml] {
            let decoded = try PropertyListDecoder().decode(Settings.self, from: Data(format.encode(.dictionary(values))))
            #expect(decoded == Settings(string: "x", array: [1.5, 2.5], dict: ["a": 1]))
        }
    }

    @Test func pythonPlistlibReadsBothFormatsAndWeReadItsOutput() async throws {
        let directory = try TemporaryDirectory()
        let ours = directory.file("ours.plist")
        let theirs = directory.file("theirs.plist")
        let values: PlistDictionary = [
            "s": "ünïcode", "i": -5, "big": .integer(1 << 40), "r": 0.5, "b": true,
            "d": .date(Date(timeIntervalSince1970: 1_600_000_000)), "data": .data(Data([1, 2, 3])),
            "a": [1, "x"], "n": ["k": ["deep": false]],
        ]
        for format in [PropertyListFormat.binary, .xml] {
            try Data(format.encode(.dictionary(values))).write(to: ours)
            // Python decodes our file and writes it back in the other format.
            let result = try await python(
                """
                import plistlib, sys
                with open(sys.argv[1], 'rb') as f: v = plistlib.load(f)
                fmt = plistlib.FMT_XML if sys.argv[3] == 'binary' else plistlib.FMT_BINARY
                with open(sys.argv[2], 'wb') as f: plistlib.dump(v, f, fmt=fmt)
                """, ours.path, theirs.path, format == .binary ? "binary" : "xml")
            #expect(result.status == 0, "\(result.output)")
            #expect(try readSuiteFile(theirs) == values)
        }
    }

    static let malformed: [(String, [UInt8])] = [
        ("garbage", Array("not a plist at all".utf8)),
        ("empty", []),
        ("truncated binary", Array(BinaryPropertyList.encode(["a": 1, "b": "two"]).dropLast(9))),
        ("array root", BinaryPropertyList.encode([1, 2])),
        ("unterminated XML", Array("<plist><dict><key>a</key><string>x".utf8)),
        ("invalid UTF-8 in XML", Array("<plist><dict><key>".utf8) + [0xFF, 0xFE] + Array("</key><true/></dict></plist>".utf8)),
        ("unknown XML element", Array("<plist><dict><key>a</key><foo/></dict></plist>".utf8)),
    ]

    @Test(arguments: malformed)
    func malformedInputIsAnErrorNeverACrash(name: String, bytes: [UInt8]) {
        #expect(throws: PropertyListDecodingError.self) { try PropertyListFormat.decodeSuite(bytes).values }
    }

    /// Inputs libFuzzer found (Fuzz/corpus keeps them too), pinned here with what was wrong.
    @Test func whatTheFuzzerFoundStaysFixed() throws {
        // "<" or "&" followed by a combining mark is one Character, which is not "<": it was written raw.
        // A NaN with a sign or payload came back as another NaN. Dates beyond year 9999 trapped.
        let tricky: PlistDictionary = [
            "s": "a<\u{0616}b>\u{0301}&\u{0301}", "nan": .real(-Double(nan: 3, signaling: false)),
            "far": .date(Date(timeIntervalSince1970: 1e300)), "past": .date(Date(timeIntervalSince1970: -1e300)),
        ]
        let back = try PropertyListFormat.decodeSuite(PropertyListFormat.xml.encode(.dictionary(tricky))).values
        #expect(back == tricky.mapValues(XMLPropertyList.storable))
        #expect(back["s"] == tricky["s"])
        // A date that is not a finite number is not a value.
        let nanDate = BinaryPropertyList.encode(["d": .date(Date(timeIntervalSinceReferenceDate: .nan))])
        #expect(throws: PropertyListDecodingError.self) { try PropertyListFormat.decodeSuite(nanDate).values }
        // An 8-byte object offset beyond Int.max trapped converting to Int.
        var wild = BinaryPropertyList.magic + [0x08] + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xF0]
        wild += [0, 0, 0, 0, 0, 0, 8, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0, 0, 0, 0, 9]
        #expect(throws: PropertyListDecodingError.self) { try BinaryPropertyList.decode(wild) }
        // XML dates out of range are errors, not traps.
        for date in ["99999999999-01-01T00:00:00Z", "2020-13-01T00:00:00Z", "2020-01-01T24:00:00Z"] {
            let xml = "<plist version=\"1.0\"><dict><key>d</key><date>\(date)</date></dict></plist>"
            #expect(throws: PropertyListDecodingError.self) { try PropertyListFormat.decodeSuite(Array(xml.utf8)).values }
        }
    }

    @Test func deepNestingAndReferenceCyclesStopAtTheDepthLimit() throws {
        var deep: PlistValue = 1
        for _ in 0..<600 { deep = [deep] }
        #expect(throws: PropertyListDecodingError.self) { try PropertyListFormat.decodeSuite(BinaryPropertyList.encode(["d": deep])).values }
        // A one-element array whose element is itself.
        var cycle = BinaryPropertyList.magic
        cycle += [0xA1, 0x00]  // object 0: array of 1, ref 0
        let table = cycle.count
        cycle += [0x08]  // offset of object 0
        cycle += [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8)
            + [0, 0, 0, 0, 0, 0, 0, UInt8(table)]
        #expect(throws: PropertyListDecodingError.self) { try BinaryPropertyList.decode(cycle) }
    }

    /// XML whose bad text is 8 MB, or holds an escape sequence: what the message quotes of it is
    /// 64 bytes at most, with no control character, and the whole message stays under 1 KB.
    static let hostileXML: [String: String] = {
        let huge = String(repeating: "9", count: 8 << 20)
        let escape = "\u{1B}]0;owned\u{07}\u{1B}[2J"
        return [
            "<integer>": "<key>k</key><integer>\(huge)</integer>",
            "<real>": "<key>k</key><real>x\(huge)</real>",
            "<date>": "<key>k</key><date>\(huge)</date>",
            "element name": "<key>k</key><x\(huge)/>",
            "unterminated element": "<key>k</key><x\(huge)",
            "tag instead of a key": "<x\(huge)>1</x>",
            "escape sequence": "<key>k</key><integer>\(escape)</integer>",
            "entity": "<key>k</key><string>&\u{1B}[2J;</string>",
        ].mapValues { "<plist version=\"1.0\"><dict>\($0)</dict></plist>" }
    }()

    @Test(arguments: hostileXML.keys.sorted())
    func aMessageQuotesAtMost64BytesOfTheFileAndNoControlCharacter(name: String) throws {
        let xml = try #require(Self.hostileXML[name])
        let error = #expect(throws: PropertyListDecodingError.self) { try PropertyListFormat.decodeSuite(Array(xml.utf8)).values }
        let message = error?.description ?? ""
        #expect(message.utf8.count < 1024, "\(message.prefix(200))…")
        #expect(!message.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(message.debugDescription)")
    }

    @Test func xmlEntitiesCommentsAndCDATAAreDecoded() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><!-- a comment -->
            <dict>
              <key>a &amp; b</key><string>&lt;tag&gt; &#233;&#x1F600; <![CDATA[<raw>]]></string>
              <key>n</key><integer> 12 </integer>
              <key>e</key><string/>
              <key>t</key><true/>
            </dict>
            </plist>
            """
        #expect(
            try PropertyListFormat.decodeSuite(Array(xml.utf8)).values == [
                "a & b": "<tag> é😀 <raw>", "n": 12, "e": "", "t": true,
            ])
    }
}
