import Foundation
import NIOConcurrencyHelpers

/// Whether a resource may be cached.
public enum Admission: Sendable, Equatable {
    /// Write with this generation; `replaced` is true when an older version was discarded.
    case cacheable(generation: Int64, replaced: Bool)
    /// Too large for the budget: stream it through without caching.
    case uncacheable(String)
}

/// One resource as this process knows it: what the index recorded (as of `epoch`) plus the ranges this process
/// wrote since (readable here, not yet recorded).
struct StoreEntry {
    /// What the index recorded: `info.ranges` holds only durable ranges.
    var info: ResourceInfo
    var written: ByteRangeSet
    var unrecordedBytes: Int64 = 0
    /// When ranges were last recorded (unrecorded bytes older than `commitLatency` are committed).
    var lastRecorded: Date
    /// Checksums of the recorded blocks.
    var checksums = BlockChecksums()
    /// Blocks whose bytes matched their checksum in this process (each is checked once per process).
    var verified: Set<Int64> = []
    /// The store's `epoch` when this was read from the index; an older one is read again before use.
    var epoch: Int64 = 0

    init(_ resource: IndexedResource, epoch: Int64) {
        lastRecorded = resource.info.lastAccess
        info = resource.info
        written = resource.info.ranges
        checksums = resource.checksums
        self.epoch = epoch
    }

    /// This entry brought up to date with what the index records now, keeping the bytes this process wrote and
    /// has not recorded yet (when the generation is still the same: a new one starts empty).
    func refreshed(from resource: IndexedResource, epoch: Int64) -> StoreEntry {
        var fresh = StoreEntry(resource, epoch: epoch)
        guard resource.info.generation == info.generation else { return fresh }
        var unrecorded = written
        for range in info.ranges { unrecorded.remove(range) }
        for range in unrecorded { fresh.written.insert(range) }
        fresh.unrecordedBytes = fresh.written.total - fresh.info.ranges.total
        fresh.lastRecorded = lastRecorded
        fresh.info.lastAccess = Swift.max(info.lastAccess, fresh.info.lastAccess)
        fresh.verified = verified.filter { fresh.checksums[$0] == checksums[$0] && fresh.checksums[$0] != nil }
        return fresh
    }
}

/// Everything the store's lock protects. The index is the truth shared with other processes; `entries` caches
/// the resources this process uses, read again whenever another process changed the index. The entry table writes
/// it; the parts that keep something of their own here (the evictor, the writer, traffic and freshness counts)
/// hold it in values whose setters are private to their files.
struct StoreState {
    static let maxOpenFiles = 32
    /// Keys kept in memory beyond those in use (dropping one costs a read of the index when next used).
    static let maxCachedEntries = 4096
    /// Each key this process holds: its entry, open file, pins and given-up reason.
    var resources: [CacheKey: CachedResource] = [:]
    /// Bumped whenever the index's data version shows another process's change.
    var epoch: Int64 = 0
    var dataVersion: Int64 = 0
    /// When the data version was last looked at (monotonic nanoseconds).
    var dataVersionCheckedAt: UInt64 = 0
    /// Recorded usage as of `usageEpoch`, plus what this process recorded since.
    var usage = CacheUsage()
    var usageEpoch: Int64 = -1
    /// Entries holding bytes not recorded yet.
    var unrecorded: Set<CacheKey> = []
    /// The evictor's own (written by it alone).
    var eviction = EvictionBookkeeping()
    /// Traffic counted and not yet added to the index's totals (written by the store's traffic counting alone).
    var traffic = TrafficTally()
    /// Entries whose access time changed in memory since it was last written to the index.
    var accessed: Set<CacheKey> = []
    /// What this process last wrote down of each resource's freshness (the store's freshness records alone).
    var recordedFreshness = FreshnessMemo()
    /// What was repaired so far (at open, and as entries were first used).
    var recovery = RecoveryReport()
    /// Entries a read-only store found to be of another version than the origin's: never served.
    var hidden: Set<CacheKey> = []
    /// Set by `close`.
    var closed = false

    /// Bytes this process wrote and has not recorded yet (all of them partial).
    var unrecordedBytes: Int64 { unrecorded.reduce(0) { $0 + (entry(of: $1)?.unrecordedBytes ?? 0) } }
    /// New bytes being written outside the lock right now (budgets count them as stored; the writer's alone).
    var writing = WritesInFlight()
}
