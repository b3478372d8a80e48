import Foundation
import NIOConcurrencyHelpers

/// The link's speed as players measured it while they waited for bytes from the origin (shared by a session's
/// players, so an HLS story can start on the variant the link carries). Seconds are the players' clock's.
public final class ThroughputEstimate: Sendable {
    private struct Sample {
        var bytes: Int64 = 0
        var seconds: Double = 0
    }
    private let state = NIOLockedValueBox(Sample())

    /// An estimate with nothing measured yet.
    public init() {}

    /// Bits per second over what was measured; nil until at least a fifth of a second of waiting was seen.
    public var bitsPerSecond: Double? {
        state.withLockedValue { s in s.seconds >= 0.2 ? Double(s.bytes) * 8 / s.seconds : nil }
    }

    /// `bytes` arrived from the origin over `seconds` of waiting. Older samples fade (each new one weighs as much
    /// as the last few seconds of them), so the estimate follows a link that changes.
    public func record(bytes: Int64, seconds: Double) {
        guard bytes > 0, seconds > 0 else { return }
        state.withLockedValue { s in
            if s.seconds > Self.memory {
                let keep = Self.memory / s.seconds
                s.bytes = Int64(Double(s.bytes) * keep)
                s.seconds = Self.memory
            }
            s.bytes += bytes
            s.seconds += seconds
        }
    }

    /// Seconds of waiting the estimate remembers.
    static let memory = 10.0
}
