import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SQLite index of resources and their recorded ranges (GRDB, WAL); only `CacheStore` talks to it.
final class CacheIndex: Sendable {
    let queue: DatabaseQueue
    let path: String
    /// How many eviction-candidate queries ran; lets tests check that writes under budget never scan for victims.
    let victimQueries = NIOLockedValueBox(0)

    /// Opens the database at `path` (`readOnly`: without changing anything), checks it and brings its schema up to date.
    init(path: String, readOnly: Bool) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        if readOnly {
            configuration.readonly = true
        } else {
            configuration.journalMode = .wal
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        let check = try queue.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check") }
        guard check == "ok" else { throw IndexCorruption(detail: check ?? "no answer") }
        if !readOnly { try Self.migrator.migrate(queue) }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "resource") { t in
                t.primaryKey("key", .text)
                t.column("url", .text).notNull()
                t.column("contentLength", .integer)
                t.column("contentType", .text)
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("createdAt", .double).notNull()
                t.column("lastAccess", .double).notNull()
                t.column("state", .text).notNull()
                t.column("generation", .integer).notNull().defaults(to: 0)
                t.column("cachedBytes", .integer).notNull().defaults(to: 0)
                t.column("servedFromCache", .integer).notNull().defaults(to: 0)
                t.column("fetchedFromOrigin", .integer).notNull().defaults(to: 0)
            }
            try db.create(index: "resource_state_access", on: "resource", columns: ["state", "lastAccess"])
            try db.create(index: "resource_access", on: "resource", columns: ["lastAccess"])
            try db.create(table: "range") { t in
                t.column("key", .text).notNull().references("resource", onDelete: .cascade)
                t.column("start", .integer).notNull()
                t.column("end", .integer).notNull()
                t.primaryKey(["key", "start"])
            }
            try db.create(table: "total") { t in
                t.primaryKey("name", .text)
                t.column("value", .integer).notNull()
            }
        }
        migrator.registerMigration("v2") { db in
            // Resources given up on (no length, larger than the budget): fetched straight through, not again.
            try db.create(table: "uncacheable") { t in
                t.primaryKey("key", .text)
                t.column("reason", .text).notNull()
            }
        }
        migrator.registerMigration("v3") { db in
            // CRC-32C of each cached block (BlockChecksums' encoding), written with the ranges they cover.
            try db.create(table: "blockChecksum") { t in
                t.primaryKey("key", .text)
                t.column("sums", .blob).notNull()
            }
        }
        return migrator
    }

    // MARK: - Reading

    /// Every resource with its ranges. Rows whose values cannot be decoded (an index edited or damaged by hand
    /// that still passes SQLite's check) are left out, so reconciling drops them and their files.
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

    // MARK: - Writing

    /// Every resource's block checksums (empty for an index that has none yet, e.g. opened read-only before its
    /// schema was brought up to date).
    func checksums() -> [CacheKey: BlockChecksums] {
        let rows = (try? queue.read { db in try Row.fetchAll(db, sql: "SELECT key, sums FROM blockChecksum") }) ?? []
        var result: [CacheKey: BlockChecksums] = [:]
        for row in rows {
            guard let hex: String = try? row.decode(forColumn: "key"), let key = CacheKey(hex: hex),
                let blob: Data = try? row.decode(forColumn: "sums")
            else { continue }
            result[key] = BlockChecksums(blob: [UInt8](blob))
        }
        return result
    }

    /// Inserts or replaces a resource row and its ranges in one transaction, with its block checksums when given.
    func save(_ info: ResourceInfo, checksums: BlockChecksums? = nil) throws(CacheError) {
        do {
            try queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO resource (key, url, contentLength, contentType, etag, lastModified, createdAt,
                            lastAccess, state, generation, cachedBytes, servedFromCache, fetchedFromOrigin)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(key) DO UPDATE SET url = excluded.url, contentLength = excluded.contentLength,
                            contentType = excluded.contentType, etag = excluded.etag,
                            lastModified = excluded.lastModified, createdAt = excluded.createdAt,
                            lastAccess = excluded.lastAccess, state = excluded.state,
                            generation = excluded.generation, cachedBytes = excluded.cachedBytes,
                            servedFromCache = excluded.servedFromCache, fetchedFromOrigin = excluded.fetchedFromOrigin
                        """,
                    arguments: [
                        info.key.hex, info.metadata.url, info.metadata.contentLength, info.metadata.contentType,
                        info.metadata.etag, info.metadata.lastModified, info.createdAt.timeIntervalSince1970,
                        info.lastAccess.timeIntervalSince1970, info.state.rawValue, info.generation, info.cachedBytes,
                        info.servedFromCache, info.fetchedFromOrigin,
                    ])
                try db.execute(sql: "DELETE FROM range WHERE key = ?", arguments: [info.key.hex])
                for range in info.ranges {
                    try db.execute(
                        sql: "INSERT INTO range (key, start, \"end\") VALUES (?, ?, ?)",
                        arguments: [info.key.hex, range.lowerBound, range.upperBound])
                }
                if let checksums {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO blockChecksum (key, sums) VALUES (?, ?)",
                        arguments: [info.key.hex, Data(checksums.blob)])
                }
            }
        } catch {
            throw .index("cannot record resource \(info.key): \(error)")
        }
    }

    /// Updates last-access times, all in one transaction.
    func touch(_ times: [(CacheKey, Date)]) throws(CacheError) {
        guard !times.isEmpty else { return }
        do {
            try queue.write { db in
                for (key, date) in times {
                    try db.execute(
                        sql: "UPDATE resource SET lastAccess = ? WHERE key = ?",
                        arguments: [date.timeIntervalSince1970, key.hex])
                }
            }
        } catch { throw .index("cannot update access times: \(error)") }
    }

    /// Deletes resource rows (their ranges cascade).
    func delete(_ keys: [CacheKey]) throws(CacheError) {
        guard !keys.isEmpty else { return }
        do {
            try queue.write { db in
                for key in keys {
                    try db.execute(sql: "DELETE FROM range WHERE key = ?", arguments: [key.hex])
                    try db.execute(sql: "DELETE FROM blockChecksum WHERE key = ?", arguments: [key.hex])
                    try db.execute(sql: "DELETE FROM resource WHERE key = ?", arguments: [key.hex])
                }
            }
        } catch { throw .index("cannot delete entries: \(error)") }
    }

    /// Resources given up on, with the reason.
    func uncacheable() throws(CacheError) -> [CacheKey: String] {
        do {
            return try queue.read { db in
                guard try db.tableExists("uncacheable") else { return [:] }
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

    /// Adds to the cumulative totals (per-resource counters are saved with the resource row).
    func addTotals(origin: Int64, cacheHit: Int64) throws(CacheError) {
        guard origin != 0 || cacheHit != 0 else { return }
        do {
            try queue.write { db in
                for (name, value) in [("originBytes", origin), ("cacheHitBytes", cacheHit)] where value != 0 {
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
