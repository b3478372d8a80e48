import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

/// Captions from the outside: sidecars, a JSON playlist's `captions`, a subtitle track inside the file; printed
/// with `--dump-captions`, reported as `caption` events at their story times, chosen by `--caption-lang`,
/// silenced by `--captions off`, and refused in one sentence when the setting is wrong.
@Suite struct CaptionCommandTests {
    static let srt = "1\n00:00:00,200 --> 00:00:00,900\nHello <i>there</i>\n\n2\n00:00:01,000 --> 00:00:01,800\nSecond\n"
    static let vtt = "WEBVTT\n\n00:00.300 --> 00:01.500\nHallo\n"

    func folder(_ scratch: ScratchDirectory) throws -> String {
        let folder = scratch.path + "/clips"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(MP4Fixture.file(duration: 2, payload: 8_000)).write(to: URL(fileURLWithPath: folder + "/clip.mp4"))
        try Data(Self.srt.utf8).write(to: URL(fileURLWithPath: folder + "/clip.srt"))
        try Data(Self.vtt.utf8).write(to: URL(fileURLWithPath: folder + "/clip.de.vtt"))
        return folder
    }

    @Test func sidecarsArePrintedAsSubRipInTheLanguageAsked() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let folder = try folder(scratch)
        let environment = ["XDG_CONFIG_HOME": scratch.path + "/config"]
        let plain = try await CLI.run(["play", folder, "--dump-captions"], environment: environment)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.text == "1\n00:00:00,200 --> 00:00:00,900\nHello there\n\n2\n00:00:01,000 --> 00:00:01,800\nSecond\n\n", "\(plain.text)")
        #expect(!plain.stderr.contains("skipped"), "caption files are no skipped files: \(plain.stderr)")
        let german = try await CLI.run(["play", folder, "--dump-captions", "--caption-lang", "fr,de"], environment: environment)
        #expect(german.text == "1\n00:00:00,300 --> 00:00:01,500\nHallo\n\n", "\(german.text)")
        let bad = try await CLI.run(["play", folder, "--captions", "maybe"], environment: environment)
        #expect(bad.status == 2 && bad.stderr.contains("--captions: unknown mode 'maybe' (use on, off or auto)"), "\(bad.stderr)")
        let badLang = try await CLI.run(["play", folder, "--caption-lang", "english!"], environment: environment)
        #expect(badLang.status == 2 && badLang.stderr.contains("--caption-lang"), "\(badLang.stderr)")
    }

    @Test func aPlaylistNamesCaptionsBesideItsStories() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        _ = try folder(scratch)
        try Data("WEBVTT\n\n00:00.100 --> 00:00.600\nBonjour\n".utf8).write(to: URL(fileURLWithPath: scratch.path + "/clips/words.vtt"))
        let playlist = #"""
            {"title": "T", "stories": [
              {"id": "a", "url": "clips/clip.mp4", "captions": [{"url": "clips/words.vtt", "lang": "fr"}, "clips/missing.srt"]},
              {"id": "b", "url": "clips/clip.mp4", "captions": "clips/clip.de.vtt"}]}
            """#
        try Data(playlist.utf8).write(to: URL(fileURLWithPath: scratch.path + "/p.json"))
        let dump = try await CLI.run(["play", scratch.path + "/p.json", "--dump-captions"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.text.contains("# a (fr, sidecar)\n\n1\n00:00:00,100 --> 00:00:00,600\nBonjour\n"), "\(dump.text)")
        #expect(dump.text.contains("# b (de, sidecar)\n\n1\n00:00:00,300 --> 00:00:01,500\nHallo\n"), "\(dump.text)")
        let wrong = #"{"title": "T", "stories": [{"id": "a", "url": "clips/clip.mp4", "captions": [{"url": "x.vtt", "lang": 3}]}]}"#
        try Data(wrong.utf8).write(to: URL(fileURLWithPath: scratch.path + "/wrong.json"))
        let refused = try await CLI.run(["play", scratch.path + "/wrong.json", "--dump-captions"])
        #expect(refused.status == 2 && refused.stderr.contains("stories[0] (\"a\").captions[0].lang: must be a language tag"), "\(refused.stderr)")
    }

    @Test func captionEventsComeAtTheirStoryTimesUnlessOff() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let folder = try folder(scratch)
        let environment = ["XDG_CONFIG_HOME": scratch.path + "/config"]
        // At 1x: the caption files are read beside the first frame, and the first cue is due 0.2 s into the story.
        let play = ["play", folder, "--headless", "--no-video", "--sound", "off", "--cache-dir", scratch.path + "/cache"]
        let run = try await CLI.run(play, environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let captions = FollowCommandTests.events(run.text, "caption")
        #expect(captions.map { $0["text"] as? String } == ["Hello there", "Second"], "\(run.text)")
        #expect(captions.first?["start"] as? Double == 0.2 && captions.first?["end"] as? Double == 0.9)
        #expect(captions.allSatisfy { $0["source"] as? String == "sidecar" && $0["lang"] == nil })
        // Reported when due: after the story started and before it ended.
        let lines = run.text.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.contains("\"story_start\"") })
        let end = try #require(lines.firstIndex { $0.contains("\"story_end\"") })
        let first = try #require(lines.firstIndex { $0.contains("\"caption\"") })
        #expect(start < first && first < end)
        let german = try await CLI.run(play + ["--from-start", "--caption-lang", "de"], environment: environment)
        #expect(FollowCommandTests.events(german.text, "caption").map { $0["lang"] as? String } == ["de"], "\(german.text)")
        let off = try await CLI.run(play + ["--from-start", "--captions", "off"], environment: environment)
        #expect(FollowCommandTests.events(off.text, "caption").isEmpty, "\(off.text)")
    }

    @Test func aSubtitleTrackInsideTheFileIsRead() async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            else { print("skipping the embedded captions test: \(PhoneMedia.missing)") }
            return
        }
        defer { media.remove() }
        try Data(Self.srt.utf8).write(to: media.folder.appendingPathComponent("words.srt"))
        let words = media.folder.appendingPathComponent("words.srt").path
        for (name, codec) in [("tracks.mp4", "mov_text"), ("tracks.mkv", "subrip"), ("tracks.webm", "webvtt")] {
            let video = name.hasSuffix(".webm") ? ["-c:v", "libvpx-vp9", "-b:v", "100k"] : ["-c:v", "libx264"]
            try await media.ffmpeg(name, [
                "-f", "lavfi", "-i", "testsrc=s=64x36:r=5:d=2", "-i", words, "-map", "0", "-map", "1",
                "-pix_fmt", "yuv420p", "-c:s", codec, "-metadata:s:s:0", "language=eng",
            ] + video)
            let dump = try await CLI.run(["play", media.folder.appendingPathComponent(name).path, "--dump-captions", "--caption-lang", "en"])
            #expect(dump.status == 0, "\(name): \(dump.stderr)")
            #expect(dump.text.contains("00:00:00,200 --> 00:00:00,900\nHello there\n"), "\(name): \(dump.text)")
            #expect(dump.text.contains("00:00:01,000 --> 00:00:01,800\nSecond\n"), "\(name): \(dump.text)")
        }
        // A JSON playlist's file plays over the simulated network, and its track is still read from the file.
        let playlist = media.folder.appendingPathComponent("p.json")
        try Data(#"{"title": "T", "stories": [{"id": "k", "url": "tracks.mkv"}]}"#.utf8).write(to: playlist)
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        // (The picture is decoded: the decoder passes each cue as it reads on, in step with the picture, however
        // long reading the whole file beside it takes on a busy machine.)
        let run = try await CLI.run([
            "play", playlist.path, "--headless", "--sound", "off", "--network", "lan",
            "--cache-dir", scratch.path + "/cache",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let captions = FollowCommandTests.events(run.text, "caption")
        #expect(captions.map { $0["text"] as? String } == ["Hello there", "Second"], "\(run.text)")
        #expect(captions.allSatisfy { $0["source"] as? String == "embedded" && $0["lang"] as? String == "eng" })
        // A file from an origin: its track is decoded as the player reads it through the cache.
        let origin = try await MediaOriginServer()
        let bytes = try Data(contentsOf: media.folder.appendingPathComponent("tracks.mkv"))
        origin.set(OriginResource(bytes: [UInt8](bytes), contentType: "video/x-matroska"), at: "/tracks.mkv")
        let remote = try await CLI.run([
            "play", origin.url("tracks.mkv").absoluteString, "--headless", "--sound", "off",
            "--cache-dir", scratch.path + "/cache",
        ])
        #expect(remote.status == 0, "\(remote.stderr)")
        let streamed = FollowCommandTests.events(remote.text, "caption")
        #expect(streamed.map { $0["text"] as? String } == ["Hello there", "Second"], "\(remote.text)")
        #expect(streamed.allSatisfy { $0["source"] as? String == "embedded" })
        await origin.shutdown()
    }

    /// An HLS rendition whose segments map cue time 0 to MPEG-TS 9 s, over video whose stream starts at 10 s:
    /// a cue at 2 s of its file is at 1 s of the story. A segment that cannot be read leaves the rest.
    @Test func anHLSRenditionLinesUpWithTheVideosTransportClock() async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            else { print("skipping the HLS captions test: \(PhoneMedia.missing)") }
            return
        }
        defer { media.remove() }
        try await media.ffmpeg("v.m3u8", [
            "-f", "lavfi", "-i", "testsrc=s=64x36:r=5:d=4", "-c:v", "libx264", "-pix_fmt", "yuv420p",
            "-output_ts_offset", "10", "-muxdelay", "0", "-muxpreload", "0", "-f", "hls", "-hls_time", "2",
            "-hls_playlist_type", "vod",
        ])
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: media.folder.appendingPathComponent(name))
        }
        try write("master.m3u8", """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="s",LANGUAGE="de",NAME="Deutsch",URI="missing.m3u8"
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="s",LANGUAGE="en",NAME="English",DEFAULT=YES,URI="sub.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=200000,SUBTITLES="s"
            v.m3u8

            """)
        try write("sub.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nsub0.vtt\n#EXTINF:2,\nsub1.vtt\n#EXT-X-ENDLIST\n")
        try write("sub0.vtt", "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:810000,LOCAL:00:00:00.000\n\n00:00:02.000 --> 00:00:02.800\nFirst\n")
        try write("sub1.vtt", "WEBVTT\nX-TIMESTAMP-MAP=LOCAL:00:00:00.000,MPEGTS:810000\n\n00:00:04.000 --> 00:00:04.500\nSecond\n")
        let master = media.folder.appendingPathComponent("master.m3u8").path
        let play = ["play", master, "--headless", "--sound", "off", "--speed", "4", "--caption-lang", "de,en"]
        let run = try await CLI.run(play)
        #expect(run.status == 0, "\(run.stderr)")
        let captions = FollowCommandTests.events(run.text, "caption")
        #expect(captions.map { $0["text"] as? String } == ["First", "Second"], "\(run.text)")
        #expect(captions.map { $0["start"] as? Double } == [1, 3], "\(captions)")
        #expect(captions.allSatisfy { $0["source"] as? String == "hls" && $0["lang"] as? String == "en" })
        let dump = try await CLI.run(["play", master, "--dump-captions"])
        #expect(dump.text.hasPrefix("1\n00:00:01,000 --> 00:00:01,800\nFirst\n\n2\n00:00:03,000 --> 00:00:03,500\nSecond\n"), "\(dump.text)")
        try FileManager.default.removeItem(at: media.folder.appendingPathComponent("sub1.vtt"))
        let broken = try await CLI.run(play + ["--from-start"])
        #expect(broken.status == 0, "\(broken.stderr)")
        #expect(FollowCommandTests.events(broken.text, "caption").map { $0["text"] as? String } == ["First"], "\(broken.text)")
        #expect(FollowCommandTests.events(broken.text, "story_end").first?["completed"] as? Bool == true)
    }

    /// A feed item's `media:subTitle` is fetched through the cache and printed.
    @Test func aFeedItemsCaptionFileIsRead() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let origin = try await MediaOriginServer()
        origin.set(OriginResource(bytes: MP4Fixture.file(duration: 1, payload: 8_000), etag: "\"c\""), at: "/c.mp4")
        origin.set(OriginResource(bytes: Array(Self.vtt.utf8), contentType: "text/vtt"), at: "/c.de.vtt")
        let dates = DateFormatter()
        dates.locale = Locale(identifier: "en_US_POSIX")
        dates.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        let feed = """
            <?xml version="1.0"?><rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>Ana</title>
            <item><title>Talk</title><guid>c</guid><pubDate>\(dates.string(from: Date().addingTimeInterval(-600)))</pubDate>
            <enclosure url="\(origin.url("c.mp4").absoluteString)" type="video/mp4"/>
            <media:subTitle type="text/vtt" lang="de" href="c.de.vtt"/></item></channel></rss>
            """
        origin.set(OriginResource(bytes: Array(feed.utf8), contentType: "application/rss+xml"), at: "/ana.rss")
        let dump = try await CLI.run(
            ["play", origin.url("ana.rss").absoluteString, "--dump-captions", "--cache-dir", scratch.path + "/cache"],
            environment: ["XDG_CONFIG_HOME": scratch.path + "/config"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.text == "1\n00:00:00,300 --> 00:00:01,500\nHallo\n\n", "\(dump.text)")
        await origin.shutdown()
    }
}
