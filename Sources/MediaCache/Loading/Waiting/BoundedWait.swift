import NIOConcurrencyHelpers

/// A wait that the first of several wakers ends: tasks ending, a time limit, the caller's cancellation.
struct BoundedWait: Sendable {
    var continuation: CheckedContinuation<Void, Never>?
    var done = false

    /// Waits until every task has ended or `limit` has passed, whichever comes first (or the caller is
    /// cancelled). The tasks go on: a task's value cannot be given up on inside a task group, whose end waits for
    /// every child, so the wait parks until a watcher or a timer wakes it.
    static func wait(for tasks: [Task<Void, Never>], atMost limit: Duration) async {
        guard !tasks.isEmpty else { return }
        let box = NIOLockedValueBox(BoundedWait())
        let wake: @Sendable () -> Void = {
            box.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                state.done = true
                defer { state.continuation = nil }
                return state.continuation
            }?.resume()
        }
        let watcher = Task {
            for task in tasks { await task.value }
            wake()
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            wake()
        }
        await CancellableWait.suspend(in: box) { state, _, continuation in
            guard !state.done else { return false }
            state.continuation = continuation
            return true
        } unpark: { state, _ in
            defer { state.continuation = nil }
            return CancellableWait.waker(state.continuation)
        }
        timer.cancel()
        _ = watcher
    }
}
