import Foundation
@testable import SharedPrefs
import Testing

/// What the library does in place of Foundation's string and path API (it imports only
/// FoundationEssentials, so `prefs-watch` carries no ICU data), checked against Foundation itself.
@Suite("Without Foundation")
struct FoundationEssentialsTests {
    @Test(arguments: ["/a/b", "/a/b/", "/a", "/", "a/b", "", "/a//b", "rel/", "~/x", "/tmp/dir/file.plist"])
    func pathComponentsAreNSStrings(path: String) {
        #expect(Path.parent(path) == (path as NSString).deletingLastPathComponent, "parent of \(path)")
        #expect(Path.lastComponent(path) == (path as NSString).lastPathComponent, "last component of \(path)")
    }

    /// Where Foundation on Linux stops the process (`"a"`'s parent), the answer is Darwin's.
    @Test func aSingleRelativeComponentHasAnEmptyParent() {
        #expect(Path.parent("a") == "" && Path.lastComponent("a") == "a")
    }

    @Test(arguments: ["~", "~/", "~/a/b", "~root/x", "~root", "~nosuchuser-\(UUID().uuidString)/x", "/a/~", "plain"])
    func aTildeExpandsAsNSStringExpandsIt(path: String) {
        #expect(Path.expandingTilde(path) == (path as NSString).expandingTildeInPath, "\(path)")
    }

    @Test func numbersArePaddedAsPrintfPadsThem() {
        for (value, width, radix, format) in [(7, 2, 16, "%02x"), (255, 2, 16, "%02x"), (4096, 2, 16, "%02x"), (5, 6, 10, "%06d"), (123_456, 6, 10, "%06d"), (2026, 4, 10, "%04d"), (0, 4, 16, "%04x")] {
            #expect(value.padded(width, radix: radix) == String(format: format, value))
        }
    }

    @Test func trimmingIsFoundationsTrimming() {
        for text in ["  a b \n", "\t\r\n", "", "x", " \u{A0}x\u{2003}", "\n\nkey\n"] {
            #expect(String(text.trimmed) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
    }

    /// An `NSNumber` (what `JSONSerialization` and other Foundation APIs hand over) still converts,
    /// though the library cannot name the type.
    @Test func foundationNumbersConvert() throws {
        let parsed = try JSONSerialization.jsonObject(with: Data(#"{"n": 2.5, "i": 3, "b": [true]}"#.utf8))
        #expect(PlistValue(foundationValue: parsed) == .dictionary(["n": 2.5, "i": 3.0, "b": [1.0]]))
        #expect(PlistValue(foundationValue: NSNumber(value: 7)) == .real(7))
        #expect(PlistValue(foundationValue: NSObject()) == nil)
    }
}
