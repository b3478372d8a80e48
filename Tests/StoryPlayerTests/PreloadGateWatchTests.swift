import Foundation
import MediaCache
import MediaFormats
import MediaOrigin
import MediaTestSupport
import Testing

@testable import StoryPlayer

/// The preload gate is told of the playing story's news instead of looking at an interval: with the clock standing
/// still (no interval ever passes), the gate opens once the story plays with enough buffered, and closes at the
/// moment the playhead would eat its buffer below the low-water mark.
@Suite(.timeLimit(.minutes(2))) struct PreloadGateWatchTests {
    @Test func theGateOpensOnThePlayersNewsWithTheClockStandingStill() async throws {
        let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 1_000_000, latency: 0.05))
        let file = sim.directory.appendingPathComponent("a.mp4")
        try Data(MP4Fixture.file(duration: 4, payload: 200_000)).write(to: file)
        let driver = PreloadDriver(
            preloader: Preloader(loader: sim.loader, planner: MediaPreloadPlanning()), policy: PreloadPolicy(),
            resolve: StorySession.resolver(originBase: nil))
        let player = Player(loader: sim.loader, url: file, storyID: "a", clock: sim.clock)
        let watch = Task { await driver.watch(player, clock: sim.clock) }
        let run = Task { await player.run() }
        // Virtual time never moves here: a watcher that slept an interval between looks would never look again.
        var seen: UInt64 = 0
        while true {
            seen = player.changes.version
            if player.status.state == .playing { break }
            await player.changes.wait(after: seen)
        }
        #expect(sim.clock.now == 0)
        // The watcher runs on its own task: its answer comes within a bound on a hang, never on an interval.
        let deadline = ContinuousClock.now + .seconds(60)
        while !driver.isOpen, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
        #expect(driver.isOpen, "the gate opened for a story buffered to its end")
        run.cancel()
        watch.cancel()
        _ = await run.value
        await watch.value
        await sim.close()
    }

    @Test func anOpenGateKnowsWhenThePlayheadWillCloseIt() {
        var policy = PreloadPolicy()
        var status = PlaybackStatus()
        status.state = .playing
        status.duration = 10
        status.bufferedSeconds = 2
        let opened = policy.update(status)
        #expect(opened)
        let closes = policy.nextChange(of: status, at: 5)
        #expect(closes.map { abs($0 - (5 + 2 - policy.lowWater)) < 0.01 } == true)
        status.state = .paused
        #expect(policy.nextChange(of: status, at: 5) == nil, "a paused story eats no buffer")
        status.state = .playing
        status.bufferedSeconds = 0.5
        let closed = policy.update(status)
        #expect(closed)
        #expect(!policy.isOpen)
        #expect(policy.nextChange(of: status, at: 5) == nil, "a closed gate opens only on news")
    }
}
