#if InotifyTools
import CInotifyTools
import FoundationEssentials
import Glibc
import SharedPrefs

/// `tail --raw`: file-level inotify events of the watched directories, printed by libinotifytools
/// exactly as `inotifywait --format '%w%f %e'` would print them. libinotifytools keeps one global,
/// non-thread-safe state, so it gets a thread of its own and nothing else touches it.
enum RawEvents {
    /// Everything that changes a directory's files; reads and opens are left out.
    static let events = Int32(
        IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
            | IN_MOVE_SELF)

    static func start(directories: [String], _ session: TailSession) throws {
        guard inotifytools_initialize() != 0 else {
            throw failure("libinotifytools could not start: \(String(cString: strerror(inotifytools_error()))).")
        }
        for directory in Set(directories) where inotifytools_watch_file(directory, events) == 0 {
            throw failure("libinotifytools could not watch \(directory): \(String(cString: strerror(inotifytools_error()))).")
        }
        Threads.start(named: "prefs-watch.raw") {
            let format = strdup("%w%f %e")
            var text = nstring()
            while true {
                guard let event = inotifytools_next_event(-1) else { continue }
                guard inotifytools_snprintf(&text, Int32(MAX_STRLEN), event, format) > 0 else { continue }
                let line = withUnsafeBytes(of: &text.buf) { String(decoding: $0.prefix(Int(text.len)), as: UTF8.self) }
                session.raw(line)
            }
        }
    }
}
#endif
