import Foundation
import SharedPrefsObservation
import SharedPrefsTestSupport
import Testing

// The README's ObservableDefaults porting example, unchanged but for the import, kept here so
// that it keeps compiling. The test below uses it.
@ObservableDefaults(suiteName: "group.com.example.app", prefix: "settings.", limitToInstance: false)
final class PortedSettings {
    var username: String = "guest"
    @DefaultsKey(userDefaultsKey: "fontSize") var textSize: Double = 14
    @DefaultsBacked(userDefaultsKey: "accent") var accentColor: String = "blue"
    var recentFiles: [String] = []
    @ObservableOnly var isEditing = false
    @Ignore var scratch = ""
}

@Test func thePortedObservableDefaultsClassWorksAgainstASuite() {
    let suite = PreferenceSuite.inMemory()
    let settings = PortedSettings(userDefaults: suite)
    settings.textSize = 16
    settings.accentColor = "red"
    settings.isEditing = true
    #expect(suite.storedValues == ["settings.fontSize": 16.0, "settings.accent": "red"])
    #expect(settings.username == "guest")
}
