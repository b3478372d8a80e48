import Foundation

/// What the table keeps about a key besides its bytes: resources given up on (they stream through, in this run and
/// the next ones, until a length that fits the budget earns them another try) and pins (keys eviction passes by,
/// here and in other processes). The one home of both; the store's face and the evictor ask here.
extension EntryTable {
    /// Why `key` was given up on, or nil.
    func givenUpReason(_ s: StoreState, _ key: CacheKey) -> String? { s.resources[key]?.givenUp }

    /// Gives up on `key` for `reason`, remembered in the index (written only when the reason is new); `recording`
    /// false keeps it in this process only.
    func giveUp(_ s: inout StoreState, _ key: CacheKey, reason: String, recording: Bool = true) throws {
        guard s.resources[key]?.givenUp != reason else { return }
        s.update(key) { $0.givenUp = reason }
        if recording { try index.setUncacheable(key, reason: reason) }
    }

    /// Takes `key` back from the given-up list; true when it was on it.
    @discardableResult
    func takeBack(_ s: inout StoreState, _ key: CacheKey) throws -> Bool {
        guard s.resources[key]?.givenUp != nil else { return false }
        s.update(key) { $0.givenUp = nil }
        try index.setUncacheable(key, reason: nil)
        return true
    }

    /// Forgets every given-up key in memory (the index's list is emptied with everything else).
    func forgetGivenUp(_ s: inout StoreState) {
        for key in Array(s.resources.keys) { s.update(key) { $0.givenUp = nil } }
    }

    /// Adds a pin on `key` (pins nest); the first one shows to other processes through `locks`.
    func pin(_ s: inout StoreState, _ key: CacheKey, locks: SharedLocks) {
        let count = s.update(key) { held -> Int in
            held.pins += 1
            return held.pins
        }
        if count == 1 { locks.setPinned(key, true) }
    }

    /// Releases one pin on `key`.
    func unpin(_ s: inout StoreState, _ key: CacheKey, locks: SharedLocks) {
        let count = s.update(key) { held -> Int in
            held.pins = Swift.max(0, held.pins - 1)
            return held.pins
        }
        if count == 0 { locks.setPinned(key, false) }
    }

    /// True while `key` is pinned in this process.
    func isPinned(_ s: StoreState, _ key: CacheKey) -> Bool { (s.resources[key]?.pins ?? 0) > 0 }

    /// Every key pinned in this process.
    func pinnedKeys(_ s: StoreState) -> Set<CacheKey> { Set(s.resources.filter { $0.value.pins > 0 }.keys) }
}
