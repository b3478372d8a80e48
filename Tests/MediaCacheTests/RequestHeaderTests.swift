import Foundation
import MediaOrigin
import MediaTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import MediaCache

/// Headers an extractor says a media URL needs go with every request for it, never with another URL's, never
/// over the loader's own, and not to another host a redirect names.
@Suite struct RequestHeaderTests {
    /// Refuses `/signed.mp4` without the extractor's headers, and notes what each path was sent.
    final class RefererRule: OriginRule {
        let seen = NIOLockedValueBox<[String: [String]]>([:])

        func intercept(_ request: inout OriginRequest) -> Int? {
            let line = "\(request["referer"] ?? "-") \(request["user-agent"] ?? "-") \(request["range"] ?? "-")"
            seen.withLockedValue { $0[request.path, default: []].append(line) }
            guard request.path == "/signed.mp4" else { return nil }
            return request["referer"] == "https://pages.example/watch" && request["user-agent"] == "Extractor/1" ? nil : 403
        }
    }

    @Test func everyRequestForTheURLCarriesItsHeadersAndNoOtherDoes() async throws {
        let h = try await LoaderHarness()
        let rule = RefererRule()
        h.origin.rule = rule
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes, etag: "\"s\""), at: "/signed.mp4")
        h.origin.set(OriginResource(bytes: bytes, etag: "\"o\""), at: "/other.mp4")
        let url = h.url("signed.mp4")
        // Without them the origin refuses.
        await #expect(throws: (any Error).self) { _ = try await h.loader.data(LoadingRequest(url: url, requestedLength: 1000)) }

        h.loader.setRequestHeaders(
            ["Referer": "https://pages.example/watch", "User-Agent": "Extractor/1", "Range": "bytes=0-0",
             "Accept-Encoding": "gzip", "Bad\nName": "x", "X-Split": "a\r\nInjected: 1"], for: url)
        let info = try await h.loader.contentInformation(for: url)
        #expect(info.contentLength == 300_000)
        #expect(try await h.loader.data(LoadingRequest(url: url, requestedOffset: 100_000, requestedLength: 50_000))
            == Array(bytes[100_000..<150_000]))
        #expect(try await h.loader.data(LoadingRequest(url: url)) == bytes)
        // Another URL is sent the loader's own User-Agent and no Referer.
        #expect(try await h.loader.data(LoadingRequest(url: h.url("other.mp4"), requestedLength: 10)) == Array(bytes[0..<10]))
        let seen = rule.seen.withLockedValue { $0 }
        let signed = try #require(seen["/signed.mp4"])
        #expect(signed.dropFirst().allSatisfy { $0.hasPrefix("https://pages.example/watch Extractor/1 ") }, "\(signed)")
        // The caller's Range never replaced the loader's.
        #expect(signed.dropFirst().allSatisfy { !$0.hasSuffix(" bytes=0-0") }, "\(signed)")
        #expect(seen["/other.mp4"]?.allSatisfy { $0.hasPrefix("- ") && !$0.contains("Extractor/1") } == true, "\(seen)")
        await h.close()
    }

    @Test func aRedirectToAnotherHostDoesNotCarryThem() async throws {
        let h = try await LoaderHarness()
        let rule = RefererRule()
        h.origin.rule = rule
        let bytes = content(20_000)
        h.origin.set(OriginResource(bytes: bytes, etag: "\"m\""), at: "/moved.mp4")
        h.origin.set(OriginResource(bytes: bytes, etag: "\"s\""), at: "/same.mp4")
        // The same server under another name is another host.
        let elsewhere = "http://localhost:\(h.origin.port)/moved.mp4"
        h.origin.redirect("/away.mp4", to: elsewhere)
        h.origin.redirect("/here.mp4", to: "/same.mp4")
        for path in ["away.mp4", "here.mp4"] {
            h.loader.setRequestHeaders(["Referer": "https://pages.example/watch", "Cookie": "session=1"], for: h.url(path))
            #expect(try await h.loader.data(LoadingRequest(url: h.url(path))) == bytes)
        }
        let seen = rule.seen.withLockedValue { $0 }
        #expect(seen["/moved.mp4"]?.allSatisfy { $0.hasPrefix("- ") } == true, "\(seen)")
        #expect(seen["/same.mp4"]?.allSatisfy { $0.hasPrefix("https://pages.example/watch ") } == true, "\(seen)")
        await h.close()
    }

    @Test func theTableForgetsTheOldestURLsAndRemovesOnEmpty() throws {
        var table = RequestHeaderTable()
        let first = try #require(URL(string: "https://cdn.example.com/0.mp4"))
        table.set(["Referer": "r"], for: first)
        #expect(table.headers(for: first).map(\.0) == ["Referer"])
        for index in 1...RequestHeaderTable.capacity {
            table.set(["Referer": "r"], for: try #require(URL(string: "https://cdn.example.com/\(index).mp4")))
        }
        #expect(table.headers(for: first).isEmpty)
        let last = try #require(URL(string: "https://cdn.example.com/\(RequestHeaderTable.capacity).mp4"))
        table.set([:], for: last)
        #expect(table.headers(for: last).isEmpty)
    }
}
