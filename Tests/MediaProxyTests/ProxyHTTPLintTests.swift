import Foundation
import MediaCache
import MediaOrigin
import MediaTestSupport
import NIOHTTP1
import Testing

/// `serve`'s answers checked the way an HTTP linter checks a server (the rules REDbot applies to a cache's
/// answers): every answer dated, conditional requests answered `304` from the cached validators, If-Range and
/// ranges as RFC 9110 says — on a cold cache (answered through the loader) and a warm one (answered at once).
@Suite struct ProxyHTTPLintTests {
    /// The problems a linter would report for one answer to `request`.
    private func lint(
        _ answer: (status: Int, headers: HTTPHeaders, body: [UInt8]), request: String
    ) -> [String] {
        var problems: [String] = []
        let headers = answer.headers
        if let date = headers.first(name: "date") {
            if HTTPDate.parse(date) == nil { problems.append("\(request): Date '\(date)' is not an HTTP date") }
        } else {
            problems.append("\(request): no Date header")
        }
        if let modified = headers.first(name: "last-modified"), HTTPDate.parse(modified) == nil {
            problems.append("\(request): Last-Modified '\(modified)' is not an HTTP date")
        }
        switch answer.status {
        case 304:
            if !answer.body.isEmpty { problems.append("\(request): a 304 with a body") }
            if headers.first(name: "etag") == nil { problems.append("\(request): a 304 without the ETag") }
        case 200, 206:
            if !request.hasSuffix("HEAD"), let length = headers.first(name: "content-length").flatMap(Int.init), length != answer.body.count {
                problems.append("\(request): Content-Length \(length) but \(answer.body.count) bytes")
            }
            if headers.first(name: "accept-ranges") != "bytes" { problems.append("\(request): no Accept-Ranges") }
        default: break
        }
        return problems
    }

    @Test func answersAreDatedAndConditionalRequestsGet304() async throws {
        let harness = try await ProxyHarness()
        let bytes = content(300_000)
        let modified = "Tue, 03 Nov 2026 10:00:00 GMT"
        origin(harness).set(OriginResource(bytes: bytes, etag: "\"v1\"", lastModified: modified), at: "/a.mp4")
        let url = harness.mediaURL("a.mp4")
        var problems: [String] = []
        for round in ["cold", "warm"] {
            let whole = try await httpGet(url)
            problems += lint(whole, request: "\(round) GET")
            #expect(whole.status == 200 && whole.body == bytes)
            let part = try await httpGet(url, range: "bytes=100-199")
            problems += lint(part, request: "\(round) GET range")
            #expect(part.status == 206 && part.body == Array(bytes[100...199]))
            let head = try await httpGet(url, method: .HEAD)
            problems += lint(head, request: "\(round) HEAD")

            let etagMatch = try await httpGet(url, headers: [("If-None-Match", "\"v1\"")])
            problems += lint(etagMatch, request: "\(round) If-None-Match")
            #expect(etagMatch.status == 304, "\(round): If-None-Match of the cached ETag")
            let weakList = try await httpGet(url, headers: [("If-None-Match", "\"other\", W/\"v1\"")])
            #expect(weakList.status == 304, "\(round): a weak match in a list")
            let since = try await httpGet(url, headers: [("If-Modified-Since", modified)])
            problems += lint(since, request: "\(round) If-Modified-Since")
            #expect(since.status == 304, "\(round): If-Modified-Since the Last-Modified")
            let rangeNotModified = try await httpGet(url, range: "bytes=0-9", headers: [("If-None-Match", "\"v1\"")])
            #expect(rangeNotModified.status == 304, "\(round): Range does not apply to a 304")

            let otherTag = try await httpGet(url, headers: [("If-None-Match", "\"v0\"")])
            #expect(otherTag.status == 200 && otherTag.body == bytes, "\(round): another ETag gets the body")
            let earlier = try await httpGet(url, headers: [("If-Modified-Since", "Mon, 02 Nov 2026 10:00:00 GMT")])
            #expect(earlier.status == 200 && earlier.body == bytes, "\(round): modified since")
            // If-None-Match wins over If-Modified-Since.
            let both = try await httpGet(
                url, headers: [("If-None-Match", "\"v0\""), ("If-Modified-Since", modified)])
            #expect(both.status == 200, "\(round): If-None-Match decides")

            let ifRangeHolds = try await httpGet(url, range: "bytes=10-19", headers: [("If-Range", "\"v1\"")])
            #expect(ifRangeHolds.status == 206 && ifRangeHolds.body == Array(bytes[10...19]))
            let ifRangeStale = try await httpGet(url, range: "bytes=10-19", headers: [("If-Range", "\"v0\"")])
            #expect(ifRangeStale.status == 200 && ifRangeStale.body == bytes, "\(round): a stale If-Range gets all")
            let refused = try await httpGet(url, range: "bytes=400000-")
            problems += lint(refused, request: "\(round) unsatisfiable range")
            #expect(refused.status == 416 && refused.headers.first(name: "content-range") == "bytes */300000")
        }
        let forbidden = try await httpGet(harness.proxy.baseURL + "../nope")
        problems += lint(forbidden, request: "refusal")
        #expect(problems.isEmpty, "\(problems)")
        await harness.close()
    }

    private func origin(_ harness: ProxyHarness) -> MediaOriginServer { harness.origin }
}
