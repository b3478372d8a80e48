import Foundation
import MediaCache
import MediaOrigin
import MediaTestSupport
import Testing

@testable import Following
import StoryPlayer

/// Feeds as an author's stories, refreshed through the cache with their validators, and the people followed
/// read together.
@Suite struct FollowingTests {
    static let generous: Duration = .seconds(120)
    static let now = ISO8601DateFormatter().date(from: "2026-11-28T12:00:00Z")!

    static func rss(title: String, items: [(id: String, hoursAgo: Double, url: String)]) -> String {
        FeedFixture.rss(title: title, items: items, now: now)
    }

    @Test func anAuthorsStoriesAreTheLastDaysOldestFirst() throws {
        let text = Self.rss(title: "Ana", items: [
            ("new", 1, "https://cdn.example.com/new.mp4?X-Amz-Signature=1"), ("mid", 5, "https://cdn.example.com/mid.mp4"),
            ("old", 30, "https://cdn.example.com/old.mp4"), ("local", 2, "file:///etc/passwd"),
            ("script", 2, "javascript:alert(1)"), ("inside", 3, "http://192.168.1.10/cam.mp4"),
            ("loopback", 3, "http://127.0.0.1:8080/a.mp4"),
        ])
        let feedURL = try #require(URL(string: "https://example.social/@ana.rss"))
        let feed = try FeedParser.parse(Data(text.utf8), url: feedURL)
        let day = FeedStories.stories(of: feed, from: feedURL, author: "Ana", since: SinceOption.defaultSeconds, now: Self.now)
        #expect(day.stories.map(\.id) == ["mid", "new"])
        #expect(day.stories.allSatisfy { $0.author == "Ana" && $0.origin == .feed })
        #expect(day.stories[1].published == Self.now.addingTimeInterval(-3600))
        #expect(day.skipped == ["older than 24 h": 1, "not an http(s) URL": 2, "naming a private address": 2])
        // Seen state is the item's, whatever URL its media has today.
        var resigned = day.stories[1]
        resigned.source = .remote(try #require(URL(string: "https://cdn.example.com/new.mp4?X-Amz-Signature=2")))
        #expect(StorySession.playKey(resigned) == StorySession.playKey(day.stories[1]))
        let all = FeedStories.stories(of: feed, from: feedURL, author: "Ana", since: nil, now: Self.now)
        #expect(all.stories.map(\.id) == ["old", "mid", "new"])
        // A feed this machine serves may name this machine.
        let local = try #require(URL(string: "http://127.0.0.1:9/feed.rss"))
        #expect(FeedStories.stories(of: feed, from: local, author: "Ana", since: nil, now: Self.now).stories.count == 5)
        #expect(try SinceOption.parse("3d") == 259_200)
        #expect(try SinceOption.parse("all") == nil)
        #expect(throws: FeedError.self) { try SinceOption.parse("yesterday") }
    }

    @Test func aRefreshAsksWithValidatorsAndAnUnreachableOriginPlaysTheLastCopy() async throws {
        let h = try await CacheHarness()
        let feed = Self.rss(title: "Ana", items: [("a1", 1, h.url("a1.mp4").absoluteString)])
        h.origin.set(OriginResource(bytes: Array(feed.utf8), etag: "\"f1\"", contentType: "application/rss+xml"), at: "/ana.rss")
        let first = try await DocumentFetcher.fetch(h.url("ana.rss"), loader: h.loader, timeout: Self.generous)
        #expect(first.status == .fresh)
        #expect(first.data == Data(feed.utf8))
        // The next open (a new process) asks whether its copy is current: a 304, no body.
        try await h.restart()
        await h.origin.resetCounters()
        let second = try await DocumentFetcher.fetch(h.url("ana.rss"), loader: h.loader, timeout: Self.generous)
        #expect(second.status == .notModified)
        #expect(second.data == Data(feed.utf8))
        #expect(h.origin.bodyBytesSent == 0)
        #expect(h.origin.requests.map(\.status) == [304], "\(h.origin.requests)")
        // A new post: a new copy.
        let newer = Self.rss(title: "Ana", items: [("a2", 0.5, h.url("a2.mp4").absoluteString), ("a1", 1, h.url("a1.mp4").absoluteString)])
        h.origin.set(OriginResource(bytes: Array(newer.utf8), etag: "\"f2\"", contentType: "application/rss+xml"), at: "/ana.rss")
        try await h.restart()
        let third = try await DocumentFetcher.fetch(h.url("ana.rss"), loader: h.loader, timeout: Self.generous)
        #expect(third.status == .fresh)
        #expect(third.data == Data(newer.utf8))
        // Offline: the copy of the last refresh, said so.
        await h.origin.shutdown()
        try await h.restart()
        let offline = try await DocumentFetcher.fetch(h.url("ana.rss"), loader: h.loader, timeout: Self.generous)
        #expect(offline.status == .offline)
        #expect(offline.data == Data(newer.utf8))
        await h.loader.shutdown()
    }

    @Test func everyoneFollowedIsReadAtOnceUnseenAuthorsFirst() async throws {
        let h = try await CacheHarness()
        h.origin.set(OriginResource(bytes: Array(Self.rss(title: "Ana", items: [("a1", 2, h.url("a1.mp4").absoluteString)]).utf8)), at: "/ana.rss")
        h.origin.set(OriginResource(bytes: Array(Self.rss(title: "Ben", items: [("b1", 1, h.url("b1.mp4").absoluteString)]).utf8)), at: "/ben.rss")
        h.origin.set(OriginResource(bytes: Array(Self.rss(title: "Cleo", items: [("c1", 3, h.url("c1.mp4").absoluteString)]).utf8)), at: "/cleo.rss")
        h.origin.set(OriginResource(bytes: Array("<rss><channel><item>".utf8)), at: "/broken.rss")
        // (Generous limits: a loaded machine must not turn into feeds that did not answer.)
        let expander = SourceExpander(
            loader: h.loader, since: SinceOption.defaultSeconds, now: Self.now, feedTimeout: Self.generous)
        let sources = [
            FollowedSource(name: nil, url: h.url("ana.rss")), FollowedSource(name: "Benji", url: h.url("ben.rss")),
            FollowedSource(name: nil, url: h.url("cleo.rss")), FollowedSource(name: "Broken", url: h.url("broken.rss")),
            FollowedSource(name: "Gone", url: h.url("missing.rss")),
        ]
        // Ben's story was seen: Ana (newer than Cleo) and Cleo come first, then Ben.
        let expansion = await expander.follow(sources, isSeen: { $0.id == "b1" })
        #expect(expansion.stories.map(\.id) == ["a1", "c1", "b1"])
        #expect(expansion.stories.map { $0.author ?? "-" } == ["Ana", "Cleo", "Benji"])
        #expect(expansion.refreshes.map(\.author) == ["Ana", "Benji", "Cleo", "Broken", "Gone"])
        #expect(expansion.refreshes.map(\.status) == [.fresh, .fresh, .fresh, .error, .error])
        #expect(expansion.notes.count == 2)
        #expect(expansion.notes.contains { $0.hasPrefix("Broken: ") && $0.contains("not well-formed") }, "\(expansion.notes)")
        #expect(expansion.notes.contains { $0.hasPrefix("Gone: ") }, "\(expansion.notes)")
        await h.loader.shutdown()
    }

    @Test func aURLThatIsAFeedBecomesItsStoriesAndMediaStaysAStory() async throws {
        let h = try await CacheHarness()
        let media = h.url("clip")
        h.origin.set(OriginResource(bytes: MP4Fixture.file(duration: 1, payload: 4_000)), at: "/clip")
        h.origin.set(OriginResource(bytes: Array(Self.rss(title: "Ana", items: [("a1", 1, h.url("a1.mp4").absoluteString)]).utf8),
            contentType: "text/xml"), at: "/feed")
        let stories = [Story(id: "1", title: "clip", source: .remote(media)), Story(id: "2", title: "feed", source: .remote(h.url("feed")))]
        let expansion = await SourceExpander(loader: h.loader, since: nil, feedTimeout: Self.generous).expand(stories)
        #expect(expansion.stories.map(\.id) == ["1", "a1"])
        #expect(expansion.stories[1].author == "Ana")
        #expect(expansion.refreshes.map(\.status) == [.fresh])
        await h.loader.shutdown()
    }
}
