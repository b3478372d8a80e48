import Foundation
import HTTPSemantics
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

@Suite struct LoaderEdgeTests {
    @Test func offlineServesCachedRangesFailsTypedAndRecovers() async throws {
        let h = try await LoaderHarness()
        let bytes = content(400_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/o.mp4")
        #expect(try await h.read("o.mp4", 0, 100_000) == Array(bytes[0..<100_000]))
        let port = h.origin.port
        let url = h.url("o.mp4")
        await h.origin.shutdown()
        try await h.restart()
        // Cached bytes still play, and the loader knows it is offline.
        #expect(try await h.loader.data(LoadingRequest(url: url, requestedOffset: 0, requestedLength: 100_000))
            == Array(bytes[0..<100_000]))
        await h.loader.validate(url: url)
        #expect(h.loader.isOffline(CacheKey(url: url)))
        // Uncached bytes fail with a typed error once the connect timeout runs out.
        await #expect {
            _ = try await h.loader.data(LoadingRequest(url: url, requestedOffset: 200_000, requestedLength: 1000))
        } throws: { error in
            if case OriginError.unreachable = error { return true }
            return false
        }
        // The origin comes back on the same port: the same loader recovers (its connection pool may still be
        // backing off from the refused attempts, so poll with a deadline; each attempt is bounded by the connect
        // timeout).
        let revived = try await MediaOriginServer(port: port)
        revived.set(OriginResource(bytes: bytes), at: "/o.mp4")
        let deadline = ContinuousClock.now + .seconds(60)
        var recovered: [UInt8]?
        while recovered == nil, ContinuousClock.now < deadline {
            recovered = try? await h.loader.data(LoadingRequest(url: url))
        }
        #expect(recovered == bytes)
        #expect(!h.loader.isOffline(CacheKey(url: url)))
        await revived.shutdown()
        await h.close()
    }

    @Test func aStalledOriginTimesOutWithATypedError() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.client.readTimeout = 0.3
        configuration.maxRetries = 0
        let h = try await LoaderHarness(configuration: configuration)
        h.origin.set(OriginResource(bytes: content(200_000)), at: "/s.mp4")
        var faults = OriginFaults()
        faults.stallAfterBytes = 50_000
        h.origin.setFaults(faults)
        await #expect(throws: OriginError.timeout(url: h.url("s.mp4").absoluteString)) {
            _ = try await h.read("s.mp4")
        }
        // What did arrive is cached and correct.
        let cached = h.store.availableRanges(for: CacheKey(url: h.url("s.mp4")))
        #expect(cached.total > 0 && cached.total <= 50_000)
        #expect(try h.store.read(key: CacheKey(url: h.url("s.mp4")), range: 0..<cached.total)
            == Array(content(200_000)[0..<Int(cached.total)]))
        await h.close()
    }

    /// An origin that stops sending or trickles fails the request in one sentence once the trouble has lasted
    /// `giveUpAfter`, whatever retries remain (before, each retry waited out its own timeout: 4 attempts of 15 s
    /// and more for a trickle). Retries are plentiful here so that only the time limit can end the request.
    @Test(arguments: ["stall", "trickle"])
    func aFailingOriginEndsTheRequestOnceTheTroubleLastsTheLimit(_ kind: String) async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.maxRetries = 1_000
        configuration.retryBackoff = 0.01
        configuration.giveUpAfter = 1.5
        // (A trickle of 2 kB/s, under the 4 kB/s minimum, sends often enough that the read timeout never fires.)
        configuration.client.readTimeout = kind == "stall" ? 0.3 : 1
        configuration.client.minimumBytesPerSecond = 4_096
        configuration.client.minimumThroughputWindow = 0.3
        let origin = try await MediaOriginServer(
            profile: kind == "trickle" ? NetworkProfile(bytesPerSecond: 2_000, latency: 0) : .unlimited)
        let h = try await LoaderHarness(origin: origin, configuration: configuration)
        h.origin.set(OriginResource(bytes: content(200_000)), at: "/t.mp4")
        if kind == "stall" {
            var faults = OriginFaults()
            faults.stallAfterBytes = 0
            h.origin.setFaults(faults)
        }
        do {
            _ = try await h.read("t.mp4")
            Issue.record("\(kind): the read succeeded")
        } catch let error as OriginError {
            guard case .gaveUp(_, let seconds, let last) = error else {
                Issue.record("\(kind): \(error)")
                return await h.close()
            }
            #expect(seconds == 1.5)
            // (A loaded machine may see a trickle's gaps as a stall: either way the trouble ends the request.)
            #expect(last.contains("stopped sending") || kind == "trickle" && last.contains("too slow"), "\(last)")
            #expect("\(error)".contains("giving up"))
        }
        // A handful of attempts, not the thousand allowed.
        #expect(h.origin.requests.count <= 12, "\(h.origin.requests.count) requests")
        await h.close()
    }

    @Test func errorStatusesCarryStatusAndReason() async throws {
        let h = try await LoaderHarness()
        await #expect(throws: OriginError.httpStatus(url: h.url("none.mp4").absoluteString, status: 404, reason: "Not Found")) {
            _ = try await h.read("none.mp4")
        }
        h.origin.set(OriginResource(bytes: content(1000)), at: "/e.mp4")
        var faults = OriginFaults()
        faults.fixedStatus = 503
        h.origin.setFaults(faults)
        await #expect(throws: OriginError.httpStatus(url: h.url("e.mp4").absoluteString, status: 503, reason: "Service Unavailable")) {
            _ = try await h.read("e.mp4")
        }
        #expect(h.store.info(for: CacheKey(url: h.url("e.mp4"))) == nil)
        await h.close()
    }

    @Test func rangesPastTheEndAreNotSatisfiable() async throws {
        let h = try await LoaderHarness()
        h.origin.set(OriginResource(bytes: content(1000)), at: "/n.mp4")
        await #expect(throws: OriginError.rangeNotSatisfiable(url: h.url("n.mp4").absoluteString, length: 1000)) {
            _ = try await h.read("n.mp4", 5000, 10)
        }
        // Once the length is known, the check needs no origin request.
        _ = try await h.read("n.mp4", 0, 10)
        // (The block that read started goes on into the cache: let it finish before counting afresh. Under the
        // thread sanitizer its request could reach the origin after the reset.)
        await h.loader.coordinator.waitUntilIdle()
        await h.origin.waitUntilIdle()
        await h.origin.resetCounters()
        await #expect(throws: OriginError.self) { _ = try await h.read("n.mp4", 1000, 10) }
        #expect(h.origin.requests.isEmpty)
        // A request reaching past the end is answered up to the end.
        #expect(try await h.read("n.mp4", 990, 100) == Array(content(1000)[990...]))
        await h.close()
    }

    @Test func redirectsAreFollowedAndCapped() async throws {
        let h = try await LoaderHarness()
        let bytes = content(100_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/real.mp4")
        h.origin.redirect("/moved.mp4", to: h.url("real.mp4").absoluteString)
        #expect(try await h.read("moved.mp4") == bytes)
        for i in 0..<8 { h.origin.redirect("/loop\(i)", to: h.url("loop\(i + 1)").absoluteString) }
        await #expect(throws: OriginError.tooManyRedirects(url: h.url("loop0").absoluteString)) {
            _ = try await h.read("loop0")
        }
        await h.close()
    }

    @Test func chunkedBodiesWithoutALengthAreCachedWhole() async throws {
        let h = try await LoaderHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/k.mp4")
        var faults = OriginFaults()
        faults.chunked = true
        faults.ignoreRange = true
        h.origin.setFaults(faults)
        #expect(try await h.read("k.mp4") == bytes)
        let info = try #require(h.store.info(for: CacheKey(url: h.url("k.mp4"))))
        #expect(info.metadata.contentLength == 300_000)
        #expect(info.isComplete)
        try await h.restart()
        await h.origin.resetCounters()
        #expect(try await h.read("k.mp4", 1000, 5000) == Array(bytes[1000..<6000]))
        #expect(h.origin.bodyBytesSent == 0)
        await h.close()
    }

    @Test func resourcesLargerThanTheBudgetStreamThrough() async throws {
        let h = try await LoaderHarness()
        try h.store.close()
        h.store = try CacheStore(directory: h.dir.url, configuration: testConfiguration {
            $0.partialByteLimit = 100_000
            $0.completeByteLimit = 100_000
        })
        h.loader = MediaLoader(store: h.store, configuration: h.configuration)
        let bytes = content(250_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/big.mp4")
        #expect(try await h.read("big.mp4") == bytes)
        #expect(try await h.read("big.mp4", 100_000, 1_000) == Array(bytes[100_000..<101_000]))
        #expect(h.store.info(for: CacheKey(url: h.url("big.mp4"))) == nil)
        await h.close()
    }

    @Test func trafficIsPersistedPerResourceAndInTotal() async throws {
        let h = try await LoaderHarness()
        let bytes = content(200_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/t.mp4")
        _ = try await h.read("t.mp4")
        _ = try await h.read("t.mp4", 0, 50_000)
        #expect(h.loader.metrics.misses == 1)
        #expect(h.loader.metrics.hits == 1)
        try await h.restart()
        _ = try await h.read("t.mp4")
        try await h.restart()
        let stats = try h.store.stats()
        #expect(stats.originBytes == 200_000)
        #expect(stats.cacheHitBytes == 250_000)
        let info = try #require(h.store.info(for: CacheKey(url: h.url("t.mp4"))))
        #expect(info.fetchedFromOrigin == 200_000)
        #expect(info.servedFromCache == 250_000)
        await h.close()
    }

    @Test func theEventLogRecordsFetchesAndOutcomes() async throws {
        let h = try await LoaderHarness()
        let logPath = h.dir.url.appendingPathComponent("events.jsonl").path
        h.loader = MediaLoader(store: h.store, configuration: h.configuration, eventLog: try EventLog(path: logPath))
        h.origin.set(OriginResource(bytes: content(10_000)), at: "/l.mp4")
        _ = try await h.read("l.mp4")
        _ = try await h.read("l.mp4")
        let text = try String(contentsOfFile: logPath, encoding: .utf8)
        // URLs read as they are: no JSON-escaped slashes.
        #expect(text.contains("\"url\":\"\(h.url("l.mp4").absoluteString)\""), "\(text)")
        let lines = text.split(separator: "\n")
        let events = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        #expect(events.compactMap { $0["event"] as? String }.filter { $0 != "fetch_end" }
            == ["fetch_start", "request", "request"])
        // The fetch logs its end on its own task, which may come after the second request: compare requests only.
        #expect(events.filter { $0["event"] as? String == "request" }.compactMap { $0["outcome"] as? String }
            == ["MISS", "HIT"])
        await h.close()
    }

    @Test func contentInformationComesFromTheFirstBlock() async throws {
        let h = try await LoaderHarness()
        h.origin.set(OriginResource(bytes: content(500_000), etag: "\"ci\""), at: "/ci.mp4")
        let info = try await h.loader.contentInformation(for: h.url("ci.mp4"))
        #expect(info == ContentInformation(
            contentLength: 500_000, contentType: "video/mp4", isByteRangeAccessSupported: true, etag: "\"ci\"",
            lastModified: nil))
        #expect(h.origin.bodyBytesSent == Int(h.configuration.blockSize))
        await h.close()
    }

    /// An origin whose 206 totals overstate the file (its 416 for the bytes past the end gives the true length,
    /// its ETag unchanged) is cached whole once and replays from the cache. Before, the 416 replaced the copy and
    /// the next 206 replaced it again: every replay cost the whole file.
    @Test func anOriginOverstatingItsLengthIsCachedWholeOnceAndReplaysFree() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.retryBackoff = 0.01
        let h = try await LoaderHarness(configuration: configuration)
        let bytes = content(400_000, seed: 31)
        h.origin.set(OriginResource(bytes: bytes), at: "/o.mp4")
        var faults = OriginFaults()
        faults.contentRangeTotal = bytes.count + 1000
        h.origin.setFaults(faults)
        #expect(try await h.read("o.mp4") == bytes)
        await h.origin.waitUntilIdle()
        #expect(h.origin.bodyBytesSent <= bytes.count, "\(h.origin.bodyBytesSent)")
        let info = h.store.info(for: CacheKey(url: h.url("o.mp4")))
        #expect(info?.isComplete == true && info?.metadata.contentLength == 400_000)
        for _ in 0..<2 {
            try await h.restart()
            await h.origin.resetCounters()
            #expect(try await h.read("o.mp4") == bytes)
            #expect(h.origin.bodyBytesSent == 0)
        }
        await h.close()
    }

    @Test func contentRangeIsParsedStrictly() {
        #expect(ContentRange("bytes 0-99/1000") == ContentRange(range: 0...99, completeLength: 1000))
        #expect(ContentRange("bytes 5-9/*")?.completeLength == nil)
        #expect(ContentRange("bytes */1000")?.range == nil)
        #expect(ContentRange("bytes */1000")?.completeLength == 1000)
        for bad in ["bytes 0-1000/1000", "bytes 9-5/100", "bytes 0-9", "0-9/10", "bytes -1-9/10", "bytes a-b/10",
                    "bytes 0-9/10,11-12/20", "bytes */*", "items 0-9/10", ""] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
        #expect(ContentRange.totalOverrun("bytes 0-1000/1000") == 1000)
        #expect(ContentRange.totalOverrun("bytes 10-399999/387655") == 387_655)
        #expect(ContentRange.totalOverrun("bytes 0-99/1000") == nil)
        #expect(ContentRange.totalOverrun("bytes 9-5/3") == nil)
        #expect(ContentRange.totalOverrun("bytes 0-9/*") == nil)
    }
}

