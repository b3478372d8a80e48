import Foundation
import MediaTestSupport
import MediaCache
import MediaFormats
import MediaOrigin
import NIOConcurrencyHelpers
import Testing

@testable import StoryPlayer

@Suite struct PreloadPolicyTests {
    private func status(_ state: PlaybackState, buffered: Double, position: Double = 1) -> PlaybackStatus {
        var status = PlaybackStatus()
        status.state = state
        status.bufferedSeconds = buffered
        status.position = position
        status.duration = 10
        return status
    }

    @Test func opensAboveHighWaterAndClosesBelowLowWater() {
        var policy = PreloadPolicy()
        func feed(_ status: PlaybackStatus) -> (changed: Bool, open: Bool) {
            let changed = policy.update(status)
            return (changed, policy.isOpen)
        }
        #expect(feed(status(.loading, buffered: 3)) == (false, false), "never while the story is still loading")
        #expect(feed(status(.playing, buffered: 1.0)) == (false, false), "between the marks a closed gate stays closed")
        #expect(feed(status(.playing, buffered: 1.5)) == (true, true))
        #expect(feed(status(.playing, buffered: 1.0)) == (false, true), "between the marks an open gate stays open")
        #expect(feed(status(.playing, buffered: 0.5)) == (true, false))
        #expect(feed(status(.playing, buffered: 0.2, position: 9.8)) == (true, true),
            "the rest of the video is buffered: nothing left to protect")
        #expect(feed(status(.stalled, buffered: 0.1)) == (true, false))
        #expect(feed(status(.finished, buffered: 0)) == (true, true))
        policy.storyChanged()
        #expect(!policy.isOpen)
    }

    @Test func targetsAreTheNextEligibleStoriesThenThePreviousOne() {
        let stories = (0..<6).map { Story(id: "s\($0)", title: "S\($0)", source: .remote(URL(string: "http://x/\($0)")!), maxViews: 1) }
        let navigator = StoryNavigator(stories: stories, playCounts: ["s3": 1], showAll: false)
        let policy = PreloadPolicy()
        #expect(policy.targets(around: 2, navigator: navigator) == [4, 5, 1], "s3 reached its maxViews")
        #expect(policy.targets(around: 0, navigator: navigator) == [1, 2])
        #expect(policy.targets(around: 5, navigator: navigator) == [4])
    }
}

/// The playing story's status and the preload's origin bytes, sampled over time.
struct Sample: Sendable {
    var status: PlaybackStatus
    var preloadBytes: Int
}

final class SampleLog: Sendable {
    let items = NIOLockedValueBox<[Sample]>([])
}

extension SimulationSuites {
    /// The preloader with the player on one link (virtual time): MP4 planning, pausing for playback, swipes,
    /// adoption by the player. The preloader on its own is tested in MediaCacheTests.
    @Suite struct PlayerPreloadingTests {
        /// 5 s at 80 kB/s of payload.
        static let video = MP4Fixture.file(duration: 5, payload: 400_000)

        private func target(_ sim: Simulation, _ path: String, _ amount: PreloadAmount = .seconds(3)) -> PreloadTarget {
            PreloadTarget(url: sim.origin.url(path), amount: amount)
        }

        private func bodyBytes(_ sim: Simulation, _ path: String) -> Int {
            sim.origin.requests.filter { $0.path == "/\(path)" }.reduce(0) { $0 + $1.bodyBytes }
        }

