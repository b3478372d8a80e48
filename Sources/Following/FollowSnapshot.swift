import Foundation
import StoryPlayer

/// The stories the last refresh of everything followed gave, kept in the cache directory: the next open plays
/// them at once while the feeds are refreshed beside (a reopened app shows its stories before twenty origins
/// have answered; what the refresh finds shows at the open after).
public struct FollowSnapshot: Codable, Sendable, Equatable {
    /// The file's name in the cache directory.
    public static let fileName = "following-stories.json"

    /// One story as kept.
    struct Item: Codable, Sendable, Equatable {
        var id: String
        var title: String
        var url: String
        var author: String?
        var published: Date?
        var seenKey: String?
        var cacheKey: String?
        var page: Bool
        var unavailable: String?
        /// Its source is a page resolved when the story is about to play.
        var late: Bool?
        /// Its caption files: URL and language.
        var captions: [Caption]?
    }

    /// A caption file as kept.
    struct Caption: Codable, Sendable, Equatable {
        var url: String
        var lang: String?
    }

    /// The followed URLs it was made for, in order (another list makes it stale).
    var sources: [String]
    /// The time window it was made for, in seconds (nil: all).
    var since: Double?
    /// The stories, an author's together.
    var items: [Item]
    /// Items passed over, by why.
    var skipped: [String: Int]

    /// A snapshot of what refreshing `sources` with the window `since` gave.
    public init(sources: [FollowedSource], since: TimeInterval?, stories: [Story], skipped: [String: Int]) {
        self.sources = sources.map(\.url.absoluteString)
        self.since = since
        self.skipped = skipped
        items = stories.compactMap { story in
            guard case .remote(let url) = story.source else { return nil }
            return Item(
                id: story.id, title: story.title, url: url.absoluteString, author: story.author,
                published: story.published, seenKey: story.seenKey, cacheKey: story.cacheKey, page: story.origin == .page,
                unavailable: story.unavailable, late: story.resolvesLate ? true : nil,
                captions: story.captions.isEmpty ? nil : story.captions.compactMap { caption in
                    guard case .remote(let url) = caption.location else { return nil }
                    return Caption(url: url.absoluteString, lang: caption.language)
                })
        }
    }

    /// True when it was made for these sources and this window.
    public func matches(_ sources: [FollowedSource], since: TimeInterval?) -> Bool {
        self.sources == sources.map(\.url.absoluteString) && self.since == since
    }

    /// Its stories still within the window at `now`, authors ordered by what `isSeen` says now.
    public func stories(now: Date, isSeen: (Story) -> Bool) -> [Story] {
        var authors: [[Story]] = []
        for item in items {
            guard let url = URL(string: item.url) else { continue }
            if let since, let published = item.published, published < now.addingTimeInterval(-since) { continue }
            var story = Story(id: item.id, title: item.title, source: .remote(url), author: item.author)
            story.published = item.published
            story.seenKey = item.seenKey
            story.cacheKey = item.cacheKey
            story.origin = item.page ? .page : .feed
            story.unavailable = item.unavailable
            story.resolvesLate = item.late ?? false
            story.captions = (item.captions ?? []).compactMap { caption in
                URL(string: caption.url).map { CaptionSource(location: .remote($0), language: caption.lang) }
            }
            if let last = authors.last?.last, last.author == story.author {
                authors[authors.count - 1].append(story)
            } else {
                authors.append([story])
            }
        }
        return SourceExpander.order(authors, isSeen: isSeen).flatMap { authors[$0] }
    }

    /// Items passed over at the refresh it keeps.
    public var skippedItems: [String: Int] { skipped }

    /// The snapshot in `directory`, nil when there is none or it cannot be read.
    public static func load(from directory: URL) -> FollowSnapshot? {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(fileName).path) else {
            return nil
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(FollowSnapshot.self, from: data)
    }

    /// Writes the snapshot into `directory`, replacing the file whole; false when it could not be written.
    @discardableResult
    public func save(to directory: URL) -> Bool {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(self) else { return false }
        return (try? data.write(to: directory.appendingPathComponent(Self.fileName), options: .atomic)) != nil
    }
}
