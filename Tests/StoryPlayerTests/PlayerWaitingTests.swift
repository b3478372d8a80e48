import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

extension SimulationSuites {
    /// Bounded waiting: whatever the origin does, a story waits at most 30 s (of its clock) for bytes, before its
    /// first frame or in a stall, then fails in one sentence naming the origin's fault. Before, a stalled origin
    /// ended a story after 42 s and an origin trickling bytes that are not media never ended it.
    @Suite struct PlayerWaitingTests {
        static let video = MP4Fixture.file(duration: 5, payload: 400_000)

        /// Where the origin stops sending: mid-payload (after the first frame), before the header is whole, and
        /// a file that is not media (the player asks FFmpeg how long it plays, which reads on and on).
        @Test(arguments: ["mid-story", "header", "not media"])
        func aStalledOriginEndsTheStoryWithinTheWaitLimit(_ kind: String) async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 400_000, latency: 0.05))
            let bytes = kind == "not media" ? content(400_000) : Self.video
            sim.origin.set(OriginResource(bytes: bytes), at: "/s.mp4")
            var faults = OriginFaults()
            faults.stallAfterBytes = kind == "mid-story" ? 200_000 : 100
            sim.origin.setFaults(faults)
            let events = EventRecorder()
            var configuration = PlayerConfiguration()
            configuration.decodesVideo = false
            let player = Player(
                loader: sim.loader, url: sim.origin.url("s.mp4"), storyID: "s", clock: sim.clock,
                configuration: configuration, onEvent: events.handler)
            let status = try await sim.run { await player.run() }
            #expect(status.state == .failed, "\(kind): \(status.state)")
            let error = status.error ?? ""
            #expect(error.hasPrefix("gave up after waiting 30 s for \(sim.origin.url("s.mp4"))"), "\(kind): \(error)")
            if kind == "mid-story" {
                #expect(status.startupMs != nil)
                #expect(error.contains("at byte") && error.contains("of \(bytes.count)"), "\(error)")
                // 30 s of stall, then the error: not more.
                #expect(status.stallSeconds >= 29.9 && status.stallSeconds < 30.5, "\(status.stallSeconds)")
            } else {
                #expect(status.startupMs == nil)
                // The wait counts from the story's start: the error comes at 30 s of its clock.
                #expect(sim.clock.now < 31, "\(sim.clock.now)")
            }
            await sim.close()
        }
    }
}
