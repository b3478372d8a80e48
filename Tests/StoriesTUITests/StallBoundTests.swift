import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

/// One wait bound per story, whatever the readers and attempts: a real MP4 whose origin sends each answer's first
/// 100 kB and then nothing ends its story with the player's 30 s sentence, picture on or off. Before, every retry's
/// 100 kB started the player's count and the loader's again, and the story ended after 41-42 s on the loader's
/// "gave up after 4 attempts".
@Suite struct StallBoundTests {
    @Test(arguments: [true, false])
    func aTricklingOriginEndsARealStoryOnThePlayersWaitLimit(_ picture: Bool) async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            print("skipping: \(PhoneMedia.missing)")
            return
        }
        defer { media.remove() }
        let file = try await media.ffmpeg("stall-\(picture).mp4", [
            "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=8", "-c:v", "libx264", "-preset", "ultrafast",
            "-b:v", "2000k", "-pix_fmt", "yuv420p", "-g", "25", "-movflags", "+faststart",
        ])
        let origin = try await MediaOriginServer()
        origin.set(OriginResource(bytes: [UInt8](try Data(contentsOf: file))), at: "/clip.mp4")
        var faults = OriginFaults()
        faults.stallAfterBytes = 100_000
        origin.setFaults(faults)
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let url = origin.url("clip.mp4").absoluteString
        let result = try await CLI.run(
            ["play", url, "--headless", "--cache-dir", cache.path] + (picture ? [] : ["--no-video"]))
        let error = result.text.replacingOccurrences(of: "\\/", with: "/").split(separator: "\n")
            .first { $0.contains("\"event\":\"error\"") }
        #expect(result.status == 1, "\(result.stderr)")
        // The story's own accounting: waiting for its first frame and in stalls, 30 s in all (not each).
        let lines = result.text.split(separator: "\n").map(String.init)
        func number(_ field: String, in event: String) -> Int? {
            guard let line = lines.first(where: { $0.contains("\"event\":\"\(event)\"") }),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { return nil }
            return object[field] as? Int
        }
        let waited = (number("startupMs", in: "first_frame") ?? 0) + (number("stallMs", in: "story_end") ?? 0)
        #expect(waited <= 31_000, "waited \(waited) ms in all: \(result.text)")
        #expect(error?.contains("gave up after waiting 30 s for \(url)") == true, "\(error ?? "no error event")")
        await origin.shutdown()
    }
}
