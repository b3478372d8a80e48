import Foundation

/// RSS feeds for the following tests: items with a video enclosure, posted some hours before a moment.
public enum FeedFixture {
    /// An RSS 2.0 feed titled `title` whose items (`id`, hours before `now`, media URL) carry video enclosures.
    public static func rss(title: String, items: [(id: String, hoursAgo: Double, url: String)], now: Date = Date()) -> String {
        let dates = DateFormatter()
        dates.locale = Locale(identifier: "en_US_POSIX")
        dates.timeZone = TimeZone(identifier: "GMT")
        dates.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        let body = items.map { item in
            "<item><title>\(item.id) title</title><guid>\(item.id)</guid>"
                + "<pubDate>\(dates.string(from: now.addingTimeInterval(-item.hoursAgo * 3600)))</pubDate>"
                + "<enclosure url=\"\(item.url)\" type=\"video/mp4\"/></item>"
        }.joined()
        return "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>\(title)</title>\(body)</channel></rss>"
    }
}
