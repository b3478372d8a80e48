import AsyncHTTPClient
import Foundation
import NIOCore

/// Reads a range straight from the origin, for resources that stream through uncached.
final class HTTPClientBodyReader {
    private var body: OriginBodyStream
    private var skip: Int64
    /// Bytes received before this reader took the body over, not yet returned.
    private var pending: [UInt8] = []
    private let url: URL
    private let traffic: TrafficMeter
    private let key: CacheKey

    private init(body: OriginBodyStream, skip: Int64, url: URL, traffic: TrafficMeter, key: CacheKey) {
        self.body = body
        self.skip = skip
        self.url = url
        self.traffic = traffic
        self.key = key
    }

    /// Requests `offset..<end` (to the end when `end` is nil); a 200 answer is skipped forward to `offset`.
    ///
    /// `continuing` is the version the caller already delivered bytes of: its validator goes out as `If-Range`,
    /// and an answer from another version fails with `resourceChanged` instead of splicing two versions.
    static func open(
        fetcher: OriginFetcher, traffic: TrafficMeter, key: CacheKey, url: URL, offset: Int64, end: Int64?,
        continuing: ResourceMetadata? = nil
    ) async throws -> HTTPClientBodyReader {
        traffic.sentRequest()
        let validator = continuing.flatMap(FetchRunner.ifRangeValidator)
        let answer = try await fetcher.rangedGet(url: url, from: offset, to: end, ifRange: validator)
        let response: OriginResponse
        let length: Int64?
        let skip: Int64
        switch answer {
        case .partial(let total, let partial): (response, length, skip) = (partial, total, 0)
        case .whole(let declared, let whole): (response, length, skip) = (whole, declared, offset)
        case .notSatisfiable(let total, _, _):
            throw OriginError.rangeNotSatisfiable(url: url.absoluteString, length: total)
        }
        if let continuing {
            // A 200 is either a new version or an origin that ignores Range: its validators tell which.
            let answered = ResourceMetadata(
                url: url.absoluteString, contentLength: length, etag: response.etag, lastModified: response.lastModified)
            if answered.isDifferentVersion(from: continuing) {
                throw OriginError.resourceChanged(url: url.absoluteString)
            }
        }
        return HTTPClientBodyReader(
            body: OriginBodyStream(response, url: url, configuration: fetcher.configuration), skip: skip, url: url,
            traffic: traffic, key: key)
    }

    /// Goes on with the answer a fetch could not cache, from `offset` (at or after the handed body's next byte).
    static func adopting(_ handed: HandedBody, at offset: Int64, traffic: TrafficMeter, key: CacheKey, url: URL)
        -> HTTPClientBodyReader
    {
        let reader = HTTPClientBodyReader(
            body: handed.body, skip: offset - handed.offset, url: url, traffic: traffic, key: key)
        let dropped = Int(Swift.min(reader.skip, Int64(handed.pending.count)))
        reader.pending = Array(handed.pending.dropFirst(dropped))
        reader.skip -= Int64(dropped)
        return reader
    }

    /// The next bytes (at most `limit` when given), or nil at the end of the body.
    func next(upTo limit: Int64?) async throws -> [UInt8]? {
        if let limit, limit <= 0 { return nil }
        if !pending.isEmpty {
            let count = limit.map { Int(Swift.min(Int64(pending.count), $0)) } ?? pending.count
            defer { pending.removeFirst(count) }
            return Array(pending.prefix(count))
        }
        while var buffer = try await body.next() {
            traffic.received(Int64(buffer.readableBytes), for: key)
            if skip > 0 {
                let dropped = Int(Swift.min(skip, Int64(buffer.readableBytes)))
                buffer.moveReaderIndex(forwardBy: dropped)
                skip -= Int64(dropped)
            }
            guard buffer.readableBytes > 0 else { continue }
            let count = limit.map { Int(Swift.min(Int64(buffer.readableBytes), $0)) } ?? buffer.readableBytes
            return buffer.readBytes(length: count)
        }
        return nil
    }
}
