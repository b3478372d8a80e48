import Foundation
import HTTPSemantics
import MediaCache
import MediaFormats
import NIOCore
import NIOHTTP1

/// HLS through the proxy: a playlist goes out with every URI in it pointing back here, so a player fetches the
/// variants, segments, keys and initialization sections through the cache as well.
enum PlaylistAnswer {
    /// Sends the playlist at `url` rewritten. Always the whole rewritten body with 200: its length is not the
    /// origin's, so a range of the origin's bytes would mean nothing to the client. A playlist larger than
    /// `HLSPlaylistParser.maxBytes` is refused with 502 rather than held in memory.
    static func send(
        _ request: HTTPRequestHead, url: URL, key: CacheKey, info: ContentInformation, server: ProxyServer,
        channel: Channel
    ) async -> Answered {
        let keepAlive = request.isKeepAlive
        let isHead = request.method == .HEAD
        let limit = Int64(HLSPlaylistParser.maxBytes)
        if let length = info.contentLength, length > limit {
            return await ResponseWriter.simple(
                .badGateway, "bad gateway: the playlist is \(length) bytes, more than the \(limit >> 20) MiB allowed\n",
                channel, keepAlive, head: isHead)
        }
        var bytes: [UInt8] = []
        var outcome: CacheOutcome?
        if info.contentLength != 0 {
            var loading = LoadingRequest(url: url, cacheKey: key, requestedOffset: 0, requestedLength: info.contentLength)
            if let length = info.contentLength {
                loading.expectedVersion = ResourceMetadata(
                    url: url.absoluteString, contentLength: length, contentType: info.contentType, etag: info.etag,
                    lastModified: info.lastModified)
            }
            let chunks = server.loader.load(loading).makeAsyncIterator()
            do {
                while let chunk = try await chunks.next() {
                    bytes += chunk.bytes
                    guard Int64(bytes.count) <= limit else {
                        return await ResponseWriter.simple(
                            .badGateway, "bad gateway: the playlist is larger than the \(limit >> 20) MiB allowed\n",
                            channel, keepAlive, head: isHead)
                    }
                }
            } catch {
                return await ResponseWriter.upstreamFailure(error, channel, keepAlive, head: isHead)
            }
            outcome = chunks.report?.outcome
        }
        let text = HLSPlaylistRewriter.rewrite(String(decoding: bytes, as: UTF8.self), base: url) {
            server.mediaURL(for: $0)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: info.contentType ?? "application/vnd.apple.mpegurl")
        headers.add(name: "Cache-Control", value: "no-cache")
        // The body is this proxy's rewrite, not the origin's bytes: its ETag is its own, and its Last-Modified
        // the later of the origin's and this server's start (the rewrite points at this server: a client holding
        // a rewrite for an earlier server, on another port, must not be told it is current).
        let etag = playlistTag(text)
        let lastModified = HTTPDate.format(
            Swift.max(info.lastModified.flatMap(HTTPDate.parse) ?? server.startedAt, server.startedAt))
        headers.add(name: "ETag", value: etag)
        headers.add(name: "Last-Modified", value: lastModified)
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        if HTTPConditions.notModified(
            ifNoneMatch: request.headers.first(name: "if-none-match"),
            ifModifiedSince: request.headers.first(name: "if-modified-since"), etag: etag, lastModified: lastModified)
        {
            headers.remove(name: "Content-Type")
            await ResponseWriter.write(channel, .head(HTTPResponseHead(version: .http1_1, status: .notModified, headers: headers)))
            await ResponseWriter.end(channel, keepAlive)
            return Answered(status: 304, bytes: 0, outcome: outcome)
        }
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        await ResponseWriter.write(channel, .head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
        if !isHead {
            var buffer = channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            await ResponseWriter.write(channel, .body(.byteBuffer(buffer)))
        }
        await ResponseWriter.end(channel, keepAlive)
        return Answered(status: 200, bytes: isHead ? 0 : Int64(text.utf8.count), outcome: outcome)
    }

    /// A strong ETag for a rewritten playlist: FNV-1a over its text (it changes whenever the text does).
    static func playlistTag(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return "\"hls-" + String(hash, radix: 16) + "\""
    }
}
