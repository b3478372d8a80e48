import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an entry was evicted.
public enum EvictionReason: String, Sendable, Equatable {
    /// Not accessed within the max age for its state.
    case expired
    /// Its state's byte budget was exceeded.
    case overBudget
    /// The entry-count limit was exceeded.
    case tooManyEntries
    /// The file system had less than the minimum free space.
    case lowDiskSpace
}

extension CacheStore {
    /// Keys that are never evicted while pinned (the playing and the preloading items). Pins nest.
    /// Other processes see the pin too: their eviction passes the key by.
    public func pin(_ key: CacheKey) {
        state.withLockedValue { s in
            s.pins[key, default: 0] += 1
            if s.pins[key] == 1 { locks.setPinned(key, true) }
        }
    }

    /// Releases one `pin`.
    public func unpin(_ key: CacheKey) {
        state.withLockedValue { s in
            let count = (s.pins[key] ?? 1) - 1
            s.pins[key] = count > 0 ? count : nil
            if count <= 0 { locks.setPinned(key, false) }
        }
    }

    /// Evicts expired entries, then least recently accessed ones until every budget holds. Returns what went, in
    /// order. Runs at open, and after commits when a budget is exceeded or a minute has passed.
    @discardableResult
    public func enforceBudgets() throws -> [(CacheKey, EvictionReason)] {
        try locked { s in try enforceBudgetsLocked(&s, excluding: nil) }
    }

    /// The budgets as a policy value.
    var evictionPolicy: EvictionPolicy { EvictionPolicy(configuration: configuration, freeSpaceFloor: freeSpaceFloor) }

    func enforceBudgetsIfDue() throws {
        try locked { s in
            let overBudget = evictionPolicy.isOverBudget(usageLocked(&s))
            let expiryDue = now().timeIntervalSince(s.lastExpiryCheck) >= 60
            let spaceDue = freeSpaceFloor > 0 && s.bytesSinceSpaceCheck >= (1 << 20)
            if overBudget || expiryDue || spaceDue { _ = try enforceBudgetsLocked(&s, excluding: nil) }
        }
    }

    func enforceBudgetsLocked(_ s: inout StoreState, excluding: CacheKey?) throws -> [(CacheKey, EvictionReason)] {
        var evicted: [(CacheKey, EvictionReason)] = []
        let date = now()
        s.lastExpiryCheck = date
        var protected = Set(s.pins.keys)
        if let excluding { protected.insert(excluding) }
        let policy = evictionPolicy

        for (state, cutoff) in policy.expiryCutoffs(at: date) {
            while true {
                let batch = try index.leastRecentlyUsed(
                    state: state, before: cutoff, excluding: protected, limit: 64)
                // In-memory access times can be newer than the recorded ones; trust the newer.
                let victims = batch.filter {
                    (s.entries[$0]?.info.lastAccess ?? .distantPast) < cutoff && !locks.isPinnedElsewhere($0)
                }
                for key in victims {
                    try discardLocked(&s, key)
                    evicted.append((key, .expired))
                }
                protected.formUnion(batch)
                if batch.count < 64 { break }
            }
        }
        s.bytesSinceSpaceCheck = 0
        var pass = EvictionPolicy.Pass(policy)
        while let demand = pass.next(usage: usageLocked(&s), freeSpace: freeSpace) {
            guard let key = try lruVictim(&s, state: demand.state, protected: protected) else {
                pass.nothingLeft()
                continue
            }
            // Unlinking happens in the background, so the file system's count lags: the pass adds what it freed.
            pass.took(bytes: try discardLocked(&s, key))
            evicted.append((key, demand.reason))
        }
        for (key, reason) in evicted { logger.debug("evicted \(key): \(reason.rawValue)") }
        return evicted
    }

    private func lruVictim(_ s: inout StoreState, state: ResourceState?, protected: Set<CacheKey>) throws
        -> CacheKey?
    {
        try flushAccessTimesLocked(&s)
        var passed = protected
        while true {
            let batch = try index.leastRecentlyUsed(state: state, excluding: passed, limit: 8)
            // Another process playing or preloading it has it pinned: pass it by.
            if let victim = batch.first(where: { !locks.isPinnedElsewhere($0) }) { return victim }
            guard batch.count == 8 else { return nil }
            passed.formUnion(batch)
        }
    }

