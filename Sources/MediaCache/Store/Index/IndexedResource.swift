import Foundation
import GRDB

/// One resource as the index records it: its row, ranges and block checksums.
struct IndexedResource: Equatable, Sendable {
    var info: ResourceInfo
    var checksums: BlockChecksums
}

/// Bytes and entries recorded per state, kept by the index's triggers.
struct CacheUsage: Equatable, Sendable {
    var partialBytes: Int64 = 0
    var completeBytes: Int64 = 0
    var partialEntries = 0
    var completeEntries = 0
    var entries: Int { partialEntries + completeEntries }
}

/// The database side of one `CacheIndex.modify` transaction.
struct IndexTransaction {
    let db: Database

    /// A generation no entry of this directory has had before.
    func newGeneration() throws -> Int64 {
        let next = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'nextGeneration'") ?? 1
        try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES ('nextGeneration', ?)", arguments: [next + 1])
        return next
    }
}
