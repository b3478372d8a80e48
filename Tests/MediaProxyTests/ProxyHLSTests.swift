import Foundation
import HTTPSemantics
import MediaCache
import MediaOrigin
import MediaTestSupport
import Testing

@testable import MediaProxy

/// HLS through the proxy: playlists come back with every URI pointing at the proxy, so a player fetches
/// everything through the cache.
@Suite struct ProxyHLSTests {
    /// The bundled HLS story (two variants of five 1-second MPEG-TS segments), registered at `/hls/...`.
    private static func serveBundledHLS(on origin: MediaOriginServer) throws -> Int {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("assets/videos/hls")
        var total = 0
        for file in ["master.m3u8", "v0/index.m3u8", "v1/index.m3u8"] + (0..<5).flatMap({ ["v0/seg\($0).ts", "v1/seg\($0).ts"] }) {
            let data = try #require(FileManager.default.contents(atPath: folder.appendingPathComponent(file).path))
            let type = MediaOriginServer.contentType(ofExtension: (file as NSString).pathExtension)
            origin.set(OriginResource(bytes: [UInt8](data), contentType: type), at: "/hls/" + file)
            total += data.count
        }
        return total
    }

    @Test func everyURIOfAPlaylistPointsBackAtTheProxy() async throws {
        let h = try await ProxyHarness()
        _ = try Self.serveBundledHLS(on: h.origin)
        let master = try await h.get(h.mediaURL("hls/master.m3u8"))
        #expect(master.status == 200)
        #expect(master.headers.first(name: "content-type") == "application/vnd.apple.mpegurl")
        let text = String(decoding: master.body, as: UTF8.self)
        #expect(master.headers.first(name: "content-length") == String(master.body.count))
        let uris = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        #expect(uris == [h.mediaURL("hls/v0/index.m3u8"), h.mediaURL("hls/v1/index.m3u8")])
        // A range of a playlist gets the whole rewritten playlist (its length is not the origin's).
        let ranged = try await h.get(h.mediaURL("hls/v0/index.m3u8"), range: "bytes=0-9")
        #expect(ranged.status == 200)
        let segments = String(decoding: ranged.body, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(segments.map(String.init) == (0..<5).map { h.mediaURL("hls/v0/seg\($0).ts") })
        // Asked again (now answered from the cache), the same rewritten text.
        #expect(try await h.get(h.mediaURL("hls/master.m3u8")).body == master.body)
        await h.close()
    }

    /// A rewritten playlist carries its own validator, taken from its text: a player revalidating it gets 304
    /// and no body while the text is the same, the whole text otherwise.
    @Test func aPlaylistCarriesAValidatorAndAnswers304() async throws {
        let h = try await ProxyHarness()
        _ = try Self.serveBundledHLS(on: h.origin)
        let url = h.mediaURL("hls/v0/index.m3u8")
        let first = try await h.get(url)
        let etag = try #require(first.headers.first(name: "etag"))
        // Its date is no earlier than this server's start (a rewrite for an earlier server is out of date), and a
        // client that revalidates by date gets 304 too.
        let modified = try #require(first.headers.first(name: "last-modified").flatMap(HTTPDate.parse))
        #expect(modified >= h.proxy.startedAt)
        let dated = try await httpGet(url, headers: [("If-Modified-Since", HTTPDate.format(modified))])
        #expect(dated.status == 304 && dated.body.isEmpty)
        let older = try await httpGet(url, headers: [("If-Modified-Since", HTTPDate.format(modified - 1))])
        #expect(older.status == 200 && older.body == first.body)
        let again = try await httpGet(url, headers: [("If-None-Match", etag)])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.headers.first(name: "etag") == etag)
        let other = try await httpGet(url, headers: [("If-None-Match", "\"hls-0\"")])
        #expect(other.status == 200 && other.body == first.body)
        // Another playlist's text has another validator: the old one does not match it.
        let second = try await httpGet(h.mediaURL("hls/v1/index.m3u8"), headers: [("If-None-Match", etag)])
        #expect(second.status == 200)
        #expect(second.headers.first(name: "etag").map { $0 != etag } == true)
        await h.close()
    }

    @Test func aPlaylistSentWithoutALengthIsRewrittenTooAndAnOversizedOneRefused() async throws {
        let h = try await ProxyHarness()
        _ = try Self.serveBundledHLS(on: h.origin)
        var faults = OriginFaults()
        faults.chunked = true
        faults.ignoreRange = true
        h.origin.setFaults(faults)
        let media = try await h.get(h.mediaURL("hls/v1/index.m3u8"))
        #expect(media.status == 200)
        let uris = String(decoding: media.body, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(uris.map(String.init) == (0..<5).map { h.mediaURL("hls/v1/seg\($0).ts") })
        h.origin.setFaults(OriginFaults())
        let huge = "#EXTM3U\n" + String(repeating: "# padding\n", count: 500_000)
        h.origin.set(OriginResource(bytes: Array(huge.utf8), contentType: "application/vnd.apple.mpegurl"), at: "/huge.m3u8")
        let refused = try await h.get(h.mediaURL("huge.m3u8"))
        #expect(refused.status == 502)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("more than the 4 MiB allowed"))
        await h.close()
    }

    @Test func ffprobeReadsAnHLSStreamThroughTheProxyAndASecondReadIsFree() async throws {
        guard let ffprobe = installedFFprobe() else { return }
        let h = try await ProxyHarness()
        let total = try Self.serveBundledHLS(on: h.origin)
        let masterURL = h.mediaURL("hls/master.m3u8")
        let first = try await offCooperativePool { try probeDuration(ffprobe, masterURL) }
        #expect(Double(first).map { abs($0 - 5) < 0.1 } == true, "ffprobe said \(first)")
        // A player plays both variants through (ffprobe alone stops early, at a point that depends on timing).
        for variant in ["v0", "v1"] {
            for index in 0..<5 { _ = try await h.get(h.mediaURL("hls/\(variant)/seg\(index).ts")) }
        }
        // No byte of any playlist or segment came from the origin twice.
        #expect(h.origin.bodyBytesSent <= total)
        let segmentGets = h.origin.requests.filter { $0.method == "GET" && $0.path.hasSuffix(".ts") && $0.bodyBytes > 0 }
        #expect(Set(segmentGets.map(\.path)).count == 10)
        try await h.restart()
        await h.origin.resetCounters()
        let secondURL = h.mediaURL("hls/master.m3u8")
        let second = try await offCooperativePool { try probeDuration(ffprobe, secondURL) }
        #expect(second == first)
        #expect(h.origin.bodyBytesSent == 0)
        await h.close()
    }
}