extension ContentRange {
    init(range: ClosedRange<Int64>?, completeLength: Int64?) {
        self.init("bytes */1")!
        self.range = range
        self.completeLength = completeLength
    }
}

/// A reader with a read-ahead (a proxy's client that may stop at any byte) costs the origin its read-ahead, not
/// the rest of the file, and one that keeps reading gets requests that grow with what it read.
@Suite struct ReadAheadTests {
    @Test func aReaderThatStopsEarlyCostsItsReadAheadAndOneThatGoesOnGetsGrowingRequests() async throws {
        let h = try await LoaderHarness()
        let bytes = content(2_000_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/r.mp4")
        let url = h.url("r.mp4")
        _ = try await h.loader.contentInformation(for: url)
        await h.origin.resetCounters()
        // A prober jumps to 1 MB, takes a few bytes and leaves.
        do {
            var probe = LoadingRequest(url: url, requestedOffset: 1_000_000, requestedLength: 1_000_000)
            probe.readAhead = 20_000
            probe.finishesBlockWhenAbandoned = false
            let iterator = h.loader.load(probe).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.offset == 1_000_000)
            #expect(first.bytes == Array(bytes[1_000_000..<(1_000_000 + first.bytes.count)]))
        }
        await h.loader.coordinator.waitUntilIdle()
        await h.origin.waitUntilIdle()
        #expect(h.origin.bodyBytesSent <= 20_000)
        #expect(h.origin.requests.map(\.range) == ["bytes=1000000-1019999"])
        await h.origin.resetCounters()
        // A reader that keeps reading: each request at most twice what it had read when it was made.
        var reader = LoadingRequest(url: url, requestedOffset: 1_200_000)
        reader.readAhead = 20_000
        #expect(try await h.loader.data(reader) == Array(bytes[1_200_000...]))
        let sizes = h.origin.requests.filter { $0.method == "GET" }.compactMap { requestedRangeSize($0.range) }
        #expect(sizes.first == 20_000)
        #expect(sizes.count >= 3 && sizes.count <= 8, "\(sizes)")
        var read = 0
        for size in sizes {
            #expect(size <= Swift.max(20_000, 2 * read), "\(sizes)")
            read += size
        }
        await h.close()
    }
}

