import Foundation

/// Headers that requests for particular URLs carry: what an extractor says a media URL needs (its `User-Agent`,
/// `Referer`, cookies). Kept for the most recent URLs only, so a long session does not grow it without bound.
struct RequestHeaderTable: Sendable {
    /// URLs kept.
    static let capacity = 4096
    /// Headers the loader sets itself: a caller's would break ranges, validation or the bytes' encoding.
    static let reserved: Set<String> = [
        "range", "if-range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since",
        "accept-encoding", "host", "content-length", "transfer-encoding", "connection", "te", "upgrade",
        "keep-alive", "proxy-connection",
    ]

    private var table: [String: [(String, String)]] = [:]
    private var order: [String] = []

    /// Sets the headers of `url` (empty removes them); reserved names and values with line breaks are dropped.
    mutating func set(_ headers: [String: String], for url: URL) {
        let key = url.absoluteString
        let kept = headers.filter { name, value in
            !Self.reserved.contains(name.lowercased()) && !name.isEmpty
                && !name.contains(where: { $0.isNewline || $0 == ":" || $0 == " " })
                && !value.contains(where: \.isNewline)
        }
        .sorted { $0.key < $1.key }
        .map { ($0.key, $0.value) }
        if table[key] != nil { order.removeAll { $0 == key } }
        guard !kept.isEmpty else {
            table[key] = nil
            return
        }
        table[key] = kept
        order.append(key)
        if order.count > Self.capacity {
            table[order.removeFirst()] = nil
        }
    }

    /// The headers requests for `url` carry.
    func headers(for url: URL) -> [(String, String)] { table[url.absoluteString] ?? [] }
}
