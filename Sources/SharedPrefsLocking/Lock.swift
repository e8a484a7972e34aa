#if canImport(Glibc)
import Glibc
#endif
import CSharedPrefsShims

/// A mutual-exclusion lock around a value, that ThreadSanitizer sees and that `fork(2)` never
/// copies held. Used for every lock in this package.
///
/// - It is a `pthread_mutex_t`, which ThreadSanitizer intercepts. (`Synchronization.Mutex`
///   waits in the standard library's futex code, which it does not see, and it keeps the
///   thread's id cached: in a child forked without exec, the thread that forked locks it under
///   its parent's id, and a second thread of the child that waits for it traps.)
/// - Each hold is inside a gate that `fork(2)` closes until no lock is held
///   (`sharedprefs_lock_gate_enter`): a child forked at any moment, by any thread, finds every
///   lock free and the state behind it whole.
public final class Lock<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: the value is reached only with the mutex held, and comes in and goes out as
    // `sending`, as `Synchronization.Mutex` is Sendable for any value.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    public init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        sharedprefs_lock_gate_enter()
        pthread_mutex_lock(mutex)
        defer {
            pthread_mutex_unlock(mutex)
            sharedprefs_lock_gate_leave()
        }
        return try body(&value.pointee)
    }

    /// Runs `body` with the value if the lock is free; returns `nil` at once if it is held.
    @inlinable
    public func withLockIfAvailable<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result? {
        sharedprefs_lock_gate_enter()
        defer { sharedprefs_lock_gate_leave() }
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
