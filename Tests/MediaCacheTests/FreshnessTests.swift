import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

@testable import MediaCache

@Suite struct FreshnessHeaderTests {
    @Test func maxAgeLessAgeIsTheLifetime() {
        #expect(HTTPFreshness.lifetime(cacheControl: "max-age=60", expires: nil, date: nil, age: nil) == 60)
        #expect(HTTPFreshness.lifetime(cacheControl: "public, Max-Age=\"60\"", expires: nil, date: nil, age: "10") == 50)
        #expect(HTTPFreshness.lifetime(cacheControl: "max-age=60", expires: nil, date: nil, age: "90") == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: "max-age=0", expires: nil, date: nil, age: nil) == nil)
        // max-age wins over Expires.
        #expect(HTTPFreshness.lifetime(
            cacheControl: "max-age=5", expires: "Sun, 06 Nov 1994 09:49:37 GMT", date: "Sun, 06 Nov 1994 08:49:37 GMT",
            age: nil) == 5)
    }

    @Test func noCacheNoStoreAndUnreadableValuesGiveNoFreshness() {
        #expect(HTTPFreshness.lifetime(cacheControl: "no-cache, max-age=60", expires: nil, date: nil, age: nil) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: "no-store", expires: nil, date: nil, age: nil) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: "max-age=soon", expires: nil, date: nil, age: nil) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: "max-age=-5", expires: nil, date: nil, age: nil) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: nil, expires: nil, date: nil, age: nil) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: "", expires: "0", date: "Sun, 06 Nov 1994 08:49:37 GMT", age: nil) == nil)
    }

    @Test func expiresCountsFromTheAnswersDate() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(HTTPFreshness.lifetime(cacheControl: nil, expires: "Sun, 06 Nov 1994 09:49:37 GMT", date: date, age: nil) == 3600)
        #expect(HTTPFreshness.lifetime(cacheControl: nil, expires: "Sun, 06 Nov 1994 09:49:37 GMT", date: date, age: "600") == 3000)
        #expect(HTTPFreshness.lifetime(cacheControl: nil, expires: "Sun, 06 Nov 1994 07:49:37 GMT", date: date, age: nil) == nil)
        // Without the answer's Date the clocks cannot be compared: nothing is assumed.
        #expect(HTTPFreshness.lifetime(cacheControl: nil, expires: "Sun, 06 Nov 1994 09:49:37 GMT", date: nil, age: nil) == nil)
        #expect(HTTPFreshness.httpDate("Sun, 31 Feb 1994 08:49:37 UTC") == nil)
    }
}

@Suite struct FreshnessRecordTests {
    /// Every fetch brings an answer: one that moves the time on by less than a minute is not written again (the
    /// index is then early, never late), one that moves it further, or takes freshness away, is.
    @Test func answersThatChangeLittleAreNotWrittenAgain() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: clock.closure)
        let generation = try store.generation(for: "f", length: 10)
        try store.writePattern("f", generation: generation, 0..<10)
        let start = clock.now
        #expect(store.recordFreshness(key: testKey("f"), generation: generation, lifetime: 600) == start + 600)
        clock.advance(by: 10)
        #expect(store.recordFreshness(key: testKey("f"), generation: generation, lifetime: 600) == start + 610)
        #expect(store.freshUntil(for: testKey("f")) == start + 600)
        clock.advance(by: 60)
        store.recordFreshness(key: testKey("f"), generation: generation, lifetime: 600)
        #expect(store.freshUntil(for: testKey("f")) == start + 670)
        store.recordFreshness(key: testKey("f"), generation: generation, lifetime: nil)
        #expect(store.freshUntil(for: testKey("f")) == nil)
        try store.close()
    }
}

@Suite struct FreshnessTests {
    /// A store and loader on `directory` at `clock`'s time (a process of its own).
    private func open(_ directory: URL, _ clock: ManualClock) throws -> (CacheStore, MediaLoader) {
        let store = try CacheStore(directory: directory, configuration: testConfiguration(), now: clock.closure)
        return (store, MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration))
    }

    private func close(_ store: CacheStore, _ loader: MediaLoader) async throws {
        await loader.shutdown()
        try store.close()
    }

    @Test func aCopyTheOriginCallsFreshIsServedWithoutAskingItUntilItIsNot() async throws {
        let origin = try await MediaOriginServer()
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let bytes = content(200_000)
        var resource = OriginResource(bytes: bytes)
        resource.cacheControl = "max-age=600"
        origin.set(resource, at: "/f.mp4")
        let url = origin.url("f.mp4")
        let clock = ManualClock()
        var (store, loader) = try open(dir.url, clock)
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        try await close(store, loader)

        // A later process within the ten minutes: no request at all, not even the check.
        clock.advance(by: 300)
        await origin.resetCounters()
        (store, loader) = try open(dir.url, clock)
        await loader.validate(url: url)
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        #expect(origin.requests.isEmpty, "\(origin.requests)")
        #expect(!loader.fetcher.hasStartedClient)
        try await close(store, loader)

        // After them: checked once again, and the answer's freshness counts from then.
        clock.advance(by: 600)
        (store, loader) = try open(dir.url, clock)
        await loader.validate(url: url)
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        #expect(origin.requests.map(\.method) == ["HEAD"])
        try await close(store, loader)
        clock.advance(by: 300)
        (store, loader) = try open(dir.url, clock)
        await loader.validate(url: url)
        #expect(origin.requests.map(\.method) == ["HEAD"])
        try await close(store, loader)
        await origin.shutdown()
    }

    @Test func withoutFreshnessEveryProcessChecksItsCopy() async throws {
        let origin = try await MediaOriginServer()
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let bytes = content(100_000)
        var resource = OriginResource(bytes: bytes)
        resource.cacheControl = "no-cache, max-age=600"
        origin.set(resource, at: "/n.mp4")
        let url = origin.url("n.mp4")
        let clock = ManualClock()
        var (store, loader) = try open(dir.url, clock)
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        try await close(store, loader)
        await origin.resetCounters()
        (store, loader) = try open(dir.url, clock)
        await loader.validate(url: url)
        #expect(origin.requests.map(\.method) == ["HEAD"])
        try await close(store, loader)
        await origin.shutdown()
    }

    /// A long-running process (the proxy) checks a copy again once the origin's freshness runs out, instead of
    /// trusting one check for the rest of its life.
    @Test func aLongRunningProcessChecksAgainWhenFreshnessRunsOut() async throws {
        let origin = try await MediaOriginServer()
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        var resource = OriginResource(bytes: content(100_000))
        resource.cacheControl = "max-age=60"
        origin.set(resource, at: "/l.mp4")
        let url = origin.url("l.mp4")
        let clock = ManualClock()
        let (store, loader) = try open(dir.url, clock)
        _ = try await loader.data(LoadingRequest(url: url))
        await origin.resetCounters()
        await loader.validate(url: url)
        #expect(origin.requests.isEmpty)
        // The origin publishes a new version; once the minute is over the next reader learns of it.
        let changed = content(100_000, seed: 7)
        var newer = OriginResource(bytes: changed)
        newer.cacheControl = "max-age=60"
        origin.set(newer, at: "/l.mp4")
        clock.advance(by: 61)
        await loader.validate(url: url)
        #expect(origin.requests.map(\.method).first == "HEAD")
        #expect(try await loader.data(LoadingRequest(url: url)) == changed)
        try await close(store, loader)
        await origin.shutdown()
    }
}
