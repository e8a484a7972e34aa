import Foundation
import Synchronization

/// Watches the handlers that run on a thread reading changes
/// (``ObservationOptions/synchronousExternalChanges``): one that holds that thread longer than
/// ``bound`` is reported on its suite's `failures()`, once per call, with its keys and the time
/// held; where the thread is the inotify watcher's, the watcher's work moves to a new thread
/// (``InotifyWatcher/replace(heldThread:)``), so other suites' changes keep arriving.
///
/// Its thread starts with the first such handler and sleeps without a timeout while none runs:
/// an idle process never wakes for it. A handler call costs a lock and, when the watchdog
/// sleeps, one wake-up; the watchdog goes back to sleep one ``bound`` after the last call.
final class HandlerWatchdog: @unchecked Sendable {
    static let shared = HandlerWatchdog()
    static let bound: Duration = .seconds(1)

    private struct Call {
        let started: ContinuousClock.Instant
        let keys: [String]
        let report: @Sendable (PreferenceError) -> Void
        var reported = false
    }

    /// Guards the variables below it.
    private let condition = NSCondition()
    /// The handler running on each thread (by `pthread_self`).
    private var running: [UInt: Call] = [:]
    /// Handler calls begun, and how many of them the watchdog has seen.
    private var calls: UInt64 = 0
    private var callsSeen: UInt64 = 0
    private var sleeping = false
    private var started = false
    private var exiting = false

    /// From now on nothing is reported: the process is running its exit handlers.
    func processIsExiting() {
        condition.lock()
        exiting = true
        condition.unlock()
    }

    /// Runs `handler`, which handles a change of `keys` on the calling thread; `report` tells
    /// the suite's failure observers.
    func run(keys: @autoclosure () -> [String], report: @escaping @Sendable (PreferenceError) -> Void, _ handler: () -> Void) {
        let thread = UInt(pthread_self())
        condition.lock()
        calls += 1
        let outer = running.updateValue(Call(started: .now, keys: keys(), report: report), forKey: thread)
        if !started {
            started = true
            Thread.start(named: "prefs.watchdog") { [self] in watch() }
        } else if sleeping {
            condition.signal()
        }
        condition.unlock()
        handler()
        condition.lock()
        running[thread] = outer
        condition.unlock()
    }

    /// Sleeps until a handler runs, then until it has run for ``bound``, and stays awake one
    /// ``bound`` after the last call began.
    private func watch() {
        condition.lock()
        while true {
            let unreported = running.values.filter { !$0.reported }
            guard !unreported.isEmpty || calls != callsSeen else {
                sleeping = true
                condition.wait()
                sleeping = false
                continue
            }
            callsSeen = calls
            let until = unreported.map { $0.started + Self.bound }.min() ?? .now + Self.bound
            _ = condition.wait(until: Date(timeIntervalSinceNow: max(0, (until - .now) / .seconds(1))))
            let now = ContinuousClock.now
            let held = running.filter { !$0.value.reported && now - $0.value.started >= Self.bound }
            for thread in held.keys { running[thread]?.reported = true }
            guard !held.isEmpty, !exiting else { continue }
            condition.unlock()
            for (thread, call) in held {
                let moved = InotifyWatcher.replace(heldThread: thread)
                let error = PreferenceError(
                    code: .handlerHeldWatcher,
                    message: "A .synchronousExternalChanges handler of \(call.keys.joined(separator: ", ")) has held the thread that reads other processes' changes for \(String(format: "%.1f", (now - call.started) / .seconds(1))) s. \(moved ? "Other suites' changes are read on a new thread meanwhile." : "Other suites' changes wait until it returns.") Return from such handlers at once: hand long work to a queue of your own.")
                logger.warning("\(error)")
                call.report(error)
            }
            condition.lock()
        }
    }
}
