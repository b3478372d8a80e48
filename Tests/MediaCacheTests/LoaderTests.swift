import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

@Suite struct LoaderTests {
    @Test func firstBytesArriveBeforeTheDownloadEnds() async throws {
        let h = try await LoaderHarness()
        let bytes = content(600_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/slow.mp4")
        // The origin sends 100 kB and then holds the rest back until told to go on.
        var faults = OriginFaults()
        faults.pauseAfterBytes = 100_000
        h.origin.setFaults(faults)
        let iterator = h.loader.load(LoadingRequest(url: h.url("slow.mp4"))).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        // The reader has bytes while the origin has not sent the rest: play while downloading.
        #expect(h.origin.bodyBytesSent <= 100_000)
        #expect(first.offset == 0)
        #expect(first.source == .origin)
        var received = first.bytes
        while received.count < 100_000, let chunk = try await iterator.next() { received += chunk.bytes }
        #expect(received == Array(bytes[0..<100_000]))
        h.origin.resumePaused()
        while let chunk = try await iterator.next() { received += chunk.bytes }
        #expect(received == bytes)
        #expect(iterator.report?.outcome == .miss)
        #expect(h.origin.bodyBytesSent == bytes.count)
        await h.close()
    }

    @Test func aReplayCostsZeroOriginBytes() async throws {
        let h = try await LoaderHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/a.mp4")
        #expect(try await h.read("a.mp4") == bytes)
        #expect(h.origin.bodyBytesSent == bytes.count)
        try await h.restart()
        await h.origin.resetCounters()
        #expect(try await h.read("a.mp4") == bytes)
        #expect(h.origin.bodyBytesSent == 0)
        // One HEAD validated the copy (beside the reader); no GET was needed.
        await h.loader.validate(url: h.url("a.mp4"))
        #expect(h.origin.requests.map(\.method) == ["HEAD"])
        #expect(h.loader.metrics.hits == 1)
        await h.close()
    }

    @Test func aGapBetweenTwoCachedRangesFetchesOnlyTheGap() async throws {
        let h = try await LoaderHarness()
        let bytes = content(1_000_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/g.mp4")
        #expect(try await h.read("g.mp4", 0, 100_000) == Array(bytes[0..<100_000]))
        #expect(try await h.read("g.mp4", 600_000, 100_000) == Array(bytes[600_000..<700_000]))
        await h.origin.resetCounters()
        #expect(try await h.read("g.mp4", 0, 700_000) == Array(bytes[0..<700_000]))
        // Cached so far: [0, 128K) and [576K, 704K) (block-rounded); the gap is what is left, within a block.
        let gap = 600_000 - 100_000
        let block = Int(h.configuration.blockSize)
        #expect(h.origin.bodyBytesSent <= gap + 2 * block)
        #expect(h.origin.bodyBytesSent >= gap - 2 * block)
        #expect(h.origin.requests.filter { $0.method == "GET" }.count == 1)
        await h.close()
    }

    @Test func everyOriginRequestCarriesTheConfiguredUserAgent() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.client.userAgent = "SomeApp/2.1"
        let h = try await LoaderHarness(configuration: configuration)
        h.origin.set(OriginResource(bytes: content(100_000), etag: "\"u\""), at: "/u.mp4")
        _ = try await h.read("u.mp4")
        try await h.restart()
        await h.loader.validate(url: h.url("u.mp4"), waitingAtMost: .seconds(5))
        #expect(!h.origin.requests.isEmpty)
        #expect(h.origin.requests.allSatisfy { $0.userAgent == "SomeApp/2.1" }, "\(h.origin.requests)")
        await h.close()
    }

    @Test func aRestartResumesFromTheFirstMissingByteWithIfRange() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.maxRetries = 0
        let h = try await LoaderHarness(configuration: configuration)
        let bytes = content(500_000)
        let resource = OriginResource(bytes: bytes, etag: "\"r1\"")
        h.origin.set(resource, at: "/r.mp4")
        var faults = OriginFaults()
        faults.dropAfterBytes = 200_000
        faults.dropCount = 1
        h.origin.setFaults(faults)
        await #expect(throws: OriginError.self) { _ = try await h.read("r.mp4") }
        let cachedAfterDrop = h.store.availableRanges(for: CacheKey(url: h.url("r.mp4")))
        #expect(cachedAfterDrop.ranges.first?.lowerBound == 0)
        try await h.restart()
        await h.origin.resetCounters()
        #expect(try await h.read("r.mp4") == bytes)
        let get = try #require(h.origin.requests.first { $0.method == "GET" })
        // (The rest of the file, asked for open-ended: an origin whose totals fall short would show it.)
        #expect(get.range == "bytes=\(cachedAfterDrop.total)-")
        #expect(get.ifRange == "\"r1\"")
        #expect(h.origin.bodyBytesSent == bytes.count - Int(cachedAfterDrop.total))
        await h.close()
    }

