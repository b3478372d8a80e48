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
    /// Cumulative bytes fetched from origins.
    public var originBytes: Int64
    /// Cumulative bytes served from disk.
    public var cacheHitBytes: Int64
    /// The partial-data budget.
    public var partialByteLimit: Int64
    /// The complete-data budget.
    public var completeByteLimit: Int64
    /// The cache directory.
    public var directory: String
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
            CacheStats(
                entries: s.entries.count, storedBytes: s.partialBytes + s.completeBytes, partialBytes: s.partialBytes,
                completeBytes: s.completeBytes,
                completeEntries: s.entries.values.filter { $0.info.state == .complete }.count,
                originBytes: totals.originBytes, cacheHitBytes: totals.cacheHitBytes,
                partialByteLimit: configuration.partialByteLimit, completeByteLimit: configuration.completeByteLimit,
                directory: directory.path)
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
