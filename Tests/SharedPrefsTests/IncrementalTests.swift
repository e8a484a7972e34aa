import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// The incremental paths (``SuiteImage``) must agree, always, with encoding and decoding in full.
@Suite("Incremental reads and writes")
struct IncrementalTests {
    /// Keys of every shape: ASCII, long, UTF-16 in the file, two spellings of "café", empty.
    static func key(_ rng: inout SplitMix64) -> String {
        let n = Int.random(in: 0..<40, using: &rng)
        return ["key.\(n)", "a longer key than fifteen bytes \(n)", "ü\(n)", "caf\u{E9}", "cafe\u{301}", "", "k\(n)"][Int.random(in: 0..<7, using: &rng)]
    }

    static func value(_ rng: inout SplitMix64, depth: Int = 0) -> PlistValue {
        switch Int.random(in: 0..<(depth < 2 ? 10 : 8), using: &rng) {
        case 0: .bool(Bool.random(using: &rng))
        case 1: .integer(Int64.random(in: -1_000...Int64.max, using: &rng))
        case 2: .real(Double.random(in: -1e9...1e9, using: &rng))
        case 3: .string(key(&rng))
        case 4: .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...1_000_000_000, using: &rng))))
        case 5: .data(Data((0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case 6: .unsignedInteger(UInt64.random(in: UInt64(Int64.max) + 1...UInt64.max, using: &rng))
        case 7:
            // Equal values in new places, and long ones that differ only at the end.
            [.integer(Int64.random(in: 0...3, using: &rng)), .string(String(repeating: "x", count: 20) + "\(Int.random(in: 0...3, using: &rng))"),
             .data(Data(repeating: 7, count: 20) + [UInt8.random(in: 0...3, using: &rng)])][Int.random(in: 0..<3, using: &rng)]
        case 8: .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(&rng, depth: depth + 1) })
        default: .dictionary(PlistDictionary((0..<Int.random(in: 0...4, using: &rng)).map { _ in (key(&rng), value(&rng, depth: depth + 1)) }))
        }
    }

    static func suite(_ rng: inout SplitMix64, keys: Int) -> PlistDictionary {
        PlistDictionary((0..<keys).map { _ in (key(&rng), value(&rng)) })
    }

    /// Sets of new and existing keys (some to the value they hold), and removals.
    static func operations(on values: PlistDictionary, _ rng: inout SplitMix64) -> Operations {
        var operations: Operations = [:]
        let existing = values.keys.sorted()
        for _ in 0..<Int.random(in: 1...(Bool.random(using: &rng) ? 4 : 20), using: &rng) {
            let key = !existing.isEmpty && Bool.random(using: &rng) ? existing.randomElement(using: &rng)! : Self.key(&rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: operations[PlistKey(key)] = .remove
            case 1: operations[PlistKey(key)] = values[key].map { .set($0) } ?? .remove
            default: operations[PlistKey(key)] = .set(value(&rng))
            }
        }
        return operations
    }

    /// The keys whose value differs, by exact spelling.
    static func changedKeys(_ old: PlistDictionary, _ new: PlistDictionary) -> Set<PlistKey> {
        Set(Set(old.storage.keys).union(new.storage.keys).filter { old.storage[$0] != new.storage[$0] })
    }

    /// A re-read's delta takes `values` to `expected`, and holds every changed key; besides them,
    /// only keys whose value is encoded otherwise (a dictionary's keys in another order, "café"
    /// composed and decomposed), which the store finds equal.
    static func expect(_ delta: FileDelta, from values: PlistDictionary, to expected: PlistDictionary, round: Int) {
        var seen = values
        for (key, value) in delta { seen.storage[key] = value }
        #expect(seen == expected, "round \(round): the read")
        let changed = changedKeys(values, expected)
        #expect(changed.isSubset(of: delta.map(\.key)), "round \(round): every changed key reported")
        #expect(delta.allSatisfy { changed.contains($0.key) || values.storage[$0.key] == $0.value }, "round \(round): no other change")
    }

    @Test func writesAndReadsAgreeWithTheFullCodecs() throws {
        var rng = SplitMix64(seed: 0x5EED)
        for round in 0..<300 {
            var values = Self.suite(&rng, keys: Int.random(in: 0...(round % 10 == 0 ? 400 : 30), using: &rng))
            var image = try #require(try SuiteImage.decode(BinaryPropertyList.encode(.dictionary(values))).image)
            // A few writes in a row, each on the image the one before left.
            for _ in 0..<3 {
                let operations = Self.operations(on: values, &rng)
                let expected = values.applying(operations)
                let (bytes, next) = try image.applying(operations)
                let decoded = try SuiteImage.decode(bytes)
                #expect(decoded.values == expected, "round \(round): the write")
                #expect(decoded.image?.keys == next.keys, "round \(round): the keys in file order")
                // A reader of the incremental write (the same order), and of a full encoding (another order).
                for newBytes in [bytes, BinaryPropertyList.encode(.dictionary(expected))] {
                    let read = try image.changes(to: newBytes)
                    Self.expect(read.delta, from: values, to: expected, round: round)
                }
                values = expected
                image = next
                // The image read in place, as a store holds it (``SuiteSnapshot``).
                for (key, value) in values.storage { #expect(image.value(of: key) == value, "round \(round): key \(key.string)") }
                #expect(image.value(of: PlistKey("not a key of the suite")) == nil)
            }
        }
    }

    /// A store's values held as an image and the keys apart from it agree with a dictionary
    /// through every change, re-base on a file read or written, and fall back to no image.
    @Test func aSnapshotOnAnImageReadsAsItsValues() throws {
        var rng = SplitMix64(seed: 0x5A7)
        for round in 0..<200 {
            var model = Self.suite(&rng, keys: Int.random(in: 0...30, using: &rng))
            var snapshot = SuiteSnapshot(model)
            for step in 0..<12 {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0, 1:  // this process's changes, or another's heard
                    for (key, operation) in Self.operations(on: model, &rng) {
                        #expect(snapshot.set(key, operation.value) == model.storage[key], "round \(round) step \(step): the old value")
                        model.storage[key] = operation.value
                    }
                case 2:  // a file read or written: what it holds, but for keys this process changed since
                    let apart = Set(model.storage.keys.filter { _ in Bool.random(using: &rng) } + [PlistKey(Self.key(&rng))])
                    var file = model
                    for key in apart { file.storage[key] = Bool.random(using: &rng) ? Self.value(&rng) : nil }
                    let image = try #require(try SuiteImage.decode(BinaryPropertyList.encode(.dictionary(file))).image)
                    snapshot.rebase(on: image, apart: apart)
                default:  // an XML file, or etcd: no image
                    snapshot.rebase(on: nil, apart: [])
                }
                #expect(snapshot.dictionary == model, "round \(round) step \(step)")
                #expect(snapshot.keys == Set(model.storage.keys), "round \(round) step \(step)")
                for key in model.storage.keys { #expect(snapshot[key] == model.storage[key]) }
            }
        }
    }

    /// Sets of 1 to 8 existing keys to scalar values: the usual write, which a canonical file
    /// takes by splicing (and its reader by comparing bytes), where those keys hold scalars.
    static func scalarSets(on values: PlistDictionary, _ rng: inout SplitMix64) -> Operations {
        var operations: Operations = [:]
        for _ in 0..<Int.random(in: 1...8, using: &rng) {
            guard let key = values.storage.keys.randomElement(using: &rng) else { break }
            var value = Self.value(&rng, depth: 2)  // depth 2: a scalar
            if Int.random(in: 0..<4, using: &rng) == 0 { value = values.storage[key]! }  // the same value
            operations[key] = .set(value)
        }
        return operations
    }

    /// A value that grows by bytes equal to those before it in the file: the two files' common
    /// suffix reaches back past where that value starts ("P" → "xQP" after "x": `Q` is the old
    /// string's marker byte), so where the changed objects end is found by their offsets.
    @Test func aValueGrownByTheBytesBeforeItIsStillComparedByBytes() throws {
        let encoded = BinaryPropertyList.encode(.dictionary(["a": "x", "b": "x", "c": "x"]))
        var image = try #require(try SuiteImage.decode(encoded).image)
        let keys = image.keys  // in the file's order
        image = try image.applying([keys[2]: .set("P")]).image
        let (bytes, _) = try image.applying([keys[0]: .set("zz"), keys[2]: .set("xQP")])
        let changes = try #require(try image.fastChanges(to: bytes))
        #expect(changes.map(\.key) == [keys[0], keys[2]])
        #expect(changes.map(\.value) == ["zz", "xQP"])
    }

    @Test func scalarWritesSpliceAndTheirReadersCompareBytes() throws {
        var rng = SplitMix64(seed: 0x5A1CE)
        var spliced = 0
        for round in 0..<300 {
            var values = Self.suite(&rng, keys: Int.random(in: 1...(round % 10 == 0 ? 400 : 30), using: &rng))
            var image = try #require(try SuiteImage.decode(BinaryPropertyList.encode(.dictionary(values))).image)
            #expect(image.canonical, "round \(round): the encoder's layout")
            for _ in 0..<5 {
                let operations = Self.scalarSets(on: values, &rng)
                let expected = values.applying(operations)
                let onlyScalars = operations.keys.allSatisfy {
                    switch values.storage[$0]! { case .array, .dictionary: false; default: true }
                }
                // The splice makes exactly the bytes of the entry-by-entry write, in the same layout.
                let inFull = try SuiteImage(bytes: image.bytes, keys: image.keys, canonical: false).applying(operations)
                let splice = image.splicing(operations)
                #expect((splice != nil) == onlyScalars, "round \(round): spliced where scalars were")
                if let splice {
                    spliced += 1
                    #expect(splice.bytes == inFull.bytes, "round \(round): the splice")
                }
                let (bytes, next) = try image.applying(operations)
                let decoded = try #require(try SuiteImage.decode(bytes).image)
                #expect(decoded.canonical && next.canonical, "round \(round): still canonical")
                #expect(try SuiteImage.decode(bytes).values == expected, "round \(round): the write")
                // Where scalars were, the reader compares bytes.
                let fast = try image.fastChanges(to: bytes)
                #expect(fast != nil || !onlyScalars, "round \(round): compared by bytes where scalars were")
                Self.expect(try image.changes(to: bytes).delta, from: values, to: expected, round: round)
                values = expected
                image = next
            }
        }
        #expect(spliced > 500)
    }

    @Test func aFileWhoseValuesShareAnObjectIsNotSpliced() async throws {
        // plistlib (like CoreFoundation) writes equal values once: "a" and "b" share one object.
        let directory = try TemporaryDirectory()
        let file = directory.file("shared.plist")
        let result = try await python("import plistlib, sys; plistlib.dump({'a': 'same', 'b': 'same', 'c': 1}, open(sys.argv[1], 'wb'), fmt=plistlib.FMT_BINARY)", file.path)
        #expect(result.status == 0, "\(result.output)")
        let image = try #require(try SuiteImage.decode(Array(Data(contentsOf: file))).image)
        #expect(!image.canonical)
        #expect(image.splicing([PlistKey("a"): .set("changed")]) == nil)
        let (bytes, next) = try image.applying([PlistKey("a"): .set("changed")])
        #expect(try SuiteImage.decode(bytes).values == ["a": "changed", "b": "same", "c": 1])
        #expect(next.canonical)
    }

    @Test func aMangledFileIsNeverReadDifferentlyThanInFull() throws {
        var rng = SplitMix64(seed: 0xBAD)
        var disagreements = 0
        var incrementalReads = 0
        var bytewiseReads = 0
        for _ in 0..<3_000 {
            let values = Self.suite(&rng, keys: Int.random(in: 1...30, using: &rng))
            let image = try #require(try SuiteImage.decode(BinaryPropertyList.encode(.dictionary(values))).image)
            let operations = Bool.random(using: &rng) ? Self.operations(on: values, &rng) : Self.scalarSets(on: values, &rng)
            var bytes = try image.applying(operations).bytes
            if Bool.random(using: &rng) {
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            } else {
                bytes.removeLast(Int.random(in: 1...min(40, bytes.count), using: &rng))
            }
            let full = try? PropertyListFormat.decodeSuite(bytes).values
            // A key twice (among them, a new key the old file had) sends the reader to the full decode.
            guard let read = try? image.changes(to: bytes) else { continue }
            incrementalReads += 1
            if (try? image.fastChanges(to: bytes)) != nil { bytewiseReads += 1 }
            var seen = values
            for (key, value) in read.delta { seen.storage[key] = value }
            if seen != full { disagreements += 1 }
        }
        #expect(disagreements == 0)
        #expect(incrementalReads > 500)
        #expect(bytewiseReads > 20, "\(bytewiseReads) reads compared bytes")
    }

    @Test func plistlibReadsWhatAnIncrementalWriteMakes() async throws {
        var rng = SplitMix64(seed: 42)
        let directory = try TemporaryDirectory()
        // Over 256 objects, so references are two bytes wide, with containers copied and renumbered.
        var values = Self.suite(&rng, keys: 300)
        values["nested"] = ["list": [1, "two", ["three": 3.5]], "date": .date(Date(timeIntervalSinceReferenceDate: 1e8))]
        let image = try #require(try SuiteImage.decode(BinaryPropertyList.encode(.dictionary(values))).image)
        let operations = Self.operations(on: values, &rng)
        try Data(image.applying(operations).bytes).write(to: directory.file("incremental.plist"))
        try Data(BinaryPropertyList.encode(.dictionary(values.applying(operations)))).write(to: directory.file("full.plist"))
        let script = """
            import plistlib, sys
            a, b = (plistlib.load(open(p, 'rb')) for p in sys.argv[1:3])
            sys.exit(0 if a == b else 1)
            """
        let result = try await python(script, directory.file("incremental.plist").path, directory.file("full.plist").path)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func aKeyTwiceInAForeignFileIsReadAsInFull() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("twice.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(0, forKey: "k")
        suite.set(1, forKey: "other")
        try await suite.flush()
        let (changes, token) = suite.record(.all)
        defer { _ = token }
        // No writer we know makes such a file; every reader lets the last one win.
        var encoder = BinaryPropertyList.Encoder()
        let bytes = encoder.encodeDictionary(keys: [.value("k"), .value("other"), .value("k")], values: [.value(1), .value(1), .value(2)])
        try Data(bytes).write(to: directory.file(".twice.tmp"))
        #expect(rename(directory.file(".twice.tmp").path, file.path) == 0)
        let seen = try await changes.wait(for: 1)
        #expect(seen.map(\.key) == ["k"] && seen[0].newValue == 2)
        #expect(suite.integer(forKey: "k") == 2)
    }
}

extension SuiteImage {
    /// The byte comparison of ``changes(to:)`` alone: `nil` where it does not apply.
    func fastChanges(to newBytes: [UInt8]) throws -> FileDelta? {
        try bytes.withUnsafeBufferPointer { old in
            try newBytes.withUnsafeBufferPointer { new in
                var reader = try BinaryPropertyList.Reader(new)
                return try scalarChanges(from: BinaryPropertyList.Reader(old), to: &reader)
            }
        }
    }
}
