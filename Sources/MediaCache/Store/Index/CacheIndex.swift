import CSQLiteOptions
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

    /// Opens the database at `path` (`readOnly`: without changing anything) and brings its schema up to date.
    /// `thorough` runs SQLite's check of every page (after a crash: its cost grows with the index); otherwise one
    /// read of the schema tells a file that is not an index at all.
    init(path: String, readOnly: Bool, thorough: Bool = false) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        if readOnly {
            configuration.readonly = true
        } else {
            // A write-ahead log that stays between processes: each command opens the index, and re-creating the
            // log (with a sync, and a write to make it non-empty) then checkpointing it at close (two more) cost
            // more than the rest of a cached fetch. Checkpoints happen in commits once the log holds 64 pages: the
            // first process to open the directory reads the whole log to rebuild its shared index, so it is kept
            // short (a cached fetch adds about six pages).
            configuration.prepareDatabase { db in
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                    throw DatabaseError(message: "the index cannot use a write-ahead log")
                }
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 64")
                if let connection = db.sqliteConnection.map(UnsafeMutableRawPointer.init) {
                    _ = sqlite_options_persist_wal(connection)
                    _ = sqlite_options_no_checkpoint_on_close(connection)
                }
            }
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        let migrator = Self.migrator
        let current = try queue.read { db -> Bool in
            if thorough {
                let check = try String.fetchOne(db, sql: "PRAGMA quick_check")
                guard check == "ok" else { throw IndexCorruption(detail: check ?? "no answer") }
            }
            // Also what tells a file that is not an index at all.
            guard try Self.hasTable(db, "grdb_migrations") else { return false }
            let applied = try Set(String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
            return applied.isSuperset(of: migrator.migrations)
        }
        // Migrating takes the write lock even with nothing to do: every command would wait for the others' commits.
        if !readOnly, !current { try migrator.migrate(queue) }
    }

    /// Whether the index has `table` (one written by an older version may not): one look at `sqlite_master`,
    /// where GRDB's `tableExists` reads and caches the whole schema first.
    static func hasTable(_ db: Database, _ table: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [table])
            ?? false
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
        migrator.registerMigration("v4") { db in
            // Shared by several processes: running totals kept by triggers (no process sums every row), and a
            // counter that makes every generation unique for the life of the directory, so a process still holding
            // an evicted version can never mistake a newer entry of the same key for its own.
            try db.create(table: "usage") { t in
                t.primaryKey("state", .text)
                t.column("bytes", .integer).notNull()
                t.column("entries", .integer).notNull()
            }
            try db.execute(
                sql: """
                    INSERT INTO usage (state, bytes, entries)
                        SELECT s.state, COALESCE(SUM(r.cachedBytes), 0), COUNT(r.key)
                        FROM (SELECT 'partial' AS state UNION ALL SELECT 'complete') s
                        LEFT JOIN resource r ON r.state = s.state GROUP BY s.state;
                    CREATE TRIGGER resource_usage_insert AFTER INSERT ON resource BEGIN
                        UPDATE usage SET bytes = bytes + NEW.cachedBytes, entries = entries + 1 WHERE state = NEW.state;
                    END;
                    CREATE TRIGGER resource_usage_delete AFTER DELETE ON resource BEGIN
                        UPDATE usage SET bytes = bytes - OLD.cachedBytes, entries = entries - 1 WHERE state = OLD.state;
                    END;
                    CREATE TRIGGER resource_usage_update AFTER UPDATE OF state, cachedBytes ON resource BEGIN
                        UPDATE usage SET bytes = bytes - OLD.cachedBytes, entries = entries - 1 WHERE state = OLD.state;
                        UPDATE usage SET bytes = bytes + NEW.cachedBytes, entries = entries + 1 WHERE state = NEW.state;
                    END;
                    """)
            try db.create(table: "meta") { t in
                t.primaryKey("name", .text)
                t.column("value", .integer).notNull()
            }
            try db.execute(
                sql: "INSERT INTO meta (name, value) SELECT 'nextGeneration', COALESCE(MAX(generation), 0) + 1 FROM resource")
        }
        migrator.registerMigration("v5") { db in
            // Until when the origin said a generation may be used without asking it again (Cache-Control
            // max-age, Expires); its rows go with the resource's.
            try db.create(table: "freshness") { t in
                t.primaryKey("key", .text).references("resource", onDelete: .cascade)
                t.column("generation", .integer).notNull()
                t.column("until", .double).notNull()
            }
        }
        migrator.registerMigration("v6") { db in
            // When the origin last confirmed the generation (the base of a proxy's Age header); `until` no later
            // than `checked` means the answer gave no freshness.
            try db.alter(table: "freshness") { t in t.add(column: "checked", .double) }
        }
        return migrator
    }
}

