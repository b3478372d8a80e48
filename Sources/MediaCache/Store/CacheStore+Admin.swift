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
    /// Free disk space eviction keeps (0: not checked).
    public var minimumFreeDiskBytes: Int64 = 0

    /// The figures of a cache that holds nothing (e.g. one whose directory does not exist yet).
    public static func empty(directory: URL, configuration: CacheConfiguration) -> CacheStats {
        var stats = CacheStats(
            entries: 0, storedBytes: 0, partialBytes: 0, completeBytes: 0, completeEntries: 0, originBytes: 0,
            cacheHitBytes: 0, partialByteLimit: configuration.partialByteLimit,
            completeByteLimit: configuration.completeByteLimit, directory: directory.path)
        stats.setBudgets(configuration)
        return stats
    }

    mutating func setBudgets(_ configuration: CacheConfiguration) {
        partialByteLimit = configuration.partialByteLimit
        completeByteLimit = configuration.completeByteLimit
        partialMaxAge = configuration.partialMaxAge
        completeMaxAge = configuration.completeMaxAge
        maxEntries = configuration.maxEntries
        minimumFreeDiskBytes = configuration.minimumFreeDiskBytes
    }
}

extension CacheStore {
    /// Removes one resource (its file goes through `trash/`). Returns false when it was not cached.
    @discardableResult
    public func remove(key: CacheKey) throws -> Bool {
        try state.withLockedValue { s in
            if s.uncacheable.removeValue(forKey: key) != nil { try index.setUncacheable(key, reason: nil) }
            guard s.entries[key] != nil else { return false }
            try discardLocked(&s, key)
            return true
        }
    }

    /// Removes every resource; cumulative traffic totals are kept.
    public func removeAll() throws {
        try state.withLockedValue { s in
            for key in Array(s.entries.keys) { try discardLocked(&s, key) }
            try index.deleteEverything()
            s.uncacheable.removeAll()
        }
    }

    /// Bytes stored now, partial and complete (cheap: no index query).
    public var storedBytes: Int64 { state.withLockedValue { $0.partialBytes + $0.completeBytes } }

    /// Current counts, sizes and cumulative totals.
    public func stats() throws -> CacheStats {
        try flushTraffic()
        let totals = try index.totals()
        return state.withLockedValue { s in
            var stats = CacheStats(
                entries: s.entries.count, storedBytes: s.partialBytes + s.completeBytes, partialBytes: s.partialBytes,
                completeBytes: s.completeBytes,
                completeEntries: s.entries.values.filter { $0.info.state == .complete }.count,
                originBytes: totals.originBytes, cacheHitBytes: totals.cacheHitBytes,
                partialByteLimit: configuration.partialByteLimit, completeByteLimit: configuration.completeByteLimit,
                directory: directory.path)
            stats.setBudgets(configuration)
            return stats
        }
    }

    /// Counts bytes a reader got from the origin and from disk (the loader's `TrafficMeter` is the only caller);
    /// kept in memory and added to the persistent totals at `flushTraffic` (called by `stats` and at close).
    func recordTraffic(key: CacheKey?, origin: Int64, cacheHit: Int64) {
        state.withLockedValue { s in
            var pending = s.pendingTraffic[key] ?? (0, 0)
            pending.origin += origin
            pending.hit += cacheHit
            s.pendingTraffic[key] = pending
            if let key, var entry = s.entries[key] {
                entry.info.fetchedFromOrigin += origin
                entry.info.servedFromCache += cacheHit
                s.entries[key] = entry
            }
        }
    }

    /// Adds pending traffic counters to the index.
    public func flushTraffic() throws {
        guard !isReadOnly else { return }
        try state.withLockedValue { s in
            var origin: Int64 = 0
            var hit: Int64 = 0
            for (key, pending) in s.pendingTraffic {
                origin += pending.origin
                hit += pending.hit
                // Per-resource counters live in the in-memory info; saving it persists them.
                if let key, let entry = s.entries[key] { try index.save(entry.info) }
            }
            try index.addTotals(origin: origin, cacheHit: hit)
            s.pendingTraffic.removeAll()
        }
    }
}
