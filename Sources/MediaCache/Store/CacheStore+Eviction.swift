import Foundation

extension CacheStore {
    /// Keys that are never evicted while pinned (the playing and the preloading items). Pins nest.
    /// Other processes see the pin too: their eviction passes the key by.
    public func pin(_ key: CacheKey) {
        table.lockedAsSeen { s in table.pin(&s, key, locks: locks) }
    }

    /// Releases one `pin`.
    public func unpin(_ key: CacheKey) {
        table.lockedAsSeen { s in table.unpin(&s, key, locks: locks) }
    }

    /// Evicts expired entries, then least recently accessed ones until every budget holds. Returns what went, in
    /// order. Runs at open, and after commits when a budget is exceeded or a minute has passed.
    @discardableResult
    public func enforceBudgets() throws -> [(CacheKey, EvictionReason)] {
        try table.locked { s in try evictor.enforceBudgets(&s, excluding: nil, at: now()) }
    }
}
