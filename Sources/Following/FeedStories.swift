import Foundation
import StoryPlayer

/// A feed's items as one author's stories: those with a video or photo (or a page an extractor may resolve)
/// within the time asked for, oldest first as Instagram orders them.
public enum FeedStories {
    /// The most stories taken from one feed (its newest).
    public static let maximumStories = 100

    /// What a feed gave: its stories, and its items passed over by why.
    public struct Result: Sendable, Equatable {
        /// The stories, oldest first.
        public var stories: [Story]
        /// Items not played, by why (`older than 24 h`, `without a video or photo`, …).
        public var skipped: [String: Int]
    }

    /// The stories of `feed`, fetched from `feedURL`, for `author`: items published within `since` seconds of
    /// `now` (nil: all; items without a date are kept). Media must be http(s); a feed from a public address may
    /// not name a loopback or private one.
    public static func stories(
        of feed: Feed, from feedURL: URL, author: String, since: TimeInterval?, now: Date
    ) -> Result {
        var skipped: [String: Int] = [:]
        var picked: [(order: Int, story: Story)] = []
        let feedIsPrivate = AddressScope.isPrivate(host: feedURL.host)
        for (order, item) in feed.items.enumerated() {
            if let since, let published = item.published, published < now.addingTimeInterval(-since) {
                skipped["older than \(SinceOption.describe(since))", default: 0] += 1
                continue
            }
            let playable = item.media.first { $0.role == .video } ?? item.media.first { $0.role == .image }
            let page = playable == nil && item.media.contains { $0.role == .page }
                ? (item.link?.absoluteString ?? item.media.first { $0.role == .page }?.url) : nil
            guard let text = playable?.url ?? page else {
                skipped["without a video or photo", default: 0] += 1
                continue
            }
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                url.host?.isEmpty == false
            else {
                skipped["not an http(s) URL", default: 0] += 1
                continue
            }
            if !feedIsPrivate, AddressScope.isPrivate(host: url.host) {
                skipped["naming a private address", default: 0] += 1
                continue
            }
            var story = Story(
                id: item.id, title: item.title.map(Self.oneLine) ?? StorySources.name(of: url), source: .remote(url),
                author: author)
            story.published = item.published
            story.origin = page == nil ? .feed : .page
            story.seenKey = "feed-item\n\(item.id)"
            if playable?.role == .image { story.duration = nil }
            // Caption files under the same rules as the media: http(s), no private address from a public feed.
            story.captions = item.captions.compactMap { caption in
                guard let url = URL(string: caption.url), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                    url.host?.isEmpty == false, feedIsPrivate || !AddressScope.isPrivate(host: url.host)
                else { return nil }
                let language = caption.language.flatMap { CaptionLoading.isLanguageTag($0) ? $0 : nil }
                return CaptionSource(location: .remote(url), language: language)
            }
            picked.append((order, story))
        }
        // Oldest first; items without a date keep their place among themselves, before the dated ones.
        picked.sort { a, b in
            switch (a.story.published, b.story.published) {
            case let (x?, y?): return x == y ? a.order < b.order : x < y
            case (nil, nil): return a.order > b.order
            case (nil, _): return true
            case (_, nil): return false
            }
        }
        if picked.count > maximumStories {
            skipped["beyond the newest \(maximumStories)", default: 0] += picked.count - maximumStories
            picked.removeFirst(picked.count - maximumStories)
        }
        return Result(stories: picked.map(\.story), skipped: skipped)
    }

    /// A title on one line, without markup's runs of space.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}

/// Whether a host names this machine or a private network (by its text: names are not looked up).
public enum AddressScope {
    /// True for `localhost`, loopback, private, link-local and unique-local addresses.
    public static func isPrivate(host: String?) -> Bool {
        guard var host = host?.lowercased(), !host.isEmpty else { return false }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host.hasSuffix(".localhost") || host.hasSuffix(".local") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, let octets = Optional(parts.compactMap { UInt8($0) }), octets.count == 4 {
            switch (octets[0], octets[1]) {
            case (127, _), (10, _), (0, _): return true
            case (172, 16...31), (192, 168), (169, 254), (100, 64...127): return true
            default: return false
            }
        }
        if host.contains(":") {
            return host == "::1" || host == "::" || host.hasPrefix("fc") || host.hasPrefix("fd") || host.hasPrefix("fe80")
                || host.hasPrefix("::ffff:127.") || host.hasPrefix("::ffff:10.") || host.hasPrefix("::ffff:192.168.")
        }
        return false
    }
}

/// `--since`: how far back an author's stories go (`24h`, `3d`, `90m`, `all`).
public enum SinceOption {
    /// Stories of the last day, as Instagram keeps them.
    public static let defaultSeconds: TimeInterval = 24 * 3600

    /// Seconds for `text` (nil for `all`); throws a sentence for anything else.
    public static func parse(_ text: String) throws(FeedError) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "all" { return nil }
        let units: [(String, TimeInterval)] = [("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
        for (unit, seconds) in units where trimmed.hasSuffix(unit) {
            if let count = Double(trimmed.dropLast()), count > 0, count.isFinite, count <= 100_000 {
                return count * seconds
            }
        }
        throw FeedError("'\(text)' is not a time back (use 24h, 3d, 90m, 2w or all)")
    }

    /// `86400` as `24 h`, `259200` as `3 d`.
    public static func describe(_ seconds: TimeInterval) -> String {
        if seconds.truncatingRemainder(dividingBy: 86_400) == 0, seconds >= 172_800 { return "\(Int(seconds / 86_400)) d" }
        if seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        return "\(Int(seconds / 60)) min"
    }
}