    @Test func aDroppedConnectionResumesWithinTheSameRead() async throws {
        let h = try await LoaderHarness()
        let bytes = content(400_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/d.mp4")
        var faults = OriginFaults()
        faults.dropAfterBytes = 150_000
        faults.dropCount = 2
        h.origin.setFaults(faults)
        #expect(try await h.read("d.mp4") == bytes)
        // Each resume starts where the written bytes end (bytes in flight when the connection dropped are lost),
        // always further on, never from scratch, and always with If-Range.
        let gets = h.origin.requests.filter { $0.method == "GET" }
        #expect(gets.count == 3)
        let starts = gets.compactMap { $0.range.flatMap { Int($0.dropFirst(6).split(separator: "-").first ?? "") } }
        #expect(starts.count == 3)
        #expect(starts[0] == 0)
        #expect(starts[1] > 0 && starts[1] <= 150_000)
        #expect(starts[2] > starts[1] && starts[2] <= starts[1] + 150_000)
        #expect(gets.dropFirst().allSatisfy { $0.ifRange == OriginResource.contentTag(bytes) })
        #expect(h.origin.bodyBytesSent <= bytes.count + 2 * 150_000)
        await h.close()
    }

    @Test func twentyConcurrentReadersCostTheOriginOneCopy() async throws {
        let h = try await LoaderHarness()
        let bytes = content(800_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/c.mp4")
        h.origin.setProfile(NetworkProfile(bytesPerSecond: 4_000_000, latency: 0.05))
        let loader = h.loader
        let url = h.url("c.mp4")
        let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<20 { group.addTask { try await loader.data(LoadingRequest(url: url)) } }
            var all: [[UInt8]] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0 == bytes })
        #expect(h.origin.bodyBytesSent == bytes.count)
        await h.close()
    }

    @Test func oneReaderCancellingDoesNotBreakAnother() async throws {
        let h = try await LoaderHarness()
        let bytes = content(600_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/x.mp4")
        h.origin.setProfile(NetworkProfile(bytesPerSecond: 1_000_000, latency: 0))
        let loader = h.loader
        let url = h.url("x.mp4")
        let quitter = Task {
            let iterator = loader.load(LoadingRequest(url: url)).makeAsyncIterator()
            _ = try await iterator.next()
        }
        let stayer = Task { try await loader.data(LoadingRequest(url: url)) }
        _ = try await quitter.value
        #expect(try await stayer.value == bytes)
        #expect(h.origin.bodyBytesSent <= bytes.count + Int(h.configuration.blockSize) * 4)
        await h.close()
    }

    @Test func aReplacedOriginFileIsNeverMixed() async throws {
        let h = try await LoaderHarness()
        let v1 = content(400_000, seed: 1)
        let v2 = content(400_000, seed: 2)
        h.origin.set(OriginResource(bytes: v1), at: "/v.mp4")
        #expect(try await h.read("v.mp4", 0, 150_000) == Array(v1[0..<150_000]))
        h.origin.set(OriginResource(bytes: v2), at: "/v.mp4")
        // Same session: the cached v1 prefix is served, then the resume's If-Range gets v2 with 200. The reader
        // fails rather than mix versions, the v1 bytes are discarded, and asking again yields v2 whole.
        await #expect(throws: OriginError.resourceChanged(url: h.url("v.mp4").absoluteString)) {
            _ = try await h.read("v.mp4")
        }
        #expect(try await h.read("v.mp4") == v2)
        // Next session: HEAD finds the same version; everything comes from disk.
        try await h.restart()
        await h.origin.resetCounters()
        #expect(try await h.read("v.mp4") == v2)
        #expect(h.origin.bodyBytesSent == 0)
        // Replaced again between sessions: the cached copy is served at once while the HEAD check runs beside it,
        // so the first reader gets v2 whole, v3 whole, or an error if the check replaced v2 under it; never a mix.
        let v3 = content(300_000, seed: 3)
        h.origin.set(OriginResource(bytes: v3), at: "/v.mp4")
        try await h.restart()
        let first = try? await h.read("v.mp4")
        #expect(first == nil || first == v2 || first == v3)
        await h.loader.validate(url: h.url("v.mp4"))
        #expect(try await h.read("v.mp4") == v3)
        await h.close()
    }

    @Test func aReaderMidwayThroughAReplacedVersionFailsInsteadOfMixing() async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.readChunk = 16_384
        let h = try await LoaderHarness(configuration: configuration)
        let v1 = content(300_000, seed: 1)
        h.origin.set(OriginResource(bytes: v1), at: "/m.mp4")
        _ = try await h.read("m.mp4", 0, 100_000)
        let iterator = h.loader.load(LoadingRequest(url: h.url("m.mp4"))).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.bytes == Array(v1[0..<16_384]))
        h.origin.set(OriginResource(bytes: content(300_000, seed: 9)), at: "/m.mp4")
        await #expect(throws: OriginError.resourceChanged(url: h.url("m.mp4").absoluteString)) {
            while try await iterator.next() != nil {}
        }
        await h.close()
    }

    @Test func anOriginThatIgnoresRangeStillYieldsCorrectBytes() async throws {
        let h = try await LoaderHarness()
        let bytes = content(500_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/i.mp4")
        var faults = OriginFaults()
        faults.ignoreRange = true
        h.origin.setFaults(faults)
        #expect(try await h.read("i.mp4", 300_000, 50_000) == Array(bytes[300_000..<350_000]))
        // The 200 body was written from byte 0, so the start is cached now.
        await h.origin.resetCounters()
        #expect(try await h.read("i.mp4", 0, 300_000) == Array(bytes[0..<300_000]))
        #expect(h.origin.bodyBytesSent == 0)
        #expect(try await h.read("i.mp4") == bytes)
        await h.close()
    }
}
