import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

@Suite struct CacheStoreTests {
    @Test func bytesReadBackEqualBytesWrittenAcrossReopen() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let length: Int64 = 1_000_000
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
            let generation = try store.generation(for: "a.mp4", length: length)
            try store.writePattern("a.mp4", generation: generation, 0..<100_000)
            try store.writePattern("a.mp4", generation: generation, 700_000..<800_000)
            #expect(try store.read(key: testKey("a.mp4"), range: 50_000..<100_000) == pattern(50_000..<100_000))
            #expect(throws: CacheError.rangeNotCached(testKey("a.mp4"), 90_000..<110_000)) {
                try store.read(key: testKey("a.mp4"), range: 90_000..<110_000)
            }
            try store.close()
        }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let info = try #require(store.info(for: testKey("a.mp4")))
        #expect(info.ranges.ranges == [0..<100_000, 700_000..<800_000])
        #expect(info.state == .partial)
        #expect(info.metadata.etag == "\"v1\"")
        #expect(try store.read(key: testKey("a.mp4"), range: 700_000..<800_000) == pattern(700_000..<800_000))
        #expect(!store.recovery.repairedAnything)
        // The sparse file only exists in temp/ while partial.
        #expect(try store.dataPath(info.key).hasPrefix(dir.url.appendingPathComponent("temp").path))
        #expect(FileManager.default.fileExists(atPath: try store.dataPath(info.key)))
    }

    @Test func completeResourceMovesToMediaAndStaysComplete() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "b.mp4", length: 300_000)
        try store.writePattern("b.mp4", generation: generation, 200_000..<300_000)
        try store.writePattern("b.mp4", generation: generation, 0..<200_000)
        let key = testKey("b.mp4")
        #expect(store.info(for: key)?.state == .complete)
        #expect(FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("media/\(key.hex).\(generation)").path))
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("temp/\(key.hex).\(generation)").path))
        #expect(try store.read(key: key, range: 0..<300_000) == pattern(0..<300_000))
        let stats = try store.stats()
        #expect(stats.completeBytes == 300_000)
        #expect(stats.partialBytes == 0)
        #expect(stats.entries == 1)
    }

    @Test func changedVersionReplacesTheOldOneWhole() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let key = testKey("c.mp4")
        let first = try store.generation(for: "c.mp4", length: 1000, etag: "\"v1\"")
        try store.writePattern("c.mp4", generation: first, 0..<500)
        // Same validators: same generation, bytes kept.
        #expect(try store.prepare(key: key, metadata: testMetadata("c.mp4", length: 1000, etag: "\"v1\""))
            == .cacheable(generation: first, replaced: false))
        #expect(store.availableRanges(for: key).total == 500)
        // New ETag: old bytes are gone, the old generation can neither write nor read.
        let admission = try store.prepare(key: key, metadata: testMetadata("c.mp4", length: 1000, etag: "\"v2\""))
        #expect(admission == .cacheable(generation: first + 1, replaced: true))
        #expect(store.availableRanges(for: key).isEmpty)
        #expect(throws: CacheError.resourceChanged(key)) {
            try store.writePattern("c.mp4", generation: first, 500..<600)
        }
        try store.write(key: key, generation: first + 1, offset: 0, bytes: [UInt8](repeating: 7, count: 100))
        #expect(throws: CacheError.resourceChanged(key)) { try store.read(key: key, range: 0..<100, generation: first) }
        #expect(try store.read(key: key, range: 0..<100, generation: first + 1) == [UInt8](repeating: 7, count: 100))
        #expect(throws: CacheError.rangeNotCached(key, 0..<101)) { try store.read(key: key, range: 0..<101) }
        // A changed length is a changed version too.
        #expect(try store.prepare(key: key, metadata: testMetadata("c.mp4", length: 999, etag: "\"v2\""))
            == .cacheable(generation: first + 2, replaced: true))
    }

    @Test func writesPastTheLengthAreRejectedAndOverlapsAreNotRewritten() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "d.mp4", length: 100)
        #expect(throws: CacheError.outOfBounds(testKey("d.mp4"), 90..<110, length: 100)) {
            try store.writePattern("d.mp4", generation: generation, 90..<110)
        }
        try store.writePattern("d.mp4", generation: generation, 0..<60)
        try store.writePattern("d.mp4", generation: generation, 40..<100)
        #expect(store.info(for: testKey("d.mp4"))?.isComplete == true)
        #expect(try store.stats().storedBytes == 100)
    }

    @Test func directoryIsPrivateAndASecondStoreSharesIt() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let second = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "s", length: 100)
        try store.writePattern("s", generation: generation, 0..<100)
        #expect(try second.read(key: testKey("s"), range: 0..<100) == pattern(0..<100))
        try second.close()
        try store.close()
    }

    @Test func removeAndClearGoThroughTrashAndKeepTotals() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        for name in ["x", "y"] {
            let generation = try store.generation(for: name, length: 10)
            try store.writePattern(name, generation: generation, 0..<10)
        }
        store.recordTraffic(key: testKey("x"), origin: 10, cacheHit: 30)
        #expect(try store.remove(key: testKey("x")))
        #expect(try !store.remove(key: testKey("x")))
        #expect(store.info(for: testKey("x")) == nil)
        try store.removeAll()
        store.waitForTrash()
        let trash = try FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent("trash").path)
        let media = try FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent("media").path)
        #expect(trash.isEmpty)
        #expect(media.isEmpty)
        let stats = try store.stats()
        #expect(stats.entries == 0)
        #expect(stats.originBytes == 10)
        #expect(stats.cacheHitBytes == 30)
    }
}