/// A fetch that finds it cannot cache what it fetches hands the answer to its reader: nothing is asked twice.
@Suite struct HandedBodyTests {
    @Test(arguments: ["declared too large", "budget full of data in use"])
    func anAnswerThatCannotBeCachedIsReadOnNotAskedAgain(_ why: String) async throws {
        let configuration = testConfiguration {
            $0.partialByteLimit = 300_000
            $0.completeByteLimit = 300_000
        }
        let h = try await LoaderHarness(cacheConfiguration: configuration)
        let bytes = content(900_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/u.mp4")
        // Another story being watched holds the rest of the budget: the bytes stop being stored mid-answer.
        h.origin.set(OriginResource(bytes: content(250_000, seed: 2)), at: "/watched.mp4")
        let watched = h.loader.load(LoadingRequest(url: h.url("watched.mp4"))).makeAsyncIterator()
        if why.hasPrefix("budget") {
            #expect(try await h.read("watched.mp4") == content(250_000, seed: 2))
            _ = try await watched.next()
            h.origin.set(OriginResource(bytes: Array(bytes[..<500_000])), at: "/u.mp4")
        }
        await h.origin.resetCounters()
        let length = why.hasPrefix("budget") ? 500_000 : bytes.count
        #expect(try await h.loader.data(LoadingRequest(url: h.url("u.mp4"), requestedOffset: 1_000))
            == Array(bytes[1_000..<length]))
        #expect(h.loader.streamThroughReason(CacheKey(url: h.url("u.mp4"))) != nil)
        await h.origin.waitUntilIdle()
        let gets = h.origin.requests.filter { $0.method == "GET" }
        #expect(gets.count == 1, "\(gets.map { $0.range ?? "-" })")
        #expect(h.origin.bodyBytesSent <= length - 1_000 + 65_536, "the origin sent \(h.origin.bodyBytesSent)")
        _ = watched
        await h.close()
    }
}
