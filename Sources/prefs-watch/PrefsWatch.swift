import ArgumentParser

@main
struct PrefsWatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefs-watch",
        abstract: "Tail SharedPrefs suites key by key, and read or write them like macOS defaults.",
        discussion: """
            A suite is a suite name (settings), an app group's own suite (group.com.example.app), \
            or a path (it has a / or ends in .plist). With --group ID or --dir PATH it is always a \
            name, looked up in that group's container or directory; a name that would leave it is \
            refused.

            Writes go through the same locked, merged, atomic write path as the library, so a \
            script's write never loses a running app's update. The verbs that change a suite never \
            move, replace or re-mode a file that is not a property list; a path that does not end \
            in .plist and does not exist needs --create.
            """,
        version: "0.1.0",
        subcommands: [
            Tail.self, Read.self, ReadType.self, Write.self, Delete.self, List.self, Export.self, Import.self,
            Rename.self, Edit.self,
        ],
        defaultSubcommand: Tail.self
    )
}
