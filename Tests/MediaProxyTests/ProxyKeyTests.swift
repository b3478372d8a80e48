import Foundation
import MediaCache
import MediaOrigin
import MediaTestSupport
import Testing

/// Signed URLs through `serve`: the same media under a freshly signed URL is one cache entry.
@Suite struct ProxyKeyTests {
    @Test func aFreshlySignedURLIsServedFromTheSameEntry() async throws {
        let h = try await ProxyHarness()
        let bytes = content(200_000)
        h.origin.set(OriginResource(bytes: bytes, etag: "\"s1\""), at: "/v.mp4")
        let base = h.origin.url("v.mp4").absoluteString
        let first = try #require(URL(string: base + "?X-Amz-Expires=900&X-Amz-Signature=aaaa"))
        let second = try #require(URL(string: base + "?X-Amz-Expires=900&X-Amz-Signature=bbbb"))
        #expect(try await h.get(h.proxy.mediaURL(for: first)).body == bytes)
        let paid = h.origin.bodyBytesSent
        #expect(paid == bytes.count)
        #expect(try await h.get(h.proxy.mediaURL(for: second)).body == bytes)
        #expect(h.origin.bodyBytesSent == paid, "a freshly signed URL downloaded the media again")
        await h.close()
    }

    @Test func aKeyNamedInTheRequestIsTheEntrysKey() async throws {
        let h = try await ProxyHarness()
        let bytes = content(150_000)
        h.origin.set(OriginResource(bytes: bytes, etag: "\"k1\""), at: "/v.mp4")
        let base = h.origin.url("v.mp4").absoluteString
        let first = try #require(URL(string: base + "?auth=one"))
        let second = try #require(URL(string: base + "?auth=two"))
        #expect(try await h.get(h.proxy.mediaURL(for: first, key: "story-42")).body == bytes)
        #expect(try await h.get(h.proxy.mediaURL(for: second, key: "story-42")).body == bytes)
        #expect(h.origin.bodyBytesSent == bytes.count)
        #expect(h.store.availableRanges(for: CacheKey(custom: "story-42")).total == Int64(bytes.count))
        // Without the key, `auth` names other bytes for all the proxy knows.
        #expect(try await h.get(h.proxy.mediaURL(for: second)).body == bytes)
        #expect(h.origin.bodyBytesSent == 2 * bytes.count)
        let empty = try await h.get(h.proxy.baseURL + "media?url=" + base + "&key=")
        #expect(empty.status == 400)
        #expect(String(decoding: empty.body, as: UTF8.self).contains("key= must be"))
        await h.close()
    }
}
