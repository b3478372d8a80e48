import Foundation
import GRDB

extension CacheIndex {
    /// The `playCount` table earlier versions kept in the index (play counts by key), if there is one: read so a
    /// newer keeper of those counts can take them over; never written.
    func legacyPlayCounts() -> [CacheKey: Int] {
        let rows = try? queue.read { db -> [Row] in
            guard try CacheIndex.hasTable(db, "playCount") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT key, count FROM playCount")
        }
        var result: [CacheKey: Int] = [:]
        for row in rows ?? [] {
            guard let hex: String = try? row.decode(forColumn: "key"), let key = CacheKey(hex: hex),
                let count: Int = try? row.decode(forColumn: "count"), count > 0
            else { continue }
            result[key] = count
        }
        return result
    }
}

extension CacheStore {
    /// Play counts earlier versions kept in this cache's index (a table no longer written), for the keeper of play
    /// counts to take over once.
    public func legacyPlayCounts() -> [CacheKey: Int] { index.legacyPlayCounts() }
}
