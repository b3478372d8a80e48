import Foundation
import StoryPlayer

/// A feed a person follows, as read: RSS 2.0 (with enclosures or Media RSS), Atom or JSON Feed.
public struct Feed: Sendable, Equatable {
    /// Which format the document is.
    public enum Kind: String, Sendable, Equatable {
        case rss, atom, jsonFeed = "json feed"
    }

    /// The format.
    public var kind: Kind
    /// The feed's own title (the author's name), if it has one.
    public var title: String?
    /// Its items in the order the document lists them.
    public var items: [FeedItem]

    /// A feed.
    public init(kind: Kind, title: String?, items: [FeedItem]) {
        self.kind = kind
        self.title = title
        self.items = items
    }
}

/// One post of a feed.
public struct FeedItem: Sendable, Equatable {
    /// The item's guid or id (else its first media URL, else its link): what seen state is kept under.
    public var id: String
    /// Its title, if any.
    public var title: String?
    /// When it was published (or last updated, when that is all it says).
    public var published: Date?
    /// The media it carries, in document order.
    public var media: [FeedMedia]
    /// The page it links to (a video page an extractor may resolve).
    public var link: URL?
    /// Its caption files (`media:subTitle`, `podcast:transcript` in WebVTT or SubRip): URL and language.
    public var captions: [(url: String, language: String?)] = []

    public static func == (a: FeedItem, b: FeedItem) -> Bool {
        a.id == b.id && a.title == b.title && a.published == b.published && a.media == b.media && a.link == b.link
            && a.captions.map(\.url) == b.captions.map(\.url) && a.captions.map(\.language) == b.captions.map(\.language)
    }

    /// An item.
    public init(id: String, title: String?, published: Date?, media: [FeedMedia], link: URL?) {
        self.id = id
        self.title = title
        self.published = published
        self.media = media
        self.link = link
    }
}

/// A media reference in a feed item: an enclosure, a `media:content` or a JSON Feed attachment.
public struct FeedMedia: Sendable, Equatable {
    /// The URL as the feed wrote it, resolved against the feed's URL.
    public var url: String
    /// The MIME type given (`video/mp4`), lowercased; nil when none.
    public var type: String?
    /// Media RSS's `medium` (`video`, `image`, `audio`), lowercased.
    public var medium: String?

    /// A reference.
    public init(url: String, type: String?, medium: String?) {
        self.url = url
        self.type = type
        self.medium = medium
    }

    /// What the reference is, as far as its type, medium or extension says.
    public var role: Role {
        if let medium {
            switch medium {
            case "video": return .video
            case "image": return .image
            case "audio": return .other
            default: break
            }
        }
        if let type {
            if type.hasPrefix("video/") || type.contains("mpegurl") { return .video }
            if type.hasPrefix("image/") { return .image }
            if type.hasPrefix("audio/") { return .other }
            if type.hasPrefix("text/html") || type.contains("shockwave") { return .page }
        }
        let ext = URL(string: url)?.pathExtension.lowercased() ?? ""
        if ext == "m3u8" { return .video }
        if StorySources.mediaExtensions.contains(ext) {
            return ["jpg", "jpeg", "png", "webp", "gif", "heic", "heif", "avif", "bmp", "tif", "tiff"].contains(ext)
                ? .image : .video
        }
        return type == nil ? .page : .other
    }

    /// A video or photo to play, a page an extractor may resolve, or neither (audio, documents).
    public enum Role: Sendable, Equatable { case video, image, page, other }
}

/// A feed that cannot be read, in one sentence.
public struct FeedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong and what to do.
    public var message: String

    /// An error.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
