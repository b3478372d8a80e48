import Foundation
import MediaTestSupport
import GRDB
import MediaOrigin
import Testing

@testable import MediaCache

#if canImport(Glibc)
import Glibc
#endif

/// The store on a bad day: low disk, stale access times, damaged files and rows, kills between commits.
@Suite struct BadDayStoreTests {
    private func fill(_ store: CacheStore, _ clock: ManualClock, _ names: [String], length: Int64) throws {
        for name in names {
            clock.advance(by: 1)
            let generation = try store.generation(for: name, length: length)
            try store.writePattern(name, generation: generation, 0..<length)
        }
    }

    @Test func oneLowDiskEventEvictsOnlyWhatIsNeeded() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        // The file system's count lags behind unlinks: it reads 10 kB short of the minimum however much goes.
        let free = FreeSpace(1_000_000)
        let store = try CacheStore(
            directory: dir.url, configuration: testConfiguration { $0.minimumFreeDiskBytes = 1_000_000 },
            now: clock.closure, freeSpace: free.closure)
        try fill(store, clock, ["a", "b", "c", "d", "e", "f"], length: 4_000)
        free.set(990_000)
        let evicted = try store.enforceBudgets()
        // 10 kB short: the three oldest 4 kB entries are enough, the rest stay.
        #expect(evicted.map(\.0) == ["a", "b", "c"].map(testKey))
        #expect(evicted.allSatisfy { $0.1 == .lowDiskSpace })
        #expect(Set(store.allResources().map(\.key)) == Set(["d", "e", "f"].map(testKey)))
    }

    @Test func readsAndZeroCopySendsCountAsAccessForEviction() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(
            directory: dir.url, configuration: testConfiguration { $0.completeByteLimit = 3_000 }, now: clock.closure)
        try fill(store, clock, ["a", "b", "c"], length: 1_000)
        clock.advance(by: 1)
        _ = try store.read(key: testKey("a"), range: 0..<10)
        clock.advance(by: 1)
        let file = try #require(store.openCompleteFile(for: testKey("b")) { _ in nil })
        close(try #require(file.descriptor))
        // c is now the least recently used: it goes, not a or b.
        try fill(store, clock, ["d"], length: 1_000)
        #expect(Set(store.allResources().map(\.key)) == Set(["a", "b", "d"].map(testKey)))
        try store.close()
        // The access times reached the index.
        let reopened = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: clock.closure)
        let a = try #require(reopened.info(for: testKey("a")))
        #expect(a.lastAccess > Date(timeIntervalSince1970: 1_800_000_003))
        try reopened.close()
    }

    @Test func aDirectoryInPlaceOfADataFileIsMovedAwayNotFatal() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var store: CacheStore? = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try #require(store).generation(for: "a", length: 10_000)
        try #require(store).writePattern("a", generation: generation, 0..<5_000)
        try #require(store).commit(key: testKey("a"))
        let path = try #require(store).dataPath(testKey("a"))
        try store?.close()
        store = nil
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        // At open: the entry is dropped, the directory removed.
        let reopened = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(reopened.info(for: testKey("a")) == nil)
        #expect(DataFile.size(atPath: path) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // While running: writes go on in a fresh file.
        let g2 = try reopened.generation(for: "b", length: 10_000)
        #expect(try reopened.writePattern("b", generation: g2, 0..<1_000))
        try reopened.commit(key: testKey("b"))
        let pathB = try reopened.dataPath(testKey("b"))
        try FileManager.default.removeItem(atPath: pathB)
        try FileManager.default.createDirectory(atPath: pathB, withIntermediateDirectories: false)
        try reopened.close()
        let third = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let g3 = try third.generation(for: "b", length: 10_000)
        #expect(try third.writePattern("b", generation: g3, 0..<10_000))
        #expect(try third.read(key: testKey("b"), range: 0..<10_000) == pattern(0..<10_000))
        try third.close()
    }

    @Test func anUndecodableRowIsDroppedNotATrap() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        for name in ["good", "bad"] {
            let generation = try store.generation(for: name, length: 1_000)
            try store.writePattern(name, generation: generation, 0..<1_000)
        }
        try store.close()
        let queue = try DatabaseQueue(path: dir.url.appendingPathComponent("index.sqlite").path)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE resource SET createdAt = 'yesterday' WHERE key = ?", arguments: [testKey("bad").hex])
        }
        try queue.close()
        let reopened = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(reopened.info(for: testKey("good"))?.isComplete == true)
        #expect(reopened.info(for: testKey("bad")) == nil)
        #expect(try reopened.read(key: testKey("good"), range: 0..<1_000) == pattern(0..<1_000))
        try reopened.close()
    }

    @Test func anIndexThatCannotBeOpenedIsAnErrorThatChangesNothing() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "a", length: 1_000)
        try store.writePattern("a", generation: generation, 0..<1_000)
        try store.close()
        let indexPath = dir.url.appendingPathComponent("index.sqlite").path
        let queue = try DatabaseQueue(path: indexPath)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: indexPath + suffix) }
        let data = try #require(FileManager.default.contents(atPath: indexPath))
        // A directory where the WAL file must go: SQLite cannot open the index for writing, which is not corrupt.
        // The cache is served read-only instead, and nothing on disk changes.
        try FileManager.default.createDirectory(atPath: indexPath + "-wal", withIntermediateDirectories: false)
        let readOnly = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(readOnly.isReadOnly)
        #expect(readOnly.info(for: testKey("a"))?.isComplete == true)
        #expect(try readOnly.read(key: testKey("a"), range: 0..<1_000) == pattern(0..<1_000))
        try readOnly.close()
        #expect(FileManager.default.contents(atPath: indexPath) == data)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(!names.contains { $0.contains("corrupt") })
        let media = try FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent("media").path)
        #expect(media == ["\(testKey("a").hex).\(readOnly.info(for: testKey("a"))?.generation ?? -1)"])
        // Once the obstacle is gone, everything is still there.
        try FileManager.default.removeItem(atPath: indexPath + "-wal")
        let reopened = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(reopened.info(for: testKey("a"))?.isComplete == true)
        try reopened.close()
    }

    @Test func onlyCorruptionCountsAsCorrupt() {
        #expect(IndexFile.isCorruption(DatabaseError(resultCode: .SQLITE_CORRUPT)))
        #expect(IndexFile.isCorruption(DatabaseError(resultCode: .SQLITE_NOTADB)))
        #expect(IndexFile.isCorruption(IndexCorruption(detail: "page 3")))
        #expect(!IndexFile.isCorruption(DatabaseError(resultCode: .SQLITE_FULL)))
        #expect(!IndexFile.isCorruption(DatabaseError(resultCode: .SQLITE_IOERR)))
        #expect(!IndexFile.isCorruption(DatabaseError(resultCode: .SQLITE_READONLY)))
        #expect(!IndexFile.isCorruption(DatabaseError(resultCode: .SQLITE_CANTOPEN)))
        #expect(IndexFile.describe(DatabaseError(resultCode: .SQLITE_FULL)).contains("the disk is full"))
    }

    @Test func oldCorruptCopiesAreRemoved() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let old = dir.url.appendingPathComponent("index.sqlite.corrupt-\(1_800_000_000 - 8 * 86_400)").path
        let recent = dir.url.appendingPathComponent("index.sqlite.corrupt-\(1_800_000_000 - 86_400)").path
        for path in [old, recent] { #expect(FileManager.default.createFile(atPath: path, contents: Data([1]))) }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: { now })
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(FileManager.default.fileExists(atPath: recent))
        try store.close()
    }

    @Test func filesArePrivateAndCredentialsAreNotStored() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let key = CacheKey(url: URL(string: "http://alice:secret@127.0.0.1/a.mp4")!)
        _ = try store.prepare(
            key: key, metadata: ResourceMetadata(url: "http://alice:secret@127.0.0.1/a.mp4", contentLength: 10))
        guard case .cacheable(let generation, _) = try store.prepare(
            key: key, metadata: ResourceMetadata(url: "http://alice:secret@127.0.0.1/a.mp4", contentLength: 10))
        else { throw CacheError.notCached(key) }
        try store.write(key: key, generation: generation, offset: 0, bytes: [UInt8](repeating: 1, count: 10))
        try store.close()
        #expect(store.info(for: key)?.metadata.url == "http://127.0.0.1/a.mp4")
        for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "lock"] {
            var info = stat()
            guard stat(dir.url.appendingPathComponent(name).path, &info) == 0 else { continue }
            #expect(info.st_mode & 0o077 == 0, "\(name) is \(String(info.st_mode & 0o777, radix: 8))")
        }
        for folder in ["", "temp", "media", "trash"] {
            var info = stat()
            #expect(stat(dir.url.appendingPathComponent(folder).path, &info) == 0)
            #expect(info.st_mode & 0o077 == 0, "\(folder) is \(String(info.st_mode & 0o777, radix: 8))")
        }
        for name in ["index.sqlite", "index.sqlite-wal"] {
            let text = String(decoding: FileManager.default.contents(atPath: dir.url.appendingPathComponent(name).path) ?? Data(), as: UTF8.self)
            #expect(!text.contains("secret"))
        }
    }

    @Test func slowWritesAreRecordedWithinAQuarterSecond() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: clock.closure)
        let generation = try store.generation(for: "s", length: 10_000_000)
        try store.writePattern("s", generation: generation, 0..<1_000)
        #expect(try store.index.loadAll().first?.ranges.total ?? 0 == 0)
        clock.advance(by: 0.3)
        try store.writePattern("s", generation: generation, 1_000..<2_000)
        // A kill now loses nothing: both writes are in the index.
        #expect(try store.index.loadAll().first?.ranges == ByteRangeSet([0..<2_000]))
        try store.close()
    }
}

