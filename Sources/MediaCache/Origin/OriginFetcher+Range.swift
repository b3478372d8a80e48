import Foundation
import HTTPSemantics
import NIOHTTP1

/// The answer to a ranged GET, checked once for every caller (the loader's fetches, its continuity probes and
/// stream-through readers).
enum RangedAnswer {
    /// 206 with exactly the bytes asked for, from the first one; `total` is the resource's length when given.
    case partial(total: Int64?, OriginResponse)
    /// 200: the whole body from byte 0 (the origin ignored `Range`, or `If-Range` named another version);
    /// `length` when declared (nil for a chunked body).
    case whole(length: Int64?, OriginResponse)
    /// 416: nothing at that offset; `length` when the origin said, with the answer's validators.
    case notSatisfiable(length: Int64?, etag: String?, lastModified: String?)
}

extension OriginFetcher {
    /// Sends `GET` for `start..<end` (to the end when `end` is nil) with `If-Range: ifRange` when given, and checks
    /// the answer strictly: a 206 must carry a `Content-Range` starting at `start` and ending inside the request,
    /// any status but 200, 206 and 416 is an `httpStatus` error.
    func rangedGet(url: URL, from start: Int64, to end: Int64?, ifRange: String?) async throws -> RangedAnswer {
        let header = ByteRangeRequest.header(from: start, to: end)
        let response = try await send(url: url, method: .GET, range: header, ifRange: ifRange)
        switch response.status {
        case 206:
            guard let contentRange = response.contentRangeHeader.flatMap(ContentRange.init),
                let range = contentRange.range, range.lowerBound == start,
                end.map({ range.upperBound < $0 }) ?? true
            else {
                if let header = response.contentRangeHeader, let total = ContentRange.totalOverrun(header) {
                    throw OriginError.lengthsDisagree(
                        url: url.absoluteString,
                        detail: "Content-Range \(header) runs past its own total of \(total) bytes")
                }
                throw OriginError.badContentRange(url: url.absoluteString, header: response.contentRangeHeader)
            }
            // A body of another length than the range it claims to be: neither can be trusted (taking the range
            // would cache a shorter resource as whole).
            if let declared = response.declaredLength, declared != Int64(range.count) {
                throw OriginError.lengthsDisagree(
                    url: url.absoluteString,
                    detail: "Content-Range \(response.contentRangeHeader ?? "") names \(range.count) bytes, Content-Length \(declared)")
            }
            return .partial(total: contentRange.completeLength, response)
        case 200:
            return .whole(length: response.declaredLength, response)
        case 416:
            return .notSatisfiable(
                length: response.contentRangeHeader.flatMap(ContentRange.init)?.completeLength, etag: response.etag,
                lastModified: response.lastModified)
        default:
            throw OriginError.httpStatus(url: url.absoluteString, status: response.status, reason: response.reason)
        }
    }
}
