import Foundation

/// Loader tuning; the defaults suit short videos.
public struct LoaderConfiguration: Sendable, Equatable {
    /// Fetches are rounded out to this block size (at most one block of over-fetch per side).
    public var blockSize: Int64 = 64 << 10
    /// A reader joins an in-flight fetch that is at most this far behind its offset instead of starting another.
    public var joinWindow: Int64 = 256 << 10
    /// Largest chunk handed to a reader at once (chunks of 512 KiB and more are read and checked in two halves).
    public var readChunk = 256 << 10
    /// Retries of a transfer that broke off (each resumes from the first missing byte), per request: the budget
    /// is restored only after `retryBudgetRestoredAfter` bytes arrived since the last failure.
    public var maxRetries = 3
    /// Bytes that must arrive after a failure before the retry budget is full again.
    public var retryBudgetRestoredAfter: Int64 = 1 << 20
    /// First retry delay in seconds; each further retry doubles it (with ±50 % jitter) up to `retryBackoffCap`.
    public var retryBackoff: TimeInterval = 0.25
    /// Longest retry delay in seconds.
    public var retryBackoffCap: TimeInterval = 4
    /// Seconds a request keeps trying once the origin fails it (stops sending, trickles, drops the connection)
    /// before it fails in one sentence, whatever retries remain: a stalled origin never holds a reader longer.
    /// The time a read timeout or a throughput window took to notice the trouble counts.
    public var giveUpAfter: TimeInterval = 30
    /// Check a cached copy against the origin (HEAD) once per resource and session, beside serving it (see
    /// `validate(url:key:waitingAtMost:)` to wait for the answer).
    public var revalidate = true
    /// Seconds a check's answer holds in this process when the origin gave the copy no freshness (no
    /// `Cache-Control: max-age`, no `Expires`, no `Last-Modified` to judge by): a long-running process (the
    /// proxy) asks again when the copy is used after this long.
    public var recheckInterval: TimeInterval = 300
    /// Origin timeouts and redirects.
    public var client = OriginClientConfiguration()

    /// The defaults.
    public init() {}
}
