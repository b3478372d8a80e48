import Foundation
import StoryPlayer

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// RSS 2.0, RSS 1.0 (RDF) and Atom, with Media RSS (`media:content`, `media:group`), read with namespaces.
final class XMLFeedReader: NSObject, XMLParserDelegate {
    static let atom = "http://www.w3.org/2005/Atom"
    static let mediaRSS = "http://search.yahoo.com/mrss/"

    private let url: URL
    private var kind: Feed.Kind?
    private var title: String?
    private var items: [FeedItem] = []
    /// The item being read (nil outside items).
    private var item: Partial?
    /// The names of the open elements, innermost last.
    private var path: [String] = []
    private var text = ""
    /// The document's root element was closed (it was read to its end).
    private(set) var rootClosed = false

    private struct Partial {
        var guid: String?
        var title: String?
        var mediaTitle: String?
        var published: Date?
        var updated: Date?
        var media: [FeedMedia] = []
        var link: URL?
        var captions: [(url: String, language: String?)] = []
    }

    /// Caption types a feed may name (`text/vtt`, SubRip); a transcript in HTML or JSON is no caption file.
    static func isCaptionType(_ type: String?, url: String) -> Bool {
        let type = type?.lowercased() ?? ""
        if type.contains("vtt") || type.contains("subrip") || type.contains("srt") { return true }
        let ext = URL(string: url)?.pathExtension.lowercased()
        return type.isEmpty && (ext == "vtt" || ext == "srt")
    }

    private init(url: URL) { self.url = url }

    static func parse(_ data: Data, url: URL) throws(FeedError) -> Feed {
        let reader = XMLFeedReader(url: url)
        let parser = XMLParser(data: XMLText.utf8(data))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        let parsed = parser.parse()
        guard let kind = reader.kind else {
            if !parsed, let error = parser.parserError {
                throw FeedError("is not well-formed XML (line \(parser.lineNumber): \(Self.describe(error)))")
            }
            throw FeedError("is not an RSS or Atom feed")
        }
        // A feed cut or broken after some items still gives those items (as feed readers do).
        if !parsed || !reader.rootClosed, reader.items.isEmpty {
            throw FeedError("is not well-formed XML (line \(parser.lineNumber))")
        }
        return Feed(kind: kind, title: reader.title?.trimmingCharacters(in: .whitespacesAndNewlines), items: reader.items)
    }

    private static func describe(_ error: any Error) -> String {
        let code = (error as NSError).code
        return "parser error \(code)"
    }

    /// `link` resolved against `base` (a relative URL in a feed is relative to the feed).
    static func resolve(_ link: String, against base: URL) -> String {
        let trimmed = link.trimmingCharacters(in: .whitespacesAndNewlines)
        return URL(string: trimmed, relativeTo: base)?.absoluteURL.absoluteString ?? trimmed
    }

    private func name(_ element: String, _ namespace: String?) -> String {
        switch namespace {
        case Self.atom: return "atom:" + element
        case Self.mediaRSS: return "media:" + element
        case "http://purl.org/dc/elements/1.1/": return "dc:" + element
        case "http://www.w3.org/1999/02/22-rdf-syntax-ns#": return "rdf:" + element
        case "https://podcastindex.org/namespace/1.0", "https://github.com/Podcastindex-org/podcast-namespace/blob/main/docs/1.0.md":
            return "podcast:" + element
        default: return element
        }
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        let element = name(elementName, namespaceURI)
        if path.isEmpty {
            switch element {
            case "rss", "rdf:RDF": kind = .rss
            case "atom:feed": kind = .atom
            default: parser.abortParsing()
            }
        }
        path.append(element)
        text = ""
        switch element {
        case "item", "atom:entry":
            item = Partial()
        case "enclosure":
            if let link = attributes["url"] {
                item?.media.append(FeedMedia(url: Self.resolve(link, against: url), type: attributes["type"]?.lowercased(), medium: nil))
            }
        case "media:content":
            if let link = attributes["url"] {
                item?.media.append(FeedMedia(
                    url: Self.resolve(link, against: url), type: attributes["type"]?.lowercased(),
                    medium: attributes["medium"]?.lowercased()))
            }
        case "media:subTitle":
            if let link = attributes["href"], Self.isCaptionType(attributes["type"], url: link), (item?.captions.count ?? 0) < 8 {
                item?.captions.append((Self.resolve(link, against: url), attributes["lang"]))
            }
        case "podcast:transcript":
            if let link = attributes["url"], Self.isCaptionType(attributes["type"], url: link), (item?.captions.count ?? 0) < 8 {
                item?.captions.append((Self.resolve(link, against: url), attributes["language"]))
            }
        case "atom:link":
            guard let href = attributes["href"] else { break }
            let rel = attributes["rel"] ?? "alternate"
            if rel == "enclosure" {
                item?.media.append(FeedMedia(url: Self.resolve(href, against: url), type: attributes["type"]?.lowercased(), medium: nil))
            } else if rel == "alternate", item != nil, item?.link == nil {
                item?.link = URL(string: Self.resolve(href, against: url))
            }
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        // A title or date is short: a huge text node is not kept whole.
        if text.utf8.count < 16_384 { text += string }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        if text.utf8.count < 16_384 { text += String(decoding: CDATABlock.prefix(16_384), as: UTF8.self) }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        let element = name(elementName, namespaceURI)
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let parent = path.count >= 2 ? path[path.count - 2] : ""
        defer {
            path.removeLast()
            text = ""
            if path.isEmpty { rootClosed = true }
        }
        if var partial = item {
            switch element {
            case "title", "atom:title", "dc:title":
                if partial.title == nil, !value.isEmpty { partial.title = value }
            case "media:title":
                if partial.mediaTitle == nil, !value.isEmpty { partial.mediaTitle = value }
            case "guid", "atom:id":
                if !value.isEmpty { partial.guid = value }
            case "pubDate", "atom:published", "dc:date":
                partial.published = FeedParser.date(value) ?? partial.published
            case "atom:updated":
                partial.updated = FeedParser.date(value)
            case "link":
                if partial.link == nil, !value.isEmpty { partial.link = URL(string: Self.resolve(value, against: url)) }
            case "item", "atom:entry":
                if let id = partial.guid ?? partial.media.first?.url ?? partial.link?.absoluteString {
                    var item = FeedItem(
                        id: id, title: partial.title ?? partial.mediaTitle, published: partial.published ?? partial.updated,
                        media: partial.media, link: partial.link)
                    item.captions = partial.captions
                    items.append(item)
                }
                item = nil
                return
            default:
                break
            }
            item = partial
            return
        }
        if title == nil, !value.isEmpty, ["title", "atom:title"].contains(element), ["channel", "atom:feed"].contains(parent) {
            title = value
        }
    }
}
