import Foundation
import MediaCache
import MediaOrigin
import MediaTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import StoryPlayer

extension SimulationSuites {
    /// HLS stories: the player reads a variant's segments through the loader, one after another, at the media rate.
    @Suite struct PlayerHLSTests {
        /// A master playlist of two variants, each of three 2-second segments (made-up bytes: the picture is off).
        private func serveStream(
            on origin: MediaOriginServer, segment: Int = 40_000, live: Bool = false, subtitles: Bool = false
        ) {
            let type = "application/vnd.apple.mpegurl"
            let rendition = subtitles
                ? "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"s\",LANGUAGE=\"en\",DEFAULT=YES,URI=\"subs/index.m3u8\"\n" : ""
            if subtitles {
                var text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
                for index in 0..<3 {
                    text += "#EXTINF:2.0,\nsub\(index).vtt\n"
                    origin.set(OriginResource(bytes: Array("WEBVTT\n\n00:00:0\(index * 2).500 --> 00:00:0\(index * 2 + 1).000\nline \(index)\n".utf8), contentType: "text/vtt"),
                        at: "/s/subs/sub\(index).vtt")
                }
                text += "#EXT-X-ENDLIST\n"
                origin.set(OriginResource(bytes: Array(text.utf8), contentType: type), at: "/s/subs/index.m3u8")
            }
            origin.set(OriginResource(bytes: Array("""
                #EXTM3U
                \(rendition)#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360
                hi/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=200000,RESOLUTION=320x180
                lo/index.m3u8
                """.utf8), contentType: type), at: "/s/master.m3u8")
            for variant in ["hi", "lo"] {
                let size = variant == "hi" ? segment * 4 : segment
                var text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
                for index in 0..<3 {
                    text += "#EXTINF:2.0,\nseg\(index).ts\n"
                    origin.set(OriginResource(bytes: content(size, seed: index), contentType: "video/mp2t"),
                        at: "/s/\(variant)/seg\(index).ts")
                }
                if !live { text += "#EXT-X-ENDLIST\n" }
                origin.set(OriginResource(bytes: Array(text.utf8), contentType: type), at: "/s/\(variant)/index.m3u8")
            }
        }

        private func player(
            _ sim: Simulation, _ path: String, throughput: ThroughputEstimate? = nil, events: EventRecorder = EventRecorder(),
            readAhead: Double = PlayerConfiguration().readAhead
        ) -> Player {
            var configuration = PlayerConfiguration()
            configuration.decodesVideo = false
            configuration.readAhead = readAhead
            return Player(
                loader: sim.loader, url: sim.origin.url(path), storyID: "hls", clock: sim.clock, configuration: configuration,
                throughput: throughput, onEvent: events.handler)
        }

        /// Origin body bytes by path, for the segments.
        private func segmentBytes(_ sim: Simulation) -> [String: Int] {
            sim.origin.requests.filter { $0.path.hasSuffix(".ts") }.reduce(into: [:]) { $0[$1.path, default: 0] += $1.bodyBytes }
        }

        /// The variant switches an event reported: (position in ms, bandwidth, resolution).
        private func switches(_ events: EventRecorder) -> [String] {
            events.all.compactMap { event in
                guard case .variant(_, let positionMs, let bandwidth, let resolution) = event else { return nil }
                return "\(positionMs) \(bandwidth) \(resolution ?? "")"
            }
        }

