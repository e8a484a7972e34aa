import Foundation
import SharedPrefs
import SharedPrefsTestSupport
import Testing

/// The repository's top folder.
let repositoryRoot = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

@Suite("README")
struct ReadmeTests {
    /// Every ```swift block of the README and of the DocC articles it links, type-checked as
    /// written, as the `main.swift` of a program, against the modules this very `swift test`
    /// built (macros included).
    @Test func everySwiftSnippetCompilesAsWritten() async throws {
        let catalog = repositoryRoot.appending(path: "Sources/SharedPrefs/Documentation.docc")
        let documents = [repositoryRoot.appending(path: "README.md")]
            + (try FileManager.default.contentsOfDirectory(atPath: catalog.path)).filter { $0.hasSuffix(".md") }.sorted().map { catalog.appending(path: $0) }
        var blocks: [(line: String, code: String)] = []
        for document in documents {
            var current: (line: Int, lines: [String])?
            for (number, line) in try String(contentsOf: document, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if current == nil, line == "```swift" {
                    current = (number + 2, [])
                } else if let block = current, line.hasPrefix("```") {
                    blocks.append(("\(document.lastPathComponent) line \(block.line)", block.lines.joined(separator: "\n") + "\n"))
                    current = nil
                } else if current != nil {
                    current!.lines.append(String(line))
                }
            }
        }
        // A package manifest (Use it in a package) is built as written by CI, in a package of its own.
        blocks.removeAll { $0.code.hasPrefix("// swift-tools-version") }
        #expect(blocks.count >= 5)
        // The build products: modules, C module maps, the macro plugin.
        let products = childExecutable.deletingLastPathComponent()
        let scratch = products.deletingLastPathComponent().deletingLastPathComponent()
        let moduleMaps = try FileManager.default.contentsOfDirectory(atPath: products.path)
            .filter { $0.hasSuffix(".build") && !$0.hasSuffix("-tool.build") }
            .map { products.appending(path: "\($0)/module.modulemap").path }
            .filter { FileManager.default.fileExists(atPath: $0) }
            + (FileManager.default.enumerator(atPath: scratch.appending(path: "checkouts").path)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix("/module.modulemap") }.map { scratch.appending(path: "checkouts/\($0)").path }
        let directory = try TemporaryDirectory()
        for block in blocks {
            let source = directory.file("main.swift")
            try block.code.write(to: source, atomically: true, encoding: .utf8)
            let result = try await run(
                URL(filePath: "/usr/bin/env"),
                ["swiftc", "-typecheck", "-swift-version", "6", "-I", products.appending(path: "Modules").path,
                 "-load-plugin-executable", products.appending(path: "SharedPrefsMacros-tool").path + "#SharedPrefsMacros"]
                    + moduleMaps.flatMap { ["-Xcc", "-fmodule-map-file=\($0)"] } + [source.path])
            #expect(result.status == 0, "\(block.line):\n\(block.code)\n\(result.output)")
            // The README's own examples are pasted first: they compile without a warning.
            if block.line.hasPrefix("README.md") { #expect(!result.output.contains("warning:"), "\(block.line):\n\(block.code)\n\(result.output)") }
        }
    }

    /// The README's Swift example and its `prefs-watch` lines name one suite: what the program
    /// writes is what the README's tail prints, and what the README's writes change reaches the
    /// program's observer. The suite is the one the example opens (its name and group read from
    /// the README), and every command and line of the console block is run and compared as
    /// written, times aside.
    @Test func theSwiftExampleAndThePrefsWatchLinesShareOneSuite() async throws {
        let readme = try String(contentsOf: repositoryRoot.appending(path: "README.md"), encoding: .utf8)
        let opening = try #require(readme.firstMatch(of: /try PreferenceSuite\(suiteName: "([^"]+)", in: AppGroup\(identifier: "([^"]+)"\)\)/))
        let root = try TemporaryDirectory()
        let identifier = String(opening.output.2)
        let group = try AppGroup(identifier: identifier, containerURL: root.url.appending(path: "containers/\(identifier)"))
        let suite = try PreferenceSuite(suiteName: String(opening.output.1), in: group)
        let heard = Recorder<String>()
        let token = suite.observe(.all) { heard.record("\($0.key) \($0.newValue.map { "\($0)" } ?? "removed")") }
        // What the program does first: the theme, and one launch.
        suite.set("dark", forKey: "theme")
        suite.set(1, forKey: "launches")
        #expect(suite.synchronize())

        // The console block: each command with the lines printed after it.
        let block = try #require(readme.firstMatch(of: /```console\n(\$ prefs-watch --group[^`]*)```/)).output.1
        var steps: [(command: [String], printed: [String])] = []
        for line in block.split(separator: "\n") {
            if line.hasPrefix("$ ") {
                steps.append((shellWords(String(line.dropFirst(2)).replacing(/\s+# .*$/, with: "")), []))
            } else {
                steps[steps.count - 1].printed.append(String(line))
            }
        }
        #expect(steps.count >= 4 && steps.allSatisfy { $0.command.first == "prefs-watch" }, "\(steps)")
        func shown(_ line: String) -> String { line.replacing(#/^\d\d:\d\d:\d\d\.\d{6} /#, with: "").replacing(/"ts":"[^"]*"/, with: #""ts""#) }
        func command(_ words: [String]) -> [String] { ["SHAREDPREFS_ROOT=\(root.url.path)", prefsWatch.path] + words.dropFirst() }
        // The first tails until it printed what the README shows; the writes up to the last run under it.
        let (first, writes, last) = (steps[0], steps.dropFirst().dropLast(), steps[steps.count - 1])
        let expected = first.printed + writes.flatMap(\.printed)
        let tail = try Launched(URL(filePath: "/usr/bin/env"), command(first.command) + ["--count", "\(expected.count)"])
        var printed = first.printed.count
        try await tail.records.wait(for: printed)
        for write in writes {
            let result = try await run(URL(filePath: "/usr/bin/env"), command(write.command))
            #expect(result.status == 0, "\(write.command): \(result.output)")
            printed += write.printed.count
            try await tail.records.wait(for: printed)
        }
        #expect(try await tail.status() == 0, "\(tail.standardError)")
        #expect(tail.records.items.map(shown) == expected.map(shown))
        let json = try await run(URL(filePath: "/usr/bin/env"), command(last.command))
        #expect(json.status == 0 && json.output.split(separator: "\n").map { shown(String($0)) } == last.printed.map(shown), "\(json.output)")
        // The program heard its own change and every change the shell made, key by key.
        try await heard.wait { $0.contains("theme removed") }
        #expect(heard.items.filter { !$0.hasPrefix("launches") } == [#"theme "dark""#, #"theme "light""#, #"window {"height": 600, "width": 800}"#, "recent [42]", "theme removed"], "\(heard.items)")
        withExtendedLifetime(token) {}
    }

    /// Words of a command line as the shell splits them (single quotes only, as the README uses).
    private func shellWords(_ line: String) -> [String] {
        var words: [String] = []
        var word: String?
        var quoted = false
        for character in line {
            if character == "'" {
                quoted.toggle()
                word = word ?? ""
            } else if character == " " && !quoted {
                if let done = word { words.append(done) }
                word = nil
            } else {
                word = (word ?? "") + String(character)
            }
        }
        if let done = word { words.append(done) }
        return words
    }

    /// The README is a front page (what it is, the two commands, a first example, the CLI in
    /// brief, links): at most 250 lines, and every file it links to is there.
    @Test func theReadmeIsAFrontPageWhoseLinksLead() throws {
        let readme = try String(contentsOf: repositoryRoot.appending(path: "README.md"), encoding: .utf8)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 250)
        let links = readme.matches(of: /\]\(([^)#:]+)\)/).map { String($0.output.1) }
        #expect(links.count >= 8)
        for link in links {
            #expect(FileManager.default.fileExists(atPath: repositoryRoot.appending(path: link).path), "README links to \(link), which is not there")
        }
    }
}
