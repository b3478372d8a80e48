import Foundation
import MediaTestSupport
import Testing

/// `stories-tui play --headless` on a playlist of media as phones and CDNs make it, with no `duration` anywhere:
/// every story plays to its end, every frame due on screen decoded (every second one at 60 fps).
@Suite struct PhoneMediaPlaylistTests {
    @Test func aPlaylistOfPhoneMediaPlaysEveryStoryToItsEnd() async throws {
        // Making and decoding the clips loads the machine: never while the player's simulations run.
        try await MachineLoadGate.shared.heavy { try await playEveryKind() }
    }

    private func playEveryKind() async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required {
                Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it")
            } else {
                print("skipping: \(PhoneMedia.missing)")
            }
            return
        }
        defer { media.remove() }
        // (file, frames it holds, frames expected on screen)
        let stories: [(String, Int, Int)] = [
            (try await media.rotated(90), 25, 25), (try await media.anamorphic(), 25, 25), (try await media.fragmented(), 90, 90),
            (try await media.webm(), 90, 90), (try await media.photo("jpg"), 1, 1), (try await media.photo("png"), 1, 1),
            (try await media.photo("webp"), 1, 1), (try await media.hdr(transfer: "arib-std-b67", level: 128), 25, 25),
            (try await media.sixtyFPS(), 120, 60), (try await media.transportStream(), 50, 50),
        ]
        let entries = stories.enumerated().map { index, story in
            "{\"id\": \"s\(index)\", \"url\": \"\(story.0)\"}"
        }
        let playlist = media.folder.appendingPathComponent("playlist.json")
        try Data("{\"title\": \"Phone media\", \"stories\": [\(entries.joined(separator: ", "))]}".utf8).write(to: playlist)
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run([
            "play", playlist.path, "--headless", "--network", "lan", "--cache-dir", cache.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try result.text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let ends = events.filter { $0["event"] as? String == "story_end" }
        #expect(ends.count == stories.count, "\(events)")
        for (index, story) in stories.enumerated() {
            guard let end = ends.first(where: { $0["id"] as? String == "s\(index)" }) else {
                Issue.record("\(story.0) did not end")
                continue
            }
            #expect(end["completed"] as? Bool == true, "\(story.0): \(end)")
            let shown = end["framesShown"] as? Int ?? 0
            let dropped = end["framesDropped"] as? Int ?? 0
            // Every frame due on screen is decoded: shown, or dropped when a later one was due already (a busy
            // machine: how many is a matter of speed, measured by the benchmarks). A few at the very end may be
            // left when the story's time runs out, not a sixth; none twice.
            #expect(shown >= 1, "\(story.0): \(end)")
            let decoded = shown + dropped
            #expect(decoded <= story.2 && decoded >= story.2 - Swift.max(2, story.2 * 15 / 100), "\(story.0): \(end)")
        }
    }
}
