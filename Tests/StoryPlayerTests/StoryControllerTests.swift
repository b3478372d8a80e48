import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import NIOConcurrencyHelpers
import Testing

@testable import MediaCache

@testable import StoryPlayer

extension SimulationSuites {
    @Suite struct StoryControllerTests {
        private func controller(
            _ sim: Simulation, preload: Bool = true, duration: Double = 2, payload: Int = 40_000,
            events: EventRecorder = EventRecorder()
        ) throws -> StoryController {
            let ids = ["a", "b", "c"]
            for id in ids {
                sim.origin.set(OriginResource(bytes: MP4Fixture.file(duration: duration, payload: payload)), at: "/\(id).mp4")
            }
            let playlist = Playlist(
                title: "T",
                stories: ids.map { Story(id: $0, title: $0.uppercased(), source: .remote(sim.origin.url("\($0).mp4")), maxViews: 2) },
                file: URL(fileURLWithPath: "/t/playlist.json"))
            let session = StorySession(
                playlist: playlist, loader: sim.loader, resolve: StorySession.resolver(originBase: nil), clock: sim.clock,
                preload: preload ? PreloadPolicy() : nil, playCounts: sim.playCounts)
            return try StoryController(session: session, onEvent: events.handler)
        }

        /// Advances virtual time until `predicate` holds for the snapshot (or 60 virtual seconds pass).
        private func until(_ sim: Simulation, _ controller: StoryController, _ predicate: @escaping @Sendable (SessionSnapshot) -> Bool)
            async throws -> SessionSnapshot
        {
            try await sim.run {
                let deadline = sim.clock.now + 60
                while !predicate(controller.snapshot()), sim.clock.now < deadline {
                    try await sim.clock.sleep(until: sim.clock.now + 0.05)
                }
                return controller.snapshot()
            }
        }

        @Test func navigationAutoAdvanceReplayAndTheEnd() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.05))
            let events = EventRecorder()
            let controller = try controller(sim, events: events)
            controller.start()
            var snapshot = try await until(sim, controller) { $0.status?.state == .playing }
            #expect(snapshot.current == 0)
            #expect(snapshot.stories[0].plays == 1, "a play counts at the first frame")
            #expect(snapshot.status?.cache == .miss)

            controller.perform(.next)
            snapshot = try await until(sim, controller) { $0.current == 1 && $0.status?.state == .playing }
            #expect(snapshot.stories[1].plays == 1)
            controller.perform(.togglePause)
            snapshot = try await until(sim, controller) { $0.status?.state == .paused }
            let position = snapshot.status?.position ?? -1
            try await sim.run { try await sim.clock.sleep(until: sim.clock.now + 1) }
            #expect(controller.snapshot().status?.position == position, "a paused story does not move")
            #expect(controller.snapshot().paused)
            controller.perform(.previous)
            snapshot = try await until(sim, controller) { $0.current == 0 && $0.status?.state == .playing }
            #expect(!snapshot.paused, "navigation resumes playback")
            #expect(snapshot.status?.cache == .hit || snapshot.status?.cache == .partial)
            #expect(snapshot.stories[0].plays == 1, "going back shows a again without counting another view")

            // Auto-advance through b and c to the end.
            snapshot = try await until(sim, controller) { $0.finished }
            #expect(snapshot.current == nil)
            #expect(snapshot.stories.map(\.plays) == [1, 1, 1], "one view per story and run")
            #expect(snapshot.stories.allSatisfy { $0.eligible }, "none reached its maxViews of 2 in one run")
            // The screen reports what a headless run does: each start and end, and the playlist's end.
            let names = events.all.compactMap { event -> String? in
                switch event {
                case .storyStart(_, let id, _, _, _, _, _, _): return "start \(id)"
                case .storyEnd(let id, _, _, _, let completed, _): return "end \(id)\(completed ? "" : " stopped")"
                case .playlistEnd(let summary): return "done \(summary.finished) \(summary.failed)"
                default: return nil
                }
            }
            #expect(names.first == "start a")
            #expect(names.last == "done 3 0", "\(names)")
            #expect(names.filter { $0 == "end c" }.count == 1)

            controller.perform(.previous)
            snapshot = try await until(sim, controller) { $0.current == 2 }
            #expect(!snapshot.finished, "← after the end goes back to the last story")
            controller.perform(.replay)
            let startsOfC = { @Sendable in
                events.all.filter { if case .storyStart(_, "c", _, _, _, _, _, _) = $0 { true } else { false } }.count
            }
            snapshot = try await until(sim, controller) { $0.current == 2 && startsOfC() == 3 && $0.status?.state == .playing }
            #expect(snapshot.stories[2].plays == 1, "r replays the current story, which was viewed already")
            await controller.stop()
            #expect(try sim.playCounts.count(StorySession.playKey(controller.session.playlist.stories[0])) == 1)
            #expect(controller.summary.watched == 3)
            await sim.close()
        }

        @Test func aSnapshotNeverWaitsForTheStore() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.05))
            let controller = try controller(sim, preload: false)
            controller.start()
            _ = try await until(sim, controller) { $0.status?.state == .playing && $0.stories[0].cachedBytes > 0 }
            // Another thread holds the store's lock (a long write, a checksum pass): the snapshot a UI thread takes
            // up to fifty times a second still returns, with the figures last read.
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holding = NIOLockedValueBox(false)
            let store = sim.loader.store
            Thread.detachNewThread {
                store.table.locked { _ in
                    holding.withLockedValue { $0 = true }
                    entered.signal()
                    _ = release.wait(timeout: .now() + 30)
                    holding.withLockedValue { $0 = false }
                }
            }
            entered.wait()
            let snapshot = controller.snapshot()
            let stillHeld = holding.withLockedValue { $0 }
            release.signal()
            #expect(stillHeld, "the snapshot waited for the store's lock")
            #expect(snapshot.stories[0].cachedBytes > 0)
            #expect(snapshot.status?.state == .playing)
            await controller.stop()
            await sim.close()
        }

        @Test func preloadProgressShowsInTheSnapshot() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.05))
            let controller = try controller(sim, duration: 8, payload: 400_000)
            controller.start()
            // (The cached bytes are read beside the screen, a moment after the preload says it is done.)
            let snapshot = try await until(sim, controller) {
                $0.stories[1].preload?.phase == .preloaded && $0.stories[1].cachedBytes > 0
            }
            #expect(snapshot.current == 0)
            #expect(snapshot.preloading)
            let preload = try #require(snapshot.stories[1].preload)
            #expect(preload.fraction == 1)
            #expect(snapshot.stories[1].cachedBytes > 0)
            #expect(snapshot.stories[1].cachedBytes < snapshot.stories[1].contentLength ?? 0)
            await controller.stop()
            await sim.close()

            let plain = try await Simulation(profile: NetworkProfile(bytesPerSecond: 200_000, latency: 0.05))
            let without = try self.controller(plain, preload: false, duration: 8, payload: 400_000)
            without.start()
            let done = try await until(plain, without) { ($0.status?.position ?? 0) >= 3 }
            #expect(done.current == 0)
            #expect(done.stories[1].cachedBytes == 0 && done.stories[1].preload == nil, "--no-preload fetches nothing ahead")
            #expect(!done.preloading)
            await without.stop()
            await plain.close()
        }
    }
}
