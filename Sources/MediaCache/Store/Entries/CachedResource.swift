import Foundation

/// One key as this process holds it, in one place (as Media3's `CachedContent`): its entry (what the index records
/// plus the bytes written here and not recorded yet, with the blocks already checked), its open data file, the pins
/// that keep eviction away from it, and why it was given up on. A key can be pinned or given up on with nothing
/// cached; it is dropped from memory once nothing is left of it.
struct CachedResource {
    /// The entry, or nil when nothing of it is in memory (not cached, or not read from the index yet).
    var entry: StoreEntry?
    /// The entry's data file while open.
    var file: DataFile?
    /// Pins held in this process (they nest); the first shows to other processes.
    var pins = 0
    /// Why it streams through uncached, when given up on.
    var givenUp: String?

    /// True when there is nothing left to keep.
    var isUnused: Bool { entry == nil && file == nil && pins == 0 && givenUp == nil }
}

extension StoreState {
    /// Runs `body` on what this process holds of `key` (in place), dropping the key once nothing is left of it.
    @discardableResult
    mutating func update<T>(_ key: CacheKey, _ body: (inout CachedResource) throws -> T) rethrows -> T {
        let result = try body(&resources[key, default: CachedResource()])
        if resources[key]?.isUnused == true { resources.removeValue(forKey: key) }
        return result
    }

    /// `key`'s entry in memory, or nil.
    func entry(of key: CacheKey) -> StoreEntry? { resources[key]?.entry }

    /// How many data files are open.
    var openFileCount: Int { resources.values.reduce(0) { $0 + ($1.file == nil ? 0 : 1) } }

    /// Closes every open data file.
    mutating func closeFiles() {
        for key in Array(resources.keys) { update(key) { $0.file = nil } }
    }
}
