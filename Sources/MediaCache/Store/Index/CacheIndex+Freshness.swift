import Foundation
import GRDB

extension CacheIndex {
    /// What the index holds of the origin's last answer for generation `generation` of `key`: until when it
    /// said the copy may be used without asking (nil: it did not say), and when it answered.
    func freshness(_ key: CacheKey, generation: Int64) -> (until: Date?, checked: Date?) {
        let row = try? queue.read { db -> Row? in
            guard try CacheIndex.hasTable(db, "freshness") else { return nil }
            return try Row.fetchOne(
                db, sql: "SELECT until, checked FROM freshness WHERE key = ? AND generation = ?",
                arguments: [key.hex, generation])
        }
        guard let row = row ?? nil else { return (nil, nil) }
        let until = (row["until"] as Double?).map { Date(timeIntervalSince1970: $0) }
        let checked = (row["checked"] as Double?).map { Date(timeIntervalSince1970: $0) }
        if let until, let checked, until <= checked { return (nil, checked) }
        return (until, checked)
    }

    /// Records that the origin answered for generation `generation` of `key` at `checked`, saying the copy is
    /// fresh until `until` (nil: it said nothing, so the copy is checked again next time).
    func setFreshness(_ key: CacheKey, generation: Int64, until: Date?, checked: Date) throws(CacheError) {
        do {
            try queue.write { db in
                try db.execute(
                    sql: "INSERT OR REPLACE INTO freshness (key, generation, until, checked) VALUES (?, ?, ?, ?)",
                    arguments: [
                        key.hex, generation, (until ?? checked).timeIntervalSince1970, checked.timeIntervalSince1970,
                    ])
            }
        } catch { throw .index("cannot record how long \(key) stays fresh: \(error)") }
    }
}
