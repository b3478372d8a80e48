import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import NIOConcurrencyHelpers
import MediaFormats
import Testing

@testable import StoryPlayer

extension SimulationSuites {
    /// Captions on the story's clock (virtual time): each cue reported when the playhead reaches it, and what
    /// shows follows seeks; a caption file that cannot be read leaves the story playing as it would.
    @Suite struct PlayerCaptionTests {
        static let video = MP4Fixture.file(duration: 4, payload: 200_000)
        static let srt = """
            1
            00:00:00,500 --> 00:00:01,000
            one

            2
            00:00:02,250 --> 00:00:03,000
            two

            3
            00:00:09,000 --> 00:00:10,000
            past the end
            """

        /// Records each event with the clock's time when it came.
        final class Timed: Sendable {
            let clock: VirtualClock
            let events = NIOLockedValueBox<[(Double, PlayerEvent)]>([])
            init(clock: VirtualClock) { self.clock = clock }
            var handler: @Sendable (PlayerEvent) -> Void { { event in self.events.withLockedValue { $0.append((self.clock.now, event)) } } }
        }

        /// A simulation serving the 4 s story, and its caption file in a scratch folder.
        static func rig() async throws -> (Simulation, TemporaryDirectory, URL) {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 2_000_000, latency: 0.01))
            sim.origin.set(OriginResource(bytes: video), at: "/c.mp4")
            let scratch = TemporaryDirectory()
            try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
            let file = scratch.url.appendingPathComponent("c.srt")
            try Data(srt.utf8).write(to: file)
            return (sim, scratch, file)
        }

        @Test func eachCueIsReportedWhenThePlayheadReachesIt() async throws {
            let (sim, scratch, file) = try await Self.rig()
            defer { scratch.cleanup() }
            let timed = Timed(clock: sim.clock)
            let player = Player(
                loader: sim.loader, url: sim.origin.url("c.mp4"), storyID: "c", clock: sim.clock,
                captions: [
                    CaptionSource(location: .local(path: "missing.srt", file: scratch.url.appendingPathComponent("missing.srt")), language: "de"),
                    CaptionSource(location: .local(path: "c.srt", file: file), language: "en"),
                ],
                onEvent: timed.handler)
            let status = try await sim.run { await player.run() }
            #expect(status.state == .finished)
            let events = timed.events.withLockedValue { $0 }
            let playing = try #require(events.first { if case .firstFrame = $0.1 { return true } else { return false } }?.0)
            let captions = events.compactMap { time, event -> (Double, CaptionShown)? in
                if case .caption(_, let shown) = event { return (time - playing, shown) }
                return nil
            }
            #expect(captions.map(\.1.text) == ["one", "two"], "the cue past the end never shows")
            for (at, shown) in captions {
                #expect(abs(at - shown.start) < 0.05, "\(shown.text) reported at \(at) s of the story")
                #expect(shown.language == "en" && shown.origin == .sidecar)
            }
            await sim.close()
        }

        @Test func aSeekBackShowsTheCueAgain() async throws {
            let (sim, scratch, file) = try await Self.rig()
            defer { scratch.cleanup() }
            let timed = Timed(clock: sim.clock)
            let player = Player(
                loader: sim.loader, url: sim.origin.url("c.mp4"), storyID: "c", clock: sim.clock,
                captions: [CaptionSource(location: .local(path: "c.srt", file: file), language: nil)],
                onEvent: timed.handler)
            let clock = sim.clock
            let status = try await sim.run {
                // Past the first cue, back a second: it shows again, then the second.
                let seeker = Task {
                    while player.status.position < 1.2, player.status.state != .finished {
                        try await clock.sleep(until: clock.now + 0.05)
                    }
                    player.seek(by: -1)
                }
                let status = await player.run()
                seeker.cancel()
                return status
            }
            #expect(status.state == .finished)
            let texts = timed.events.withLockedValue { $0 }.compactMap { _, event -> String? in
                if case .caption(_, let shown) = event { return shown.text }
                return nil
            }
            #expect(texts == ["one", "one", "two"], "\(texts)")
            await sim.close()
        }

        @Test func aStoryResolvedLatePlaysWithTheCaptionsItWasFoundWith() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 2_000_000, latency: 0.01))
            let page = sim.origin.url("watch/p")
            let media = sim.origin.url("p.mp4")
            let words = CaptionSource(location: .remote(sim.origin.url("p.vtt")), language: "en")
            var story = Story(id: "p", title: "p", source: .remote(page))
            story.resolvesLate = true
            story.cacheKey = "page\n\(page.absoluteString)"
            let late = LateSources { _ in .found(media, captions: [words]) }
            let session = StorySession(
                playlist: Playlist(title: "T", stories: [story], file: URL(fileURLWithPath: "/t/p.json")), loader: sim.loader,
                resolve: StorySession.resolver(originBase: nil), clock: sim.clock, late: late)
            #expect(late.isPending(story))
            #expect(await late.resolve(story) == .found(media, captions: [words]))
            let player = session.makePlayer(for: 0) { _ in }
            #expect(player.url == media && player.words.sources == [words] && player.key == CacheKey(custom: story.cacheKey ?? ""))
            await sim.close()
        }

        @Test func aLoopThatWakesLateStillReportsTheCuesItMissedButNotOnesASeekJumped() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 2_000_000, latency: 0.01))
            let events = EventRecorder()
            let player = Player(
                loader: sim.loader, url: sim.origin.url("c.mp4"), storyID: "c", clock: sim.clock, onEvent: events.handler)
            player.words.add([CaptionTrack(language: nil, origin: .sidecar, cues: CaptionDocumentParsing.cues(Self.srt))])
            var reporting = CaptionReporting()
            func look(at position: Double) {
                var status = PlaybackStatus()
                status.state = .playing
                status.position = position
                _ = player.words.wake(status, reported: &reporting, decoder: nil)
            }
            look(at: 0.1)
            look(at: 1.05)  // "one" (0.5-1.0) came and went while the loop slept
            look(at: 2.5)   // "two" shows
            look(at: 0)     // back to the start, then a seek over both cues: neither is reported again
            look(at: 3.5)
            look(at: 9.5)
            let texts = events.all.compactMap { event -> String? in
                if case .caption(_, let shown) = event { return shown.text }
                return nil
            }
            #expect(texts == ["one", "two", "past the end"], "\(texts)")
            await sim.close()
        }

        @Test func whatShowsFollowsTheStorysClock() {
            let track = CaptionTrack(language: nil, origin: .sidecar, cues: CaptionDocumentParsing.cues(Self.srt))
            #expect(CaptionShown(track, at: 0.4) == nil)
            #expect(CaptionShown(track, at: 0.5)?.text == "one")
            #expect(CaptionShown(track, at: 1.0) == nil)
            // A seek back to 2.5 s, a replay from 0: what shows is a function of the playhead alone.
            #expect(CaptionShown(track, at: 2.5)?.text == "two")
            #expect(CaptionShown(track, at: 0.7)?.text == "one")
        }
    }
}

/// Parsing helper for the tests.
enum CaptionDocumentParsing {
    static func cues(_ text: String) -> [CaptionCue] { CaptionDocument.parse(Array(text.utf8)).cues }
}
