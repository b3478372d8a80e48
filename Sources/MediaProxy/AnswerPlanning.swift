import Foundation
import HTTPSemantics
import MediaCache
import NIOHTTP1

/// Reading a request and planning its answer: plain values, the same for the cached fast path and the loader's.
enum AnswerPlanning {
    /// What a request asks for: a media URL, or a refusal to answer as it is.
    enum Target {
        /// The origin URL and the key its bytes are cached under (`&key=`, else the server's key rule).
        case media(URL, CacheKey)
        case refusal(HTTPResponseStatus, String, extra: [(String, String)])
    }

    /// Reads the path, method and `url=` of a request.
    static func target(of request: HTTPRequestHead, server: ProxyServer) -> Target {
        let components = URLComponents(string: request.uri)
        let segments = (components?.percentEncodedPath ?? "").split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 3, segments[0].isEmpty, segments[1] == server.token else {
            return .refusal(.forbidden, "forbidden: this proxy needs its token in the path\n", extra: [])
        }
        guard segments[2] == "media" else {
            return .refusal(.notFound, "not found: use \(server.baseURL)media?url=ENCODED-URL\n", extra: [])
        }
        guard request.method == .GET || request.method == .HEAD else {
            return .refusal(.methodNotAllowed, "only GET and HEAD\n", extra: [("Allow", "GET, HEAD")])
        }
        guard let text = components?.queryItems?.first(where: { $0.name == "url" })?.value else {
            return .refusal(.badRequest, "bad request: url= must be a percent-encoded http or https URL\n", extra: [])
        }
        let url: URL
        do {
            url = try OriginURL.parse(text)
        } catch {
            return .refusal(.badRequest, "bad request: url= \(error)\n", extra: [])
        }
        guard let custom = components?.queryItems?.first(where: { $0.name == "key" }) else {
            return .media(url, CacheKey(url: url, rule: server.keyRule))
        }
        guard let key = custom.value, !key.isEmpty, key.utf8.count <= ProxyServer.maximumKeyLength else {
            return .refusal(
                .badRequest, "bad request: key= must be 1 to \(ProxyServer.maximumKeyLength) bytes of text\n", extra: [])
        }
        return .media(url, CacheKey(custom: key))
    }

    /// The status, headers and body range answering a request from a version of known length.
    struct Plan {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        /// The body's bytes; nil for none (an empty resource, or a range that cannot be satisfied).
        var range: ClosedRange<Int64>?
        /// For several ranges: each part's head (the delimiter, Content-Type, Content-Range) and bytes, then the
        /// closing delimiter, sent as `multipart/byteranges`.
        var parts: [(head: String, range: ClosedRange<Int64>)] = []
        var closing = ""
    }

    /// Plans the answer to `request` from `info` (the version served, `length` bytes long), dated `now`:
    /// `304` when the client's If-None-Match or If-Modified-Since names that version, else the range or the whole.
    static func plan(_ request: HTTPRequestHead, _ info: ContentInformation, length: Int64, now: Date = Date()) -> Plan {
        var headers = HTTPHeaders()
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "Content-Type", value: info.contentType ?? "application/octet-stream")
        if let etag = info.etag { headers.add(name: "ETag", value: etag) }
        if let modified = info.lastModified { headers.add(name: "Last-Modified", value: modified) }
        headers.add(name: "Connection", value: request.isKeepAlive ? "keep-alive" : "close")
        headers.add(name: "Date", value: HTTPDate.format(now))
        // The client holds this version already: its validators are the answer (Range does not apply).
        if HTTPConditions.notModified(
            ifNoneMatch: request.headers.first(name: "if-none-match"),
            ifModifiedSince: request.headers.first(name: "if-modified-since"), etag: info.etag,
            lastModified: info.lastModified)
        {
            headers.remove(name: "Content-Type")
            return Plan(status: .notModified, headers: headers, range: nil)
        }
        // A client's If-Range that does not match what we serve asks for the whole (new) body, not a range of it.
        let rangeHeader = ifRangeHolds(request.headers.first(name: "if-range"), info)
            ? request.headers.first(name: "range") : nil
        switch ByteRangeRequest(header: rangeHeader, length: length) {
        case .whole:
            headers.add(name: "Content-Length", value: String(length))
            return Plan(status: .ok, headers: headers, range: length > 0 ? 0...(length - 1) : nil)
        case .partial(let r):
            headers.add(name: "Content-Range", value: ContentRange.value(for: r, of: length))
            headers.add(name: "Content-Length", value: String(r.count))
            return Plan(status: .partialContent, headers: headers, range: r)
        case .multiple(let ranges):
            // Only the parts asked for, each fetched on its own (RFC 9110 §14.6).
            let boundary = "stories-tui-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let type = info.contentType ?? "application/octet-stream"
            var plan = Plan(status: .partialContent, headers: headers, range: nil)
            plan.parts = ranges.enumerated().map { index, r in
                ((index == 0 ? "" : "\r\n") + "--\(boundary)\r\nContent-Type: \(type)\r\n"
                    + "Content-Range: \(ContentRange.value(for: r, of: length))\r\n\r\n", r)
            }
            plan.closing = "\r\n--\(boundary)--\r\n"
            let total = plan.parts.reduce(Int64(plan.closing.utf8.count)) {
                $0 + Int64($1.head.utf8.count) + Int64($1.range.count)
            }
            plan.headers.replaceOrAdd(name: "Content-Type", value: "multipart/byteranges; boundary=\(boundary)")
            plan.headers.add(name: "Content-Length", value: String(total))
            return plan
        case .unsatisfiable:
            headers.add(name: "Content-Range", value: ContentRange.unsatisfied(length: length))
            headers.add(name: "Content-Length", value: "0")
            return Plan(status: .rangeNotSatisfiable, headers: headers, range: nil)
        }
    }

    /// True when there is no If-Range, or it names the version being served (a strong ETag, or the exact
    /// Last-Modified date).
    static func ifRangeHolds(_ ifRange: String?, _ info: ContentInformation) -> Bool {
        guard let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
            guard let etag = info.etag, !etag.hasPrefix("W/"), !ifRange.hasPrefix("W/") else { return false }
            return etag == ifRange
        }
        return info.lastModified == ifRange
    }
}
