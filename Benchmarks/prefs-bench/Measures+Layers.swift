import Foundation
import SharedPrefs

/// 16. System layers: a cached read with layers present, and an administrator's default reaching
/// another process.
extension Measures {
    mutating func layers() throws {
        // A system root of this run: an administrator's and a vendor's defaults, and a lock.
        let root = directory.appending(path: "system-root")
        let (admin, vendor) = (root.appending(path: "etc/sharedprefs"), root.appending(path: "usr/share/sharedprefs"))
        for dir in [admin.appending(path: "locks"), vendor] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        for path in ["", "etc", "etc/sharedprefs", "etc/sharedprefs/locks", "usr", "usr/share", "usr/share/sharedprefs"] {
            chmod(root.appending(path: path).path, 0o755)
        }
        func install(_ url: URL, _ bytes: [UInt8]) throws {
            let aside = url.deletingLastPathComponent().appending(path: "." + url.lastPathComponent + ".new")
            try Data(bytes).write(to: aside)
            chmod(aside.path, 0o644)
            guard rename(aside.path, url.path) == 0 else { throw BenchError("could not rename \(aside.path) over \(url.path)") }
        }
        func plist(_ values: PlistDictionary) -> [UInt8] { [UInt8](PlistValue.dictionary(values).propertyListData(format: .binary)) }
        // The suites live where system layers apply to them: `<SHAREDPREFS_ROOT>/Preferences`.
        let home = directory.appending(path: "layers-home")
        try FileManager.default.createDirectory(at: home.appending(path: "Preferences"), withIntermediateDirectories: true)
        let environment = ["SHAREDPREFS_SYSTEM_ROOT": root.path, "SHAREDPREFS_ROOT": home.path]
        func file(_ name: String) -> URL { home.appending(path: "Preferences/\(name).plist") }
        func makeSuite(_ name: String) throws -> PreferenceSuite {
            let suite = try PreferenceSuite(fileURL: file(name))
            for (key, value) in realisticValues(100).swiftDictionary { suite.set(value, forKey: key) }
            guard suite.synchronize() else { throw BenchError("could not write the suite \(file(name).path)") }
            return suite
        }

        // Cached reads of a suite with a locked key and two system layers, against UserDefaults.
        try install(admin.appending(path: "layered-read.plist"), plist(["admin.only": 1, "locked": 2]))
        try install(vendor.appending(path: "layered-read.plist"), plist(["vendor.only": 3, "k": 4]))
        try install(admin.appending(path: "locks/layered-read"), Array("locked\n".utf8))
        for (name, value) in environment { setenv(name, value, 1) }
        let suite = try makeSuite("layered-read")
        for name in environment.keys { unsetenv(name) }
        suite.set(7, forKey: "k")
        guard suite.source(ofKey: "locked")?.layer == .locked, suite.integer(forKey: "k") == 7 else { throw BenchError("the system layers of \(root.path) were not read") }
        rows.append(cachedReads(
            suite, id: "16.cached-read", group: "16. system layers", name: "integer(forKey:) of a 100-key suite with a locked key and two system layers", target: 11))

        /// Changes made by `change(i, sendTime)` (files renamed in), 2 ms apart → an observer
        /// process of the suite `name`, whose file holds `stamp` (or not).
        func observed(_ name: String, stamp: PlistValue?, _ change: (Int, Int64) throws -> Void) throws -> Tally {
            let suite = try makeSuite(name)
            if let stamp { try install(file(name), plist(["stamp": stamp])) }
            let child = try Child(["observe", suite.fileURL!.path, "stamp"], environment: environment)
            try child.ready()
            var sent: [Int64] = []
            for i in 0..<(warmUp + scaled(300)) {
                let time = now()
                try change(i, time)
                sent.append(time)
                gap(2)
            }
            gap(50)
            suite.set(now(), forKey: "done")
            var tally = Tally()
            tally.add(Block(sent: sent, arrivals: [read(child).arrivals]), warmUp: warmUp)
            return tally
        }

        // An administrator's default renamed in (as install(1) does), for a key the suite does
        // not hold: the default's value is its send time.
        let defaults = admin.appending(path: "layered.plist")
        let administrator = try observed("layered", stamp: nil) { _, time in try install(defaults, plist(["stamp": .integer(time)])) }
        rows.append(Row(
            id: "16.administrator", group: "16. system layers", name: "an administrator's default changed (written aside, renamed in) → observer in another process",
            tally: administrator, note: "the send time is taken before the file is written; target p99 ≤ 50 ms",
            targets: [Target(what: Target.all[12], figure: Double(Latencies(administrator.latencies).p99) / 1e6, bound: 50, atMost: true)]))

        // A key locked and unlocked, in turn: a lock shows the administrator's value, written
        // just before it (its send time); an unlock the suite's, written just before it, under
        // the lock, where it changed nothing. Two files each time: the send time is taken before
        // the first.
        let (toggledDefaults, toggledLock) = (admin.appending(path: "toggled.plist"), admin.appending(path: "locks/toggled"))
        let locks = try observed("toggled", stamp: 0) { i, time in
            if i % 2 == 0 {
                try install(toggledDefaults, plist(["stamp": .integer(time)]))
                try install(toggledLock, Array("stamp\n".utf8))
            } else {
                try install(file("toggled"), plist(["stamp": .integer(time)]))
                guard unlink(toggledLock.path) == 0 else { throw BenchError("could not remove \(toggledLock.path)") }
            }
        }
        rows.append(Row(
            id: "16.lock", group: "16. system layers", name: "a key locked or unlocked, in turn (the value it then shows written just before) → observer in another process",
            tally: locks, note: "the send time is taken before the first of the two files is written; target p99 ≤ 50 ms",
            targets: [Target(what: Target.all[13], figure: Double(Latencies(locks.latencies).p99) / 1e6, bound: 50, atMost: true)]))
    }
}
