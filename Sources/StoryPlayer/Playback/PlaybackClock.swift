import Foundation

/// Time for playback: seconds since the clock started, and sleeping until a deadline.
public protocol PlaybackClock: Sendable {
    /// Seconds since the clock started.
    var now: Double { get }
    /// Suspends until `now >= deadline` (or the task is cancelled).
    func sleep(until deadline: Double) async throws
    /// How many of its seconds pass in a second of wall-clock time (1 unless it plays faster or slower).
    var speed: Double { get }
}

extension PlaybackClock {
    /// Wall-clock pace.
    public var speed: Double { 1 }
}

/// Wall-clock time multiplied by `speed` (2 plays twice as fast).
public struct RealPlaybackClock: PlaybackClock {
    private let start = ContinuousClock.now
    /// The speed multiplier.
    public let speed: Double

    /// A clock running at `speed` times real time.
    public init(speed: Double = 1) { self.speed = speed > 0 ? speed : 1 }

    public var now: Double {
        let elapsed = ContinuousClock.now - start
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * speed
    }

    public func sleep(until deadline: Double) async throws {
        let remaining = (deadline - now) / speed
        if remaining > 0 { try await Task.sleep(for: .nanoseconds(Int64(remaining * 1e9))) }
    }
}