/// Full disks and failed syncs through the loader: the reader still gets every right byte.
@Suite struct StorageFailureTests {
    @Test func aFullDiskStreamsThroughAndKeepsWhatWasCached() async throws {
        let h = try await LoaderHarness()
        let bytes = content(600_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/f.mp4")
        let faults = StorageFaults()
        try await h.reopenStore(faults: faults)
        #expect(try await h.read("f.mp4", 0, 100_000) == Array(bytes[0..<100_000]))
        faults.writeErrno = ENOSPC
        // The rest cannot be written: it comes straight from the origin, the cached start from disk.
        #expect(try await h.read("f.mp4") == bytes)
        let cached = h.store.availableRanges(for: CacheKey(url: h.url("f.mp4")))
        #expect(cached.contains(0..<100_000))
        #expect(try h.store.read(key: CacheKey(url: h.url("f.mp4")), range: 0..<100_000) == Array(bytes[0..<100_000]))
        await h.close()
    }

    @Test func aFailedSyncIsNeverRecordedLater() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let faults = StorageFaults()
        let store = try CacheStore.withFaults(faults, directory: dir.url)
        let generation = try store.generation(for: "s", length: 100_000)
        try store.writePattern("s", generation: generation, 0..<10_000)
        faults.syncErrno = EIO
        #expect(throws: CacheError.self) { try store.commit(key: testKey("s")) }
        // The bytes whose sync failed are treated as missing…
        #expect(store.availableRanges(for: testKey("s")).isEmpty)
        faults.syncErrno = nil
        try store.writePattern("s", generation: generation, 20_000..<30_000)
        try store.commit(key: testKey("s"))
        // …and a later successful commit records only what it synced.
        #expect(try store.index.loadAll().first?.ranges == ByteRangeSet([20_000..<30_000]))
        try store.close()
    }

