import Foundation
import MediaTestSupport
import Testing

@testable import Following
import StoryPlayer

/// Pages through yt-dlp, with a stand-in that prints canned answers: a video, a playlist, and every way it fails.
@Suite struct PageResolverTests {
    /// A stand-in `yt-dlp` running `body` (a shell script).
    static func standIn(_ body: String, in scratch: TemporaryDirectory) throws -> String {
        try StandInProgram.write("yt-dlp", body, in: scratch)
    }

    static let video = #"{"id": "v1", "title": "Skate", "uploader": "Ben", "timestamp": 1795860000, "format_id": "18", "url": "https://cdn.example.com/v1.mp4?token=abc", "http_headers": {"User-Agent": "UA", "Referer": "https://video.example.com/"}}"#

    @Test func aVideoPageIsOneStoryWithItsFormatAndHeaders() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.cleanup() }
        // The stand-in prints its arguments' format and URL to a file, and the canned JSON.
        let program = try Self.standIn("echo \"$@\" > \(scratch.path)/args\ncat <<'JSON'\n\(Self.video)\nJSON", in: scratch)
        let page = try await PageResolver(program: program).resolve(try #require(URL(string: "https://video.example.com/watch?v=v1")))
        #expect(page.entries.count == 1)
        let entry = try #require(page.entries.first)
        #expect(entry.url.absoluteString == "https://cdn.example.com/v1.mp4?token=abc")
        #expect(entry.formatID == "18")
        #expect(entry.uploader == "Ben")
        #expect(entry.headers["Referer"] == "https://video.example.com/")
        #expect(entry.published == Date(timeIntervalSince1970: 1_795_860_000))
        let arguments = try String(contentsOfFile: scratch.path + "/args", encoding: .utf8)
        #expect(arguments.contains("-J") && arguments.contains(PageResolver.defaultFormat)
            && arguments.hasSuffix("-- https://video.example.com/watch?v=v1\n"), "\(arguments)")
    }

    @Test func aPlaylistsEntriesAreStoriesOfItsUploader() throws {
        let json = #"{"_type": "playlist", "title": "Ben's uploads", "uploader": "Ben", "entries": [\#(Self.video), {"id": "v2", "title": "no url"}, {"id": "v3", "url": "https://cdn.example.com/v3.mp4", "format_id": "22"}]}"#
        let page = try PageResolver.page(fromJSON: Data(json.utf8))
        #expect(page.uploader == "Ben")
        #expect(page.entries.map(\.id) == ["v1", "v3"])
    }

    @Test func subtitlesAreTheUploadersThenTheAutomaticOnesInTheVideosLanguage() throws {
        let json = #"""
            {"id": "v1", "url": "https://cdn.example.com/v1.mp4", "language": "pt",
             "subtitles": {"de": [{"ext": "json3", "url": "https://s.example.com/de.json"}, {"ext": "vtt", "url": "https://s.example.com/de.vtt"}],
                           "live_chat": [{"ext": "json", "url": "https://s.example.com/chat"}],
                           "fr": [{"ext": "srt", "url": "https://s.example.com/fr.srt"}], "xx": [{"ext": "vtt", "url": "file:///etc/passwd"}]},
             "automatic_captions": {"en-orig": [{"ext": "vtt", "url": "https://s.example.com/en-orig.vtt"}],
                                    "en": [{"ext": "vtt", "url": "https://s.example.com/en-tr.vtt"}],
                                    "pt": [{"ext": "vtt", "url": "https://s.example.com/pt.vtt"}],
                                    "ja": [{"ext": "vtt", "url": "https://s.example.com/ja-tr.vtt"}]}}
            """#
        let entry = try #require(PageResolver.page(fromJSON: Data(json.utf8)).entries.first)
        #expect(entry.captions.map(\.language) == ["de", "fr", "en", "pt"])
        #expect(entry.captions.map(\.url.lastPathComponent) == ["de.vtt", "fr.srt", "en-orig.vtt", "pt.vtt"])
        #expect(entry.captionSources.first?.language == "de")
    }

    @Test(arguments: [
        ("echo 'ERROR: [generic] Unable to download webpage: HTTP Error 404' >&2; exit 1", "yt-dlp could not read the page: [generic] Unable to download webpage: HTTP Error 404"),
        ("echo 'not json at all'", "yt-dlp printed something other than its JSON"),
        ("echo '{\"id\": \"x\", \"url\": \"file:///etc/passwd\"}'", "yt-dlp found no playable file on the page"),
        ("sleep 30 & wait", "yt-dlp did not answer within 1 s"),
    ])
    func aFailingExtractorIsOneSentence(script: String, message: String) async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.cleanup() }
        let program = try Self.standIn(script, in: scratch)
        // (A second for the stand-in that hangs: the limit is the resolver's parameter, 30 s by default.)
        let resolver = PageResolver(program: program, timeout: 1)
        let page = try #require(URL(string: "https://example.com/page"))
        do throws(FeedError) {
            _ = try await resolver.resolve(page)
            Issue.record("resolved")
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func withoutYtDlpTheSentenceSaysHowToInstallIt() async throws {
        let resolver = PageResolver(program: "/nonexistent/yt-dlp")
        let page = try #require(URL(string: "https://example.com/page"))
        do throws(FeedError) {
            _ = try await resolver.resolve(page)
            Issue.record("resolved")
        } catch {
            #expect(error.message.contains("pip install yt-dlp"))
        }
    }
}
