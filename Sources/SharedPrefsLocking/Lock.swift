import CSharedPrefsShims

/// A mutual-exclusion lock around a value, that ThreadSanitizer sees and that `fork(2)` never
/// copies held. Used for every lock in this package.
///
/// - Its lock is a futex word that records no thread (`sharedprefs_lock`). (`Synchronization.Mutex`
///   keeps the thread's id, cached: in a child forked without exec, the thread that forked
///   locks it under its parent's id, and a second thread of the child that waits for it traps.)
/// - Each hold is inside a gate that `fork(2)` closes until no lock is held
///   (`sharedprefs_lock_gate_enter`): a child forked at any moment, by any thread, finds every
///   lock free and the state behind it whole.
/// - ThreadSanitizer does not see a futex wait: `__tsan_acquire`/`__tsan_release` tell it,
///   at the cost of one null check when it is not linked.
public final class Lock<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: the value is reached only with the lock held, and comes in and goes out as
    // `sending`, as `Synchronization.Mutex` is Sendable for any value.
    @usableFromInline let word: UnsafeMutablePointer<CInt>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    public init(_ value: consuming sending Value) {
        word = .allocate(capacity: 1)
        word.initialize(to: 0)
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        word.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        sharedprefs_lock_gate_enter()
        sharedprefs_lock(word)
        sharedprefs_tsan_acquire(word)
        defer {
            sharedprefs_tsan_release(word)
            sharedprefs_unlock(word)
            sharedprefs_lock_gate_leave()
        }
        return try body(&value.pointee)
    }

    /// Runs `body` with the value if the lock is free; returns `nil` at once if it is held.
    @inlinable
    public func withLockIfAvailable<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result? {
        sharedprefs_lock_gate_enter()
        defer { sharedprefs_lock_gate_leave() }
        guard sharedprefs_trylock(word) != 0 else { return nil }
        sharedprefs_tsan_acquire(word)
        defer {
            sharedprefs_tsan_release(word)
            sharedprefs_unlock(word)
        }
        return try body(&value.pointee)
    }
}
