import Foundation
import SharedPrefsTestSupport
import Testing

@testable import SharedPrefs

/// Root can run writers under other uids with `setpriv`; no users or groups are created.
let canSwitchUsers = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

/// Runs `prefs-test-child` under umask 077, the strictest a user may have; as `user` (uid and
/// its single group) when given.
func childUnderStrictUmask(as user: (uid: uid_t, gid: gid_t)? = nil, _ arguments: String...) async throws -> ProcessResult {
    let switchUser = user.map { ["/usr/bin/setpriv", "--reuid=\($0.uid)", "--regid=\($0.gid)", "--clear-groups"] } ?? []
    let command = switchUser + ["/bin/sh", "-c", "umask 077 && exec \"$0\" \"$@\"", childExecutable.path] + arguments
    return try await run(URL(filePath: command[0]), Array(command.dropFirst()))
}

@Suite("Users, groups and owners")
struct PermissionTests {
    static let sharedGroup: gid_t = 4242
    static let alice: uid_t = 4243
    static let bob: uid_t = 4244

    /// A directory other users may traverse (the test's own temporary directory is 0700).
    private func traversable(_ directory: borrowing TemporaryDirectory) {
        chmod(directory.url.path, 0o755)
    }

    /// The first write to a container creates the lock file. Created by `open` under `umask 077`
    /// it was `0600` until its `fchmod`, and the other user's `open` in that moment failed with
    /// `EACCES` (63 of 100 such races here). It now appears with its final mode.
    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run writers under other uids"))
    func twoUsersCreatingTheLockFileAtOnceBothGetIn() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        for trial in 0..<20 {
            let container = directory.file("container\(trial)")
            try FileManager.default.createDirectory(at: container, withIntermediateDirectories: false)
            #expect(chown(container.path, 0, Self.sharedGroup) == 0 && chmod(container.path, 0o2770) == 0)
            let file = container.appending(path: "s.plist").path
            // One `update` each: it fails at once if the lock file cannot be opened.
            async let a = childUnderStrictUmask(as: (Self.alice, Self.sharedGroup), "hammer", file, "0", "1")
            async let b = childUnderStrictUmask(as: (Self.bob, Self.sharedGroup), "hammer", file, "1", "1")
            let (resultA, resultB) = try await (a, b)
            #expect(resultA.status == 0 && resultB.status == 0, "trial \(trial): \(resultA.output) \(resultB.output)")
            #expect(try readSuiteFile(URL(filePath: file)) == ["counter": 2, "p0.k0": 0, "p1.k0": 0])
        }
    }

    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run writers under other uids"))
    func twoUsersShareAGroupContainerWhateverTheirUmask() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        // What an administrator does once: a container owned by the app's group, set-group-ID.
        let container = directory.file("container")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: false)
        #expect(chown(container.path, 0, Self.sharedGroup) == 0)
        #expect(chmod(container.path, 0o2770) == 0)
        let file = container.appending(path: "shared.plist")

        async let a = childUnderStrictUmask(as: (Self.alice, Self.sharedGroup), "hammer", file.path, "0", "200")
        async let b = childUnderStrictUmask(as: (Self.bob, Self.sharedGroup), "hammer", file.path, "1", "200")
        let (resultA, resultB) = try await (a, b)
        #expect(resultA.status == 0, "alice: \(resultA.output)")
        #expect(resultB.status == 0, "bob: \(resultB.output)")

        let values = try readSuiteFile(file)
        #expect(values["counter"] == 400)
        #expect(values.count == 401)
        // Exactly 0660 and the container's group, although both writers ran under umask 077.
        for name in ["shared.plist", ".shared.plist.lock"] {
            var st = stat()
            #expect(stat(container.appending(path: name).path, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o660, "\(name) has mode \(String(st.st_mode & 0o777, radix: 8))")
            #expect(st.st_gid == Self.sharedGroup, "\(name) has group \(st.st_gid)")
        }
    }

    /// With the root in a directory anyone may write (sticky, like `/tmp`), another user, in none
    /// of this user's groups, makes a container (and the root's `Preferences`) of their own, mode
    /// 2775, with a suite `{theme: evil}`: reading and writing it are refused, naming the
    /// directory and its owner, and nothing is written there. (Both were read and written before.)
    @Test(.enabled(if: getuid() == 0, "needs root to make directories of another user"))
    func aContainerPlantedByAnotherUserIsRefused() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        let root = directory.file("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: false)
        #expect(chmod(root.path, 0o1777) == 0)
        let evil = Data(PropertyListFormat.binary.encode(["theme": "evil"]))
        let planted = [("containers/group.planted/Library/Preferences", ["--group", "group.planted"]), ("Preferences", [])]
        for (path, _) in planted {
            var made = root
            for component in path.split(separator: "/") {
                made = made.appending(path: String(component))
                try FileManager.default.createDirectory(at: made, withIntermediateDirectories: false)
                #expect(chown(made.path, Self.alice, Self.alice) == 0 && chmod(made.path, 0o2775) == 0)
            }
            try evil.write(to: made.appending(path: "settings.plist"))
            #expect(chown(made.appending(path: "settings.plist").path, Self.alice, Self.alice) == 0)
        }
        for (path, group) in planted {
            for verb in [["read"] + group + ["settings", "theme"], ["write"] + group + ["settings", "theme", "mine"]] {
                let result = try await run(URL(filePath: "/usr/bin/env"), ["SHAREDPREFS_ROOT=\(root.path)", prefsWatch.path] + verb)
                #expect(result.status != 0 && !result.output.contains("evil") && result.output.contains("Refusing to use") && result.output.contains("owned by uid \(Self.alice)"), "\(verb): \(result.output)")
            }
            let suite = root.appending(path: path).appending(path: "settings.plist")
            #expect(try Data(contentsOf: suite) == evil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: root.appending(path: path).path) == ["settings.plist"])
        }
    }

    /// A container replaced between writes by one of another group gets a file of its own group.
    @Test(.enabled(if: getuid() == 0, "needs root to give a directory to another group"))
    func aContainerReplacedBetweenWritesGetsFilesOfItsOwnGroup() async throws {
        let directory = try TemporaryDirectory()
        let container = directory.file("container")
        func makeContainer(group: gid_t) throws {
            try FileManager.default.createDirectory(at: container, withIntermediateDirectories: false)
            #expect(chown(container.path, 0, group) == 0 && chmod(container.path, 0o2770) == 0)
        }
        try makeContainer(group: Self.sharedGroup)
        let file = container.appending(path: "s.plist")
        let suite = try PreferenceSuite(fileURL: file)
        suite.set(1, forKey: "a")
        #expect(suite.synchronize())
        #expect(rename(container.path, directory.file("container.old").path) == 0)
        try makeContainer(group: Self.alice)
        suite.set(2, forKey: "a")
        #expect(suite.synchronize())
        var st = stat()
        #expect(stat(file.path, &st) == 0)
        #expect(st.st_gid == Self.alice && st.st_mode & 0o777 == 0o660, "group \(st.st_gid), mode \(String(st.st_mode & 0o777, radix: 8))")
        #expect(try readSuiteFile(file)["a"] == 2)
    }

    /// Every user may read a 0644 suite file, so every user may `flock` it. A reader who may not
    /// write its directory holds its lock (shared or exclusive) and no write waits: the library's
    /// own, `prefs-watch write`'s and an exiting process's. A holder who may write (a stopped
    /// writer) still holds writers up, and the message names the suite file and its PID.
    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run a reader under another uid"), arguments: ["LOCK_SH", "LOCK_EX"])
    func aReadersLockOnTheSuiteFileDelaysNoWrite(lock: String) async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        let file = directory.file("public.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(filePermissions: 0o644, lockTimeout: .milliseconds(500)))
        suite.set(0, forKey: "before")
        try await suite.flush()
        let reader = try Launched(URL(filePath: "/usr/bin/setpriv"), [
            "--reuid=\(Self.alice)", "--regid=\(Self.sharedGroup)", "--clear-groups", "/usr/bin/env", "python3", "-c",
            "import fcntl, sys; f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.\(lock)); print('held', flush=True); sys.stdin.read()", file.path,
        ])
        try await reader.records.wait(for: 1)
        suite.set(1, forKey: "k")
        try await suite.flush()
        let written = try await prefsWatchRun("write", file.path, "cli", "-int", "2")
        #expect(written.status == 0, "\(written.output)")
        let exiting = try await run(childExecutable, ["set", file.path, "exiting=int:3", "--lock-timeout-ms", "500"])
        #expect(exiting.status == 0 && !exiting.output.contains("Could not save"), "\(exiting.output)")
        #expect(try readSuiteFile(file) == ["before": 0, "k": 1, "cli": 2, "exiting": 3])
        try reader.closeInput()
        _ = try await reader.status()

        // One who may write the directory holding it is waited for, and named.
        let holder = try await lockHolder(file)
        suite.set(4, forKey: "held")
        let error = await #expect(throws: PreferenceError.self) { try await suite.flush() }
        #expect(error?.code == .lockTimedOut && error?.message.contains("the lock \(file.path).") == true && error?.message.contains("PID \(holder.pid) (python3)") == true, "\(error?.message ?? "")")
        try holder.closeInput()
        _ = try await holder.status()
        try await suite.flush()
        #expect(try readSuiteFile(file)["held"] == 4)
    }

    /// In a group container the suite file belongs to whoever renamed it in last, and only a
    /// file's owner may take the lease that tells whether a writer still holds it. Another
    /// member's write waits for a foreign program that rewrites the file in place and pauses
    /// halfway until that write is seen waiting, then 1 s more (before: 0.5 s unchanged called it
    /// corrupt, and its keys went to `.corrupt-*`): nothing is moved aside, every key is kept.
    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run writers under other uids"))
    func anotherMembersWriteWaitsForAPausedInPlaceWriterWithoutALease() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        let container = directory.file("container")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: false)
        #expect(chown(container.path, 0, Self.sharedGroup) == 0 && chmod(container.path, 0o2770) == 0)
        let file = container.appending(path: "shared.plist")
        // Alice writes first: the file is hers. Bob's process reads it (a good version).
        #expect(try await childUnderStrictUmask(as: (Self.alice, Self.sharedGroup), "set", file.path, "alice=int:1").status == 0)
        let bob = try Launched(URL(filePath: "/usr/bin/setpriv"), [
            "--reuid=\(Self.bob)", "--regid=\(Self.sharedGroup)", "--clear-groups", childExecutable.path, "watch", file.path, "--lock-timeout-ms", "60000",
        ])
        try await bob.records.wait(for: 1)  // ready
        // Alice's own program rewrites it in place, pausing halfway.
        let writer = try Launched(URL(filePath: "/usr/bin/setpriv"), [
            "--reuid=\(Self.alice)", "--regid=\(Self.sharedGroup)", "--clear-groups", "/usr/bin/env", "python3", "-c", """
            import plistlib, sys, time
            data = plistlib.dumps({"alice": 1, **{f"foreign{i}": i for i in range(200)}}, fmt=plistlib.FMT_BINARY)
            with open(sys.argv[1], "r+b") as f:
                f.truncate(0); f.write(data[: len(data) // 2]); f.flush()
                print("half", flush=True)
                sys.stdin.read()
                time.sleep(1)  # longer than the 0.5 s a broken file was given without a lease
                f.write(data[len(data) // 2 :])
            print("done", flush=True)
            """, file.path,
        ])
        try await writer.records.wait(for: 1)
        // Bob, who can take no lease on Alice's file, writes meanwhile: once he is seen waiting
        // under the suite's lock, Alice's program goes on after its pause.
        try bob.send("try-write")
        try await waitUntilWriting(file, by: bob.pid)
        try writer.closeInput()
        try await bob.records.wait(until: { $0.contains("written") || $0.contains("not written") })
        #expect(bob.records.items.contains("written"), "\(bob.records.items) \(bob.standardError)")
        #expect(try await writer.status() == 0)
        try bob.closeInput()
        _ = try await bob.status()
        let stored = try readSuiteFile(file)
        #expect(stored.count == 202 && stored["written"] != nil && stored["foreign199"] == 199, "\(stored.count) keys")
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path).filter { $0.contains(".corrupt-") }.isEmpty)
    }

    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run a reader under another uid"))
    func aSuiteFileAnotherUserCannotReadIsAClearError() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        let file = directory.file("private.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(filePermissions: 0o600))
        suite.set("root only", forKey: "secret")
        try await suite.flush()

        let result = try await childUnderStrictUmask(as: (Self.alice, Self.sharedGroup), "set", file.path, "secret=str:mine")
        #expect(result.status == 2)
        #expect(result.output.contains(file.path) && result.output.contains("Check the owner and mode"), "\(result.output)")
        #expect(try readSuiteFile(file) == ["secret": "root only"])
    }

    /// One cause, one message: a suite file another user cannot read reads the same way for
    /// every prefs-watch verb (the library's words, the path, what to do), and exits 1.
    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run prefs-watch under another uid"))
    func aSuiteAnotherUserCannotReadIsSaidAlikeByEveryVerb() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        let file = directory.file("private.plist")
        let suite = try PreferenceSuite(fileURL: file, options: .init(filePermissions: 0o600))
        suite.set(1, forKey: "k")
        try await suite.flush()
        var messages: Set<String> = []
        for verb in [["read", file.path], ["read-type", file.path, "k"], ["write", file.path, "k", "-int", "2"], ["delete", file.path, "k"], ["export", file.path, "-"], ["tail", file.path, "-t", "1"]] {
            let result = try await run(URL(filePath: "/usr/bin/setpriv"), ["--reuid=\(Self.alice)", "--regid=\(Self.sharedGroup)", "--clear-groups", prefsWatch.path] + verb)
            #expect(result.status == 1, "\(verb): \(result.output)")
            messages.insert(result.output)
        }
        #expect(messages.count == 1 && messages.first?.hasPrefix("prefs-watch: Could not open the suite file \(file.path): Permission denied. Check the owner and mode") == true, "\(messages)")
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give files to another uid"))
    func aFilePlantedByAnotherUserInAWorldWritableDirectoryIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let shared = directory.file("tmp-like")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        chmod(shared.path, 0o1777)

        // A suite file planted by someone else.
        let planted = shared.appending(path: "planted.plist")
        try Data(PropertyListFormat.binary.encode(["admin": true])).write(to: planted)
        chown(planted.path, Self.alice, Self.sharedGroup)
        let error = #expect(throws: PreferenceError.self) { try PreferenceSuite(fileURL: planted) }
        #expect(error?.code == .untrustedFile)
        #expect(error?.message.contains(planted.path) == true && error?.message.contains("uid \(Self.alice)") == true)

        // A lock file planted by someone else: nothing is written.
        let lock = shared.appending(path: ".locked.plist.lock")
        _ = FileManager.default.createFile(atPath: lock.path, contents: nil)
        chown(lock.path, Self.alice, Self.sharedGroup)
        let suite = try PreferenceSuite(fileURL: shared.appending(path: "locked.plist"))
        suite.set(1, forKey: "k")
        let flushError = await #expect(throws: PreferenceError.self) { try await suite.flush() }
        #expect(flushError?.code == .untrustedFile && flushError?.path == lock.path)
        #expect(!FileManager.default.fileExists(atPath: shared.appending(path: "locked.plist").path))

        // Our own files in the same directory are fine.
        let own = try PreferenceSuite(fileURL: shared.appending(path: "own.plist"))
        own.set(1, forKey: "k")
        try await own.flush()
        #expect(try readSuiteFile(shared.appending(path: "own.plist")) == ["k": 1])
    }

    /// A python3 process as `uid` that, for each path it reads, puts a file of its own (a suite
    /// `{"member": 1}`) in that path's directory and renames it over the path: prints "swapped",
    /// or "refused <error>" where it may not.
    private func swapper(as uid: uid_t) throws -> Launched {
        try Launched(URL(filePath: "/usr/bin/setpriv"), [
            "--reuid=\(uid)", "--regid=\(Self.sharedGroup)", "--clear-groups", "/usr/bin/env", "python3", "-c", """
            import os, plistlib, sys
            for line in sys.stdin:
                path = line.strip()
                mine = os.path.join(os.path.dirname(path), ".member-" + str(os.getpid()))
                try:
                    with open(mine, "wb") as f: f.write(plistlib.dumps({"member": 1}, fmt=plistlib.FMT_BINARY))
                    os.rename(mine, path)
                    print("swapped", flush=True)
                except OSError as error:
                    print("refused", error, flush=True)
            """,
        ])
    }

    /// In a group container whose owner tightened it to 2750 after its directory of writes was
    /// made 2770, a member who may write neither the container nor the suite renames a file of
    /// its own over each temporary file the owner's writes make, at the moment before their
    /// rename. Before, each such write said it succeeded and the suite ended the member's (20 of
    /// 20); now the owner's writes make their temporary files where the member may not write
    /// (the directory of writes admits a writer the container does not), every swap is refused,
    /// and the suite is the owner's.
    @Test(.enabled(if: canSwitchUsers, "needs root and setpriv to run writers under other uids"))
    func aMemberShutOutOfATightenedContainerCannotSwapTheOwnersWrites() async throws {
        let directory = try TemporaryDirectory()
        traversable(directory)
        let container = directory.file("container")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: false)
        #expect(chown(container.path, Self.alice, Self.sharedGroup) == 0 && chmod(container.path, 0o2770) == 0)
        let file = container.appending(path: "shared.plist")
        // The first write makes the directory of writes, 2770, for the group; then the owner
        // tightens the container.
        #expect(try await childUnderStrictUmask(as: (Self.alice, Self.sharedGroup), "set", file.path, "first=int:1").status == 0)
        var st = stat()
        #expect(stat(container.appending(path: ".sharedprefs-writes").path, &st) == 0 && st.st_mode & 0o7777 == 0o2770)
        #expect(chmod(container.path, 0o2750) == 0)

        let owner = try Launched(URL(filePath: "/usr/bin/setpriv"), [
            "--reuid=\(Self.alice)", "--regid=\(Self.sharedGroup)", "--clear-groups", childExecutable.path, "paced-writes", file.path, "20",
        ])
        let member = try swapper(as: Self.bob)
        for round in 0..<20 {
            let renaming = try await owner.records.wait(for: 2 * round + 1)[2 * round]
            #expect(renaming.hasPrefix("renaming "), "\(renaming) \(owner.standardError)")
            try member.send(String(renaming.dropFirst("renaming ".count)))
            let swap = try await member.records.wait(for: round + 1)[round]
            #expect(swap.hasPrefix("refused"), "round \(round): the member \(swap) the temporary file \(renaming)")
            try owner.send("")
            #expect(try await owner.records.wait(for: 2 * round + 2)[2 * round + 1] == "written \(round)", "\(owner.standardError)")
        }
        #expect(try await owner.status() == 0)
        try member.closeInput()
        _ = try await member.status()
        #expect(try readSuiteFile(file) == ["first": 1, "paced": 19])
        #expect(stat(file.path, &st) == 0 && st.st_uid == Self.alice)
    }
}
