import Foundation

/// What a player or a status pane reads of the cache through the loader: the cache as this process knows it, for
/// readers that look often (at every frame) and must not query the index each time. This process's own writes
/// show at once; another process's within `viewAge`.
extension MediaLoader {
    /// How long a frequent reader may go without noticing another process's change to the index: 50 ms.
    public static let viewAge: UInt64 = 50_000_000

    /// What the cache holds of `key` (length, validators, ranges, state, generation); nil when nothing.
    public func cached(_ key: CacheKey) -> ResourceInfo? { store.info(for: key, noticingChangesWithin: Self.viewAge) }

    /// The byte ranges of `key` in the cache.
    public func cachedRanges(_ key: CacheKey) -> ByteRangeSet {
        store.availableRanges(for: key, noticingChangesWithin: Self.viewAge)
    }

    /// How many changes the cache has seen (this process's at once, another process's once noticed), for
    /// `waitForChange(after:)`.
    public var cacheVersion: UInt64 { store.changes.version }

    /// Returns once the cache changed after `version` (a `cacheVersion` read before the reader last looked): bytes
    /// written, an entry recorded, replaced or removed, here or in another process (noticed within `viewAge`);
    /// or when the task is cancelled. Readers wait on this instead of looking again at an interval.
    public func waitForChange(after version: UInt64) async { await watcher.wait(after: version) }

    /// The most the cache keeps, in bytes (its configuration: no lock taken, for a screen's every frame).
    public var cacheByteLimit: Int64 { store.configuration.totalByteLimit }

    /// Bytes the cache's data files hold now (taken under the store's lock: not for a screen's every frame).
    public var cacheBytesStored: Int64 { store.storedBytes }
}
