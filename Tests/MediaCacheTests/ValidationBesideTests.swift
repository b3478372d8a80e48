import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

/// Cached bytes go out at once; the once-per-session check against the origin runs beside them.
@Suite struct ValidationBesideTests {
    /// Caches `bytes` whole at `/v.mp4`, then restarts the session.
    private func cachedHarness(_ bytes: [UInt8]) async throws -> LoaderHarness {
        let h = try await LoaderHarness()
        h.origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        #expect(try await h.read("v.mp4") == bytes)
        try await h.restart()
        await h.origin.resetCounters()
        return h
    }

    private func validationRunning(_ h: LoaderHarness) -> Bool {
        h.loader.coordinator.planner(CacheKey(url: h.url("v.mp4"))) { $0.validation == .running }
    }

    @Test func cachedBytesDoNotWaitForTheCheck() async throws {
        let bytes = content(300_000)
        let h = try await cachedHarness(bytes)
        var faults = OriginFaults()
        faults.holdHead = true
        h.origin.setFaults(faults)
        // Content information and every byte come from disk while the origin has not answered the check.
        let info = try await h.loader.contentInformation(for: h.url("v.mp4"))
        #expect(info.contentLength == 300_000)
        #expect(try await h.read("v.mp4") == bytes)
        #expect(validationRunning(h), "the reader waited for the origin's answer")
        let deadline = ContinuousClock.now + .seconds(10)
        while h.origin.requests.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(h.origin.requests.map(\.method) == ["HEAD"])
        h.origin.resumePaused()
        await h.loader.validate(url: h.url("v.mp4"))
        #expect(!validationRunning(h))
        #expect(!h.loader.isOffline(CacheKey(url: h.url("v.mp4"))))
        await h.close()
    }

    /// `validate(waitingAtMost:)` gives up waiting at its limit while the check goes on (before, the wait's task
    /// group waited for the check anyway: the proxy's 1 s bound, and a feed read at once from its cached copy,
    /// waited a whole round trip or more).
    @Test func aBoundedWaitForTheCheckEndsAtItsLimit() async throws {
        let bytes = content(100_000)
        let h = try await cachedHarness(bytes)
        var faults = OriginFaults()
        faults.holdHead = true
        h.origin.setFaults(faults)
        // A watchdog answers the held check after a while, so a wait that does not end at its limit fails here
        // instead of hanging.
        let watchdog = Task {
            let deadline = ContinuousClock.now + .seconds(20)
            while !Task.isCancelled, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            h.origin.resumePaused()
        }
        await h.loader.validate(url: h.url("v.mp4"), waitingAtMost: .milliseconds(20))
        #expect(validationRunning(h), "the wait lasted until the origin answered")
        watchdog.cancel()
        await watchdog.value
        await h.loader.validate(url: h.url("v.mp4"))
        #expect(!validationRunning(h))
        await h.close()
    }

    @Test func aNewVersionFoundBesideAReaderEndsItInsteadOfMixing() async throws {
        let v1 = content(600_000, seed: 1)
        let v2 = content(600_000, seed: 2)
        let h = try await cachedHarness(v1)
        var faults = OriginFaults()
        faults.holdHead = true
        h.origin.setFaults(faults)
        h.origin.set(OriginResource(bytes: v2), at: "/v.mp4")
        let iterator = h.loader.load(LoadingRequest(url: h.url("v.mp4"))).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.bytes == Array(v1[0..<first.bytes.count]))
        h.origin.resumePaused()
        await h.loader.validate(url: h.url("v.mp4"))
        await #expect(throws: OriginError.self) {
            while try await iterator.next() != nil {}
        }
        // The next reader gets the new version whole.
        #expect(try await h.read("v.mp4") == v2)
        await h.close()
    }

    /// A check started on the old copy can answer after a fetch met the new version and replaced the copy: it
    /// does not stop that fetch as one of the old version (the next reader joined nothing, and the new version
    /// came twice).
    @Test func aCheckAnsweringAfterAFetchFoundTheNewVersionLetsThatFetchRunOn() async throws {
        let v1 = content(600_000, seed: 1)
        let v2 = content(600_000, seed: 2)
        let h = try await LoaderHarness()
        h.origin.set(OriginResource(bytes: v1), at: "/v.mp4")
        #expect(try await h.read("v.mp4", 0, 200_000) == Array(v1[0..<200_000]))
        try await h.restart()
        await h.origin.resetCounters()
        h.origin.set(OriginResource(bytes: v2), at: "/v.mp4")
        var faults = OriginFaults()
        faults.holdHead = true
        faults.pauseAfterBytes = 100_000
        h.origin.setFaults(faults)
        // The reader's fetch from 200,000 asks If-Range the old ETag and gets the new version whole (paused in
        // its body); the reader, which delivered old bytes, fails.
        let iterator = h.loader.load(LoadingRequest(url: h.url("v.mp4"))).makeAsyncIterator()
        await #expect(throws: OriginError.self) {
            while try await iterator.next() != nil {}
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while h.origin.pausedResponses < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(h.origin.pausedResponses == 2, "the check and the fetch were not both held")
        // The held check answers first (it was held first): it finds the version the fetch already wrote.
        h.origin.resumePaused()
        await h.loader.validate(url: h.url("v.mp4"))
        #expect(try await h.read("v.mp4") == v2)
        await h.origin.waitUntilIdle()
        #expect(
            h.origin.bodyBytesSent <= 600_000 + 16_384,
            "the origin sent \(h.origin.bodyBytesSent) bytes: \(h.origin.requests.map { "\($0.method) \($0.range ?? "-") \($0.status) \($0.bodyBytes)" })")
        await h.close()
    }

    @Test func anUnreachableOriginIsReportedOfflineWhileEveryCachedByteIsServed() async throws {
        let bytes = content(200_000)
        let h = try await cachedHarness(bytes)
        await h.origin.shutdown()
        #expect(try await h.read("v.mp4") == bytes)
        await h.loader.validate(url: h.url("v.mp4"))
        #expect(h.loader.isOffline(CacheKey(url: h.url("v.mp4"))))
        await h.close()
    }
}