    /// With not even a block free, nothing new could be stored: the cache is served as it is instead of being
    /// evicted to make room that evicting cannot make.
    @Test func aFullDiskOpensTheCacheReadOnlyAndKeepsWhatItHolds() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let configuration = testConfiguration { $0.minimumFreeDiskBytes = 50_000_000 }
        do {
            let store = try CacheStore(directory: dir.url, configuration: configuration, freeSpace: { 100_000_000 })
            let generation = try store.generation(for: "a", length: 1_000)
            try store.writePattern("a", generation: generation, 0..<1_000)
            try store.close()
        }
        let store = try CacheStore(directory: dir.url, configuration: configuration, freeSpace: { 0 })
        #expect(store.isReadOnly)
        #expect(try store.read(key: testKey("a"), range: 0..<1_000) == pattern(0..<1_000))
        try store.close()
    }

    @Test func aReadOnlyCacheServesWhatItHolds() async throws {
        let h = try await LoaderHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/r.mp4")
        h.origin.set(OriginResource(bytes: content(50_000, seed: 9)), at: "/new.mp4")
        #expect(try await h.read("r.mp4") == bytes)
        await h.loader.shutdown()
        try h.store.close()
        // Reopen as a read-only directory would be (the access check is what a read-only mount fails).
        let store = try CacheStore(directory: h.dir.url, configuration: testConfiguration(), readOnly: true)
        #expect(store.isReadOnly)
        let loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        await h.origin.resetCounters()
        #expect(try await loader.data(LoadingRequest(url: h.url("r.mp4"))) == bytes)
        #expect(h.origin.bodyBytesSent == 0)
        #expect(try await loader.data(LoadingRequest(url: h.url("new.mp4"))) == content(50_000, seed: 9))
        #expect(store.info(for: CacheKey(url: h.url("new.mp4"))) == nil)
        await loader.shutdown()
        try store.close()
        h.store = try CacheStore(directory: h.dir.url, configuration: testConfiguration())
        h.loader = MediaLoader(store: h.store, configuration: h.configuration)
        await h.close()
    }
}

