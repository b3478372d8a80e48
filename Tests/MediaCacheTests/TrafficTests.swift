import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

@testable import MediaCache

/// Traffic is counted in one place: the session's metrics, the persistent totals and the origin's own count agree.
@Suite struct TrafficTests {
    @Test func everyByteTheOriginSentIsCountedOnceWhateverPathItTook() async throws {
        let h = try await CacheHarness(cacheConfiguration: testConfiguration { $0.partialByteLimit = 100_000 })
        let big = content(250_000)
        let small = content(60_000, seed: 2)
        h.origin.set(OriginResource(bytes: big), at: "/big.mp4")
        h.origin.set(OriginResource(bytes: small, etag: "\"s\""), at: "/small.mp4")
        // Streamed through (larger than the budget), cached, then read again from disk.
        #expect(try await h.read("big.mp4") == big)
        #expect(try await h.read("small.mp4") == small)
        #expect(try await h.read("small.mp4") == small)
        let metrics = h.loader.metrics
        #expect(metrics.originRequests == h.origin.requests.count, "\(metrics) vs \(h.origin.requests)")
        // Received: every byte delivered from the origin (the streamed-through body included) and any bytes of a
        // response given up on; the origin counts what it wrote, some of which may die in socket buffers.
        #expect(metrics.originBytesReceived >= Int64(big.count + small.count))
        #expect(metrics.originBytesReceived <= Int64(h.origin.bodyBytesSent))
        #expect(metrics.cacheBytes == Int64(small.count), "the second read of small")
        #expect(metrics.hits == 1)
        let stats = try h.store.stats()
        #expect(stats.originBytes == metrics.originBytesReceived, "the persistent total is the same count")
        #expect(stats.cacheHitBytes == Int64(small.count))
        await h.close()
    }

    /// A viewing's readers (a player's download and its decoder) read the same cached bytes: they are saved once
    /// per viewing (a HIT play of a 1,870,012-byte file counted 1,870,052 saved, a 397 kB clip 794,720). Outside a
    /// viewing every read counts, and a later viewing saves them again.
    @Test func aViewingSavesEachCachedByteOnce() async throws {
        let h = try await CacheHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        #expect(try await h.read("v.mp4") == bytes)
        let before = h.loader.metrics.cacheBytes
        let key = CacheKey(url: h.url("v.mp4"))
        let reads = try await h.loader.viewing(key: key) { () async throws -> [[UInt8]] in
            [try await h.read("v.mp4"), try await h.read("v.mp4", 100_000, 50_000), try await h.read("v.mp4")]
        }
        #expect(reads == [bytes, Array(bytes[100_000..<150_000]), bytes])
        #expect(h.loader.metrics.cacheBytes - before == 300_000)
        _ = try await h.loader.viewing(key: key) { () async throws -> [UInt8] in try await h.read("v.mp4", 0, 1_000) }
        #expect(h.loader.metrics.cacheBytes - before == 301_000)
        await h.close()
    }
}
