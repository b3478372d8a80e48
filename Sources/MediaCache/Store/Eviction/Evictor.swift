import Foundation
import Logging

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

/// What the evictor keeps between passes, held with the rest of the store's state (under its lock) and written
/// only here.
struct EvictionBookkeeping: Sendable {
    /// When expired entries were last looked for.
    fileprivate(set) var lastExpiryCheck: Date = .distantPast
    /// Bytes admitted since the disk's free space was last looked at.
    fileprivate(set) var bytesSinceSpaceCheck: Int64 = 0
    /// Why the last write was not stored.
    fileprivate(set) var refusal: String?
}

/// Carries out the eviction policy on the entry table: answers each demand of an `EvictionPolicy` pass with the
/// least recently used entry no process has pinned, and keeps the disk's free space above its floor as bytes
/// arrive. Runs under the table's lock (the caller holds it).
struct Evictor: Sendable {
    let table: EntryTable
    let policy: EvictionPolicy
    let locks: SharedLocks
    let freeSpace: @Sendable () -> Int64?
    let logger: Logger

    /// Bytes written between two looks at the disk's free space.
    static let spaceCheckInterval: Int64 = 1 << 20

    /// True when a pass is due: a budget is exceeded, a minute has passed since expiry was last checked, or
    /// enough bytes arrived to look at the disk again.
    func isDue(_ s: inout StoreState, at date: Date) -> Bool {
        policy.isOverBudget(table.usage(&s)) || date.timeIntervalSince(s.eviction.lastExpiryCheck) >= 60
            || policy.freeSpaceFloor > 0 && s.eviction.bytesSinceSpaceCheck >= Self.spaceCheckInterval
    }

    /// Evicts expired entries, then least recently accessed ones until every budget holds (never pinned ones, nor
    /// `excluding`). Returns what went, in order.
    func enforceBudgets(_ s: inout StoreState, excluding: CacheKey?, at date: Date) throws -> [(CacheKey, EvictionReason)] {
        var evicted: [(CacheKey, EvictionReason)] = []
        s.eviction.lastExpiryCheck = date
        var protected = table.pinnedKeys(s)
        if let excluding { protected.insert(excluding) }
        for (state, cutoff) in policy.expiryCutoffs(at: date) {
            while true {
                let batch = try table.index.leastRecentlyUsed(state: state, before: cutoff, excluding: protected, limit: 64)
                // In-memory access times can be newer than the recorded ones; trust the newer.
                let victims = batch.filter {
                    (s.entry(of: $0)?.info.lastAccess ?? .distantPast) < cutoff && !locks.isPinnedElsewhere($0)
                }
                for key in victims {
                    try table.discard(&s, key)
                    evicted.append((key, .expired))
                }
                protected.formUnion(batch)
                if batch.count < 64 { break }
            }
        }
        s.eviction.bytesSinceSpaceCheck = 0
        var pass = EvictionPolicy.Pass(policy)
        while let demand = pass.next(usage: table.usage(&s), freeSpace: freeSpace) {
            guard let key = try lruVictim(&s, state: demand.state, protected: protected) else {
                pass.nothingLeft()
                continue
            }
            // Unlinking happens in the background, so the file system's count lags: the pass adds what it freed.
            pass.took(bytes: try table.discard(&s, key))
            evicted.append((key, demand.reason))
        }
        for (key, reason) in evicted { logger.debug("evicted \(key): \(reason.rawValue)") }
        return evicted
    }

    /// Frees room for `newBytes` more partial bytes of `key`; false (with the refusal saying why) when only pinned
    /// data could be evicted.
    func makeRoom(_ s: inout StoreState, forNewBytes newBytes: Int64, of key: CacheKey) throws -> Bool {
        // (Gathered only when something must go: most writes fit, and this runs for every one.)
        var protectedKeys: Set<CacheKey>?
        func protected(_ s: StoreState) -> Set<CacheKey> {
            if let protectedKeys { return protectedKeys }
            let keys = table.pinnedKeys(s).union([key])
            protectedKeys = keys
            return keys
        }
        var room = EvictionPolicy.Room(policy, newBytes: newBytes, pinned: table.isPinned(s, key))
        making: while true {
            switch room.next(usage: table.usage(&s)) {
            case .fits:
                break making
            case .refuse(let reason):
                s.eviction.refusal = reason
                return false
            case .evict(let demand):
                guard let victim = try lruVictim(&s, state: demand.state, protected: protected(s)) else {
                    if let refusal = room.nothingLeft() {
                        s.eviction.refusal = refusal
                        return false
                    }
                    continue
                }
                try table.discard(&s, victim)
                room.took()
                logger.debug("evicted \(victim): \(demand.reason.rawValue)")
            }
        }
        // The disk rule counts bytes since its last look, which a pass over the budgets does not.
        s.eviction.bytesSinceSpaceCheck += newBytes
        if policy.freeSpaceFloor > 0, s.eviction.bytesSinceSpaceCheck >= Self.spaceCheckInterval {
            s.eviction.bytesSinceSpaceCheck = 0
            var freed: Int64 = 0
            while policy.isLowOnSpace(free: freeSpace(), freed: freed) {
                guard let victim = try lruVictim(&s, state: nil, protected: protected(s)) else {
                    s.eviction.refusal = policy.lowDiskRefusal
                    return false
                }
                freed += try table.discard(&s, victim)
                logger.debug("evicted \(victim): \(EvictionReason.lowDiskSpace.rawValue)")
            }
        }
        return true
    }

    /// Evicts before a new entry is added so the entry-count limit holds.
    func makeRoomForNewEntry(_ s: inout StoreState, excluding key: CacheKey) throws {
        guard let maxEntries = policy.maxEntries else { return }
        var protected = table.pinnedKeys(s)
        protected.insert(key)
        while table.usage(&s).entries >= maxEntries, let victim = try lruVictim(&s, state: nil, protected: protected) {
            try table.discard(&s, victim)
            logger.debug("evicted \(victim): \(EvictionReason.tooManyEntries.rawValue)")
        }
    }

    /// The least recently used entry in `state` (any state: nil) that is neither `protected` nor pinned by
    /// another process.
    private func lruVictim(_ s: inout StoreState, state: ResourceState?, protected: Set<CacheKey>) throws -> CacheKey? {
        try table.flushAccessTimes(&s)
        var passed = protected
        while true {
            let batch = try table.index.leastRecentlyUsed(state: state, excluding: passed, limit: 8)
            // Another process playing or preloading it has it pinned: pass it by.
            if let victim = batch.first(where: { !locks.isPinnedElsewhere($0) }) { return victim }
            guard batch.count == 8 else { return nil }
            passed.formUnion(batch)
        }
    }
}
