import Foundation
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
        }
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
