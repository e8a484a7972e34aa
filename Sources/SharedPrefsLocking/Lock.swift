import CSharedPrefsShims
import Synchronization

/// A `Mutex` that ThreadSanitizer can see.
///
/// On Linux, `Synchronization.Mutex` waits for a contended lock in the standard library's futex
/// code, which is not instrumented: ThreadSanitizer then misses the ordering the lock creates and
/// reports races on state that is only ever touched under it. `Lock` is that `Mutex`, plus
/// `__tsan_acquire`/`__tsan_release` annotations that cost one null check when ThreadSanitizer
/// is not linked. Used for every lock in this package, so `swift test --sanitize=thread` reports
/// only real races.
public final class Lock<Value: ~Copyable>: Sendable {
    @usableFromInline let mutex: Mutex<Value>

    public init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    @usableFromInline var address: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            sharedprefs_tsan_acquire(address)
            defer { sharedprefs_tsan_release(address) }
            return try body(&value)
        }
    }

    /// Runs `body` with the value if the lock is free; returns `nil` at once if it is held.
    @inlinable
    public func withLockIfAvailable<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result? {
        try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            sharedprefs_tsan_acquire(address)
            defer { sharedprefs_tsan_release(address) }
            return try body(&value)
        }
    }
}
