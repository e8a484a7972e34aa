import SharedPrefsObservation

enum Theme: String, PreferenceValue, Sendable {
    case system, light, dark
}

struct Window: Codable, Equatable, PreferenceValue, Sendable, CustomStringConvertible {
    var width: Int
    var height: Int
    var description: String { "\(width)×\(height)" }
}

/// The settings every process of the demo declares: the same class, the same suite.
@ObservablePrefs(prefix: "demo.")
final class DemoSettings {
    var theme: Theme = .system          // an enum (stored as its raw value)
    var volume = 5                      // a plain integer
    var window = Window(width: 800, height: 600)  // Codable: a nested property list
    var nickname: String? = nil         // an optional: nil removes the key
    @ObservableOnly var selection = 0   // observable, never persisted
}

/// The key the helpers increment through `update`.
let counterKey = PreferenceKey<Int>("demo.counter", default: 0)

/// Time on CLOCK_MONOTONIC, comparable between processes of one machine.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

#if canImport(Glibc)
import Glibc
#endif
