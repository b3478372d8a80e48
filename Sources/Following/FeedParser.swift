import Foundation
import StoryPlayer

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reads RSS 2.0 (and RSS 1.0), Atom and JSON Feed documents, recognised by their content.
public enum FeedParser {
    /// The largest feed read; a feed is a list of posts, not media.
    public static let maximumBytes = 8 << 20

    /// What a document's first bytes say it is.
    public enum DocumentKind: Sendable, Equatable {
        /// RSS, Atom or JSON Feed.
        case feed
        /// An HLS playlist.
        case hls
        /// A web page (an extractor may find its video).
        case page
        /// Anything else: media bytes.
        case media
    }

    /// Classifies a document by its first bytes (and its `Content-Type` when the bytes do not say).
    public static func kind(of head: [UInt8], contentType: String? = nil) -> DocumentKind {
        var text = String(decoding: head.prefix(4096), as: UTF8.self)
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        let trimmed = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        if trimmed.hasPrefix("#EXTM3U") { return .hls }
        if trimmed.hasPrefix("{") {
            return trimmed.contains("jsonfeed.org/version") ? .feed : .media
        }
        if trimmed.hasPrefix("<") {
            switch rootElement(of: String(trimmed)) {
            case "rss", "feed", "rdf:rdf", "rdf": return .feed
            case "html": return .page
            default: break
            }
        }
        let type = contentType?.lowercased() ?? ""
        if type.hasPrefix("text/html") || type.hasPrefix("application/xhtml") { return .page }
        if type.contains("rss") || type.contains("atom") || type.hasPrefix("application/feed+json") { return .feed }
        return .media
    }

    /// The name of the first element of an XML or HTML text (lowercased), skipping its declaration, comments,
    /// processing instructions and doctype; nil when none is in sight.
    static func rootElement(of text: String) -> String? {
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "<") {
            rest = rest[rest.index(after: open)...]
            if rest.hasPrefix("!--") {
                guard let end = rest.range(of: "-->") else { return nil }
                rest = rest[end.upperBound...]
                continue
            }
            if rest.hasPrefix("?") || rest.hasPrefix("!") {
                if rest.lowercased().hasPrefix("!doctype html") { return "html" }
                guard let end = rest.firstIndex(of: ">") else { return nil }
                rest = rest[rest.index(after: end)...]
                continue
            }
            let name = rest.prefix { !$0.isWhitespace && $0 != ">" && $0 != "/" }
            return name.isEmpty ? nil : name.lowercased()
        }
        return nil
    }

    /// Parses a feed document fetched from `url` (relative links resolve against it).
    public static func parse(_ data: Data, url: URL) throws(FeedError) -> Feed {
        guard data.count <= maximumBytes else {
            throw FeedError("is larger than \(maximumBytes >> 20) MB: a feed lists posts, this is something else")
        }
        let head = [UInt8](data.prefix(4096))
        guard kind(of: head) == .feed else {
            throw FeedError("is not an RSS, Atom or JSON feed")
        }
        let text = String(decoding: head, as: UTF8.self).drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        if text.hasPrefix("{") { return try JSONFeedReader.parse(data, url: url) }
        // Feeds never declare entities: a document that does is refused before any parser expands them (an
        // entity-expansion bomb, or an external entity naming a local file).
        if data.range(of: Data("<!ENTITY".utf8)) != nil {
            throw FeedError("declares XML entities, which feeds never need; it was not read")
        }
        return try XMLFeedReader.parse(data, url: url)
    }

    /// A date as feeds write them: RFC 822 (RSS) or ISO 8601 (Atom, JSON Feed), nil when neither reads.
    public static func date(_ text: String) -> Date? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        return DateFormats.shared.date(text)
    }
}

/// The date formats of feeds, made once (a formatter costs far more to make than to use) and used one caller at
/// a time (feeds are read side by side).
final class DateFormats: @unchecked Sendable {
    static let shared = DateFormats()

    private let lock = NSLock()
    private let iso: [ISO8601DateFormatter]
    private let rfc822: [DateFormatter]

    private init() {
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        iso = [plain, fractional]
        rfc822 = [
            "EEE, d MMM yyyy HH:mm:ss Z", "EEE, d MMM yyyy HH:mm:ss zzz", "d MMM yyyy HH:mm:ss Z",
            "EEE, d MMM yyyy HH:mm Z", "EEE, d MMM yyyy HH:mm:ss", "yyyy-MM-dd HH:mm:ss Z", "yyyy-MM-dd",
        ].map { format in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            return formatter
        }
    }

    /// The first format that reads `text`.
    func date(_ text: String) -> Date? {
        lock.withLock {
            // An RSS date starts with a weekday or a day; an ISO one with a year.
            let formatters: [Formatter] = text.first?.isLetter == true ? rfc822 + iso : iso + rfc822
            for formatter in formatters {
                if let iso = formatter as? ISO8601DateFormatter, let date = iso.date(from: text) { return date }
                if let rfc = formatter as? DateFormatter, let date = rfc.date(from: text) { return date }
            }
            return nil
        }
    }
}

/// JSON Feed 1.0 and 1.1: `items` with `attachments`, `image` and `banner_image`.
enum JSONFeedReader {
    static func parse(_ data: Data, url: URL) throws(FeedError) -> Feed {
        guard let object = try? JSONSerialization.jsonObject(with: data), let root = object as? [String: Any] else {
            throw FeedError("is not valid JSON")
        }
        guard let items = root["items"] as? [Any] else { throw FeedError("has no \"items\" list") }
        var read: [FeedItem] = []
        for case let item as [String: Any] in items {
            var media: [FeedMedia] = []
            for case let attachment as [String: Any] in item["attachments"] as? [Any] ?? [] {
                guard let link = attachment["url"] as? String else { continue }
                media.append(FeedMedia(
                    url: XMLFeedReader.resolve(link, against: url), type: (attachment["mime_type"] as? String)?.lowercased(),
                    medium: nil))
            }
            for field in ["image", "banner_image"] {
                if let link = item[field] as? String {
                    media.append(FeedMedia(url: XMLFeedReader.resolve(link, against: url), type: nil, medium: "image"))
                }
            }
            let link = (item["url"] as? String).flatMap { URL(string: XMLFeedReader.resolve($0, against: url)) }
            let id = (item["id"] as? String) ?? (item["id"] as? Int).map(String.init) ?? media.first?.url ?? link?.absoluteString
            guard let id else { continue }
            let published = ((item["date_published"] ?? item["date_modified"]) as? String).flatMap(FeedParser.date)
            read.append(FeedItem(
                id: id, title: (item["title"] as? String) ?? (item["summary"] as? String), published: published,
                media: media, link: link))
        }
        return Feed(kind: .jsonFeed, title: root["title"] as? String, items: read)
    }
}
