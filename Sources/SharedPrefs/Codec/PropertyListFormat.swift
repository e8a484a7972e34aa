/// The file format a suite is written in. Either format is read, whatever the option says.
public enum PropertyListFormat: Sendable, Hashable {
    /// `bplist00`, compact and fast: the default, as on Apple platforms.
    case binary
    /// XML (`PropertyList-1.0.dtd`), for suites people read and edit by hand. Dates keep whole seconds.
    case xml

    /// Encodes `root` in this format. XML cannot carry some strings at all (control characters
    /// such as ESC or NUL, U+FFFE, U+FFFF): a value holding one is encoded as a binary property
    /// list instead, never as XML that no parser accepts (either format is read).
    package func encode(_ root: PlistValue) -> [UInt8] {
        switch self {
        case .binary: return BinaryPropertyList.encode(root)
        case .xml:
            return (try? XMLPropertyList.encode(root)) ?? BinaryPropertyList.encode(root)
        }
    }

    /// Decodes a property list in either format, whatever its root.
    package static func decode(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> PlistValue {
        if bytes.isEmpty { throw PropertyListDecodingError("the file is empty") }
        return bytes.starts(with: BinaryPropertyList.magic.prefix(6))
            ? try BinaryPropertyList.decode(bytes) : try XMLPropertyList.decode(bytes)
    }

    /// Decodes a suite file in either format; its root must be a dictionary. A binary file comes
    /// with its image, for reading and writing its next versions incrementally.
    static func decodeSuite(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> (values: PlistDictionary, image: SuiteImage?) {
        if bytes.starts(with: BinaryPropertyList.magic.prefix(6)) { return try SuiteImage.decode(bytes) }
        let root = try decode(bytes)
        guard case .dictionary(let values) = root else { throw notADictionary(root) }
        return (values, nil)
    }

    static func notADictionary(_ root: PlistValue) -> PropertyListDecodingError {
        PropertyListDecodingError("the root is \(root.typeName == "array" ? "an" : "a") \(root.typeName), not a dictionary")
    }

    // MARK: The suite's number

    /// The largest number a suite file carries (48 bits: 8.9 years of 1,000,000 writes a second).
    static let maximumSequence: UInt64 = 1 << 48 - 1

    /// The number of the write that made a suite file (``PreferenceSuite/sequence``), `0` for none: in
    /// a binary file's first six trailer bytes, which every reader skips, or an XML comment after the
    /// prolog, `<!-- SharedPrefs sequence 42 -->`.
    package static func sequence(of bytes: [UInt8]) -> UInt64 {
        if bytes.starts(with: BinaryPropertyList.magic.prefix(6)) {
            guard bytes.count >= 40 else { return 0 }
            return bytes[(bytes.count - 32)..<(bytes.count - 26)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let head = bytes.prefix(512)
        guard let at = head.firstRange(of: xmlSequenceMarker.utf8) else { return 0 }
        return UInt64(String(decoding: head[at.upperBound...].prefix { (0x30...0x39).contains($0) }.prefix(20), as: UTF8.self)) ?? 0
    }

    /// Makes `bytes`, a suite file this library encoded, carry `sequence`: in place in a binary
    /// one's trailer (no copy when `bytes` is not shared), in a comment before an XML one's root.
    static func number(_ bytes: inout [UInt8], _ sequence: UInt64) {
        if bytes.starts(with: BinaryPropertyList.magic), bytes.count >= 40 {
            numberTrailer(&bytes, sequence)
        } else if let at = bytes.firstRange(of: "<plist version".utf8) {
            bytes.insert(contentsOf: Array("\(xmlSequenceMarker)\(sequence) -->\n".utf8), at: at.lowerBound)
        }
    }

    /// Puts `sequence` in the 6 unused bytes that begin the binary trailer `bytes` ends with.
    static func numberTrailer(_ bytes: inout [UInt8], _ sequence: UInt64) {
        for i in 0..<6 { bytes[bytes.count - 32 + i] = UInt8(truncatingIfNeeded: sequence >> (8 * (5 - i))) }
    }

    private static let xmlSequenceMarker = "<!-- SharedPrefs sequence "

    /// Whether `bytes` may be a whole property list, as far as its end tells (cheaply, without
    /// decoding): a binary one's trailer points inside the file, an XML one ends with `</plist>`.
    /// A file still being appended to is not; anything else (another format) may be.
    package static func looksWhole(_ bytes: [UInt8]) -> Bool {
        if bytes.starts(with: BinaryPropertyList.magic.prefix(6)) {
            guard bytes.count >= 40 else { return false }
            let trailer = bytes.count - 32
            func field(_ at: Int) -> UInt64 { bytes[(trailer + at)..<(trailer + at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
            let (offsetSize, count, table) = (UInt64(bytes[trailer + 6]), field(8), field(24))
            return (1...8).contains(offsetSize) && table >= 8 && table <= UInt64(trailer) && count <= (UInt64(trailer) - table) / offsetSize
        }
        guard looksLikePropertyList(bytes) else { return true }
        let end = bytes.reversed().drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0 }
        return end.prefix(8).elementsEqual("</plist>".utf8.reversed())
    }

    /// Whether `bytes` look like (the start of) a property list this library or a peer would write:
    /// empty, a `bplist` header, or an XML prolog or `<plist>`. Only such a file is ever moved aside
    /// as corrupt; anything else is somebody else's.
    package static func looksLikePropertyList(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        if rest.isEmpty { return true }
        let head = Array(rest.prefix(1024))
        func begins(_ text: String) -> Bool {
            let expected = Array(text.utf8)
            return head.count < expected.count ? expected.starts(with: head) : head.starts(with: expected)
        }
        if begins("bplist") || begins("<plist") || begins("<!DOCTYPE plist") { return true }
        guard begins("<?xml") else { return false }
        // An XML prolog: a property list if a plist element or doctype follows, or nothing yet.
        let text = String(decoding: head, as: UTF8.self)
        guard let end = text.firstRange(of: "?>") else { return true }
        let after = text[end.upperBound...].drop { $0.isWhitespace }
        return after.isEmpty || after.hasPrefix("<plist") || after.hasPrefix("<!DOCTYPE plist")
            || "<plist".hasPrefix(after) || "<!DOCTYPE plist".hasPrefix(after)
    }
}
