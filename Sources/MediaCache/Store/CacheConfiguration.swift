import Foundation

/// Budgets and limits for a cache; the defaults are the seed's (partial 100 MB / 1 day, complete 200 MB / 2 days).
public struct CacheConfiguration: Sendable, Equatable {
    /// Most bytes kept for resources that are only partly cached.
    public var partialByteLimit: Int64 = 100_000_000
    /// Partly cached resources not accessed for this long are evicted.
    public var partialMaxAge: TimeInterval = 86_400
    /// Most bytes kept for completely cached resources.
    public var completeByteLimit: Int64 = 200_000_000
    /// Completely cached resources not accessed for this long are evicted.
    public var completeMaxAge: TimeInterval = 172_800
    /// Most resources kept (least recently accessed go first); nil for no limit.
    public var maxEntries: Int? = nil
    /// Evict until the file system has at least this many bytes free; 0 turns the check off.
    public var minimumFreeDiskBytes: Int64 = 50_000_000
    /// The free-space floor is at most this share of the file system's size, so a small disk (a phone's, a
    /// 40 MB partition) still caches: the smaller of `minimumFreeDiskBytes` and 5 % of the disk. Nil keeps
    /// `minimumFreeDiskBytes` as it is (a floor the user chose).
    public var minimumFreeDiskShare: Double? = 0.05
    /// Written bytes are made durable and recorded in the index at least every this many bytes…
    public var commitInterval: Int64 = 256 << 10
    /// …and at least this often, in seconds, so a crash loses little of a slow download.
    public var commitLatency: TimeInterval = 0.25

    /// Check each block's CRC-32C the first time a process reads it, treating a mismatch as missing bytes. Off
    /// only to measure what checking costs: checksums are recorded either way.
    public var verifiesChecksums = true

    /// The defaults.
    public init() {}

    /// The free-space floor on a file system of `diskBytes` (nil: unknown, the floor as configured).
    public func freeSpaceFloor(diskBytes: Int64?) -> Int64 {
        guard minimumFreeDiskBytes > 0, let share = minimumFreeDiskShare, let diskBytes, diskBytes > 0 else {
            return minimumFreeDiskBytes
        }
        return Swift.min(minimumFreeDiskBytes, Int64(Double(diskBytes) * Swift.max(0, share)))
    }

    /// The total of both byte budgets.
    public var totalByteLimit: Int64 { partialByteLimit + completeByteLimit }
}
