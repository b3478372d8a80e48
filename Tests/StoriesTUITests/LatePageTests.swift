import Foundation
import MediaOrigin
import MediaTestSupport
import NIOConcurrencyHelpers
import Testing

/// A feed item that links a page: resolved by the extractor beside the story playing before it (never holding
/// up the first picture), once, its media fetched with the headers the extractor gave, and cached under the page
/// so the next run's freshly signed URL costs the origin nothing.
@Suite struct LatePageTests {
    /// Refuses the page's media without the extractor's headers.
    struct ExtractorHeaders: OriginRule {
        func intercept(_ request: inout OriginRequest) -> Int? {
            guard request.path == "/p.mp4" else { return nil }
            return request["referer"] == "https://pages.example/watch" && request["user-agent"] == "Extractor/1" ? nil : 403
        }
    }

    @Test func aLinkedPageResolvesBesideThePlayingStoryWithItsHeaders() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let origin = try await MediaOriginServer()
        origin.rule = ExtractorHeaders()
        let clip = MP4Fixture.file(duration: 1, payload: 8_000)
        origin.set(OriginResource(bytes: clip, etag: "\"a\""), at: "/a.mp4")
        origin.set(OriginResource(bytes: clip, etag: "\"p\""), at: "/p.mp4")
        origin.set(
            OriginResource(bytes: Array("WEBVTT\n\n00:00.100 --> 00:00.800\nSkate words\n".utf8), contentType: "text/vtt"),
            at: "/p.en.vtt")
        let dates = DateFormatter()
        dates.locale = Locale(identifier: "en_US_POSIX")
        dates.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        let now = Date()
        let feed = """
            <?xml version="1.0"?><rss version="2.0"><channel><title>Ana</title>
            <item><title>Beach</title><guid>a</guid><pubDate>\(dates.string(from: now.addingTimeInterval(-7200)))</pubDate>
            <enclosure url="\(origin.url("a.mp4").absoluteString)" type="video/mp4"/></item>
            <item><title>Skate</title><guid>p</guid><pubDate>\(dates.string(from: now.addingTimeInterval(-3600)))</pubDate>
            <link>\(origin.url("watch/p").absoluteString)</link>
            <media:content xmlns:media="http://search.yahoo.com/mrss/" url="\(origin.url("v/p").absoluteString)" type="application/x-shockwave-flash"/></item>
            </channel></rss>
            """
        origin.set(OriginResource(bytes: Array(feed.utf8), etag: "\"f\"", contentType: "application/rss+xml"), at: "/ana.rss")
        // The stand-in notes each run and answers only once the story before the page has asked the origin for its
        // video (the test says so with a file): resolving before the run would wait until the extractor is killed
        // at its 30 s limit, and the page's story would fail.
        let go = scratch.path + "/go"
        let program = try StandInProgram.write("yt-dlp", """
            echo run >> \(scratch.path)/runs
            for last; do :; done
            i=0
            while [ ! -e \(go) ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done
            cat <<JSON
            {"id": "p", "title": "Skate", "format_id": "18", "url": "\(origin.url("p.mp4").absoluteString)?sig=$$", "webpage_url": "$last", "http_headers": {"Referer": "https://pages.example/watch", "User-Agent": "Extractor/1"}, "subtitles": {"en": [{"ext": "vtt", "url": "\(origin.url("p.en.vtt").absoluteString)"}]}}
            JSON
            """, in: scratch)
        let config = scratch.path + "/config/stories-tui"
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try Data(#"{"ytdlPath": "\#(program)"}"#.utf8).write(to: URL(fileURLWithPath: config + "/config.json"))
        let environment = ["XDG_CONFIG_HOME": scratch.path + "/config"]
        let play = ["play", origin.url("ana.rss").absoluteString, "--headless", "--no-video", "--speed", "10",
            "--cache-dir", scratch.path + "/cache"]

        async let run = CLI.run(play, environment: environment)
        // (A bound on a hang only: the run goes on either way once the file is there.)
        let deadline = ContinuousClock.now + .seconds(120)
        while !origin.requests.contains(where: { $0.path == "/a.mp4" && $0.method == "GET" }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        let first = try await run
        #expect(first.status == 0, "\(first.stderr)")
        let ends = FollowCommandTests.events(first.text, "story_end")
        #expect(ends.map { $0["id"] as? String } == ["a", "p"], "\(first.text)")
        #expect(ends.allSatisfy { $0["completed"] as? Bool == true }, "\(first.text)\n\(first.stderr)")
        let start = try #require(FollowCommandTests.events(first.text, "story_start").last)
        #expect(start["source"] as? String == "page" && (start["url"] as? String)?.contains("sig=") == true, "\(start)")
        #expect(!origin.requests.contains { $0.status == 403 }, "\(origin.requests)")
        // Resolved once, though the preload and the player both wanted it.
        #expect(try String(contentsOfFile: scratch.path + "/runs", encoding: .utf8) == "run\n")

        // The next run resolves the page again (its URL is signed anew) and reads the media from the cache.
        await origin.resetCounters()
        let second = try await CLI.run(play + ["--from-start"], environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(FollowCommandTests.events(second.text, "story_end").last?["completed"] as? Bool == true, "\(second.text)")
        #expect(origin.requests.filter { $0.path == "/p.mp4" }.reduce(0) { $0 + $1.bodyBytes } == 0, "\(origin.requests)")
        #expect(try String(contentsOfFile: scratch.path + "/runs", encoding: .utf8) == "run\nrun\n")
        await origin.shutdown()
    }
}
