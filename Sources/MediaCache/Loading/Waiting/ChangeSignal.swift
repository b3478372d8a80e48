import NIOConcurrencyHelpers

/// A count of changes that readers wait on instead of looking again at an interval. Each change adds one and wakes
/// every waiter; a reader remembers the count it last saw and waits for another, so no change between two looks is
/// missed and many changes make one wake.
public final class ChangeSignal: Sendable {
    private struct State: Sendable {
        var version: UInt64 = 0
        var waiters: [Int: @Sendable () -> Void] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// A signal that has not changed yet.
    public init() {}

    /// How many changes there were so far.
    public var version: UInt64 { state.withLockedValue { $0.version } }

    /// True while a task waits.
    public var isAwaited: Bool { state.withLockedValue { !$0.waiters.isEmpty } }

    /// Counts a change and wakes every waiter.
    public func signal() {
        let wake = state.withLockedValue { s -> [@Sendable () -> Void] in
            s.version &+= 1
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for resume in wake { resume() }
    }

    /// Returns once the count is other than `seen` (at once when it already is), or when the task is cancelled.
    public func wait(after seen: UInt64) async {
        await CancellableWait.suspend(
            in: state,
            park: { s, id, continuation in
                guard s.version == seen else { return false }
                s.waiters[id] = { continuation.resume() }
                return true
            },
            unpark: { s, id in s.waiters.removeValue(forKey: id) })
    }
}
