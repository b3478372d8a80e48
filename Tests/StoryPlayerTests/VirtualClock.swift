import Foundation
import MediaCache
import NIOConcurrencyHelpers

@testable import StoryPlayer

/// Time that only moves when told to: tests advance it, so they never wait on real time.
public final class VirtualClock: PlaybackClock {
    private struct Sleeper {
        var deadline: Double
        var resume: @Sendable () -> Void
    }

    private let state = NIOLockedValueBox<(now: Double, sleepers: [Int: Sleeper], nextID: Int)>((0, [:], 0))

    /// A clock at time 0.
    public init() {}

    public var now: Double { state.withLockedValue { $0.now } }

    /// The earliest pending deadline, if anything sleeps.
    public var nextDeadline: Double? { state.withLockedValue { $0.sleepers.values.map(\.deadline).min() } }

    /// Runs `work` once the clock reaches `now + delay` (used for the origin's shaping in tests).
    public func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void) {
        let due = state.withLockedValue { s -> Bool in
            let deadline = s.now + Swift.max(0, delay)
            if deadline <= s.now { return true }
            s.nextID += 1
            s.sleepers[s.nextID] = Sleeper(deadline: deadline, resume: work)
            return false
        }
        if due { work() }
    }

    public func sleep(until deadline: Double) async throws {
        await CancellableWait.suspend(
            in: state,
            park: { s, id, continuation in
                guard deadline > s.now else { return false }
                // Negative ids: `schedule(after:)` numbers its work upwards from 1 in the same table.
                s.sleepers[-id] = Sleeper(deadline: deadline, resume: { continuation.resume() })
                return true
            },
            unpark: { s, id in s.sleepers.removeValue(forKey: -id)?.resume })
        try Task.checkCancellation()
    }

    /// Moves time to `deadline` and wakes everything due by then, earliest first.
    public func advance(to deadline: Double) {
        let due = state.withLockedValue { s -> [Sleeper] in
            s.now = Swift.max(s.now, deadline)
            let ready = s.sleepers.filter { $0.value.deadline <= s.now }.sorted { $0.value.deadline < $1.value.deadline }
            for (id, _) in ready { s.sleepers.removeValue(forKey: id) }
            return ready.map(\.value)
        }
        for sleeper in due { sleeper.resume() }
    }

    /// Moves time by `seconds`.
    public func advance(by seconds: Double) { advance(to: now + seconds) }
}
