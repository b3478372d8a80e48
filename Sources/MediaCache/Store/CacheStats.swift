import Foundation

/// A summary of the cache for `cache stats`.
public struct CacheStats: Sendable, Equatable, Codable {
    /// Number of cached resources.
    public var entries: Int
    /// Bytes on disk in data files.
    public var storedBytes: Int64
    /// Bytes held by partly cached resources.
    public var partialBytes: Int64
    /// Bytes held by completely cached resources.
    public var completeBytes: Int64
    /// Number of completely cached resources.
    public var completeEntries: Int
    /// Cumulative bytes received from origins (`LoaderMetrics.originBytesReceived`, over every run).
    public var originBytes: Int64
    /// Cumulative bytes saved (`LoaderMetrics.cacheBytes`, over every run).
    public var cacheHitBytes: Int64
    /// The partial-data budget.
    public var partialByteLimit: Int64
    /// The complete-data budget.
    public var completeByteLimit: Int64
    /// The cache directory.
    public var directory: String
    /// Seconds a partly cached resource may go unplayed.
    public var partialMaxAge: TimeInterval = 0
    /// Seconds a completely cached resource may go unplayed.
    public var completeMaxAge: TimeInterval = 0
    /// Most resources kept, if limited.
    public var maxEntries: Int?
    /// Free disk space eviction keeps (0: not checked): the configured floor, scaled down on a small disk.
    public var minimumFreeDiskBytes: Int64 = 0
    /// Bytes free on the cache's disk now, when known.
    public var freeDiskBytes: Int64?
    /// The size of the cache's disk, when known.
    public var diskBytes: Int64?
    /// Which budget limits what the cache can hold now: `size` (the byte budgets), `disk` (the free-space floor
    /// leaves less room than they would) or `entries` (the entry limit is reached).
    public var binding = "size"
    /// Bytes the cache can still take before that budget makes it evict.
    public var roomBytes: Int64 = 0

    /// The figures of a cache that holds nothing (e.g. one whose directory does not exist yet).
    public static func empty(directory: URL, configuration: CacheConfiguration) -> CacheStats {
        var stats = CacheStats(
            entries: 0, storedBytes: 0, partialBytes: 0, completeBytes: 0, completeEntries: 0, originBytes: 0,
            cacheHitBytes: 0, partialByteLimit: configuration.partialByteLimit,
            completeByteLimit: configuration.completeByteLimit, directory: directory.path)
        let disk = DataFile.diskSize(atPath: directory.path)
        stats.setBudgets(
            configuration, floor: configuration.freeSpaceFloor(diskBytes: disk), disk: disk,
            free: DataFile.freeSpace(atPath: directory.path))
        return stats
    }

    mutating func setBudgets(_ configuration: CacheConfiguration, floor: Int64, disk: Int64?, free: Int64?) {
        partialByteLimit = configuration.partialByteLimit
        completeByteLimit = configuration.completeByteLimit
        partialMaxAge = configuration.partialMaxAge
        completeMaxAge = configuration.completeMaxAge
        maxEntries = configuration.maxEntries
        minimumFreeDiskBytes = floor
        diskBytes = disk
        freeDiskBytes = free
        let sizeRoom = Swift.max(0, configuration.totalByteLimit - storedBytes)
        let diskRoom = free.map { Swift.max(0, $0 - floor) }
        if let maxEntries = configuration.maxEntries, entries >= maxEntries {
            (binding, roomBytes) = ("entries", 0)
        } else if let diskRoom, diskRoom < sizeRoom {
            (binding, roomBytes) = ("disk", diskRoom)
        } else {
            (binding, roomBytes) = ("size", sizeRoom)
        }
    }
}
