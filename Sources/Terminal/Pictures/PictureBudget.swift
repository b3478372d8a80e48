/// Caps the bytes a second pictures send to the terminal, so a slow link (ssh) shows fewer frames instead of
/// falling behind the video: a frame that does not fit is skipped, never queued. The cap starts at `limit` and
/// follows what the terminal was measured to take (a write that blocked says how fast it drains). A value with its
/// clock passed in, tested without a terminal.
public struct PictureBudget: Sendable, Equatable {
    /// The most bytes a second, whatever the terminal takes.
    public let limit: Double
    /// Bytes a second allowed now.
    public private(set) var rate: Double
    /// Bytes that may be sent now (up to a quarter second's worth saved up).
    public private(set) var available: Double
    /// Frames skipped because they did not fit.
    public private(set) var skipped = 0
    /// Bytes sent.
    public private(set) var sent = 0
    private var last: Double?

    /// A budget of `limit` bytes a second.
    public init(limit: Double) {
        self.limit = limit
        rate = limit
        available = limit / 4
    }

    /// Whether a frame of about `bytes` may be sent at `now` (seconds); a frame that may not is counted as skipped.
    /// Asked before the frame is made, so a skipped frame costs no encoding.
    public mutating func hasRoom(for bytes: Int, now: Double) -> Bool {
        refill(now: now)
        // A frame larger than what a quarter second holds is allowed when the budget is full, then paid off.
        guard available >= Double(bytes) || available >= rate / 4 else {
            skipped += 1
            return false
        }
        return true
    }

    /// Spends `bytes` on a frame sent.
    public mutating func spend(_ bytes: Int) {
        available -= Double(bytes)
        sent += bytes
    }

    /// Tells how long writing `bytes` took: a write that blocked means the terminal drains slower than the rate.
    public mutating func wrote(_ bytes: Int, seconds: Double) {
        guard bytes > 0 else { return }
        if seconds > 0.02 {
            rate = Swift.max(limit / 64, Swift.min(rate, 0.8 * Double(bytes) / seconds))
        } else {
            rate = Swift.min(limit, rate * 1.05)
        }
    }

    private mutating func refill(now: Double) {
        if let last { available = Swift.min(rate / 4, available + Swift.max(0, now - last) * rate) }
        last = now
    }
}
