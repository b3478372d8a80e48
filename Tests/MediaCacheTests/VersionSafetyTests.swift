import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

/// Paths that could hand a reader bytes of two versions.
@Suite struct VersionSafetyTests {
    @Test func aChangedResourceTooLargeToCacheNeverSplicesWithTheOldCopy() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let origin = try await MediaOriginServer()
        let v1 = content(400_000, seed: 1)
        let v2 = content(700_000, seed: 2)
        origin.set(OriginResource(bytes: v1), at: "/v.mp4")
        let configuration = testConfiguration {
            $0.partialByteLimit = 300_000
            $0.completeByteLimit = 300_000
        }
        var store = try CacheStore(directory: dir.url, configuration: configuration)
        var loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        let url = origin.url("v.mp4")
        #expect(try await loader.data(LoadingRequest(url: url, requestedLength: 200_000)) == Array(v1[0..<200_000]))
        await loader.shutdown()
        try store.close()
        // v2 replaces v1 and no longer fits the budget.
        origin.set(OriginResource(bytes: v2), at: "/v.mp4")
        store = try CacheStore(directory: dir.url, configuration: configuration)
        loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        // The cached v1 head goes out at once; the rest then comes as v2, so this reader fails rather than mix.
        let first = try? await loader.data(LoadingRequest(url: url))
        #expect(first == nil || first == v2, "v1 and v2 were spliced")
        #expect(try await loader.data(LoadingRequest(url: url)) == v2)
        #expect(store.info(for: CacheKey(url: url)) == nil, "the old version was kept")
        await loader.shutdown()
        try store.close()
        await origin.shutdown()
    }

    @Test func readersArrivingTogetherShareOneValidation() async throws {
        let h = try await LoaderHarness()
        let bytes = content(100_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/s.mp4")
        #expect(try await h.read("s.mp4") == bytes)
        try await h.restart()
        let changed = content(100_000, seed: 7)
        h.origin.set(OriginResource(bytes: changed), at: "/s.mp4")
        await h.origin.resetCounters()
        let loader = h.loader
        let url = h.url("s.mp4")
        let results = await withTaskGroup(of: [UInt8]?.self) { group in
            for _ in 0..<12 { group.addTask { try? await loader.data(LoadingRequest(url: url)) } }
            return await group.reduce(into: [[UInt8]?]()) { $0.append($1) }
        }
        // Each reader got one version whole (the cached one is served while the check runs beside it) or an
        // error when the check replaced it under the reader; the origin was asked once whether it changed.
        #expect(results.allSatisfy { $0 == nil || $0 == changed || $0 == bytes })
        await loader.validate(url: url)
        #expect(try await loader.data(LoadingRequest(url: url)) == changed)
        #expect(h.origin.requests.filter { $0.method == "HEAD" }.count == 1)
        #expect(!h.loader.isOffline(CacheKey(url: url)))
        await h.close()
    }
}

@Suite struct ExpectedVersionTests {
    @Test func aReaderBoundToAVersionNeverGetsAnother() async throws {
        let h = try await LoaderHarness()
        let v1 = content(200_000, seed: 1)
        h.origin.set(OriginResource(bytes: v1), at: "/e.mp4")
        let info = try await h.loader.contentInformation(for: h.url("e.mp4"))
        var request = LoadingRequest(url: h.url("e.mp4"), requestedOffset: 1_000, requestedLength: 1_000)
        request.expectedVersion = ResourceMetadata(
            url: h.url("e.mp4").absoluteString, contentLength: info.contentLength, etag: info.etag)
        #expect(try await h.loader.data(request) == Array(v1[1_000..<2_000]))
        // The origin moves on to v2 (same length); a new session finds out before serving.
        try await h.restart()
        h.origin.set(OriginResource(bytes: content(200_000, seed: 2)), at: "/e.mp4")
        await h.loader.validate(url: h.url("e.mp4"))
        await #expect(throws: OriginError.resourceChanged(url: h.url("e.mp4").absoluteString)) {
            _ = try await h.loader.data(request)
        }
        await h.close()
    }
}
