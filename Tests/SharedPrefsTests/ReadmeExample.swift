import SharedPrefs

// The README's example, kept here so that it keeps compiling. It is not run: it loops forever.
private enum ReadmeTheme: String, PreferenceValue { case system, light, dark }
extension PreferenceKey where Value == ReadmeTheme { fileprivate static var theme: Self { .init("theme", default: .system) } }
extension PreferenceKey where Value == Int { fileprivate static var launches: Self { .init("launches", default: 0) } }

private func readmeExample() async throws {
    let suite = try PreferenceSuite(suiteName: "settings", in: AppGroup(identifier: "group.com.example.app"))
    let token = suite.observe(.key("theme")) { change in
        print("theme: \(change.oldValue as Any) -> \(change.newValue as Any) from \(change.origin)")
    }
    suite[.theme] = .dark  // visible here at once; other processes hear it
    try suite.update { $0[.launches] += 1 }  // cross-process read-modify-write: never loses an increment
    for await theme in suite.values(for: .theme) { print(theme) }
    _ = token
}
