import Foundation
import Glibc
import HTTPSemantics
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
        #expect(HTTPDate.parse("Sun, 31 Feb 1994 08:49:37 UTC") == nil)
    }
}

@Suite struct HeuristicFreshnessTests {
    private let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    /// RFC 9111 §4.2.2: an answer with no stated freshness but a Last-Modified is fresh for a tenth of its age.
    @Test func aTenthOfTheAgeSinceLastModifiedAtMostADay() {
        #expect(HTTPFreshness.lifetime(
            cacheControl: nil, expires: nil, date: date, age: nil, lastModified: "Sun, 06 Nov 1994 07:49:37 GMT") == 360)
        #expect(HTTPFreshness.lifetime(
            cacheControl: nil, expires: nil, date: date, age: "60", lastModified: "Sun, 06 Nov 1994 07:49:37 GMT") == 300)
        #expect(HTTPFreshness.lifetime(
            cacheControl: nil, expires: nil, date: date, age: nil, lastModified: "Sun, 06 Nov 1993 08:49:37 GMT")
            == HTTPFreshness.heuristicCap)
        // Without Date, the time it arrived.
        let received = HTTPDate.parse(date) ?? Date()
        #expect(HTTPFreshness.lifetime(
            cacheControl: nil, expires: nil, date: nil, age: nil, lastModified: "Sun, 06 Nov 1994 08:39:37 GMT",
            receivedAt: received) == 60)
    }

    @Test func statedFreshnessMustRevalidateAndNoCacheWin() {
        let modified = "Sun, 06 Nov 1993 08:49:37 GMT"
        #expect(HTTPFreshness.lifetime(cacheControl: "max-age=5", expires: nil, date: date, age: nil, lastModified: modified) == 5)
        #expect(HTTPFreshness.lifetime(cacheControl: "must-revalidate", expires: nil, date: date, age: nil, lastModified: modified) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: "no-cache", expires: nil, date: date, age: nil, lastModified: modified) == nil)
        #expect(HTTPFreshness.lifetime(cacheControl: nil, expires: "0", date: date, age: nil, lastModified: modified) == nil)
        // A Last-Modified after the answer's date gives nothing.
        #expect(HTTPFreshness.lifetime(
            cacheControl: nil, expires: nil, date: date, age: nil, lastModified: "Sun, 06 Nov 1994 09:49:37 GMT") == nil)
    }

    @Test func httpDatesAreWrittenAsTheyAreRead() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == date)
        #expect(HTTPDate.parse(date) == Date(timeIntervalSince1970: 784_111_777))
        for seconds in [0, 951_782_400, 1_709_164_799, 4_102_444_800, -86_401] as [TimeInterval] {
            let when = Date(timeIntervalSince1970: seconds)
            #expect(HTTPDate.parse(HTTPDate.format(when)) == when, "\(HTTPDate.format(when))")
        }
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
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

    /// When the origin last vouched for a copy (the base of the proxy's `Age`) is written down with its answer,
    /// read by a later process that serves the copy without asking, and moved on by a conditional check's 304.
    @Test func theTimeTheOriginLastConfirmedACopyIsKept() async throws {
        let origin = try await MediaOriginServer()
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let bytes = content(100_000)
        var resource = OriginResource(bytes: bytes)
        resource.cacheControl = "max-age=600"
        origin.set(resource, at: "/a.mp4")
        let url = origin.url("a.mp4")
        let key = CacheKey(url: url)
        let clock = ManualClock()
        let fetchedAt = clock.now
        var (store, loader) = try open(dir.url, clock)
        #expect(try await loader.data(LoadingRequest(url: url)) == bytes)
        #expect(store.lastConfirmed(for: key) == fetchedAt)
        try await close(store, loader)

        // A later process serves it without asking: the copy was last confirmed when it was fetched.
        clock.advance(by: 300)
        (store, loader) = try open(dir.url, clock)
        await loader.validate(url: url)
        let copy = try #require(loader.openSettledCopy(url: url, key: key) { _ in 0..<10 })
        if let descriptor = copy.descriptor { Glibc.close(descriptor) }
        #expect(copy.confirmedAt == fetchedAt)

        // Past its freshness, the check (a 304) confirms it again, here and in the index.
        clock.advance(by: 400)
        await loader.validate(url: url)
        #expect(origin.requests.last?.status == 304)
        let checked = try #require(loader.openSettledCopy(url: url, key: key) { _ in nil })
        if let descriptor = checked.descriptor { Glibc.close(descriptor) }
        #expect(checked.confirmedAt == clock.now)
        #expect(store.lastConfirmed(for: key) == clock.now)
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

    /// A long-running process whose copy has no stated freshness and no Last-Modified (an ETag only): the check's
    /// answer holds for the recheck interval, then a conditional check finds the origin's new version. Before,
    /// one check held for the life of the process: a proxy served the old version for days.
    @Test func aLongRunningProcessRechecksACopyWithoutFreshnessAfterTheInterval() async throws {
        let origin = try await MediaOriginServer()
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        origin.set(OriginResource(bytes: content(100_000), etag: "\"one\""), at: "/e.mp4")
        let url = origin.url("e.mp4")
        let clock = ManualClock()
        let (store, loader) = try open(dir.url, clock)
        _ = try await loader.data(LoadingRequest(url: url))
        // Unchanged: the conditional check is answered 304, with no body.
        clock.advance(by: LoaderConfiguration().recheckInterval + 1)
        await origin.resetCounters()
        await loader.validate(url: url)
        #expect(origin.requests.map(\.status) == [304])
        #expect(origin.requests.first?.conditional == true)
        // Within the interval: no request.
        await origin.resetCounters()
        let changed = content(100_000, seed: 9)
        origin.set(OriginResource(bytes: changed, etag: "\"two\""), at: "/e.mp4")
        clock.advance(by: 10)
        await loader.validate(url: url)
        #expect(origin.requests.isEmpty)
        // After it: the new version.
        clock.advance(by: LoaderConfiguration().recheckInterval)
        await loader.validate(url: url)
        #expect(origin.requests.map(\.method).first == "HEAD")
        #expect(try await loader.data(LoadingRequest(url: url)) == changed)
        try await close(store, loader)
        await origin.shutdown()
    }

    /// Dates every answer `date`: what the origin's clock says decides a heuristic lifetime, so the test states
    /// it rather than taking the moment the answer happens to leave (seconds late on a busy machine).
    private struct AnswersDated: OriginRule {
        let date: Date
        func rewrite(_ answer: inout OriginAnswerHead, for request: OriginRequest) {
            answer.setHeader("Date", HTTPDate.format(date))
        }
    }

    /// A copy with only a Last-Modified is fresh for a tenth of its age (no request at all), then checked with
    /// If-Modified-Since; a changed Last-Modified brings the new bytes.
    @Test func aLastModifiedCopyIsHeuristicallyFreshThenCheckedConditionally() async throws {
        let origin = try await MediaOriginServer()
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let answered = Date(timeIntervalSince1970: 1_700_000_000)
        origin.rule = AnswersDated(date: answered)
        func resource(_ bytes: [UInt8], modifiedAgo seconds: TimeInterval) -> OriginResource {
            var resource = OriginResource(bytes: bytes, lastModified: HTTPDate.format(answered - seconds))
            resource.etag = nil
            return resource
        }
        // Modified 1,000 s before the answer: fresh for 100 s.
        origin.set(resource(content(100_000), modifiedAgo: 1_000), at: "/m.mp4")
        let url = origin.url("m.mp4")
        let clock = ManualClock()
        let (store, loader) = try open(dir.url, clock)
        _ = try await loader.data(LoadingRequest(url: url))
        await origin.resetCounters()
        clock.advance(by: 99)
        await loader.validate(url: url)
        #expect(origin.requests.isEmpty, "\(origin.requests)")
        clock.advance(by: 2)
        await loader.validate(url: url)
        #expect(origin.requests.map(\.status) == [304])
        let changed = content(100_000, seed: 5)
        origin.set(resource(changed, modifiedAgo: 0), at: "/m.mp4")
        clock.advance(by: LoaderConfiguration().recheckInterval + HTTPFreshness.heuristicCap)
        await origin.resetCounters()
        await loader.validate(url: url)
        #expect(origin.requests.map(\.status) == [200])
        #expect(try await loader.data(LoadingRequest(url: url)) == changed)
        try await close(store, loader)
        await origin.shutdown()
    }
}
