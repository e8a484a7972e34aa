import CSharedPrefsShims
import Foundation

extension Thread {
    /// Starts a thread that runs `body` under `name` (its first 15 bytes), as debuggers, `top -H`
    /// and /proc show it. The thread names itself: Foundation on Linux applies a name set before
    /// `start()` only if the new thread starts after `start()` has returned, and not at all past
    /// 15 bytes.
    package static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            sharedprefs_name_thread(name)
            body()
        }.start()
    }
}