        @Test(arguments: [false, true]) func afterPreloadingTheFirstFrameNeedsNoOriginRequest(moovAtEnd: Bool) async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 500_000, latency: 0.1))
            let file = MP4Fixture.file(duration: 5, payload: 400_000, moovAtEnd: moovAtEnd)
            sim.origin.set(OriginResource(bytes: file), at: "/v.mp4")
            let preloader = Preloader(loader: sim.loader, planner: MediaPreloadPlanning())
            let result = try await sim.run { try await preloader.preload(target(sim, "v.mp4")) }
            #expect(result.phase == .preloaded)
            let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: file), length: Int64(file.count))
            let cached = sim.store.availableRanges(for: CacheKey(url: sim.origin.url("v.mp4")))
            #expect(cached.contains(layout.moov), "the header is cached, at the end of the file too")
            let threeSeconds = layout.mdat.lowerBound + Int64(Double(layout.mdat.count) * 3 / 5)
            #expect(cached.contains(layout.mdat.lowerBound..<threeSeconds), "three seconds of payload")
            #expect(!cached.contains(0..<Int64(file.count)), "not the whole file")
            #expect(bodyBytes(sim, "v.mp4") < file.count * 4 / 5, "no more than the plan (in whole blocks)")

            let requestsBefore = sim.origin.requests.count
            let firstFrameRequests = NIOLockedValueBox<Int?>(nil)
            let player = Player(
                loader: sim.loader, url: sim.origin.url("v.mp4"), storyID: "v", clock: sim.clock,
                onEvent: { event in
                    if case .firstFrame = event {
                        firstFrameRequests.withLockedValue { $0 = sim.origin.requests.count - requestsBefore }
                    }
                })
            let status = try await sim.run { await player.run() }
            #expect(firstFrameRequests.withLockedValue { $0 } == 0, "header, validation and first seconds all came from disk")
            #expect(status.startupMs == 0)
            #expect(status.cache == .partial)
            #expect(status.stalls == 0)
            await sim.close()
        }

        @Test func aPausedPreloaderSendsNoRequestsAndStopsWithinASlice() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 50_000, latency: 0.1))
            sim.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            let preloader = Preloader(loader: sim.loader, planner: MediaPreloadPlanning())
            preloader.pause()
            preloader.reset([target(sim, "v.mp4", .full)])
            try await sim.run { try await sim.clock.sleep(until: sim.clock.now + 5) }
            #expect(sim.origin.requests.isEmpty, "nothing goes out while paused")
            #expect(preloader.progress[CacheKey(url: sim.origin.url("v.mp4"))]?.phase == .paused)

            preloader.resume()
            try await sim.run { try await sim.clock.sleep(until: sim.clock.now + 2) }
            let beforePause = sim.origin.bodyBytesSent
            #expect(beforePause > 0)
            let requestsAtPause = sim.origin.requests.count
            preloader.pause()
            try await sim.run { try await sim.clock.sleep(until: sim.clock.now + 10) }
            // The request in flight is cancelled: at most the rest of its 64 KiB block still arrives (how much depends
            // on how fast the cancellation lands, in real time), never the rest of the video, and nothing new is asked.
            #expect(sim.origin.requests.count == requestsAtPause, "a pause holds the preload back")
            #expect(sim.origin.bodyBytesSent - beforePause <= 64 << 10, "the slice in flight was cancelled, not finished")

            preloader.resume()
            try await sim.run { await preloader.waitUntilIdle() }
            #expect(preloader.progress[CacheKey(url: sim.origin.url("v.mp4"))]?.phase == .preloaded)
            #expect(sim.store.availableRanges(for: CacheKey(url: sim.origin.url("v.mp4"))).total == Int64(Self.video.count))
            #expect(sim.origin.bodyBytesSent < Self.video.count + 64 << 10, "resumed where it stopped")
            await sim.close()
        }

        @Test func aSwipeCancelsPreloadsNoLongerWanted() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 50_000, latency: 0.1))
            for name in ["b", "c"] { sim.origin.set(OriginResource(bytes: Self.video), at: "/\(name).mp4") }
            let preloader = Preloader(loader: sim.loader, planner: MediaPreloadPlanning())
            preloader.resetPreloading(urls: [sim.origin.url("b.mp4"), sim.origin.url("c.mp4")])
            // Virtual time only moves when nothing is in flight: let b's first request go out before it does, or on
            // a busy machine a whole virtual second can pass before the preloader has sent anything.
            let deadline = ContinuousClock.now + .seconds(30)
            while !sim.origin.requests.contains(where: { $0.path == "/b.mp4" }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            try await sim.run { try await sim.clock.sleep(until: sim.clock.now + 1) }
            #expect(bodyBytes(sim, "b.mp4") > 0)
            #expect(bodyBytes(sim, "c.mp4") == 0, "one at a time, nearest first")
            let bAtSwipe = bodyBytes(sim, "b.mp4")
            let bRequests = sim.origin.requests.filter { $0.path == "/b.mp4" }.count
            preloader.reset([target(sim, "c.mp4")])
            try await sim.run { await preloader.waitUntilIdle() }
            // b's request in flight stops within its 64 KiB block; b gets no new request.
            #expect(bodyBytes(sim, "b.mp4") - bAtSwipe <= 64 << 10, "b's preload stopped")
            #expect(sim.origin.requests.filter { $0.path == "/b.mp4" }.count == bRequests)
            #expect(bodyBytes(sim, "b.mp4") < Self.video.count)
            #expect(preloader.progress[CacheKey(url: sim.origin.url("b.mp4"))] == nil)
            #expect(preloader.progress[CacheKey(url: sim.origin.url("c.mp4"))]?.phase == .preloaded)
            await sim.close()
        }

        @Test func thePlayerAdoptsAPreloadInFlightInsteadOfFetchingTwice() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 100_000, latency: 0.1))
            sim.origin.set(OriginResource(bytes: Self.video), at: "/b.mp4")
            let preloader = Preloader(loader: sim.loader, planner: MediaPreloadPlanning())
            let b = target(sim, "b.mp4")
            preloader.reset([b])
            try await sim.run { try await sim.clock.sleep(until: sim.clock.now + 0.5) }
            #expect(preloader.active == b.key, "b is being preloaded when the viewer swipes to it")
            // The swipe: b is now playing; preloading re-plans around it and must not cancel its fetch.
            preloader.reset([], playing: b.key)
            let player = Player(loader: sim.loader, url: b.url, storyID: "b", clock: sim.clock)
            let status = try await sim.run { await player.run() }
            #expect(status.state == .finished)
            let requests = sim.origin.requests.filter { $0.path == "/b.mp4" && $0.method == "GET" }
            #expect(
                requests.reduce(0) { $0 + $1.bodyBytes } == Self.video.count,
                "every byte fetched exactly once: \(requests.map { "\($0.range ?? "whole") → \($0.bodyBytes)" })")
            await sim.close()
        }

        @Test func preloadingWaitsWhileThePlayingStoryRunsLow() async throws {
            // The link is slower than the video's bitrate: the player stalls and its buffer never reaches the
            // high-water mark until the rest of the video is in.
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 50_000, latency: 0.1))
            for name in ["a", "b"] { sim.origin.set(OriginResource(bytes: Self.video), at: "/\(name).mp4") }
            let stories = ["a", "b"].map { Story(id: $0, title: $0, source: .remote(sim.origin.url("\($0).mp4"))) }
            let navigator = StoryNavigator(stories: stories, playCounts: [:], showAll: false)
            let driver = PreloadDriver(
                preloader: Preloader(loader: sim.loader, planner: MediaPreloadPlanning()), policy: PreloadPolicy(),
                resolve: StorySession.resolver(originBase: nil))
            let player = Player(loader: sim.loader, url: sim.origin.url("a.mp4"), storyID: "a", clock: sim.clock)
            driver.storyChanged(to: 0, navigator: navigator)
            let samples = SampleLog()
            let preloadBytes: @Sendable () -> Int = {
                sim.origin.requests.filter { $0.path == "/b.mp4" }.reduce(0) { $0 + $1.bodyBytes }
            }
            let status = try await sim.run {
                let watch = Task { await driver.watch(player, clock: sim.clock) }
                let sampler = Task {
                    while !Task.isCancelled {
                        let sample = Sample(status: player.status, preloadBytes: preloadBytes())
                        samples.items.withLockedValue { $0.append(sample) }
                        try await sim.clock.sleep(until: sim.clock.now + 0.05)
                    }
                }
                let status = await player.run()
                try await sim.clock.sleep(until: sim.clock.now + 3)
                sampler.cancel()
                watch.cancel()
                return status
            }
            #expect(status.stalls > 0, "the playing story ran low")
            let all = samples.items.withLockedValue { $0 }
            let policy = PreloadPolicy()
            let opened = try #require(all.firstIndex { sample in
                let s = sample.status
                return (s.state == .playing || s.state == .paused || s.state == .finished)
                    && (s.isBufferedToEnd || s.bufferedSeconds >= policy.highWater)
            })
            #expect(all[..<opened].allSatisfy { $0.preloadBytes == 0 }, "no preload byte before the gate could open")
            #expect((all.last?.preloadBytes ?? 0) > 0, "and it ran once the video was in")
            await sim.close()
        }

        @Test func preloadingDoesNotAddStallsOnASharedLink() async throws {
            func run(preload: Bool) async throws -> (stalls: Int, startups: [Int]) {
                // The link is a little faster than two videos' bitrate, so preloads compete for it.
                let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 120_000, latency: 0.1))
                let ids = ["a", "b", "c"]
                for id in ids { sim.origin.set(OriginResource(bytes: Self.video), at: "/\(id).mp4") }
                let playlist = Playlist(
                    title: "T", stories: ids.map { Story(id: $0, title: $0, source: .remote(sim.origin.url("\($0).mp4"))) },
                    file: URL(fileURLWithPath: "/t/playlist.json"))
                let session = StorySession(
                    playlist: playlist, loader: sim.loader,
                    resolve: { story in
                        guard case .remote(let url) = story.source else { fatalError("remote stories only") }
                        return ResolvedSource(url: url, key: CacheKey(url: url))
                    }, clock: sim.clock, preload: preload ? PreloadPolicy() : nil)
                let events = EventRecorder()
                _ = try await sim.run { try await session.runHeadless(emit: events.handler) }
                var stalls = 0
                var startups: [Int] = []
                for event in events.all {
                    if case .storyEnd(_, _, let count, _, _, _) = event { stalls += count }
                    if case .firstFrame(_, let ms, _, _) = event { startups.append(ms) }
                }
                await sim.close()
                return (stalls, startups)
            }
            let without = try await run(preload: false)
            let with = try await run(preload: true)
            #expect(with.stalls <= without.stalls)
            #expect(with.startups.count == 3 && without.startups.count == 3)
            #expect(with.startups.dropFirst().allSatisfy { $0 == 0 }, "preloaded stories start at once: \(with.startups)")
            #expect(without.startups.dropFirst().allSatisfy { $0 >= 100 }, "a round trip at least: \(without.startups)")
        }
    }
}
