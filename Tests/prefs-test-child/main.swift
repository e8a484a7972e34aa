// A child process for the multi-process tests. It uses SharedPrefs exactly as an app would.
//
//   prefs-test-child set <plist> key=value…        sets keys, returns from main (exit flush)
//   prefs-test-child set-exit <plist> key=value…   sets keys, then calls exit(0)
//   prefs-test-child hammer <plist> <id> <count>   <count> × (update: counter += 1; set p<id>.k<i>)
//   prefs-test-child observable <plist> theme=dark volume=9   sets properties of an @ObservablePrefs instance
//   prefs-test-child crash-loop <plist>            update-increments "counter" forever, printing each confirmed value
//
// Values: int:5, real:1.5, bool:true, str:text (or plain text), date:<seconds since 1970>; "-" removes.
import Foundation
import SharedPrefs

func parse(_ text: String) -> PlistValue? {
    let (kind, rest) = text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? ("str", text)
    switch kind {
    case "int": return Int64(rest).map(PlistValue.integer)
    case "real": return Double(rest).map(PlistValue.real)
    case "bool": return .bool(rest == "true")
    case "date": return Double(rest).map { .date(Date(timeIntervalSince1970: $0)) }
    case "str": return .string(rest)
    default: return .string(text)
    }
}

enum ChildTheme: String, PreferenceValue { case system, light, dark }

/// The same keys as the tests' `AppSettings`, declared independently, as another program would.
@ObservablePrefs(prefix: "app.")
final class ChildSettings {
    var theme: ChildTheme = .system
    var volume = 5
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("prefs-test-child: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else { fail("usage: prefs-test-child set|set-exit|hammer <plist> …") }
let suite: PreferenceSuite
do {
    suite = try PreferenceSuite(fileURL: URL(filePath: arguments[1]))
} catch {
    fail("\(error)")
}

switch arguments[0] {
case "set", "set-exit":
    for assignment in arguments.dropFirst(2) {
        guard let equals = assignment.firstIndex(of: "=") else { fail("expected key=value, got \(assignment)") }
        let key = String(assignment[..<equals])
        let text = String(assignment[assignment.index(after: equals)...])
        if text == "-" {
            suite.removeObject(forKey: key)
        } else {
            guard let value = parse(text) else { fail("bad value \(text)") }
            suite.set(value, forKey: key)
        }
    }
    if arguments[0] == "set-exit" { exit(0) }
case "hammer":
    guard arguments.count == 4, let count = Int(arguments[3]) else { fail("usage: hammer <plist> <id> <count>") }
    let id = arguments[2]
    let counter = PreferenceKey<Int>("counter", default: 0)
    for i in 0..<count {
        do {
            try suite.update { $0[counter] += 1 }
        } catch {
            fail("update failed: \(error)")
        }
        suite.set(i, forKey: "p\(id).k\(i)")
    }
case "crash-loop":
    let counter = PreferenceKey<Int>("counter", default: 0)
    while true {
        do {
            let value = try suite.update { tx -> Int in
                tx[counter] += 1
                return tx[counter]
            }
            // Written and renamed before update returned: a confirmed write.
            FileHandle.standardOutput.write(Data("confirmed \(value)\n".utf8))
        } catch {
            fail("update failed: \(error)")
        }
    }
case "observable":
    let settings = ChildSettings(suite: suite)
    for assignment in arguments.dropFirst(2) {
        let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { fail("expected property=value, got \(assignment)") }
        switch parts[0] {
        case "theme": settings.theme = ChildTheme(rawValue: parts[1]) ?? .system
        case "volume": settings.volume = Int(parts[1]) ?? 0
        default: fail("unknown property \(parts[0])")
        }
    }
default:
    fail("unknown command \(arguments[0])")
}
