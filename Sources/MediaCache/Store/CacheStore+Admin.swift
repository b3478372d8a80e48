import Foundation

extension CacheStore {
    /// Removes one resource (its file goes through `trash/`). Returns false when it was not cached.
    @discardableResult
    public func remove(key: CacheKey) throws -> Bool {
        try table.locked { s in
            try table.takeBack(&s, key)
            guard table.entry(&s, key) != nil else { return false }
            try table.discard(&s, key)
            return true
        }
    }

    /// Removes every resource; cumulative traffic totals are kept.
    public func removeAll() throws {
        let keys = try index.keysGenerationsAndStates().keys
        try table.locked { s in
            for key in keys { try table.discard(&s, key) }
            try index.deleteEverything()
            for key in Array(s.resources.keys) { table.forget(&s, key) }
            table.forgetGivenUp(&s)
        }
    }

    /// Bytes stored now, partial and complete (one small index read at most).
    public var storedBytes: Int64 {
        table.locked { s in
            let usage = table.usage(&s)
            return usage.partialBytes + usage.completeBytes
        }
    }

    /// Current counts, sizes and cumulative totals, as every process sharing the directory recorded them.
    public func stats() throws -> CacheStats {
        try flushTraffic()
        let totals = try index.totals()
        return table.locked { s in
            let usage = table.usage(&s)
            var stats = CacheStats(
                entries: usage.entries, storedBytes: usage.partialBytes + usage.completeBytes,
                partialBytes: usage.partialBytes, completeBytes: usage.completeBytes,
                completeEntries: usage.completeEntries, originBytes: totals.originBytes,
                cacheHitBytes: totals.cacheHitBytes, partialByteLimit: configuration.partialByteLimit,
                completeByteLimit: configuration.completeByteLimit, directory: directory.path)
            stats.setBudgets(
                configuration, floor: freeSpaceFloor, disk: DataFile.diskSize(atPath: directory.path),
                free: freeSpace())
            return stats
        }
    }

    /// Counts bytes a reader got from the origin and from disk (the loader's `TrafficMeter` is the only caller);
    /// kept in memory and added to the persistent totals at `flushTraffic` (called by `stats` and at close).
    func recordTraffic(key: CacheKey?, origin: Int64, cacheHit: Int64) {
        table.lockedAsSeen { s in s.traffic.add(key: key, origin: origin, hit: cacheHit) }
    }

    /// Adds pending traffic counters to the index (additions: several processes' counts sum up).
    public func flushTraffic() throws {
        guard !isReadOnly else { return }
        try table.locked { s in
            try index.addTraffic(s.traffic.pending)
            s.traffic.clear()
        }
    }
}

/// Bytes readers got from the origin and from disk, by key (nil: not tied to one), not yet in the index's totals.
struct TrafficTally: Sendable {
    fileprivate(set) var pending: [CacheKey?: (origin: Int64, hit: Int64)] = [:]

    /// Counts `origin` and `hit` bytes of `key`.
    fileprivate mutating func add(key: CacheKey?, origin: Int64, hit: Int64) {
        var counts = pending[key] ?? (0, 0)
        counts.origin += origin
        counts.hit += hit
        pending[key] = counts
    }

    /// Forgets what was added to the index.
    fileprivate mutating func clear() { pending.removeAll() }
}
