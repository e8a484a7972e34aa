/// The file format a suite is written in. Either format is read, whatever the option says.
public enum PropertyListFormat: Sendable, Hashable {
    /// `bplist00`, compact and fast: the default, as on Apple platforms.
    case binary
    /// XML (`PropertyList-1.0.dtd`), for suites people read and edit by hand. Dates keep whole seconds.
    case xml

    func encode(_ values: [String: PlistValue]) -> [UInt8] {
        encode(.dictionary(values))
    }

    func encode(_ root: PlistValue) -> [UInt8] {
        switch self {
        case .binary: BinaryPropertyList.encode(root)
        case .xml: XMLPropertyList.encode(root)
        }
    }

    /// Decodes a property list in either format, whatever its root.
    static func decode(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> PlistValue {
        if bytes.isEmpty { throw PropertyListDecodingError("the file is empty") }
        return bytes.starts(with: BinaryPropertyList.magic.prefix(6))
            ? try BinaryPropertyList.decode(bytes) : try XMLPropertyList.decode(bytes)
    }

    /// Decodes a suite file in either format; its root must be a dictionary.
    static func decodeSuite(_ bytes: [UInt8]) throws(PropertyListDecodingError) -> [String: PlistValue] {
        let root = try decode(bytes)
        guard case .dictionary(let values) = root else {
            throw PropertyListDecodingError("the root is \(root.typeName == "array" ? "an" : "a") \(root.typeName), not a dictionary")
        }
        return values
    }
}
