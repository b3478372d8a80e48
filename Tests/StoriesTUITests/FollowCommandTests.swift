import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

/// `stories-tui follow …` and `stories-tui` alone from the outside: following feeds, refreshing them through the
/// cache with their validators, an unreachable one played from its last copy, and a web page through yt-dlp.
@Suite struct FollowCommandTests {
    static func rss(title: String, items: [(id: String, hoursAgo: Double, url: String)]) -> String {
        FeedFixture.rss(title: title, items: items)
    }

    static func events(_ output: String, _ name: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { line in
            guard let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                json["event"] as? String == name
            else { return nil }
            return json
        }
    }

    @Test func followedFeedsPlayFreshAndOfflineFromTheirLastCopy() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let origin = try await MediaOriginServer()
        let clip = MP4Fixture.file(duration: 1, payload: 8_000)
        origin.set(OriginResource(bytes: clip, etag: "\"a1\""), at: "/a1.mp4")
        origin.set(OriginResource(bytes: clip, etag: "\"a0\""), at: "/a0.mp4")
        let feed = Self.rss(title: "Ana", items: [
            ("a1", 1, origin.url("a1.mp4").absoluteString + "?X-Amz-Signature=one"),
            ("a0", 30, origin.url("a0.mp4").absoluteString),
        ])
        origin.set(OriginResource(bytes: Array(feed.utf8), etag: "\"f1\"", contentType: "application/rss+xml"), at: "/ana.rss")
        let environment = ["XDG_CONFIG_HOME": scratch.path + "/config"]
        let cache = ["--cache-dir", scratch.path + "/cache"]
        let feedURL = origin.url("ana.rss").absoluteString

