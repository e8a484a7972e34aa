// A child process for SharedPrefsEtcd's tests (built with the Etcd trait; empty without it).
//
//   prefs-etcd-child increment <endpoints> <prefix> <n>   n × update { counter += 1 }, then "done"
//   prefs-etcd-child observe <endpoints> <prefix> <n>     prints "ready", then "change <key> <old> <new>"
//                                                         for each of n changes ("-" for none), then exits
#if Etcd
import Foundation
import SharedPrefs
import SharedPrefsEtcd

let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: prefs-etcd-child increment|observe <endpoints> <prefix> <n>\n".utf8))
    exit(2)
}
let endpoints = arguments[2].split(separator: ",").map(String.init)
/// One line to the test, unbuffered.
@Sendable func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

@Sendable func text(_ value: PlistValue?) -> String {
    switch value {
    case nil: "-"
    case .integer(let n)?: "\(n)"
    case .string(let s)?: s
    case let other?: "\(other)"
    }
}

do {
    let suite = try PreferenceSuite(etcd: endpoints, prefix: arguments[3], timeout: .seconds(2))
    switch arguments[1] {
    case "increment":
        for _ in 0..<count {
            try suite.update { transaction in
                guard case .integer(let n)? = transaction["counter"] else {
                    transaction["counter"] = .integer(1)
                    return
                }
                transaction["counter"] = .integer(n + 1)
            }
        }
        say("done")
    case "observe":
        let seen = DispatchSemaphore(value: 0)
        let token = suite.observe(.all) { change in
            say("change \(change.key) \(text(change.oldValue)) \(text(change.newValue))")
            seen.signal()
        }
        say("ready")
        for _ in 0..<count { seen.wait() }
        token.cancel()
    default:
        FileHandle.standardError.write(Data("unknown command \(arguments[1])\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("prefs-etcd-child: \(error)\n".utf8))
    exit(1)
}
#endif
