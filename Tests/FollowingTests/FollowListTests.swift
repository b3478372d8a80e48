import Foundation
import MediaTestSupport
import Testing

@testable import Following
import StoryPlayer

/// The list of people followed, as OPML: written, read back, and imported from what feed readers export.
@Suite struct FollowListTests {
    @Test func theListRoundTripsThroughItsFile() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.cleanup() }
        var list = FollowList()
        var ana = FollowList.Entry(name: "Ana & co \"<3\"", url: try #require(URL(string: "https://example.social/@ana.rss")))
        ana.refreshed = Date(timeIntervalSince1970: 1_795_000_000)
        ana.newStories = 3
        try list.add(ana)
        var page = FollowList.Entry(name: "Ben", url: try #require(URL(string: "https://video.example.com/@ben")), isPage: true)
        page.lastError = "yt-dlp did not answer within 30 s"
        try list.add(page)
        #expect(throws: FeedError.self) { try list.add(FollowList.Entry(name: "other", url: ana.url)) }
        #expect(throws: FeedError.self) { try list.add(FollowList.Entry(name: "ben", url: URL(string: "https://x.example/")!)) }
        let path = scratch.url.appendingPathComponent("config/following.opml").path
        try list.save(path: path)
        #expect(try FollowList.load(path: path) == list)
        #expect(list.index(of: "BEN") == 1)
        #expect(list.index(of: "https://example.social/@ana.rss") == 0)
        #expect(try FollowList.load(path: scratch.url.appendingPathComponent("none.opml").path).entries.isEmpty)
    }

    @Test func aFeedReadersExportIsImported() throws {
        let opml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <opml version="1.0"><head><title>Subscriptions</title></head><body>
              <outline text="Video" title="Video">
                <outline type="rss" text="Cleo" xmlUrl="https://cleo.example/feed.xml" htmlUrl="https://cleo.example/"/>
                <outline type="rss" title="Dan" xmlUrl="https://dan.example/atom"/>
              </outline>
              <outline type="rss" text="Local" xmlUrl="file:///etc/passwd"/>
            </body></opml>
            """
        let entries = try FollowList.parseOPML(Data(opml.utf8))
        #expect(entries.map(\.name) == ["Cleo", "Dan"])
        #expect(entries.allSatisfy { !$0.isPage })
        #expect(throws: FeedError.self) { try FollowList.parseOPML(Data("<rss/>".utf8)) }
        #expect(throws: FeedError.self) {
            try FollowList.parseOPML(Data("<!DOCTYPE opml [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><opml>&x;</opml>".utf8))
        }
    }
}