        /// A story that started on the lowest variant (nothing measured yet) moves up at the first segment boundary
        /// once its own first segment showed the link carries more; one that started high on an earlier measurement
        /// moves down when the link turns out slow. Each segment's bytes leave the origin once; the story plays to
        /// its end on the time line it started with.
        @Test(arguments: [(1_000_000, nil, "2000 800000 640x360", ["/s/lo/seg0.ts", "/s/hi/seg1.ts", "/s/hi/seg2.ts"]),
            (100_000, 8_000_000.0, "2000 200000 320x180", ["/s/hi/seg0.ts", "/s/lo/seg1.ts", "/s/lo/seg2.ts"])])
        func anHLSStoryMovesToTheVariantTheLinkCarriesAtASegmentBoundary(
            bytesPerSecond: Int, measured: Double?, switched: String, played: [String]
        ) async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: bytesPerSecond, latency: 0.02))
            serveStream(on: sim.origin, segment: 400_000)
            let estimate = ThroughputEstimate()
            if let measured { estimate.record(bytes: Int64(measured / 8 / 4), seconds: 0.25) }
            let events = EventRecorder()
            let playing = player(sim, "s/master.m3u8", throughput: estimate, events: events)
            let status = try await sim.run { await playing.run() }
            #expect(status.state == .finished, "\(status.error ?? "")")
            #expect(abs(status.position - 6) < 1e-6)
            #expect(switches(events) == [switched])
            let parts = try #require(playing.parts)
            #expect(parts.parts.map(\.url.path) == played)
            let bytes = segmentBytes(sim)
            for path in played { #expect(bytes[path] == (path.contains("/hi/") ? 1_600_000 : 400_000), "\(path)") }
            for (path, sent) in bytes { #expect(sent <= (path.contains("/hi/") ? 1_600_000 : 400_000), "\(path) sent twice") }
            #expect(bytes[played[0].replacingOccurrences(of: "seg0", with: "seg1")] ?? 0 < 400_000)
            await sim.close()
        }

        /// A cold HLS story's first frame waits for its playlists and its first segment only: the other segments'
        /// lengths are learned when playback reaches them, not all before it starts.
        @Test func theFirstFrameWaitsForTheFirstSegmentOnly() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.1))
            serveStream(on: sim.origin, segment: 100_000)
            let before = NIOLockedValueBox<[String]?>(nil)
            let events = EventRecorder()
            let playing = Player(
                loader: sim.loader, url: sim.origin.url("s/master.m3u8"), storyID: "hls", clock: sim.clock,
                configuration: { var c = PlayerConfiguration(); c.decodesVideo = false; return c }(),
                onEvent: { event in
                    if case .firstFrame = event {
                        before.withLockedValue { $0 = sim.origin.requests.map(\.path).filter { $0.hasSuffix(".ts") } }
                    }
                    events.handler(event)
                })
            let status = try await sim.run { await playing.run() }
            #expect(status.state == .finished, "\(status.error ?? "")")
            #expect(Set(before.withLockedValue { $0 } ?? ["no first frame"]) == ["/s/lo/seg0.ts"])
            #expect(segmentBytes(sim) == ["/s/lo/seg0.ts": 100_000, "/s/lo/seg1.ts": 100_000, "/s/lo/seg2.ts": 100_000])
            await sim.close()
        }

        /// Seeking lands on the segment holding the target: the download goes on from that segment's start (its key
        /// frame), and the segments skipped are not read.
        @Test func aSeekRestartsTheDownloadAtTheSegmentHoldingTheTarget() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.02))
            serveStream(on: sim.origin, segment: 400_000)
            let playing = player(sim, "s/master.m3u8", readAhead: 1)
            let status = try await sim.run { () async -> PlaybackStatus in
                let task = Task { await playing.run() }
                while playing.status.state == .loading { try? await sim.clock.sleep(until: sim.clock.now + 0.05) }
                playing.setPaused(true)
                try? await sim.clock.sleep(until: sim.clock.now + 0.5)
                playing.seek(by: 4.5)
                try? await sim.clock.sleep(until: sim.clock.now + 0.1)
                #expect(abs(playing.status.position - 4.5) < 0.1)
                playing.setPaused(false)
                return await task.value
            }
            #expect(status.state == .finished, "\(status.error ?? "")")
            let bytes = segmentBytes(sim)
            #expect(bytes["/s/lo/seg2.ts"] == 400_000)
            // Segment 1 (2–4 s) was skipped: only its first block, read to learn its length, was asked for (twice
            // when the seek cut the read-ahead's request short: bytes on their way are not in the cache).
            let skipped = sim.origin.requests.filter { $0.path == "/s/lo/seg1.ts" }
            #expect(
                (1...2).contains(skipped.count) && skipped.allSatisfy { $0.range == "bytes=0-65535" }
                    && bytes["/s/lo/seg1.ts"] ?? 0 >= 65_536,
                "\(skipped.map { "\($0.range ?? "-") \($0.bodyBytes)" })")
            await sim.close()
        }

        /// A story played before partly on one variant and partly on another starts again on the variant whose first
        /// segment is cached, though a higher variant's playlist is cached too, and plays through from the cache (it
        /// used to start on the higher variant and fetch that first segment again).
        @Test func aReplayStartsOnTheVariantWhoseFirstSegmentIsCached() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.02))
            serveStream(on: sim.origin, segment: 10_000)
            for name in ["s/master.m3u8", "s/hi/index.m3u8", "s/lo/index.m3u8", "s/lo/seg0.ts", "s/hi/seg1.ts", "s/hi/seg2.ts"] {
                _ = try await sim.run { try await sim.read(name) }
            }
            await sim.origin.resetCounters()
            let events = EventRecorder()
            let status = try await sim.run { await player(sim, "s/master.m3u8", events: events).run() }
            #expect(status.state == .finished, "\(status.error ?? "")")
            #expect(segmentBytes(sim).isEmpty, "\(segmentBytes(sim))")
            #expect(switches(events) == ["2000 800000 640x360"])
            // Every segment is in the cache, if not all in one variant: the indicator says so.
            #expect(status.cache == .hit)
            await sim.close()
        }

        /// After a story measured the link, an HLS story starts on the highest variant it carries with headroom
        /// (hi needs 800 kbit/s: a 200 kbit/s link keeps lo, an 8 Mbit/s one takes hi).
        @Test(arguments: [(25_000, "lo"), (1_000_000, "hi")])
        func anHLSStoryStartsOnTheVariantTheMeasuredLinkCarries(bytesPerSecond: Int, variant: String) async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: bytesPerSecond, latency: 0.02))
            serveStream(on: sim.origin, segment: 10_000)
            sim.origin.set(OriginResource(bytes: MP4Fixture.file(duration: 4, payload: 400_000)), at: "/a.mp4")
            let estimate = ThroughputEstimate()
            #expect(estimate.bitsPerSecond == nil)
            let first = try await sim.run { await player(sim, "a.mp4", throughput: estimate).run() }
            #expect(first.state == .finished)
            let measured = try #require(estimate.bitsPerSecond)
            #expect(measured <= Double(bytesPerSecond) * 8 * 1.05, "measured \(measured)")
            let hls = try await sim.run { await player(sim, "s/master.m3u8", throughput: estimate).run() }
            #expect(hls.state == .finished, "\(hls.error ?? "")")
            let variants = Set(sim.origin.requests.filter { $0.path.hasSuffix(".ts") }.map { $0.path.split(separator: "/")[1] })
            #expect(variants == [Substring(variant)])
            // A later session that has measured nothing yet plays the variant it has in the cache, not the lowest.
            let requests = sim.origin.requests.count
            let again = try await sim.run { await player(sim, "s/master.m3u8", throughput: ThroughputEstimate()).run() }
            #expect(again.cache == .hit)
            #expect(!sim.origin.requests.dropFirst(requests).contains { $0.path.hasSuffix(".ts") })
            await sim.close()
        }

        @Test func anHLSStoryPlaysItsLowestVariantThenFromTheCache() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.05))
            serveStream(on: sim.origin)
            let playing = player(sim, "s/master.m3u8")
            let first = try await sim.run { await playing.run() }
            #expect(first.state == .finished, "\(first.error ?? "")")
            // The story is its three segments as one run: what the pane and the cache map show.
            let parts = try #require(playing.parts)
            #expect(parts.parts.map(\.start) == [0, 40_000, 80_000])
            #expect(parts.index(containing: 40_000) == 1 && parts.index(containing: 120_000) == nil)
            #expect(parts.cachedRanges(in: sim.loader) == ByteRangeSet([0..<120_000]))
            #expect(parts.contiguousCached(from: 30_000, in: sim.loader) == 90_000)
            #expect(first.duration == 6)
            #expect(first.cache == .miss)
            #expect(first.contentLength == 120_000)
            // Starting low: only the low variant's segments were fetched, each once.
            let segmentBytes = sim.origin.requests.filter { $0.path.hasSuffix(".ts") }
            #expect(Set(segmentBytes.map(\.path)) == ["/s/lo/seg0.ts", "/s/lo/seg1.ts", "/s/lo/seg2.ts"])
            #expect(segmentBytes.reduce(0) { $0 + $1.bodyBytes } == 120_000)
            await sim.origin.resetCounters()
            let second = try await sim.run { await player(sim, "s/master.m3u8").run() }
            #expect(second.state == .finished)
            #expect(second.cache == .hit)
            #expect(sim.origin.bodyBytesSent == 0)
            #expect(second.stalls == 0)
            await sim.close()
        }

        /// Plays story "a" (/a.mp4) of a two-story list with the HLS story next, preloading as the player does.
        private func preloadingTheHLSStoryNext(_ sim: Simulation) -> (Preloader, PreloadDriver) {
            let stories = [
                Story(id: "a", title: "a", source: .remote(sim.origin.url("a.mp4"))),
                Story(id: "hls", title: "hls", source: .remote(sim.origin.url("s/master.m3u8"))),
            ]
            let navigator = StoryNavigator(stories: stories, playCounts: [:], showAll: false)
            let preloader = Preloader(loader: sim.loader, planner: MediaPreloadPlanning())
            let driver = PreloadDriver(
                preloader: preloader, policy: PreloadPolicy(), resolve: StorySession.resolver(originBase: nil),
                loader: sim.loader)
            driver.storyChanged(to: 0, navigator: navigator)
            preloader.resume()
            return (preloader, driver)
        }

        @Test func preloadingAnHLSStoryFetchesItsPlaylistsAndItsFirstSecondsOfSegments() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.05))
            serveStream(on: sim.origin, subtitles: true)
            sim.origin.set(OriginResource(bytes: content(1_000)), at: "/a.mp4")
            let (preloader, driver) = preloadingTheHLSStoryNext(sim)
            let store = sim.loader
            let key: @Sendable (String) -> CacheKey = { CacheKey(url: sim.origin.url("s/lo/\($0)")) }
            try await sim.run {
                // Bounded: the playlists are read, then the segments of the first 3 s (two of 2 s) preloaded.
                for _ in 0..<600 where store.cached(key("seg1.ts"))?.state != .complete {
                    try await sim.clock.sleep(until: sim.clock.now + 0.1)
                }
                await preloader.waitUntilIdle()
            }
            #expect(store.cached(key("seg0.ts"))?.state == .complete)
            #expect(store.cached(key("seg1.ts"))?.state == .complete)
            #expect(store.cached(key("seg2.ts")) == nil, "only the first seconds are preloaded")
            // The default subtitle rendition's first seconds too.
            let subtitle: @Sendable (String) -> CacheKey = { CacheKey(url: sim.origin.url("s/subs/\($0)")) }
            #expect(store.cached(subtitle("sub0.vtt"))?.state == .complete)
            #expect(store.cached(subtitle("sub2.vtt")) == nil)
            #expect(!sim.origin.requests.contains { $0.path.hasPrefix("/s/hi/") && $0.path.hasSuffix(".ts") })
            withExtendedLifetime(driver) {}
            await sim.close()
        }

        @Test func preloadingAReplayTakesTheVariantWhoseFirstSegmentIsCached() async throws {
            // lo's first seconds are cached (played before); hi's playlist too, which alone would pick hi.
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.05))
            serveStream(on: sim.origin)
            sim.origin.set(OriginResource(bytes: content(1_000)), at: "/a.mp4")
            for name in ["s/lo/index.m3u8", "s/lo/seg0.ts", "s/lo/seg1.ts", "s/hi/index.m3u8"] {
                _ = try await sim.run { try await sim.read(name) }
            }
            await sim.origin.resetCounters()
            let (preloader, driver) = preloadingTheHLSStoryNext(sim)
            let store = sim.loader
            let master = CacheKey(url: sim.origin.url("s/master.m3u8"))
            try await sim.run {
                // Bounded: the master playlist is fetched (not cached yet), then the variant's first seconds planned.
                for _ in 0..<600 where store.cached(master)?.state != .complete {
                    try await sim.clock.sleep(until: sim.clock.now + 0.1)
                }
                await preloader.waitUntilIdle()
            }
            #expect(store.cached(master)?.state == .complete)
            // The player starts on lo (its first segment is cached): the preload fetches no segment of hi.
            let segments = sim.origin.requests.filter { $0.path.hasSuffix(".ts") }.map(\.path)
            #expect(segments.isEmpty, "\(segments)")
            withExtendedLifetime(driver) {}
            await sim.close()
        }

        @Test func aLiveStreamFailsWithASentence() async throws {
            let sim = try await Simulation(profile: .unlimited)
            serveStream(on: sim.origin, live: true)
            let status = try await sim.run { await player(sim, "s/master.m3u8").run() }
            #expect(status.state == .failed)
            #expect(status.error == "this story is a live HLS stream (its playlist has no #EXT-X-ENDLIST); only complete playlists play")
            await sim.close()
        }

        @Test func aMalformedPlaylistSaysWhichLine() async throws {
            let sim = try await Simulation(profile: .unlimited)
            sim.origin.set(OriginResource(bytes: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:x,\na.ts\n".utf8),
                contentType: "application/vnd.apple.mpegurl"), at: "/bad.m3u8")
            let status = try await sim.run { await player(sim, "bad.m3u8").run() }
            #expect(status.error == "the HLS playlist bad.m3u8: line 3: #EXTINF duration 'x' is not a number of seconds")
            await sim.close()
        }
    }
}
