import ArgumentParser

@main
struct PrefsWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefs-watch",
        abstract: "Tail SharedPrefs suites key by key, and read or write them like macOS defaults.",
        discussion: """
            A suite is a suite name (settings), an app group's own suite (group.com.example.app), \
            or a path to a .plist file. With --group ID or --dir PATH, names are looked up in \
            that group's container or directory.

            Writes go through the same locked, merged, atomic write path as the library, so a \
            script's write never loses a running app's update.
            """,
        version: "0.1.0",
        subcommands: [
            Tail.self, Read.self, ReadType.self, Write.self, Delete.self, List.self, Export.self, Import.self,
            Rename.self,
        ],
        defaultSubcommand: Tail.self
    )
}