/// A resource that streams through uncached still reads what is cached, and fetches each missing byte once.
@Suite struct StreamThroughTests {
    /// A read-only cache holding a resource's head and tail: the whole read costs only the middle (the stream
    /// from the origin ran on over the cached tail).
    @Test func aReadOnlyCacheStreamsOnlyWhatItLacks() async throws {
        let h = try await LoaderHarness()
        let bytes = content(400_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/p.mp4")
        #expect(try await h.read("p.mp4", 0, 100_000) == Array(bytes[0..<100_000]))
        #expect(try await h.read("p.mp4", 300_000, 100_000) == Array(bytes[300_000...]))
        await h.loader.shutdown()
        try h.store.close()
        let store = try CacheStore(directory: h.dir.url, configuration: testConfiguration(), readOnly: true)
        let key = CacheKey(url: h.url("p.mp4"))
        let cached = try #require(store.info(for: key)?.ranges)
        #expect(cached.ranges.count == 2, "\(cached)")
        let loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        await h.origin.resetCounters()
        #expect(try await loader.data(LoadingRequest(url: h.url("p.mp4"))) == bytes)
        #expect(h.origin.bodyBytesSent == 400_000 - Int(cached.total), "sent \(h.origin.bodyBytesSent)")
        await loader.shutdown()
        try store.close()
        h.store = try CacheStore(directory: h.dir.url, configuration: testConfiguration())
        h.loader = MediaLoader(store: h.store, configuration: h.configuration)
        await h.close()
    }
}

@Suite struct GiveUpTests {
    @Test func aReaderWhoseCachedBytesAreGivenUpOnMidReadStreamsTheRest() async throws {
        let h = try await LoaderHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/g.mp4")
        let faults = StorageFaults()
        try await h.reopenStore(faults: faults)
        #expect(try await h.read("g.mp4", 0, 100_000) == Array(bytes[0..<100_000]))
        // Between the reader's look at what is cached and its read, a writer gives the resource up (it outgrew
        // the budget): the reader goes on from the origin instead of failing on bytes that are gone.
        faults.giveUpBeforeNextRead = "outgrew the cache budget"
        #expect(try await h.read("g.mp4") == bytes)
        #expect(h.store.info(for: CacheKey(url: h.url("g.mp4"))) == nil)
        await h.close()
    }

    @Test func aResourceWithoutALengthThatOutgrowsTheBudgetIsGivenUpOnOnce() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let origin = try await MediaOriginServer()
        let bytes = content(3_000_000)
        origin.set(OriginResource(bytes: bytes), at: "/c.mp4")
        var faults = OriginFaults()
        faults.chunked = true
        faults.ignoreRange = true
        origin.setFaults(faults)
        let configuration = testConfiguration {
            $0.partialByteLimit = 1_000_000
            $0.completeByteLimit = 1_000_000
        }
        var store = try CacheStore(directory: dir.url, configuration: configuration)
        var loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        let url = origin.url("c.mp4")
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        // The partial entry that could never complete is gone, not left filling the budget.
        #expect(store.info(for: CacheKey(url: url)) == nil)
        #expect(store.storedBytes == 0)
        await loader.shutdown()
        try store.close()
        // The next run streams it through at once: one pass of the body, no second attempt to cache it.
        store = try CacheStore(directory: dir.url, configuration: configuration)
        loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        await origin.resetCounters()
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        #expect(origin.bodyBytesSent <= bytes.count + 100_000, "sent \(origin.bodyBytesSent)")
        #expect(store.storedBytes == 0)
        await loader.shutdown()
        try store.close()
        await origin.shutdown()
    }
}
