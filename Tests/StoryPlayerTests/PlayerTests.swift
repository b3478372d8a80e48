import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

extension SimulationSuites {
    @Suite struct PlayerTests {
        /// 5 s of video at 80 kB/s of payload.
        static let video = MP4Fixture.file(duration: 5, payload: 400_000)

        private func play(_ sim: Simulation, _ path: String, events: EventRecorder = EventRecorder()) async throws
            -> PlaybackStatus
        {
            let player = Player(
                loader: sim.loader, url: sim.origin.url(path), storyID: path, clock: sim.clock, onEvent: events.handler)
            return try await sim.run { await player.run() }
        }

        /// The screen waits on the session's signal instead of looking at an interval: a first frame held for the
        /// story tells it at once, and so does each change the player publishes as the story plays.
        @Test func aHeldFirstFrameAndEachChangeTellTheSessionsScreen() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.1))
            sim.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            let updates = ChangeSignal()
            let player = Player(
                loader: sim.loader, url: sim.origin.url("v.mp4"), storyID: "v", clock: sim.clock, updates: updates)
            player.hold(VideoFrame(width: 1, height: 1, rgb: [0, 0, 0], time: 0))
            #expect(updates.version == 1)
            let status = try await sim.run { await player.run() }
            #expect(status.state == .finished)
            #expect(updates.version >= 3, "\(updates.version) changes told")
            await sim.close()
        }

        @Test func aLinkSlowerThanTheBitrateStallsAndAFasterOneDoesNot() async throws {
            let slow = try await Simulation(profile: NetworkProfile(bytesPerSecond: 50_000, latency: 0.1))
            slow.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            let slowStatus = try await play(slow, "v.mp4")
            await slow.close()

            let fast = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.1))
            fast.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            let fastStatus = try await play(fast, "v.mp4")
            await fast.close()

            #expect(slowStatus.state == .finished)
            #expect(fastStatus.state == .finished)
            #expect(slowStatus.stalls > 0)
            #expect(slowStatus.stallSeconds > 1)
            #expect(fastStatus.stalls == 0)
            let slowStartup = try #require(slowStatus.startupMs)
            let fastStartup = try #require(fastStatus.startupMs)
            // Startup needs a round trip plus the header and half a second of payload (40 kB): at 50 kB/s about a
            // second, at 1 MB/s one 100 ms round trip and a fraction of the first 64 KiB block.
            #expect(slowStartup > 800)
            #expect(fastStartup < 500)
            #expect(fastStartup >= 100)
            #expect(fastStatus.cache == .miss)
        }

        @Test func aSecondPlayStartsFromTheCache() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.2))
            sim.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            let first = try await play(sim, "v.mp4")
            try await sim.restart()
            await sim.origin.resetCounters()
            let events = EventRecorder()
            let second = try await play(sim, "v.mp4", events: events)
            #expect(first.cache == .miss)
            #expect(second.cache == .hit)
            #expect(second.stalls == 0)
            #expect(sim.origin.bodyBytesSent == 0)
            // Only the once-per-session HEAD check touched the network.
            #expect(sim.origin.requests.map(\.method) == ["HEAD"])
            #expect((second.startupMs ?? .max) < (first.startupMs ?? 0))
            #expect(events.all.contains { if case .firstFrame(_, _, .hit, _) = $0 { true } else { false } })
            await sim.close()
        }

        @Test func aMoovAtTheEndMakesTheTailRequestAndStillPlays() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 500_000, latency: 0.05))
            let file = MP4Fixture.file(duration: 4, payload: 300_000, moovAtEnd: true)
            sim.origin.set(OriginResource(bytes: file), at: "/tail.mp4")
            let status = try await play(sim, "tail.mp4")
            #expect(status.state == .finished)
            #expect(status.duration == 4)
            let ranges = sim.origin.requests.compactMap(\.range)
            let tailStart = file.count - 64 * 1024
            #expect(ranges.contains { $0.hasPrefix("bytes=") && (Int($0.dropFirst(6).split(separator: "-")[0]) ?? 0) >= tailStart - 64 * 1024 },
                "\(ranges)")
            #expect(sim.origin.bodyBytesSent <= file.count + 128 * 1024)
            await sim.close()
        }

        @Test func nonMP4MediaUseThePlaylistDuration() async throws {
            let sim = try await Simulation(profile: .unlimited)
            sim.origin.set(OriginResource(bytes: [UInt8](repeating: 0x47, count: 100_000), contentType: "video/mp2t"), at: "/a.ts")
            let player = Player(loader: sim.loader, url: sim.origin.url("a.ts"), storyID: "ts", clock: sim.clock,
                fallbackDuration: 2)
            let status = try await sim.run { await player.run() }
            #expect(status.state == .finished)
            #expect(status.duration == 2)
            // Without one, FFmpeg is asked (on wall-clock time: PhoneMediaTests).
            await sim.close()
        }

        @Test func aPausedPlayerHoldsItsPosition() async throws {
            let sim = try await Simulation(profile: .unlimited)
            sim.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            let player = Player(loader: sim.loader, url: sim.origin.url("v.mp4"), storyID: "p", clock: sim.clock)
            let status = try await sim.run { () async -> PlaybackStatus in
                let task = Task { await player.run() }
                // Once playing, play 1 s, pause for 10 s, then resume.
                while player.status.state == .loading {
                    try? await sim.clock.sleep(until: sim.clock.now + 0.05)
                }
                try? await sim.clock.sleep(until: sim.clock.now + 1)
                player.setPaused(true)
                try? await sim.clock.sleep(until: sim.clock.now + 0.1)
                let pausedAt = player.status.position
                try? await sim.clock.sleep(until: sim.clock.now + 10)
                let stillAt = player.status.position
                #expect(player.status.state == .paused)
                #expect(abs(stillAt - pausedAt) < 0.051)
                player.setPaused(false)
                return await task.value
            }
            #expect(status.state == .finished)
            #expect(sim.clock.now >= 15)
            #expect(status.position == 5)
            await sim.close()
        }

        @Test func aCachedStoryWithTheOriginDownPlaysAtOnceAndShowsOffline() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.2))
            sim.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            _ = try await play(sim, "v.mp4")
            try await sim.restart()
            await sim.origin.shutdown()
            let events = EventRecorder()
            let status = try await play(sim, "v.mp4", events: events)
            #expect(status.state == .finished)
            #expect(status.stalls == 0)
            #expect(status.cache == .offline)
            await sim.close()
        }

        @Test func aNewVersionFoundWhileTheCachedOnePlaysRestartsTheStoryOnIt() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.2))
            sim.origin.set(OriginResource(bytes: Self.video), at: "/v.mp4")
            _ = try await play(sim, "v.mp4")
            try await sim.restart()
            // The origin now holds a 4 s video, and answers the check only once the cached one shows its first frame.
            sim.origin.set(OriginResource(bytes: MP4Fixture.file(duration: 4, payload: 320_000)), at: "/v.mp4")
            var faults = OriginFaults()
            faults.holdHead = true
            sim.origin.setFaults(faults)
            let origin = sim.origin
            let player = Player(
                loader: sim.loader, url: sim.origin.url("v.mp4"), storyID: "v", clock: sim.clock,
                onEvent: { event in
                    if case .firstFrame = event { origin.resumePaused() }
                })
            let status = try await sim.run { await player.run() }
            #expect(status.state == .finished)
            #expect(status.duration == 4, "the story did not start over on the new version")
            #expect(sim.store.info(for: CacheKey(url: sim.origin.url("v.mp4")))?.isComplete == true)
            await sim.close()
        }
    }
}