        let added = try await CLI.run(["follow", "add", feedURL] + cache, environment: environment)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.text == "following Ana (feed, 2 items, 1 within 24 h)\n", "\(added.text)")
        let again = try await CLI.run(["follow", "add", feedURL, "--name", "Other"] + cache, environment: environment)
        #expect(again.status == 2)
        #expect(again.stderr == "stories-tui: \(feedURL) is followed already, as 'Ana'\n", "\(again.stderr)")
        let media = try await CLI.run(["follow", "add", origin.url("a1.mp4").absoluteString] + cache, environment: environment)
        #expect(media.status == 1)
        #expect(media.stderr.contains("is a video, not a feed or a page"), "\(media.stderr)")
        let listed = try await CLI.run(["follow", "ls"], environment: environment)
        #expect(listed.text.hasPrefix("Ana  \(feedURL)  refreshed just now  1 new"), "\(listed.text)")
        let exported = try await CLI.run(["follow", "export"], environment: environment)
        #expect(exported.text.contains("xmlUrl=\"\(feedURL)\""), "\(exported.text)")

        let play = ["play", "--headless", "--no-video", "--speed", "10"] + cache
        let first = try await CLI.run(play, environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        let refresh = try #require(Self.events(first.text, "refresh").first)
        #expect(refresh["author"] as? String == "Ana" && refresh["items"] as? Int == 2 && refresh["stories"] as? Int == 1)
        let start = try #require(Self.events(first.text, "story_start").first)
        #expect(start["id"] as? String == "a1" && start["source"] as? String == "feed" && start["published"] is String, "\(start)")
        #expect(first.stderr.contains("skipped 1 feed item (1 older than 24 h)"), "\(first.stderr)")

        // The next open: the feed answers 304, and its media, signed anew, is the same cache entry.
        let resigned = feed.replacingOccurrences(of: "X-Amz-Signature=one", with: "X-Amz-Signature=two")
        origin.set(OriginResource(bytes: Array(resigned.utf8), etag: "\"f1\"", contentType: "application/rss+xml"), at: "/ana.rss")
        await origin.resetCounters()
        let second = try await CLI.run(play + ["--from-start"], environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(Self.events(second.text, "refresh").first?["status"] as? String == "not modified", "\(second.text)")
        #expect(Self.events(second.text, "story_start").first?["seen"] as? Bool == true, "\(second.text)")
        #expect(origin.bodyBytesSent == 0, "\(origin.requests)")

        // Offline: the last copy plays, said once for the author; the run succeeds.
        await origin.shutdown()
        let offline = try await CLI.run(play + ["--from-start"], environment: environment)
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(Self.events(offline.text, "refresh").first?["status"] as? String == "offline", "\(offline.text)")
        #expect(offline.stderr.contains("Ana: OFFLINE"), "\(offline.stderr)")
        // From the cache: HIT, or OFFLINE once the check against the origin has failed.
        let outcome = Self.events(offline.text, "first_frame").first?["cache"] as? String
        #expect(outcome == "HIT" || outcome == "OFFLINE", "\(offline.text)")

        let removed = try await CLI.run(["follow", "rm", "ana"], environment: environment)
        #expect(removed.text == "stopped following Ana\n", "\(removed.text)")
        let opml = scratch.path + "/subscriptions.opml"
        try Data(exported.text.utf8).write(to: URL(fileURLWithPath: opml))
        let imported = try await CLI.run(["follow", "import", opml], environment: environment)
        #expect(imported.text == "following 1 more source, 1 in all\n", "\(imported.text)")
        let missing = try await CLI.run(["follow", "rm", "nobody"], environment: environment)
        #expect(missing.status == 2 && missing.stderr.contains("'nobody' is not followed (followed: Ana)"), "\(missing.stderr)")
    }

    /// The real yt-dlp resolves a local page whose video URL carries a fresh token on every load (its generic
    /// extractor): the second play costs the origin no byte of the video.
    @Test func aPageThroughYtDlpIsCachedUnderThePageNotItsSignedURL() async throws {
        // (The program finds yt-dlp on PATH, as the test does.)
        guard Self.onPath("yt-dlp") != nil else {
            if PhoneMedia.required { Issue.record("yt-dlp is required (STORIES_REQUIRE_E2E=1): pip install yt-dlp") }
            else { print("skipping: yt-dlp not installed (pip install yt-dlp)") }
            return
        }
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let origin = try await MediaOriginServer()
        let clip = MP4Fixture.file(duration: 1, payload: 8_000)
        origin.set(OriginResource(bytes: clip, etag: "\"v\""), at: "/v.mp4")
        func page(_ token: String) -> OriginResource {
            let html = "<!DOCTYPE html><html><head><title>Skate</title></head><body><video src=\"/v.mp4?token=\(token)\"></video></body></html>"
            return OriginResource(bytes: Array(html.utf8), contentType: "text/html; charset=utf-8")
        }
        origin.set(page("first"), at: "/watch.html")
        let environment = ["XDG_CONFIG_HOME": scratch.path + "/config"]
        let play = ["play", origin.url("watch.html").absoluteString, "--headless", "--no-video", "--speed", "10",
            "--cache-dir", scratch.path + "/cache"]
        let first = try await CLI.run(play, environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        let start = try #require(Self.events(first.text, "story_start").first, "\(first.text)\n\(first.stderr)")
        #expect(start["source"] as? String == "page", "\(start)")
        #expect((start["url"] as? String)?.contains("token=first") == true, "\(start)")
        #expect(Self.events(first.text, "story_end").first?["completed"] as? Bool == true, "\(first.text)")
        origin.set(page("second"), at: "/watch.html")
        await origin.resetCounters()
        let second = try await CLI.run(play + ["--from-start"], environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        #expect((Self.events(second.text, "story_start").first?["url"] as? String)?.contains("token=second") == true)
        let videoBytes = origin.requests.filter { $0.path.hasPrefix("/v.mp4") }.reduce(0) { $0 + $1.bodyBytes }
        #expect(videoBytes == 0, "\(origin.requests)")
        await origin.shutdown()
    }

    /// `fetch` keys a URL without its signature (and without the parameters the config adds), so a freshly signed
    /// URL for cached bytes costs the origin nothing.
    @Test func aFreshlySignedURLIsFetchedFromTheCache() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let origin = try await MediaOriginServer()
        let bytes = MP4Fixture.file(duration: 1, payload: 20_000)
        origin.set(OriginResource(bytes: bytes, etag: "\"s\""), at: "/s.mp4")
        let config = scratch.url.appendingPathComponent("config/stories-tui")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try Data(#"{"cacheKeyIgnores": ["auth"]}"#.utf8).write(to: config.appendingPathComponent("config.json"))
        let environment = ["XDG_CONFIG_HOME": scratch.path + "/config"]
        let base = origin.url("s.mp4").absoluteString
        func fetch(_ query: String) async throws -> CLIResult {
            try await CLI.run(
                ["fetch", base + query, "--output", scratch.path + "/out.mp4", "--cache-dir", scratch.path + "/cache"],
                environment: environment)
        }
        #expect(try await fetch("?X-Amz-Signature=one&auth=a").status == 0)
        #expect(origin.bodyBytesSent == bytes.count)
        await origin.resetCounters()
        let again = try await fetch("?X-Amz-Signature=two&auth=b")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(origin.bodyBytesSent == 0, "\(origin.requests)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.path + "/out.mp4")) == Data(bytes))
        await origin.shutdown()
    }

    static func onPath(_ name: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
