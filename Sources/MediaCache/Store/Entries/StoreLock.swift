import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's state behind a mutex that can also be tried: a caller that must not wait for whatever holds it (an
/// event loop, while a commit records ranges in the index) gives up instead.
// Sendable: `value` is read and written only with the pthread mutex held.
final class StoreLock<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` on the value, waiting for the mutex.
    func withLockedValue<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` on the value if the mutex comes free within `attempts` tries (yielding the processor between
    /// them: a moment, never the length of a disk or index operation); nil otherwise.
    func withLockedValueIfAvailable<T>(attempts: Int = 64, _ body: (inout Value) throws -> T) rethrows -> T? {
        var tries = 0
        while pthread_mutex_trylock(mutex) != 0 {
            tries += 1
            guard tries < attempts else { return nil }
            sched_yield()
        }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
