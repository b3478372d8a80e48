import Foundation

extension MediaLoader {
    /// Makes every origin request for `url` (content information, ranges, checks, preloads) carry `headers`, as an
    /// extractor asks for a media URL it resolved (`User-Agent`, `Referer`, cookies); redirects carry them only
    /// on the same host. Headers the loader sets itself (`Range`, validators, `Accept-Encoding`, hop-by-hop ones)
    /// are not overridden. An empty dictionary removes them. The most recent 4,096 URLs are remembered.
    public func setRequestHeaders(_ headers: [String: String], for url: URL) {
        fetcher.extraHeaders.withLockedValue { $0.set(headers, for: url) }
    }
}
