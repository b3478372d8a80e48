import Foundation
import Testing

@testable import Following
import StoryPlayer

/// Feeds read by content: RSS 2.0 with enclosures and Media RSS, Atom, JSON Feed; and what is not a feed.
@Suite struct FeedParserTests {
    let base = URL(string: "https://example.social/@ana")!

    static let rss = """
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/">
          <channel>
            <title>Ana</title>
            <item>
              <title>Beach</title><guid isPermaLink="false">ana-2</guid>
              <pubDate>Sat, 28 Nov 2026 09:30:00 +0000</pubDate>
              <enclosure url="https://cdn.example.com/beach.mp4?token=abc" type="video/mp4" length="1000"/>
            </item>
            <item>
              <title><![CDATA[Cat & dog]]></title><guid>ana-1</guid>
              <pubDate>Fri, 27 Nov 2026 20:00:00 GMT</pubDate>
              <media:group><media:content url="/media/cat.jpg" medium="image"/></media:group>
            </item>
            <item><title>Words only</title><guid>ana-0</guid><pubDate>Fri, 27 Nov 2026 19:00:00 +0000</pubDate></item>
          </channel>
        </rss>
        """

    static let atom = """
        <?xml version="1.0" encoding="utf-8"?>
        <feed xmlns="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">
          <title>Ben's channel</title>
          <entry>
            <id>yt:video:abc</id><title>Skate</title><published>2026-11-28T08:00:00+00:00</published>
            <link rel="alternate" href="https://video.example.com/watch?v=abc"/>
            <media:group><media:content url="https://video.example.com/v/abc" type="application/x-shockwave-flash"/></media:group>
          </entry>
          <entry>
            <id>tag:ben,2026:2</id><title>Clip</title><updated>2026-11-28T07:00:00.500Z</updated>
            <link rel="enclosure" href="clips/2.webm" type="video/webm"/>
          </entry>
        </feed>
        """

    static let jsonFeed = """
        {"version": "https://jsonfeed.org/version/1.1", "title": "Cleo",
         "items": [{"id": "c1", "title": "Run", "date_published": "2026-11-28T06:00:00Z",
                    "attachments": [{"url": "https://cdn.example.com/run.mp4", "mime_type": "video/mp4"}]},
                   {"id": 2, "content_text": "no media"}]}
        """

    @Test func rssWithEnclosuresAndMediaRSS() throws {
        let feed = try FeedParser.parse(Data(Self.rss.utf8), url: base)
        #expect(feed.kind == .rss)
        #expect(feed.title == "Ana")
        #expect(feed.items.map(\.id) == ["ana-2", "ana-1", "ana-0"])
        #expect(feed.items[0].media == [FeedMedia(url: "https://cdn.example.com/beach.mp4?token=abc", type: "video/mp4", medium: nil)])
        #expect(feed.items[1].title == "Cat & dog")
        #expect(feed.items[1].media.first?.url == "https://example.social/media/cat.jpg")
        #expect(feed.items[1].media.first?.role == .image)
        #expect(feed.items[0].published == ISO8601DateFormatter().date(from: "2026-11-28T09:30:00Z"))
        #expect(feed.items[1].published == ISO8601DateFormatter().date(from: "2026-11-27T20:00:00Z"))
        #expect(feed.items[2].media.isEmpty)
    }

