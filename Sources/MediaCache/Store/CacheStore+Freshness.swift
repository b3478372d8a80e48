import Foundation
import GRDB

extension CacheIndex {
    /// Until when the origin said generation `generation` of `key` may be used without asking it, or nil.
    func freshUntil(_ key: CacheKey, generation: Int64) -> Date? {
        let seconds = try? queue.read { db -> Double? in
            guard try db.tableExists("freshness") else { return nil }
            return try Double.fetchOne(
                db, sql: "SELECT until FROM freshness WHERE key = ? AND generation = ?",
                arguments: [key.hex, generation])
        }
        return seconds.flatMap { $0 }.map { Date(timeIntervalSince1970: $0) }
    }

    /// Records (or, with nil, forgets) until when generation `generation` of `key` is fresh.
    func setFreshUntil(_ key: CacheKey, generation: Int64, until: Date?) throws(CacheError) {
        do {
            try queue.write { db in
                if let until {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO freshness (key, generation, until) VALUES (?, ?, ?)",
                        arguments: [key.hex, generation, until.timeIntervalSince1970])
                } else {
                    try db.execute(sql: "DELETE FROM freshness WHERE key = ?", arguments: [key.hex])
                }
            }
        } catch { throw .index("cannot record how long \(key) stays fresh: \(error)") }
    }
}

extension CacheStore {
    /// Until when the cached version of `key` may be served without asking the origin (what its last answer
    /// said in `Cache-Control: max-age` or `Expires`), or nil when it must be checked.
    public func freshUntil(for key: CacheKey) -> Date? {
        guard let generation = info(for: key)?.generation else { return nil }
        return index.freshUntil(key, generation: generation)
    }

    /// Records that the origin's answer for generation `generation` of `key` stays fresh for `lifetime` seconds
    /// from now (nil: it gave none, so the copy is checked again next time), and returns until when. Another
    /// generation is left alone. An answer that only moves the time on by less than `freshnessSlack` is not
    /// written (every fetch brings an answer): what the index says is then at most that much early, never late.
    @discardableResult
    public func recordFreshness(key: CacheKey, generation: Int64, lifetime: TimeInterval?) -> Date? {
        let until = lifetime.map { now().addingTimeInterval($0) }
        let due = state.withLockedValue { s -> Bool in
            guard let last = s.recordedFreshness[key], last.generation == generation else { return true }
            switch (last.until, until) {
            case (nil, nil): return false
            case (let old?, let new?): return new.timeIntervalSince(old) >= Self.freshnessSlack
            default: return true
            }
        }
        guard due, !isReadOnly, info(for: key)?.generation == generation else { return until }
        do {
            try index.setFreshUntil(key, generation: generation, until: until)
            state.withLockedValue { $0.recordedFreshness[key] = (generation, until) }
        } catch {
            logger.warning("\(error)")
        }
        return until
    }

    /// How much later an answer must say a copy stays fresh before it is written down again: 1 minute.
    static let freshnessSlack: TimeInterval = 60
}
