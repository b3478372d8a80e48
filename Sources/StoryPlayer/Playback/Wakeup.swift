import MediaCache
import NIOConcurrencyHelpers

/// What one task sleeps on until a deadline or until another thread has news for it: the player's loop sleeps
/// until its next frame is due or bytes, a frame, a key or a failure arrive; the download until the playhead
/// moves. A signal given while nobody waits is kept for the next wait (news never lost, many signals one wake).
final class Wakeup: Sendable {
    private struct State: Sendable {
        var pending = false
        var waiter: (id: Int, resume: @Sendable () -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    /// A wake-up with no news yet.
    init() {}

    /// Wakes the waiting task, or the next wait when none waits now.
    func signal() {
        let resume = state.withLockedValue { s -> (@Sendable () -> Void)? in
            guard let waiter = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return waiter.resume
        }
        resume?()
    }

    /// Returns once signalled (since the last wait returned) or at `deadline` on `clock` (nil: only when
    /// signalled); throws when the task is cancelled.
    func wait(until deadline: Double?, on clock: any PlaybackClock) async throws {
        let signalled = state.withLockedValue { s in
            defer { s.pending = false }
            return s.pending
        }
        if signalled { return }
        if let deadline {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.next() }
                group.addTask { try? await clock.sleep(until: deadline) }
                await group.next()
                group.cancelAll()
            }
        } else {
            await next()
        }
        try Task.checkCancellation()
    }

    private func next() async {
        await CancellableWait.suspend(
            in: state,
            park: { s, id, continuation in
                if s.pending {
                    s.pending = false
                    return false
                }
                s.waiter = (id, { continuation.resume() })
                return true
            },
            unpark: { s, id in
                guard let waiter = s.waiter, waiter.id == id else { return nil }
                s.waiter = nil
                return waiter.resume
            })
    }
}
