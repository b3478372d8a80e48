import Foundation

/// Disk failures injected by tests (a full disk without filling one).
struct StorageFaults {
    /// Every data write fails with this errno.
    var writeErrno: Int32?
    /// Every data sync fails with this errno.
    var syncErrno: Int32?
}

/// Whether a resource may be cached.
public enum Admission: Sendable, Equatable {
    /// Write with this generation; `replaced` is true when an older version was discarded.
    case cacheable(generation: Int64, replaced: Bool)
    /// Too large for the budget: stream it through without caching.
    case uncacheable(String)
}

/// One resource's in-memory state: recorded info plus the ranges written since (readable, not yet recorded).
struct StoreEntry {
    /// What the index may record: `info.ranges` holds only durable ranges.
    var info: ResourceInfo
    var written: ByteRangeSet
    var unrecordedBytes: Int64 = 0
    /// When ranges were last recorded (unrecorded bytes older than `commitLatency` are committed).
    var lastRecorded: Date
    /// Checksums of the recorded blocks.
    var checksums = BlockChecksums()
    /// Blocks whose bytes matched their checksum in this process (each is checked once per process).
    var verified: Set<Int64> = []

    init(info: ResourceInfo, checksums: BlockChecksums? = nil) {
        lastRecorded = info.lastAccess
        self.info = info
        written = info.ranges
        if var checksums {
            // Checksums of bytes the index no longer holds (clamped at open) check nothing.
            checksums.keepOnly(coveredBy: info.ranges)
            self.checksums = checksums
        }
    }
}

extension StoreState {
    /// Takes `bytes` off the running total of `state` (bytes dropped from an entry in that state).
    mutating func subtract(_ bytes: Int64, from state: ResourceState) {
        if state == .complete { completeBytes -= bytes } else { partialBytes -= bytes }
    }
}

/// Everything the store's lock protects.
struct StoreState {
    static let maxOpenFiles = 32
    var entries: [CacheKey: StoreEntry]
    var files: [CacheKey: DataFile] = [:]
    var pins: [CacheKey: Int] = [:]
    var partialBytes: Int64 = 0
    var completeBytes: Int64 = 0
    var bytesSinceSpaceCheck: Int64 = 0
    var lastExpiryCheck: Date = .distantPast
    var pendingTraffic: [CacheKey?: (origin: Int64, hit: Int64)] = [:]
    /// Entries whose access time changed in memory since it was last written to the index.
    var accessed: Set<CacheKey> = []
    /// Failures the tests inject.
    var faults = StorageFaults()
    /// Why the last write was not stored.
    var refusal: String?
    /// Resources given up on: they stream through without another attempt to cache them.
    var uncacheable: [CacheKey: String] = [:]

    init(entries: [CacheKey: StoreEntry]) {
        self.entries = entries
        for entry in entries.values {
            if entry.info.state == .complete { completeBytes += entry.written.total } else {
                partialBytes += entry.written.total
            }
        }
    }
}
