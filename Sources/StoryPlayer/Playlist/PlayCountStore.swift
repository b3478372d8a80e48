import Foundation
import GRDB
import MediaCache

/// How often each story was watched, across runs: a small SQLite file (`plays.sqlite`) beside the cache index,
/// so the counts outlive the eviction of a story's bytes and `maxViews` holds between runs.
///
/// A story's count is kept under `StorySession.playKey(_:)` (its id and URL text), with the cache key of the
/// resource it plays, so a cache listing can show how often each cached resource was watched.
public final class PlayCountStore: Sendable {
    /// The database file; nil for counts kept in memory only.
    public let path: String?
    private let queue: DatabaseQueue

    /// The file play counts are kept in, inside a cache directory.
    public static let fileName = "plays.sqlite"

    /// Opens (creating if needed) the play counts kept in `directory`. When the file is created, the counts
    /// `earlier` gives (what earlier versions kept in the cache index: `CacheStore.legacyPlayCounts`) are taken
    /// over once; this type never opens the cache's own database.
    public convenience init(directory: URL, earlier: () -> [CacheKey: Int] = { [:] }) throws {
        let path = directory.appendingPathComponent(Self.fileName).path
        let isNew = !FileManager.default.fileExists(atPath: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.journalMode = .wal
        do {
            try self.init(queue: DatabaseQueue(path: path, configuration: configuration), path: path)
        } catch let error as PlayCountError {
            throw error
        } catch {
            throw PlayCountError(message: "cannot open the play counts at \(path): \(Self.describe(error))")
        }
        if isNew { takeOver(earlier()) }
    }

    /// Counts kept in memory only (nothing persists past the process).
    public static func inMemory() throws -> PlayCountStore {
        do {
            return try PlayCountStore(queue: DatabaseQueue(), path: nil)
        } catch let error as PlayCountError {
            throw error
        } catch {
            throw PlayCountError(message: "cannot create in-memory play counts: \(describe(error))")
        }
    }

    private init(queue: DatabaseQueue, path: String?) throws {
        self.queue = queue
        self.path = path
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "play") { t in
                t.primaryKey("key", .text)
                t.column("count", .integer).notNull()
                // The cache key of the resource the story plays (nil for counts taken over from older versions).
                t.column("resource", .text)
            }
            try db.create(index: "play_resource", on: "play", columns: ["resource"])
        }
        do {
            try migrator.migrate(queue)
        } catch {
            throw PlayCountError(message: "cannot prepare the play counts at \(path ?? "memory"): \(Self.describe(error))")
        }
    }

    /// Adds one play of `key` (a story playing `resource`) and returns the new count.
    @discardableResult
    public func record(_ key: CacheKey, resource: CacheKey?) throws -> Int {
        do {
            return try queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO play (key, count, resource) VALUES (?, 1, ?)
                        ON CONFLICT(key) DO UPDATE SET count = count + 1, resource = coalesce(excluded.resource, resource)
                        """, arguments: [key.hex, resource?.hex])
                return try Int.fetchOne(db, sql: "SELECT count FROM play WHERE key = ?", arguments: [key.hex]) ?? 1
            }
        } catch {
            throw PlayCountError(message: "cannot record a play: \(Self.describe(error))")
        }
    }

    /// The count of `key` (0 when never played).
    public func count(_ key: CacheKey) throws -> Int {
        try counts()[key] ?? 0
    }

    /// Every count by play key.
    public func counts() throws -> [CacheKey: Int] {
        try fetch("SELECT key, count FROM play")
    }

    /// Plays by the resource watched (the sum over the stories that play it).
    public func countsByResource() throws -> [CacheKey: Int] {
        try fetch("SELECT resource AS key, sum(count) AS count FROM play WHERE resource IS NOT NULL GROUP BY resource")
    }

    /// Forgets every count.
    public func removeAll() throws {
        do {
            try queue.write { db in try db.execute(sql: "DELETE FROM play") }
        } catch {
            throw PlayCountError(message: "cannot clear the play counts: \(Self.describe(error))")
        }
    }

    private func fetch(_ sql: String) throws -> [CacheKey: Int] {
        do {
            return try queue.read { db in
                var result: [CacheKey: Int] = [:]
                for row in try Row.fetchAll(db, sql: sql) {
                    guard let hex: String = try? row.decode(forColumn: "key"), let key = CacheKey(hex: hex),
                        let count: Int = try? row.decode(forColumn: "count")
                    else { continue }
                    result[key] = count
                }
                return result
            }
        } catch {
            throw PlayCountError(message: "cannot read the play counts: \(Self.describe(error))")
        }
    }

    /// Records `counts` (from an earlier version) for keys not counted yet.
    private func takeOver(_ counts: [CacheKey: Int]) {
        guard !counts.isEmpty else { return }
        try? queue.write { db in
            for (key, count) in counts where count > 0 {
                try db.execute(sql: "INSERT OR IGNORE INTO play (key, count) VALUES (?, ?)", arguments: [key.hex, count])
            }
        }
    }

    private static func describe(_ error: any Error) -> String {
        guard let database = error as? DatabaseError else { return "\(error)" }
        switch database.resultCode {
        case .SQLITE_FULL: return "the disk is full"
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN: return "the file cannot be written here"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return "the file is damaged (remove it to start counting again)"
        default: return database.message ?? "\(database)"
        }
    }
}

/// Play counts could not be read or written.
public struct PlayCountError: Error, CustomStringConvertible, Equatable {
    /// What happened and what to do.
    public let message: String
    public var description: String { message }
}
