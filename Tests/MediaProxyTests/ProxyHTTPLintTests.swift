import Foundation
import HTTPSemantics
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
            if round == "warm" {
                // Answered from the cache: how long since the origin vouched for it (RFC 9111 §5.1).
                let age = whole.headers.first(name: "age").flatMap(Int.init)
                #expect(age.map { $0 >= 0 } == true, "warm GET: Age '\(whole.headers.first(name: "age") ?? "none")'")
            }
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

    /// A HEAD on a cold cache costs the origin a HEAD, not a block of the body (it cost 64 KiB).
    @Test func aHeadOnAColdCacheDownloadsNothing() async throws {
        let harness = try await ProxyHarness()
        let bytes = content(300_000)
        harness.origin.set(OriginResource(bytes: bytes, etag: "\"h\""), at: "/h.mp4")
        let head = try await httpGet(harness.mediaURL("h.mp4"), method: .HEAD)
        #expect(head.status == 200)
        #expect(head.headers.first(name: "content-length") == "300000")
        #expect(head.headers.first(name: "etag") == "\"h\"")
        #expect(harness.origin.bodyBytesSent == 0)
        #expect(harness.origin.requests.map(\.method) == ["HEAD"])
        // The GET after it gets the whole body.
        let whole = try await httpGet(harness.mediaURL("h.mp4"))
        #expect(whole.status == 200 && whole.body == bytes)
        await harness.close()
    }

    /// A client revalidating what it holds (If-None-Match, If-Modified-Since) on a cold cache costs the origin
    /// a HEAD, not body bytes (it cost 64 KiB); one that does not match gets the whole body.
    @Test func aColdConditionalRequestCostsNoBody() async throws {
        let harness = try await ProxyHarness()
        let bytes = content(300_000)
        let modified = "Tue, 03 Nov 2026 10:00:00 GMT"
        harness.origin.set(OriginResource(bytes: bytes, etag: "\"c\"", lastModified: modified), at: "/c.mp4")
        harness.origin.set(OriginResource(bytes: bytes, etag: "\"d\"", lastModified: modified), at: "/d.mp4")
        let etag = try await httpGet(harness.mediaURL("c.mp4"), headers: [("If-None-Match", "\"c\"")])
        #expect(etag.status == 304)
        let since = try await httpGet(harness.mediaURL("d.mp4"), headers: [("If-Modified-Since", modified)])
        #expect(since.status == 304)
        #expect(harness.origin.bodyBytesSent == 0)
        #expect(harness.origin.requests.map(\.method) == ["HEAD", "HEAD"])
        let other = try await httpGet(harness.mediaURL("c.mp4"), headers: [("If-None-Match", "\"old\"")])
        #expect(other.status == 200 && other.body == bytes)
        await harness.close()
    }

    /// Several ranges are answered as `multipart/byteranges` holding just those parts in the order asked, and
    /// only the blocks holding them are fetched (a two-part Range on a cold cache fetched the whole file).
    @Test func severalRangesGetTheirPartsAndCostOnlyTheirBlocks() async throws {
        let harness = try await ProxyHarness()
        let bytes = content(600_000)
        harness.origin.set(OriginResource(bytes: bytes), at: "/m.mp4")
        let url = harness.mediaURL("m.mp4")
        for round in ["cold", "warm"] {
            await harness.origin.resetCounters()
            // Asked out of order: the parts come in the order asked (RFC 9110 §15.3.7.2).
            let answer = try await httpGet(url, range: "bytes=500000-500009,0-1,5-6")
            #expect(answer.status == 206, "\(round)")
            let type = answer.headers.first(name: "content-type") ?? ""
            let boundary = try #require(type.components(separatedBy: "boundary=").last, "\(type)")
            #expect(type.hasPrefix("multipart/byteranges"))
            #expect(answer.headers.first(name: "content-length").flatMap(Int.init) == answer.body.count)
            let parts = Self.parts(answer.body, boundary: boundary)
            #expect(parts.map(\.range) == ["bytes 500000-500009/600000", "bytes 0-1/600000", "bytes 5-6/600000"])
            #expect(parts.map(\.body) == [Array(bytes[500_000...500_009]), Array(bytes[0...1]), Array(bytes[5...6])])
            // Two 64 KiB blocks at most, not 600 kB; nothing at all once they are cached.
            #expect(harness.origin.bodyBytesSent <= (round == "cold" ? 2 * 65_536 : 0), "\(round)")
        }
        await harness.close()
    }

    /// The parts of a `multipart/byteranges` body: each one's Content-Range and bytes.
    static func parts(_ body: [UInt8], boundary: String) -> [(range: String, body: [UInt8])] {
        let delimiter = Array("--\(boundary)".utf8)
        var result: [(String, [UInt8])] = []
        var index = 0
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard needle.count <= body.count else { return nil }
            var i = start
            while i + needle.count <= body.count {
                if Array(body[i..<(i + needle.count)]) == needle { return i }
                i += 1
            }
            return nil
        }
        while let start = find(delimiter, from: index) {
            let afterDelimiter = start + delimiter.count
            if body.count >= afterDelimiter + 2, body[afterDelimiter] == UInt8(ascii: "-") { break }
            guard let headEnd = find(Array("\r\n\r\n".utf8), from: afterDelimiter) else { break }
            let head = String(decoding: body[afterDelimiter..<headEnd], as: UTF8.self)
            let range = head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-range:") }
                .map { String($0.dropFirst("content-range:".count)).trimmingCharacters(in: .whitespaces) } ?? ""
            guard let next = find(Array("\r\n--\(boundary)".utf8), from: headEnd + 4) else { break }
            result.append((range, Array(body[(headEnd + 4)..<next])))
            index = next + 2
        }
        return result
    }

    private func origin(_ harness: ProxyHarness) -> MediaOriginServer { harness.origin }
}
