import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

/// Hostile origins and bad URLs: every one is a clear error for its own request, never a crash or a hang.
@Suite struct BadDayLoaderTests {
    @Test(arguments: [
        ("http://127.0.0.1:99999/x", "port 99999 is out of range"),
        ("http://127.0.0.1:65536/x", "port 65536 is out of range"),
        ("http://127.0.0.1:0/x", "port 0 is out of range"),
        ("http://127.0.0.1:-1/x", "port -1 is out of range"),
        ("http://[::1]:70000/x", "port 70000 is out of range"),
        ("ftp://example.com/a.mp4", "unsupported scheme 'ftp'"),
        ("http:///a.mp4", "has no host"),
        ("not a url", "is not a URL"),
    ])
    func badURLsAreRejectedWithAReason(text: String, reason: String) {
        #expect {
            try OriginURL.parse(text)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test(arguments: [
        "http://127.0.0.1:65535/x", "http://127.0.0.1:1/x", "https://example.com/a.mp4", "http://[::1]:8080/a",
        "http://user:pw@example.com:8080/a?b=c", "http://example.com:/a",
    ])
    func goodURLsPass(text: String) throws {
        #expect(try OriginURL.parse(text).absoluteString == text)
    }

    @Test func credentialsAreNeverShown() throws {
        let url = try OriginURL.parse("http://alice:secret@example.com/a.mp4")
        #expect(OriginURL.withoutCredentials(url).absoluteString == "http://example.com/a.mp4")
        let error = OriginError.httpStatus(url: url.absoluteString, status: 404, reason: "Not Found")
        #expect(!"\(error)".contains("secret"))
        #expect("\(error)" == "http://example.com/a.mp4: origin answered 404 Not Found")
    }

    @Test func aBadPortThroughTheLoaderFailsThatRequestOnly() async throws {
        let h = try await LoaderHarness()
        let bytes = content(50_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/ok.mp4")
        await #expect {
            _ = try await h.loader.data(LoadingRequest(url: URL(string: "http://127.0.0.1:99999/x")!))
        } throws: { error in
            if case OriginError.invalidURL = error { return true }
            return false
        }
        // A redirect to a port out of range is the same clear error, and the loader goes on serving.
        h.origin.redirect("/jump.mp4", to: "http://127.0.0.1:99999/elsewhere.mp4")
        await #expect {
            _ = try await h.read("jump.mp4")
        } throws: { error in
            guard case OriginError.invalidURL(_, let reason) = error else { return false }
            return reason.contains("redirected to http://127.0.0.1:99999/elsewhere.mp4")
                && reason.contains("port 99999 is out of range")
        }
        // A relative redirect is followed, and the bytes are right.
        h.origin.redirect("/moved.mp4", to: "/ok.mp4")
        #expect(try await h.read("moved.mp4") == bytes)
        // A redirect loop ends.
        h.origin.redirect("/a.mp4", to: "/b.mp4")
        h.origin.redirect("/b.mp4", to: "/a.mp4")
        await #expect(throws: OriginError.tooManyRedirects(url: h.url("a.mp4").absoluteString)) {
            _ = try await h.read("a.mp4")
        }
        await h.close()
    }

    @Test func throughputMeterJudgesWholeWindows() {
        var meter = ThroughputMeter(minimumBytesPerSecond: 1000, window: 10, start: 0)
        let r1 = meter.record(100, at: 1)
        #expect(r1)
        let r2 = meter.record(100, at: 9.9)
        #expect(r2)
        // 10.2 s in, 300 bytes: far below 1000 B/s.
        let r3 = meter.record(100, at: 10.2)
        #expect(!r3)
        var fast = ThroughputMeter(minimumBytesPerSecond: 1000, window: 10, start: 0)
        let r4 = fast.record(20_000, at: 10.5)
        #expect(r4)
        let r5 = fast.record(11_000, at: 21)
        #expect(r5)
        var off = ThroughputMeter(minimumBytesPerSecond: 0, window: 10, start: 0)
        let r6 = off.record(1, at: 1000)
        #expect(r6)
    }

    @Test func backoffDoublesWithinItsCap() {
        #expect(RetryBackoff.delay(attempt: 1, base: 0.25, cap: 4, jitter: 1) == 0.25)
        #expect(RetryBackoff.delay(attempt: 3, base: 0.25, cap: 4, jitter: 1) == 1)
        #expect(RetryBackoff.delay(attempt: 9, base: 0.25, cap: 4, jitter: 1) == 4)
        #expect(RetryBackoff.delay(attempt: 2, base: 0.25, cap: 4, jitter: 0.5) == 0.25)
        #expect(RetryBackoff.delay(attempt: 2, base: 0, cap: 4) == 0)
    }

    @Test(.timeLimit(.minutes(5))) func aTricklingOriginFailsAsTooSlow() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.client.minimumBytesPerSecond = 50_000
        configuration.client.minimumThroughputWindow = 0.5
        configuration.maxRetries = 0
        let h = try await LoaderHarness(configuration: configuration)
        h.origin.set(OriginResource(bytes: content(400_000)), at: "/t.mp4")
        // 512 bytes every quarter second: about 2 kB/s.
        h.origin.setProfile(NetworkProfile(bytesPerSecond: 2_000, latency: 0))
        await #expect {
            _ = try await h.read("t.mp4")
        } throws: { error in
            "\(error)".contains("origin too slow")
        }
        await h.close()
    }

    @Test(.timeLimit(.minutes(5))) func aDroppingOriginIsRetriedWithinABudget() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.maxRetries = 3
        configuration.retryBackoff = 0.01
        // The retry budget is the rule here, not the time limit: a crowded machine can take longer than the 30 s
        // default over four attempts (the time limit has its own test in LoaderEdgeTests).
        configuration.giveUpAfter = 3_600
        let h = try await LoaderHarness(configuration: configuration)
        let bytes = content(2_000_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/d.mp4")
        var faults = OriginFaults()
        faults.dropAfterBytes = 20_000  // every response, forever
        h.origin.setFaults(faults)
        await #expect {
            _ = try await h.read("d.mp4")
        } throws: { error in
            "\(error)".contains("gave up after 4 attempts")
        }
        // One first attempt and three retries; progress of a few kB does not restore the budget.
        #expect(h.origin.requests.filter { $0.method == "GET" }.count == 4)
        // What arrived is kept and right.
        let cached = h.store.availableRanges(for: CacheKey(url: h.url("d.mp4")))
        #expect(cached.total >= 60_000)
        for range in cached {
            #expect(try h.store.read(key: CacheKey(url: h.url("d.mp4")), range: range)
                == Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]))
        }
        await h.close()
    }

    @Test(.timeLimit(.minutes(5))) func aPreloadOfAResourceThatStreamsThroughEndsWithAReason() async throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let origin = try await MediaOriginServer()
        origin.set(OriginResource(bytes: content(300_000)), at: "/big.mp4")
        let store = try CacheStore(
            directory: dir.url,
            configuration: testConfiguration {
                $0.partialByteLimit = 100_000
                $0.completeByteLimit = 100_000
            })
        let loader = MediaLoader(store: store, configuration: LoaderHarness.defaultConfiguration)
        let preloader = Preloader(loader: loader)
        await #expect {
            _ = try await preloader.preload(PreloadTarget(url: origin.url("big.mp4"), amount: .full))
        } throws: { error in
            "\(error)".contains("cannot be cached") && "\(error)".contains("more than the cache budget")
        }
        #expect(origin.bodyBytesSent <= 300_000)
        await loader.shutdown()
        try store.close()
        await origin.shutdown()
    }

    @Test(.timeLimit(.minutes(5))) func aReaderThatGoesAwayLetsTheBlockInFlightFinishIntoTheCache() async throws {
        let h = try await LoaderHarness()
        let bytes = content(2_000_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/c.mp4")
        h.origin.setProfile(NetworkProfile(bytesPerSecond: 2_000_000, latency: 0))
        // The origin holds the body after 150 kB until the reader has gone, so a reader slowed by a busy machine
        // cannot find the whole file fetched before it leaves.
        var faults = OriginFaults()
        faults.pauseAfterBytes = 150_000
        h.origin.setFaults(faults)
        let key = CacheKey(url: h.url("c.mp4"))
        do {
            let iterator = h.loader.load(LoadingRequest(url: h.url("c.mp4"))).makeAsyncIterator()
            var received = 0
            while received < 100_000, let chunk = try await iterator.next() { received += chunk.bytes.count }
        }
        h.origin.resumePaused()
        // The reader is gone; its fetch ends at the next block boundary, and what it wrote is kept.
        let deadline = ContinuousClock.now + .seconds(120)
        while h.loader.coordinator.planner(key, { !$0.fetches.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let cached = h.store.availableRanges(for: key)
        #expect(cached.ranges.count == 1 && cached.ranges.first?.lowerBound == 0)
        #expect(cached.total >= 100_000)
        // The reader left a little past 100 kB: the 64 KiB block holding that point was finished.
        #expect(cached.total >= 2 * h.configuration.blockSize, "cached \(cached.total), sent \(h.origin.bodyBytesSent)")
        #expect(cached.total < 2_000_000, "the whole file was fetched for a reader that left")
        #expect(try h.store.read(key: key, range: 0..<cached.total) == Array(bytes[0..<Int(cached.total)]))
        await h.close()
    }
}
