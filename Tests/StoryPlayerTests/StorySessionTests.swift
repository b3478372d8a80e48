import Foundation
import GRDB
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

        private func run(
            _ sim: Simulation, _ playlist: Playlist, all: Bool = false, fromStart: Bool = false
        ) async throws -> [PlayerEvent] {
            let session = StorySession(
                playlist: playlist, loader: sim.loader,
                resolve: { story in
                    guard case .remote(let url) = story.source else { fatalError("remote stories only") }
                    return ResolvedSource(url: url, key: CacheKey(url: url))
                }, clock: sim.clock, showAll: all, playCounts: sim.playCounts, fromStart: fromStart)
            let events = EventRecorder()
            _ = try await sim.run { try await session.runHeadless(emit: events.handler) }
            return events.all
        }

        private func names(_ events: [PlayerEvent]) -> [String] {
            events.compactMap { event in
                switch event {
                case .storyStart(_, let id, _, _, _, _, _, _): return "start \(id)"
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

        /// Ana: a0 a1 · Ben: b0 b1, one second each.
        private func authors(_ sim: Simulation) -> Playlist {
            let stories = [("Ana", "a0"), ("Ana", "a1"), ("Ben", "b0"), ("Ben", "b1")].map { author, id in
                sim.origin.set(OriginResource(bytes: MP4Fixture.file(duration: 1, payload: 8_000)), at: "/\(id).mp4")
                return Story(id: id, title: id, source: .remote(sim.origin.url("\(id).mp4")), author: author)
            }
            return Playlist(title: "Friends", stories: stories, file: URL(fileURLWithPath: "/t/playlist.json"))
        }

        private func starts(_ events: [PlayerEvent]) -> [String] {
            events.compactMap { event in
                guard case .storyStart(_, let id, _, _, let author, let seen, _, _) = event else { return nil }
                return "\(author ?? "-") \(id)\(seen ? " seen" : "")"
            }
        }

        @Test func seenStateSurvivesARestartAndARunResumesAtTheFirstUnseenStory() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 400_000, latency: 0.05))
            let list = authors(sim)
            // An earlier run saw Ana's first story only.
            let earlier = StorySession(
                playlist: list, loader: sim.loader, resolve: { _ in ResolvedSource(url: sim.origin.url("a0.mp4"), key: CacheKey(url: sim.origin.url("a0.mp4"))) },
                clock: sim.clock, playCounts: sim.playCounts)
            earlier.recordView(of: 0)
            await earlier.viewsWritten()
            try await sim.restart()
            let first = try await run(sim, list)
            #expect(starts(first) == ["Ana a1", "Ben b0", "Ben b1"])
            #expect(first.contains { $0.json["author"] as? String == "Ben" && $0.json["seen"] as? Bool == false })
            try await sim.restart()
            // Everything seen: from the beginning, every author in turn.
            let second = try await run(sim, list)
            #expect(starts(second) == ["Ana a0 seen", "Ana a1 seen", "Ben b0 seen", "Ben b1 seen"])
            #expect(names(second).last == "done 4 0")
            try await sim.restart()
            let fromStart = try await run(sim, list, fromStart: true)
            #expect(starts(fromStart).first == "Ana a0 seen")
            await sim.close()
        }

        /// A view is written off the playback path: with the play counts' file held by another process, counting
        /// a view neither waits nor is lost; it is written once the file is free. (Before, the first frame's
        /// callback waited up to the 5 s busy timeout and then dropped the count.)
        @Test func aViewIsWrittenOffThePlaybackPathAndNotLostWhenTheFileIsBusy() async throws {
            let sim = try await Simulation(profile: NetworkProfile(bytesPerSecond: 400_000, latency: 0.05))
            let list = authors(sim)
            let session = StorySession(
                playlist: list, loader: sim.loader,
                resolve: { story in
                    let url = sim.origin.url("\(story.id).mp4")
                    return ResolvedSource(url: url, key: CacheKey(url: url))
                },
                clock: sim.clock, playCounts: sim.playCounts)
            // Another process's connection holds the file (an exclusive transaction) until told to let go.
            let holder = try DatabaseQueue(path: sim.directory.appendingPathComponent(PlayCountStore.fileName).path)
            let (locked, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            let holding = Thread {
                try? holder.inDatabase { db in
                    try db.execute(sql: "BEGIN EXCLUSIVE TRANSACTION")
                    locked.signal()
                    release.wait()
                    try db.execute(sql: "COMMIT")
                }
            }
            holding.start()
            locked.wait()
            session.recordView(of: 0)
            session.recordView(of: 1)
            release.signal()
            await session.viewsWritten()
            let counts = try sim.playCounts.counts()
            #expect(counts[StorySession.playKey(list.stories[0])] == 1)
            #expect(counts[StorySession.playKey(list.stories[1])] == 1)
            await sim.close()
        }
    }
}
