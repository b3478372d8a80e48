import Foundation
import StoryPlayer

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The people a person follows, kept as OPML 2.0 (what feed readers exchange) in
/// `$XDG_CONFIG_HOME/stories-tui/following.opml`, with what each source's last refresh found.
public struct FollowList: Sendable, Equatable {
    /// One followed source.
    public struct Entry: Sendable, Equatable {
        /// The author's name as shown.
        public var name: String
        /// The feed's or page's URL.
        public var url: URL
        /// True for a web page (resolved by yt-dlp) rather than a feed.
        public var isPage: Bool
        /// When it was last refreshed.
        public var refreshed: Date?
        /// Stories not seen yet at the last refresh.
        public var newStories: Int?
        /// What went wrong at the last refresh (nil: nothing).
        public var lastError: String?

        /// An entry.
        public init(name: String, url: URL, isPage: Bool = false) {
            self.name = name
            self.url = url
            self.isPage = isPage
        }
    }

    /// The sources, in the order followed.
    public var entries: [Entry]

    /// A list.
    public init(entries: [Entry] = []) { self.entries = entries }

    /// The file's name in the config folder.
    public static let fileName = "following.opml"

    /// Reads the list at `path`; a missing file is an empty list.
    public static func load(path: String) throws(FeedError) -> FollowList {
        guard FileManager.default.fileExists(atPath: path) else { return FollowList() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FeedError("\(path) cannot be read (check its permissions)")
        }
        do throws(FeedError) {
            return FollowList(entries: try parseOPML(data))
        } catch {
            throw FeedError("\(path): \(error.message)")
        }
    }

    /// Writes the list to `path` (its folder created), replacing the file whole so a crash never leaves half.
    public func save(path: String) throws(FeedError) {
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(opml().utf8).write(to: url, options: .atomic)
        } catch {
            throw FeedError("\(path) cannot be written (check the folder's permissions)")
        }
    }

    /// The entry named `nameOrURL` (by name without regard to case, or by URL).
    public func index(of nameOrURL: String) -> Int? {
        entries.firstIndex { $0.name.lowercased() == nameOrURL.lowercased() || $0.url.absoluteString == nameOrURL }
    }

    /// Adds `entry`; a source followed already (same URL) or a name taken is refused in a sentence.
    public mutating func add(_ entry: Entry) throws(FeedError) {
        if let same = entries.first(where: { $0.url.absoluteString == entry.url.absoluteString }) {
            throw FeedError("\(entry.url.absoluteString) is followed already, as '\(same.name)'")
        }
        if entries.contains(where: { $0.name.lowercased() == entry.name.lowercased() }) {
            throw FeedError("the name '\(entry.name)' is taken (choose another with --name)")
        }
        entries.append(entry)
    }

    /// The list as an OPML 2.0 document.
    public func opml() -> String {
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>", "<opml version=\"2.0\">",
            "  <head>", "    <title>Following (stories-tui)</title>", "  </head>", "  <body>",
        ]
        let dates = ISO8601DateFormatter()
        for entry in entries {
            var attributes = [
                ("type", entry.isPage ? "link" : "rss"), ("text", entry.name), ("title", entry.name),
                (entry.isPage ? "url" : "xmlUrl", entry.url.absoluteString),
            ]
            if let refreshed = entry.refreshed { attributes.append(("storiesRefreshed", dates.string(from: refreshed))) }
            if let new = entry.newStories { attributes.append(("storiesNew", String(new))) }
            if let error = entry.lastError { attributes.append(("storiesError", error)) }
            lines.append("    <outline " + attributes.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: " ") + "/>")
        }
        lines += ["  </body>", "</opml>", ""]
        return lines.joined(separator: "\n")
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\n": out += "&#10;"
            default:
                if scalar.value < 0x20 { continue }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The sources an OPML document lists (at any depth): outlines with an `xmlUrl` (feeds) or a `url` (pages).
    public static func parseOPML(_ data: Data) throws(FeedError) -> [Entry] {
        guard data.count <= FeedParser.maximumBytes else { throw FeedError("is larger than an OPML list can be") }
        if data.range(of: Data("<!ENTITY".utf8)) != nil {
            throw FeedError("declares XML entities, which OPML never needs; it was not read")
        }
        let reader = OPMLReader()
        let parser = XMLParser(data: XMLText.utf8(data))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        guard parser.parse(), reader.isOPML else {
            throw FeedError(reader.isOPML ? "is not well-formed XML (line \(parser.lineNumber))" : "is not an OPML document")
        }
        return reader.entries
    }
}

/// Collects the outlines of an OPML document.
private final class OPMLReader: NSObject, XMLParserDelegate {
    var entries: [FollowList.Entry] = []
    var isOPML = false
    private var depth = 0

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        defer { depth += 1 }
        if depth == 0 {
            isOPML = elementName.lowercased() == "opml"
            if !isOPML { parser.abortParsing() }
            return
        }
        guard elementName == "outline" else { return }
        let isPage = attributes["xmlUrl"] == nil
        guard let text = attributes["xmlUrl"] ?? (attributes["type"] == "link" ? attributes["url"] : nil),
            let url = URL(string: text.trimmingCharacters(in: .whitespaces)),
            ["http", "https"].contains(url.scheme?.lowercased() ?? "")
        else { return }
        var entry = FollowList.Entry(
            name: attributes["text"] ?? attributes["title"] ?? url.host ?? text, url: url, isPage: isPage)
        entry.refreshed = attributes["storiesRefreshed"].flatMap { ISO8601DateFormatter().date(from: $0) }
        entry.newStories = attributes["storiesNew"].flatMap { Int($0) }
        entry.lastError = attributes["storiesError"]
        entries.append(entry)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
    }
}
