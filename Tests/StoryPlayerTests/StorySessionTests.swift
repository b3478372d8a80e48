import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

extension SimulationSuites {
    @Suite struct StorySessionTests {
        private func playlist(_ sim: Simulation) -> Playlist {
            let ids = ["one", "two", "three"]
            for (index, id) in ids.enumerated() {
                sim.origin.set(OriginResource(bytes: MP4Fixture.file(duration: Double(index + 1), payload: 20_000)), at: "/\(id).mp4")
            }
            let stories = ids.enumerated().map { index, id in
                Story(id: id, title: id.capitalized, source: .remote(sim.origin.url("\(id).mp4")), maxViews: index == 0 ? 1 : 2)
            }
            return Playlist(title: "Test", stories: stories, file: URL(fileURLWithPath: "/t/playlist.json"))
        }

        private func run(_ sim: Simulation, _ playlist: Playlist, all: Bool = false) async throws -> [PlayerEvent] {
            let session = StorySession(
                playlist: playlist, loader: sim.loader,
                resolve: { story in
                    guard case .remote(let url) = story.source else { fatalError("remote stories only") }
                    return ResolvedSource(url: url, key: CacheKey(url: url))
                }, clock: sim.clock, showAll: all, playCounts: sim.playCounts)
            let events = EventRecorder()
            _ = try await sim.run { try await session.runHeadless(emit: events.handler) }
            return events.all
        }

        private func names(_ events: [PlayerEvent]) -> [String] {
            events.compactMap { event in
                switch event {
                case .storyStart(_, let id, _, _): return "start \(id)"
                case .storyEnd(let id, let count, _, _, _, _): return "end \(id) \(count)"
                case .skipped(_, let id, _, _): return "skip \(id)"
                case .playlistEnd(let summary): return "done \(summary.finished) \(summary.skipped)"
                default: return nil
                }
            }
        }

        @Test func autoAdvanceAndMaxViewsHoldAcrossTwoRuns() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 400_000, latency: 0.05))
            let list = playlist(sim)
            let first = try await run(sim, list)
            #expect(names(first) == ["start one", "end one 1", "start two", "end two 1", "start three", "end three 1", "done 3 0"])
            // Virtual time covers the three stories back to back: 1 + 2 + 3 seconds plus their startups.
            #expect(sim.clock.now >= 6)
            try await sim.restart()
            let second = try await run(sim, list)
            #expect(names(second) == ["skip one", "start two", "end two 2", "start three", "end three 2", "done 2 1"])
            try await sim.restart()
            let third = try await run(sim, list)
            #expect(names(third) == ["skip one", "skip two", "skip three", "done 0 3"])
            let everything = try await run(sim, list, all: true)
            #expect(names(everything).first == "start one")
            await sim.close()
        }
    }
}
