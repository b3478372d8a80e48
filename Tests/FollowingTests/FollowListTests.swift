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

    /// The last refresh's stories, kept for the next open: read back in the window of that open, authors with
    /// unseen stories first.
    @Test func theSnapshotOfTheLastRefreshPlaysAtTheNextOpen() throws {
        let scratch = TemporaryDirectory()
        defer { scratch.cleanup() }
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
        let now = Date()
        func story(_ id: String, _ author: String, hoursAgo: Double) -> Story {
            var story = Story(id: id, title: id, source: .remote(URL(string: "https://cdn.example.com/\(id).mp4")!), author: author)
            story.published = now.addingTimeInterval(-hoursAgo * 3600)
            story.seenKey = "feed-item\n\(id)"
            story.origin = .feed
            return story
        }
        let sources = [FollowedSource(name: nil, url: URL(string: "https://a.example/feed")!),
            FollowedSource(name: nil, url: URL(string: "https://b.example/feed")!)]
        let stories = [story("a1", "Ana", hoursAgo: 23.99), story("a2", "Ana", hoursAgo: 1), story("b1", "Ben", hoursAgo: 2)]
        let snapshot = FollowSnapshot(sources: sources, since: 86_400, stories: stories, skipped: ["older than 24 h": 2])
        #expect(snapshot.save(to: scratch.url))
        let read = try #require(FollowSnapshot.load(from: scratch.url))
        // (Dates come back to the millisecond.)
        #expect(read.stories(now: now, isSeen: { _ in false }).map(\.id) == ["a1", "a2", "b1"])
        #expect(abs((read.stories(now: now, isSeen: { _ in false })[1].published ?? .distantPast).timeIntervalSince(stories[1].published!)) < 0.001)
        #expect(read.matches(sources, since: 86_400))
        #expect(!read.matches(Array(sources.prefix(1)), since: 86_400))
        #expect(!read.matches(sources, since: nil))
        // An hour later a1 is older than a day; Ana was seen, so Ben comes first.
        let later = read.stories(now: now.addingTimeInterval(3600), isSeen: { $0.author == "Ana" })
        #expect(later.map(\.id) == ["b1", "a2"])
        #expect(later[1].seenKey == "feed-item\na2" && later[1].origin == .feed)
    }
}
