import Foundation
import GRDB

extension CacheIndex {
    // MARK: - Reading

    /// A number that changes whenever another connection (another process, or another store on the same
    /// directory) commits a change; this connection's own commits leave it as it is.
    func dataVersion() -> Int64 {
        (try? queue.inDatabase { db in try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) }) ?? 0
    }

    /// The resource recorded under `key`, or nil. A row whose values cannot be decoded (an index edited or damaged
    /// by hand that still passes SQLite's check) reads as absent.
    func resource(_ key: CacheKey) throws(CacheError) -> IndexedResource? {
        do {
            return try queue.read { db in try Self.resource(key, in: db) }
        } catch {
            throw .index("cannot read \(key): \(error)")
        }
    }

    static func resource(_ key: CacheKey, in db: Database) throws -> IndexedResource? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM resource WHERE key = ?", arguments: [key.hex]) else {
            return nil
        }
        var ranges: [ByteRange] = []
        for range in try Row.fetchAll(
            db, sql: "SELECT start, \"end\" FROM range WHERE key = ? ORDER BY start", arguments: [key.hex])
        {
            guard let start: Int64 = try? range.decode(forColumn: "start"),
                let end: Int64 = try? range.decode(forColumn: "end"), start >= 0, start < end
            else { continue }
            ranges.append(start..<end)
        }
        guard let info = try? Self.info(from: row, ranges: ByteRangeSet(ranges)) else { return nil }
        var checksums = BlockChecksums()
        if try CacheIndex.hasTable(db, "blockChecksum"),
            let blob = try Data.fetchOne(db, sql: "SELECT sums FROM blockChecksum WHERE key = ?", arguments: [key.hex])
        {
            checksums = BlockChecksums(blob: [UInt8](blob))
            checksums.keepOnly(coveredBy: info.ranges)
        }
        return IndexedResource(info: info, checksums: checksums)
    }

    /// Every resource with its ranges (for listings and the occasional sweep; never on a hot path).
    func loadAll() throws(CacheError) -> [ResourceInfo] {
        do {
            return try queue.read { db in
                var ranges: [String: [ByteRange]] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT key, start, \"end\" FROM range") {
                    guard let key: String = try? row.decode(forColumn: "key"),
                        let start: Int64 = try? row.decode(forColumn: "start"),
                        let end: Int64 = try? row.decode(forColumn: "end")
                    else { continue }
                    if start >= 0, start < end { ranges[key, default: []].append(start..<end) }
                }
                return try Row.fetchAll(db, sql: "SELECT * FROM resource").compactMap { row in
                    guard let key: String = try? row.decode(forColumn: "key") else { return nil }
                    return try? Self.info(from: row, ranges: ByteRangeSet(ranges[key] ?? []))
                }
            }
        } catch {
            throw .index("cannot read: \(error)")
        }
    }

    /// Each recorded key with its generation and state (the sweep's view of which files should exist).
    func keysGenerationsAndStates() throws(CacheError) -> [CacheKey: (Int64, ResourceState)] {
        do {
            return try queue.read { db in
                var result: [CacheKey: (Int64, ResourceState)] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT key, generation, state FROM resource") {
                    guard let hex: String = try? row.decode(forColumn: "key"), let key = CacheKey(hex: hex),
                        let generation: Int64 = try? row.decode(forColumn: "generation")
                    else { continue }
                    let state: String? = try? row.decode(forColumn: "state")
                    result[key] = (generation, state.flatMap(ResourceState.init(rawValue:)) ?? .partial)
                }
                return result
            }
        } catch {
            throw .index("cannot list entries: \(error)")
        }
    }

    private static func info(from row: Row, ranges: ByteRangeSet) throws -> ResourceInfo? {
        guard let key = CacheKey(hex: try row.decode(forColumn: "key")) else { return nil }
        let length: Int64? = try row.decode(forColumn: "contentLength")
        if let length, length < 0 { return nil }
        return ResourceInfo(
            key: key,
            metadata: ResourceMetadata(
                url: try row.decode(forColumn: "url"), contentLength: length,
                contentType: try row.decode(forColumn: "contentType"), etag: try row.decode(forColumn: "etag"),
                lastModified: try row.decode(forColumn: "lastModified")),
            ranges: ranges,
            state: ResourceState(rawValue: try row.decode(forColumn: "state")) ?? .partial,
            createdAt: Date(timeIntervalSince1970: try row.decode(forColumn: "createdAt")),
            lastAccess: Date(timeIntervalSince1970: try row.decode(forColumn: "lastAccess")),
            generation: try row.decode(forColumn: "generation"),
            servedFromCache: try row.decode(forColumn: "servedFromCache"),
            fetchedFromOrigin: try row.decode(forColumn: "fetchedFromOrigin"))
    }

    /// Recorded bytes and entries per state: one small read, whatever the number of entries.
    func usage() throws(CacheError) -> CacheUsage {
        do {
            return try queue.read { db in
                var usage = CacheUsage()
                let sql =
                    try CacheIndex.hasTable(db, "usage")
                    ? "SELECT state, bytes, entries FROM usage"
                    : "SELECT state, SUM(cachedBytes) AS bytes, COUNT(*) AS entries FROM resource GROUP BY state"
                for row in try Row.fetchAll(db, sql: sql) {
                    let state: String? = try? row.decode(forColumn: "state")
                    let bytes: Int64 = (try? row.decode(forColumn: "bytes")) ?? 0
                    let entries: Int = (try? row.decode(forColumn: "entries")) ?? 0
                    if state == ResourceState.complete.rawValue {
                        (usage.completeBytes, usage.completeEntries) = (bytes, entries)
                    } else {
                        usage.partialBytes += bytes
                        usage.partialEntries += entries
                    }
                }
                return usage
            }
        } catch {
            throw .index("cannot read the cache's size: \(error)")
        }
    }

    /// Up to `limit` keys, least recently accessed first, optionally of one state and older than `before`.
    func leastRecentlyUsed(state: ResourceState?, before: Date? = nil, excluding: Set<CacheKey>, limit: Int)
        throws(CacheError) -> [CacheKey]
    {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let state {
            conditions.append("state = ?")
            arguments.append(state.rawValue)
        }
        if let before {
            conditions.append("lastAccess < ?")
            arguments.append(before.timeIntervalSince1970)
        }
        if !excluding.isEmpty {
            conditions.append("key NOT IN (\(Array(repeating: "?", count: excluding.count).joined(separator: ",")))")
            arguments.append(contentsOf: excluding.map(\.hex))
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT key FROM resource \(whereClause) ORDER BY lastAccess, key LIMIT \(limit)"
        victimQueries.withLockedValue { $0 += 1 }
        do {
            return try queue.read { db in
                try String.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).compactMap {
                    CacheKey(hex: $0)
                }
            }
        } catch {
            throw .index("cannot list entries for eviction: \(error)")
        }
    }

    /// The cumulative totals.
    func totals() throws(CacheError) -> CacheTotals {
        do {
            return try queue.read { db in
                var totals = CacheTotals()
                for row in try Row.fetchAll(db, sql: "SELECT name, value FROM total") {
                    guard let name: String = try? row.decode(forColumn: "name"),
                        let value: Int64 = try? row.decode(forColumn: "value")
                    else { continue }
                    switch name {
                    case "originBytes": totals.originBytes = value
                    case "cacheHitBytes": totals.cacheHitBytes = value
                    default: break
                    }
                }
                return totals
            }
        } catch { throw .index("cannot read totals: \(error)") }
    }

    /// A value kept in the `meta` table (nil when absent, or for an index from before it existed).
    func meta(_ name: String) -> Int64? {
        try? queue.read { db in
            guard try CacheIndex.hasTable(db, "meta") else { return nil }
            return try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name])
        }
    }

    /// Sets a `meta` value.
    func setMeta(_ name: String, _ value: Int64) throws(CacheError) {
        do {
            try queue.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", arguments: [name, value])
            }
        } catch { throw .index("cannot record \(name): \(error)") }
    }

    // MARK: - Writing

    /// Reads `key`'s resource, lets `body` change it (nil: delete it), and writes what changed, all in one write
    /// transaction: no other process changes the entry between the read and the write, so a process always
    /// builds on what the others recorded (it adds its ranges to theirs, it never writes back a stale copy).
    /// `body` may move files: the transaction orders those moves with every other process's.
    func modify<T>(_ key: CacheKey, _ body: (inout IndexedResource?, IndexTransaction) throws -> T) throws -> T {
        do {
            return try queue.write { db in
                let before = try Self.resource(key, in: db)
                var after = before
                let result = try body(&after, IndexTransaction(db: db))
                if after != before {
                    if let after { try Self.save(after, previous: before, in: db) } else { try Self.delete(key, in: db) }
                }
                return result
            }
        } catch let error as CacheError {
            throw error
        } catch {
            throw CacheError.index("cannot record resource \(key): \(error)")
        }
    }

    private static func save(_ resource: IndexedResource, previous: IndexedResource?, in db: Database) throws {
        let info = resource.info
        try db.execute(
            sql: """
                INSERT INTO resource (key, url, contentLength, contentType, etag, lastModified, createdAt,
                    lastAccess, state, generation, cachedBytes, servedFromCache, fetchedFromOrigin)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET url = excluded.url, contentLength = excluded.contentLength,
                    contentType = excluded.contentType, etag = excluded.etag,
                    lastModified = excluded.lastModified, createdAt = excluded.createdAt,
                    lastAccess = MAX(lastAccess, excluded.lastAccess), state = excluded.state,
                    generation = excluded.generation, cachedBytes = excluded.cachedBytes,
                    servedFromCache = excluded.servedFromCache, fetchedFromOrigin = excluded.fetchedFromOrigin
                """,
            arguments: [
                info.key.hex, info.metadata.url, info.metadata.contentLength, info.metadata.contentType,
                info.metadata.etag, info.metadata.lastModified, info.createdAt.timeIntervalSince1970,
                info.lastAccess.timeIntervalSince1970, info.state.rawValue, info.generation, info.cachedBytes,
                info.servedFromCache, info.fetchedFromOrigin,
            ])
        if info.ranges != previous?.info.ranges {
            try db.execute(sql: "DELETE FROM range WHERE key = ?", arguments: [info.key.hex])
            for range in info.ranges {
                try db.execute(
                    sql: "INSERT INTO range (key, start, \"end\") VALUES (?, ?, ?)",
                    arguments: [info.key.hex, range.lowerBound, range.upperBound])
            }
        }
        if resource.checksums != previous?.checksums {
            try db.execute(
                sql: "INSERT OR REPLACE INTO blockChecksum (key, sums) VALUES (?, ?)",
                arguments: [info.key.hex, Data(resource.checksums.blob)])
        }
    }

    private static func delete(_ key: CacheKey, in db: Database) throws {
        try db.execute(sql: "DELETE FROM range WHERE key = ?", arguments: [key.hex])
        try db.execute(sql: "DELETE FROM blockChecksum WHERE key = ?", arguments: [key.hex])
        try db.execute(sql: "DELETE FROM resource WHERE key = ?", arguments: [key.hex])
    }

    /// Moves last-access times forward (never back: another process may have read the entry later), in one
    /// transaction.
    func touch(_ times: [(CacheKey, Date)]) throws(CacheError) {
        guard !times.isEmpty else { return }
        do {
            try queue.write { db in
                for (key, date) in times {
                    try db.execute(
                        sql: "UPDATE resource SET lastAccess = MAX(lastAccess, ?) WHERE key = ?",
                        arguments: [date.timeIntervalSince1970, key.hex])
                }
            }
        } catch { throw .index("cannot update access times: \(error)") }
    }

    /// Deletes resource rows with their ranges and checksums.
    func delete(_ keys: [CacheKey]) throws(CacheError) {
        guard !keys.isEmpty else { return }
        do {
            try queue.write { db in
                for key in keys { try Self.delete(key, in: db) }
            }
        } catch { throw .index("cannot delete entries: \(error)") }
    }

    /// Resources given up on, with the reason.
    func uncacheable() throws(CacheError) -> [CacheKey: String] {
        do {
            return try queue.read { db in
                guard try CacheIndex.hasTable(db, "uncacheable") else { return [:] }
                var result: [CacheKey: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT key, reason FROM uncacheable") {
                    guard let hex: String = try? row.decode(forColumn: "key"), let key = CacheKey(hex: hex),
                        let reason: String = try? row.decode(forColumn: "reason")
                    else { continue }
                    result[key] = reason
                }
                return result
            }
        } catch { throw .index("cannot read uncacheable resources: \(error)") }
    }

    /// Records (reason non-nil) or forgets that a resource is not cached.
    func setUncacheable(_ key: CacheKey, reason: String?) throws(CacheError) {
        do {
            try queue.write { db in
                if let reason {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO uncacheable (key, reason) VALUES (?, ?)", arguments: [key.hex, reason])
                } else {
                    try db.execute(sql: "DELETE FROM uncacheable WHERE key = ?", arguments: [key.hex])
                }
            }
        } catch { throw .index("cannot record an uncacheable resource: \(error)") }
    }

    /// Adds traffic to the cumulative totals and to each resource's own counters, in one transaction (additions,
    /// so several processes' counts sum up).
    func addTraffic(_ traffic: [CacheKey?: (origin: Int64, hit: Int64)]) throws(CacheError) {
        let origin = traffic.values.reduce(Int64(0)) { $0 + $1.origin }
        let hit = traffic.values.reduce(Int64(0)) { $0 + $1.hit }
        guard origin != 0 || hit != 0 else { return }
        do {
            try queue.write { db in
                for (key, counts) in traffic {
                    guard let key else { continue }
                    try db.execute(
                        sql: """
                            UPDATE resource SET fetchedFromOrigin = fetchedFromOrigin + ?,
                                servedFromCache = servedFromCache + ? WHERE key = ?
                            """, arguments: [counts.origin, counts.hit, key.hex])
                }
                for (name, value) in [("originBytes", origin), ("cacheHitBytes", hit)] where value != 0 {
                    try db.execute(
                        sql: """
                            INSERT INTO total (name, value) VALUES (?, ?)
                            ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
                            """, arguments: [name, value])
                }
            }
        } catch { throw .index("cannot record traffic: \(error)") }
    }

    /// Removes every resource (cumulative totals are kept).
    func deleteEverything() throws(CacheError) {
        do {
            try queue.write { db in
                try db.execute(sql: "DELETE FROM range")
                try db.execute(sql: "DELETE FROM resource")
                try db.execute(sql: "DELETE FROM uncacheable")
                try db.execute(sql: "DELETE FROM blockChecksum")
            }
        } catch { throw .index("cannot clear: \(error)") }
    }
}