    /// Writes access times that changed in memory (reads, zero-copy sends) to the index in one transaction, so
    /// least-recently-used decisions see them.
    func flushAccessTimesLocked(_ s: inout StoreState) throws {
        guard !s.accessed.isEmpty, !isReadOnly else { return }
        let times = s.accessed.compactMap { key in s.entries[key].map { (key, $0.info.lastAccess) } }
        s.accessed.removeAll()
        try index.touch(times)
    }

    /// Frees room for `newBytes` more partial bytes of `key`; false when only pinned data could be evicted.
    func makeRoomLocked(_ s: inout StoreState, forNewBytes newBytes: Int64, of key: CacheKey) throws -> Bool {
        var protected = Set(s.pins.keys)
        protected.insert(key)
        let policy = evictionPolicy
        var room = EvictionPolicy.Room(policy, newBytes: newBytes, pinned: s.pins[key] != nil)
        making: while true {
            switch room.next(usage: usageLocked(&s)) {
            case .fits:
                break making
            case .refuse(let reason):
                s.refusal = reason
                return false
            case .evict(let demand):
                guard let victim = try lruVictim(&s, state: demand.state, protected: protected) else {
                    if let refusal = room.nothingLeft() {
                        s.refusal = refusal
                        return false
                    }
                    continue
                }
                try discardLocked(&s, victim)
                room.took()
                logger.debug("evicted \(victim): \(demand.reason.rawValue)")
            }
        }
        s.bytesSinceSpaceCheck += newBytes
        if freeSpaceFloor > 0, s.bytesSinceSpaceCheck >= (1 << 20) {
            s.bytesSinceSpaceCheck = 0
            var freed: Int64 = 0
            while policy.isLowOnSpace(free: freeSpace(), freed: freed) {
                guard let victim = try lruVictim(&s, state: nil, protected: protected) else {
                    s.refusal = policy.lowDiskRefusal
                    return false
                }
                freed += try discardLocked(&s, victim)
                logger.debug("evicted \(victim): \(EvictionReason.lowDiskSpace.rawValue)")
            }
        }
        return true
    }

    /// Evicts before a new entry is added so the entry-count limit holds.
    func makeRoomForNewEntryLocked(_ s: inout StoreState, excluding key: CacheKey) throws {
        guard let maxEntries = configuration.maxEntries else { return }
        var protected = Set(s.pins.keys)
        protected.insert(key)
        while usageLocked(&s).entries >= maxEntries, let victim = try lruVictim(&s, state: nil, protected: protected) {
            try discardLocked(&s, victim)
            logger.debug("evicted \(victim): \(EvictionReason.tooManyEntries.rawValue)")
        }
    }

    /// Removes an entry: its file is renamed into `trash/` (unlinked in the background; a process still reading
    /// it keeps its bytes) and its row deleted, in one index transaction. Returns the bytes it held.
    @discardableResult
    func discardLocked(_ s: inout StoreState, _ key: CacheKey) throws -> Int64 {
        let unrecorded = s.entries[key]?.unrecordedBytes ?? 0
        let recorded = try modifyLocked(&s, key) { resource, _ -> Int64 in
            guard let current = resource else { return 0 }
            try moveToTrash(path(for: key, generation: current.info.generation, state: current.info.state), name: key.hex)
            resource = nil
            return current.info.cachedBytes
        }
        return recorded + unrecorded
    }

    /// Renames whatever is at `source` (a file, or a directory someone put there) into `trash/` and removes it in
    /// the background; a reader that still has the file open keeps reading the old bytes.
    func moveToTrash(_ source: String, name: String) throws {
        var info = stat()
        guard lstat(source, &info) == 0 else { return }
        let trashPath = (trashDirectory as NSString).appendingPathComponent("\(name).\(UUID().uuidString)")
        try DataFile.rename(from: source, to: trashPath)
        trashQueue.async { try? FileManager.default.removeItem(atPath: trashPath) }
    }
}
