import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

/// Origins that send no validator: a resume proves it continues the cached version by re-reading an overlap.
@Suite struct ContinuityTests {
    static let length = 3 << 20

    /// A resource with neither ETag nor Last-Modified.
    private func unvalidated(_ bytes: [UInt8]) -> OriginResource {
        var resource = OriginResource(bytes: bytes)
        resource.etag = nil
        return resource
    }

    /// Reads the whole resource, returning nil when the read failed with a clear error.
    private func readWhole(_ h: LoaderHarness) async -> [UInt8]? {
        do { return try await h.read("v.mp4") } catch { return nil }
    }

    @Test func aSameLengthChangeIsNeverSplicedOntoTheCachedHead() async throws {
        let v1 = content(Self.length, seed: 1)
        let v2 = content(Self.length, seed: 2)
        let h = try await LoaderHarness()
        h.origin.set(unvalidated(v1), at: "/v.mp4")
        #expect(try await h.read("v.mp4", 0, 2 << 20) == Array(v1[0..<(2 << 20)]))
        try await h.restart()
        h.origin.set(unvalidated(v2), at: "/v.mp4")
        let first = await readWhole(h)
        #expect(first == nil || first == v2, "v1 and v2 were spliced")
        #expect(try await h.read("v.mp4") == v2)
        await h.close()
    }

    @Test func aChangeAtADroppedConnectionIsCaughtByTheResume() async throws {
        let v1 = content(Self.length, seed: 3)
        let v2 = content(Self.length, seed: 4)
        let h = try await LoaderHarness()
        h.origin.set(unvalidated(v1), at: "/v.mp4")
        var faults = OriginFaults()
        faults.pauseAfterBytes = 1 << 20
        faults.dropAfterBytes = 1 << 20
        faults.dropCount = 1
        h.origin.setFaults(faults)
        let loader = h.loader
        let url = h.url("v.mp4")
        let reader = Task { try? await loader.data(LoadingRequest(url: url)) }
        let deadline = ContinuousClock.now + .seconds(120)
        while h.origin.pausedResponses == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(h.origin.pausedResponses == 1)
        // The file is replaced while the connection is down; the loader resumes from byte 1 MiB.
        h.origin.set(unvalidated(v2), at: "/v.mp4")
        h.origin.resumePaused()
        let result = await reader.value
        #expect(result == nil || result == v2, "v1 and v2 were spliced")
        #expect(try await h.read("v.mp4") == v2)
        await h.close()
    }

    @Test func aFetchAwayFromCachedBytesChecksTheNearestOnesFirst() async throws {
        let v1 = content(Self.length, seed: 5)
        let v2 = content(Self.length, seed: 6)
        let h = try await LoaderHarness()
        h.origin.set(unvalidated(v1), at: "/v.mp4")
        #expect(try await h.read("v.mp4", 0, 512 << 10) == Array(v1[0..<(512 << 10)]))
        h.origin.set(unvalidated(v2), at: "/v.mp4")
        // A seek far past the cached head: its bytes are v2, and the stale head must not survive beside them.
        #expect(try await h.read("v.mp4", 2 << 20, nil) == Array(v2[(2 << 20)...]))
        #expect(try await h.read("v.mp4", 0, 512 << 10) == Array(v2[0..<(512 << 10)]))
        await h.close()
    }

    @Test func anOriginIgnoringRangeIsComparedWithEveryCachedByte() async throws {
        let v1 = content(Self.length, seed: 7)
        let v2 = content(Self.length, seed: 8)
        let h = try await LoaderHarness()
        var faults = OriginFaults()
        faults.ignoreRange = true
        faults.pauseAfterBytes = 3 << 19
        h.origin.setFaults(faults)
        h.origin.set(unvalidated(v1), at: "/v.mp4")
        #expect(try await h.read("v.mp4", 0, 1 << 20) == Array(v1[0..<(1 << 20)]))
        // The whole body runs on a moment for the next reader (a new request would cost it again from byte 0),
        // then stops, nobody wanting it: what is left of v1 is its cached head.
        let key = CacheKey(url: h.url("v.mp4"))
        #expect(await eventually { h.loader.coordinator.planner(key) { $0.fetches.isEmpty } })
        h.origin.set(unvalidated(v2), at: "/v.mp4")
        h.origin.resumePaused()
        let cachedOfV1 = h.store.info(for: key)?.ranges.total ?? 0
        #expect(cachedOfV1 >= 1 << 20 && cachedOfV1 < Int64(Self.length), "cached \(cachedOfV1)")
        let first = await readWhole(h)
        #expect(first == nil || first == v2, "v1 and v2 were spliced")
        #expect(try await h.read("v.mp4") == v2)
        await h.close()
    }

    @Test func anUnchangedResourceResumesWithOnlyTheOverlapAgain() async throws {
        let v1 = content(Self.length, seed: 9)
        let h = try await LoaderHarness()
        h.origin.set(unvalidated(v1), at: "/v.mp4")
        #expect(try await h.read("v.mp4", 0, 1 << 20) == Array(v1[0..<(1 << 20)]))
        await h.origin.resetCounters()
        #expect(try await h.read("v.mp4") == v1)
        #expect(h.origin.bodyBytesSent == Self.length - (1 << 20) + 4096)
        await h.close()
    }
}
