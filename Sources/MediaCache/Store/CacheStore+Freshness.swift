import Foundation

extension CacheStore {
    /// Until when the cached version of `key` may be served without asking the origin (what its last answer
    /// said in `Cache-Control: max-age` or `Expires`), or nil when it must be checked.
    public func freshUntil(for key: CacheKey) -> Date? {
        guard let generation = info(for: key)?.generation else { return nil }
        return index.freshness(key, generation: generation).until
    }

    /// When the origin last confirmed the cached version of `key` (its answer to a fetch or a check, written
    /// down at most `freshnessSlack` late, so an age computed from it is never understated), or nil.
    public func lastConfirmed(for key: CacheKey) -> Date? { freshness(for: key).checked }

    /// `freshUntil` and `lastConfirmed` in one look.
    func freshness(for key: CacheKey) -> (until: Date?, checked: Date?) {
        guard let generation = info(for: key)?.generation else { return (nil, nil) }
        return index.freshness(key, generation: generation)
    }

    /// Records that the origin's answer for generation `generation` of `key` stays fresh for `lifetime` seconds
    /// from now (nil: it gave none, so the copy is checked again next time), and returns until when. Another
    /// generation is left alone. An answer that only moves the times on by less than `freshnessSlack` is not
    /// written (every fetch brings an answer): what the index says is then at most that much early, never late.
    @discardableResult
    public func recordFreshness(key: CacheKey, generation: Int64, lifetime: TimeInterval?) -> Date? {
        let checked = now()
        let until = lifetime.map { checked.addingTimeInterval($0) }
        let due = table.lockedAsSeen { s -> Bool in
            guard let last = s.recordedFreshness.last[key], last.generation == generation,
                checked.timeIntervalSince(last.checked) < Self.freshnessSlack
            else { return true }
            switch (last.until, until) {
            case (nil, nil): return false
            case (let old?, let new?): return new.timeIntervalSince(old) >= Self.freshnessSlack
            default: return true
            }
        }
        guard due, !isReadOnly, info(for: key)?.generation == generation else { return until }
        do {
            try index.setFreshness(key, generation: generation, until: until, checked: checked)
            table.lockedAsSeen { s in
                s.recordedFreshness.note(key, generation: generation, until: until, checked: checked)
            }
        } catch {
            logger.warning("\(error)")
        }
        return until
    }

    /// How much later an answer must say a copy stays fresh before it is written down again: 1 minute.
    static let freshnessSlack: TimeInterval = 60
}

/// What this process last wrote down of each resource's freshness, so an answer that changes nothing is not
/// written again (each fetch brings one).
struct FreshnessMemo: Sendable {
    fileprivate(set) var last: [CacheKey: (generation: Int64, until: Date?, checked: Date)] = [:]

    /// Notes what was written down for `key`.
    fileprivate mutating func note(_ key: CacheKey, generation: Int64, until: Date?, checked: Date) {
        last[key] = (generation, until, checked)
    }
}
