import Foundation
import MediaTestSupport
import GRDB
import MediaOrigin
import Testing

@testable import MediaCache

/// Bytes changed on disk behind the cache's back are never served: each block's CRC-32C is checked on read.
@Suite struct ChecksumTests {
    /// Overwrites `bytes.count` bytes at `offset` of a data file, as a bad sector or another program would.
    private func scribble(_ path: String, at offset: Int64, _ bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: UInt64(offset))
        handle.write(Data(bytes))
        try handle.close()
    }

    @Test func theCRC32CIsTheCastagnoliOne() {
        #expect(BlockChecksums.crc(Array("123456789".utf8)) == 0xE306_9283)
        #expect(BlockChecksums.crc([]) == 0)
        let long = content(1 << 20)
        #expect(BlockChecksums.crc(long) != BlockChecksums.crc(Array(long.dropLast())))
    }

    @Test func theFastCRCAgreesWithTheTableOneAtEveryLengthAndAlignment() {
        var g = SeededGenerator(seed: 32)
        let data = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &g) }
        // Around the three-stream sizes (3 × 8192 and 3 × 256 bytes) and odd offsets.
        let lengths = [0, 1, 7, 8, 9, 255, 767, 768, 769, 24_575, 24_576, 24_577, 65_536, 100_003, 199_990]
        for length in lengths {
            for start in [0, 1, 3, 8] where start + length <= data.count {
                let slice = Array(data[start..<(start + length)])
                #expect(BlockChecksums.crc(slice) == BlockChecksums.portableCRC(slice), "length \(length) at \(start)")
            }
        }
        #expect(BlockChecksums.portableCRC(Array("123456789".utf8)) == 0xE306_9283)
    }

    @Test func checksumsSurviveTheirEncoding() {
        var sums = BlockChecksums()
        sums[0] = .init(range: 0..<65_536, crc: 7)
        sums[3] = .init(range: 196_608 + 100..<196_608 + 900, crc: 0xFFFF_FFFF)
        #expect(BlockChecksums(blob: sums.blob) == sums)
        // Damaged encodings decode to what can be right.
        #expect(BlockChecksums(blob: Array(sums.blob.prefix(30))).sums.count == 1)
        #expect(BlockChecksums(blob: [UInt8](repeating: 0xff, count: 20)).isEmpty)
    }

    /// In the default chunks, and in megabyte chunks (read and checked in two halves at once) with the bad bytes in
    /// the second half.
    @Test(arguments: [256 << 10, 1 << 20]) func fourBytesChangedOnDiskAreFetchedAgainNotServed(chunk: Int) async throws {
        let bytes = content(1_000_000)
        let h = try await LoaderHarness()
        h.configuration.readChunk = chunk
        try await h.restart()
        h.origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        #expect(try await h.read("v.mp4") == bytes)
        let key = CacheKey(url: h.url("v.mp4"))
        try await h.restart()
        try scribble(try h.store.dataPath(key), at: 700_000, [1, 2, 3, 4])
        await h.origin.resetCounters()
        #expect(try await h.read("v.mp4") == bytes)
        // Only the bad block went over the network again.
        let gets = h.origin.requests.filter { $0.method == "GET" }
        #expect(gets.map(\.range) == ["bytes=655360-720895"])
        #expect(h.store.info(for: key)?.isComplete == true)
        try await h.restart()
        await h.origin.resetCounters()
        #expect(try await h.read("v.mp4") == bytes)
        #expect(h.origin.bodyBytesSent == 0)
        await h.close()
    }

    @Test func aCorruptCompleteFileIsNotHandedOutForZeroCopy() async throws {
        let bytes = content(200_000)
        let h = try await LoaderHarness()
        h.origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        #expect(try await h.read("v.mp4") == bytes)
        let key = CacheKey(url: h.url("v.mp4"))
        try await h.restart()
        try scribble(try h.store.dataPath(key), at: 150_000, [0, 0, 0, 0])
        // Only the bytes about to be sent are checked: a range clear of the bad block is sent, one over it is not.
        let clear = try #require(h.store.openCompleteFile(for: key) { _ in 0..<131_072 })
        close(try #require(clear.descriptor))
        #expect(clear.range == 0..<131_072)
        #expect(h.store.openCompleteFile(for: key) { _ in 140_000..<160_000 } == nil)
        #expect(h.store.info(for: key)?.state == .partial)
        #expect(h.store.availableRanges(for: key) == ByteRangeSet([0..<131_072, 196_608..<200_000]))
        await h.close()
    }

    @Test func aBadBlockIsDroppedFromTheIndexToo() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "p.mp4", length: 1_000_000)
        try store.writePattern("p.mp4", generation: generation, 0..<400_000)
        try store.commit(key: testKey("p.mp4"))
        let path = try store.dataPath(testKey("p.mp4"))
        try store.close()
        try scribble(path, at: 70_000, [9])
        store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(try store.read(key: testKey("p.mp4"), range: 0..<65_536) == pattern(0..<65_536))
        #expect(throws: CacheError.corruptData(testKey("p.mp4"), 65_536..<131_072)) {
            try store.read(key: testKey("p.mp4"), range: 60_000..<80_000)
        }
        try store.close()
        store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(store.availableRanges(for: testKey("p.mp4")) == ByteRangeSet([0..<65_536, 131_072..<400_000]))
        try store.close()
    }

    @Test func blocksRecordedBeforeChecksumsExistedAreServedAndGetOne() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        let generation = try store.generation(for: "p.mp4", length: 200_000)
        try store.writePattern("p.mp4", generation: generation, 0..<200_000)
        try store.close()
        let queue = try DatabaseQueue(path: dir.url.appendingPathComponent("index.sqlite").path)
        try queue.write { db in try db.execute(sql: "DELETE FROM blockChecksum") }
        try queue.close()
        store = try CacheStore(directory: dir.url, configuration: testConfiguration())
        #expect(try store.read(key: testKey("p.mp4"), range: 0..<200_000) == pattern(0..<200_000))
        let sums = store.table.lockedAsSeen { $0.entry(of: testKey("p.mp4"))?.checksums.sums.count }
        #expect(sums == 4)
        try store.close()
    }
}