    @Test func captionFilesOfAnItemAreKept() throws {
        let rss = """
            <?xml version="1.0"?>
            <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:podcast="https://podcastindex.org/namespace/1.0">
              <channel><title>Ana</title>
                <item><title>Talk</title><guid>t1</guid><pubDate>Sat, 28 Nov 2026 09:30:00 +0000</pubDate>
                  <enclosure url="https://cdn.example.com/talk.mp4" type="video/mp4"/>
                  <media:subTitle type="text/vtt" lang="en" href="https://cdn.example.com/talk.en.vtt"/>
                  <podcast:transcript url="captions/talk.de.srt" type="application/x-subrip" language="de"/>
                  <podcast:transcript url="https://cdn.example.com/talk.html" type="text/html"/>
                  <media:subTitle href="http://127.0.0.1/private.vtt" lang="fr"/>
                </item>
              </channel>
            </rss>
            """
        let feed = try FeedParser.parse(Data(rss.utf8), url: base)
        let item = try #require(feed.items.first)
        #expect(item.captions.map(\.url) == [
            "https://cdn.example.com/talk.en.vtt", "https://example.social/captions/talk.de.srt", "http://127.0.0.1/private.vtt",
        ])
        let stories = FeedStories.stories(of: feed, from: base, author: "Ana", since: nil, now: Date()).stories
        // A public feed never sends the player to a private address, for captions as for media.
        #expect(stories.first?.captions.map(\.language) == ["en", "de"])
    }

    @Test func atomWithEnclosureLinksAndPages() throws {
        let feed = try FeedParser.parse(Data(Self.atom.utf8), url: URL(string: "https://video.example.com/feeds/ben.xml")!)
        #expect(feed.kind == .atom)
        #expect(feed.title == "Ben's channel")
        #expect(feed.items.map(\.id) == ["yt:video:abc", "tag:ben,2026:2"])
        #expect(feed.items[0].link?.absoluteString == "https://video.example.com/watch?v=abc")
        #expect(feed.items[0].media.first?.role == .page)
        #expect(feed.items[1].media.first?.url == "https://video.example.com/feeds/clips/2.webm")
        #expect(feed.items[1].published == ISO8601DateFormatter().date(from: "2026-11-28T07:00:00Z")?.addingTimeInterval(0.5))
    }

    @Test func jsonFeedAttachments() throws {
        let feed = try FeedParser.parse(Data(Self.jsonFeed.utf8), url: base)
        #expect(feed.kind == .jsonFeed)
        #expect(feed.title == "Cleo")
        #expect(feed.items.map(\.id) == ["c1", "2"])
        #expect(feed.items[0].media.first?.role == .video)
    }

    @Test func documentsAreKnownByTheirContentNotTheirName() {
        func kind(_ text: String, _ type: String? = nil) -> FeedParser.DocumentKind {
            FeedParser.kind(of: Array(text.utf8), contentType: type)
        }
        #expect(kind(Self.rss) == .feed)
        #expect(kind("\u{FEFF}  <!-- hi -->\n" + Self.atom) == .feed)
        #expect(kind(Self.jsonFeed) == .feed)
        #expect(kind("<!DOCTYPE html><html><body><video src=a.mp4></video></body></html>") == .page)
        #expect(kind("<html lang=en>") == .page)
        #expect(kind("#EXTM3U\n#EXT-X-VERSION:3\n") == .hls)
        #expect(kind("\u{0}\u{0}\u{0}\u{18}ftypisom") == .media)
        #expect(kind("{\"a\": 1}") == .media)
        #expect(kind("plain words", "text/html; charset=utf-8") == .page)
    }

    @Test(arguments: [
        ("<rss><channel><item><title>a</title>", "no items: not well-formed"),
        ("<?xml version=\"1.0\"?><!DOCTYPE rss [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><rss><channel><title>&b;</title></channel></rss>", "entities"),
        ("<?xml version=\"1.0\"?><!DOCTYPE rss [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><rss><channel><title>&x;</title></channel></rss>", "entities"),
        ("{\"version\": \"https://jsonfeed.org/version/1\", \"items\": 7}", "no items list"),
        ("<svg/>", "not a feed"),
    ])
    func badFeedsFailInOneSentence(text: String, why: String) {
        #expect(throws: FeedError.self, "\(why)") { try FeedParser.parse(Data(text.utf8), url: base) }
    }

    @Test func anEntityBombAndALocalFileAreNeverRead() throws {
        var bomb = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        for level in 1...9 {
            bomb += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">"
        }
        bomb += "]><rss><channel><title>&lol9;</title></channel></rss>"
        do throws(FeedError) {
            _ = try FeedParser.parse(Data(bomb.utf8), url: base)
            Issue.record("an entity bomb was read")
        } catch {
            #expect(error.message == "declares XML entities, which feeds never need; it was not read")
        }
    }

    @Test func aHugeFeedIsRefusedAndTenThousandItemsAreBounded() throws {
        let huge = Data(("<rss><channel>" + String(repeating: " ", count: FeedParser.maximumBytes)).utf8)
        #expect(throws: FeedError.self) { try FeedParser.parse(huge, url: base) }
        var many = "<rss><channel><title>Many</title>"
        for i in 0..<10_000 {
            many += "<item><guid>i\(i)</guid><pubDate>Sat, 28 Nov 2026 09:00:00 +0000</pubDate><enclosure url=\"https://cdn.example.com/\(i).mp4\" type=\"video/mp4\"/></item>"
        }
        many += "</channel></rss>"
        let feed = try FeedParser.parse(Data(many.utf8), url: base)
        #expect(feed.items.count == 10_000)
        let now = try #require(ISO8601DateFormatter().date(from: "2026-11-28T12:00:00Z"))
        let result = FeedStories.stories(of: feed, from: base, author: "Many", since: nil, now: now)
        #expect(result.stories.count == FeedStories.maximumStories)
        #expect(result.skipped["beyond the newest 100"] == 10_000 - FeedStories.maximumStories)
    }

    /// The system's XML parser traps on names and values that are not UTF-8: a Latin-1 feed is read as Latin-1, and
    /// stray bytes in a list are characters, never a crash (a fuzzer's find).
    @Test func latin1AndStrayBytesAreReadNotFatal() throws {
        var latin1 = Data("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss version=\"2.0\"><channel><title>Jos".utf8)
        latin1.append(0xE9)  // é
        latin1.append(contentsOf: Array("</title><item><guid>1</guid><enclosure url=\"https://cdn.example.com/a.mp4\" type=\"video/mp4\"/></item></channel></rss>".utf8))
        let feed = try FeedParser.parse(latin1, url: base)
        #expect(feed.title == "José")
        #expect(feed.items.count == 1)
        var stray = Data("<?xml version=\"1.0\"?><opml version=\"2.0\"><body><outline type=\"rss\" text=\"Cleo\" xmlUrl=\"https://cleo.example/feed.x".utf8)
        stray.append(contentsOf: [0x9C, 0xFE, 0xFF, 0x93])
        stray.append(contentsOf: Array("\"/></body></opml>".utf8))
        let entries = try FollowList.parseOPML(stray)
        #expect(entries.map(\.name) == ["Cleo"])
    }

    /// The system's XML parser reads a C string from nowhere for a processing instruction without data: a
    /// declaration that is not one (`<?xml?>`), one inside the body, one cut short — none reaches it (a fuzzer's find).
    @Test(arguments: [
        "<?xml?><opml version=\"2.0\"><body><outline type=\"link\" text=\"P\" url=\"https://v.example/@p\"/></body></opml>",
        "<?xml version=\"1.0\"?><opml version=\"2.0\"><body><outline type=\"link\" text=\"P\" url=\"https://v.example/@p\"/></body></opml><?xml?>",
        "<?xml version=\"1.0\"?><opml version=\"2.0\"><body><outline type=\"link\" text=\"P\" url=\"https://v.example/@p\"/></body></opml><<?a?>?b?>",
        "<?xml version=\"1.0\"?><opml version=\"2.0\"><body><outline type=\"link\" text=\"P\" url=\"https://v.example/@p\"/></body></opml><?",
    ])
    func instructionsWithoutDataNeverReachTheParser(text: String) {
        let cleaned = XMLText.withoutInstructions(text)
        let declaration = cleaned.hasPrefix("<?xml version=\"1.0\"?>") ? 21 : 0
        #expect(!cleaned.dropFirst(declaration).contains("<?"), "\(cleaned)")
        #expect((try? FollowList.parseOPML(Data(text.utf8)))?.map(\.name) == ["P"])
        _ = try? FeedParser.parse(Data(text.utf8), url: base)
    }

    /// The fuzzer's input itself: a declaration with no data, tags and a cut-short instruction after it.
    @Test func theFuzzersOPMLIsReadWithoutACrash() throws {
        var bytes = Data("<?xml?><opml version=\"2.0\"><head><title>x<ad>><oute type=\"link\" text=".utf8)
        bytes.append(contentsOf: [0x01, 0, 0, 0, 0, 0, 0, 0])
        bytes.append(contentsOf: Array("\"P\" url=\"httPs://video.example].m/@p\"".utf8))
        bytes.append(contentsOf: [0, 0, 0, 0x8A])
        bytes.append(contentsOf: Array("sion?><opml version=\"2.0\"></opm<?xml versiol>n=\"1.0\"?><?".utf8))
        _ = try? FollowList.parseOPML(bytes)
        _ = try? FeedParser.parse(bytes, url: base)
        #expect(!XMLText.withoutInstructions(String(decoding: bytes, as: UTF8.self)).contains("<?"))
    }
}
