import NIOConcurrencyHelpers

/// The one way a task here suspends until another wakes it: the loader's readers waiting for bytes, the
/// preloader's gate, a virtual clock's sleepers. Cancelling the task wakes it at once.
public enum CancellableWait {
    private static let ids = NIOLockedValueBox(0)

    /// Suspends until what `park` stored is woken, or until the task is cancelled.
    ///
    /// `park` runs under `box`'s lock with a fresh id and the continuation: it stores the continuation (or a
    /// closure that resumes it) under that id for a waker to find and returns true, or returns false when there
    /// is nothing to wait for. On cancellation `unpark` runs under the lock and returns the waker stored under the
    /// id, if no one took it yet, which is then called. A task already cancelled does not park.
    public static func suspend<State: Sendable>(
        in box: NIOLockedValueBox<State>,
        park: (inout State, _ id: Int, CheckedContinuation<Void, Never>) -> Bool,
        unpark: @escaping @Sendable (inout State, _ id: Int) -> (@Sendable () -> Void)?
    ) async {
        let id = ids.withLockedValue { value -> Int in
            value &+= 1
            return value
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Checked under the lock: a cancellation either comes before (nothing parks) or finds the waiter.
                let parked = box.withLockedValue { state in
                    Task.isCancelled ? false : park(&state, id, continuation)
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            box.withLockedValue { state in unpark(&state, id) }?()
        }
    }

    /// The waker of a parked continuation (nil when there is none), for `unpark`.
    public static func waker(_ continuation: CheckedContinuation<Void, Never>?) -> (@Sendable () -> Void)? {
        guard let continuation else { return nil }
        return { continuation.resume() }
    }
}
