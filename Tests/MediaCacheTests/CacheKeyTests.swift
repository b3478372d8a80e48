import Foundation
import Testing

@testable import MediaCache

@Suite struct CacheKeyTests {
    @Test func equivalentURLsShareAKey() throws {
        let base = CacheKey(url: try #require(URL(string: "http://cdn.example.com/a/b.mp4?x=1")))
        for variant in ["HTTP://CDN.Example.com/a/b.mp4?x=1", "http://cdn.example.com:80/a/b.mp4?x=1",
                        "http://cdn.example.com/a/b.mp4?x=1#t=3"] {
            #expect(CacheKey(url: try #require(URL(string: variant))) == base, "\(variant)")
        }
        #expect(CacheKey(url: try #require(URL(string: "http://cdn.example.com/a/b.mp4?x=2"))) != base)
        #expect(CacheKey(url: try #require(URL(string: "https://cdn.example.com/a/b.mp4?x=1"))) != base)
        #expect(CacheKey.normalize(try #require(URL(string: "https://H.com:443"))) == "https://h.com/")
    }

    @Test func customKeysAreSeparateFromURLKeysAndHexOnly() throws {
        let custom = CacheKey(custom: "http://cdn.example.com/a.mp4")
        #expect(custom != CacheKey(url: try #require(URL(string: "http://cdn.example.com/a.mp4"))))
        #expect(custom.hex.count == 64)
        #expect(custom.hex.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(CacheKey(hex: custom.hex) == custom)
        #expect(CacheKey(hex: "../../etc/passwd") == nil)
        #expect(CacheKey(hex: String(repeating: "G", count: 64)) == nil)
    }
}
