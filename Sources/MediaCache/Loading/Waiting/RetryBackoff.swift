import Foundation

/// Exponential backoff with jitter for retries of a broken transfer.
enum RetryBackoff {
    /// Seconds to wait before retry number `attempt` (1-based): `base × 2^(attempt-1)`, capped, times a random
    /// factor in 0.5–1.5 so many readers of one origin do not retry in step.
    static func delay(attempt: Int, base: TimeInterval, cap: TimeInterval, jitter: Double = Double.random(in: 0.5...1.5))
        -> TimeInterval
    {
        guard base > 0 else { return 0 }
        let exponent = Double(Swift.max(0, Swift.min(attempt - 1, 30)))
        return Swift.min(cap, base * pow(2, exponent)) * jitter
    }

    /// "0.25 s", "1.5 s".
    static func describe(_ seconds: TimeInterval) -> String {
        String(format: "%.2g s", seconds)
    }
}
