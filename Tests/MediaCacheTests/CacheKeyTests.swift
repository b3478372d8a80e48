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

@Suite struct CacheKeyRuleTests {
    @Test func signedURLsForTheSameMediaShareAKey() throws {
        let signed = [
            "https://bucket.s3.amazonaws.com/v/a.mp4?X-Amz-Algorithm=AWS4&X-Amz-Credential=k%2F1&X-Amz-Date=20261128T1&X-Amz-Expires=900&X-Amz-Signature=ab12",
            "https://bucket.s3.amazonaws.com/v/a.mp4?x-amz-signature=ff&X-Amz-Expires=60",
            "https://bucket.s3.amazonaws.com/v/a.mp4",
        ]
        let keys = try signed.map { CacheKey(url: try #require(URL(string: $0))) }
        #expect(Set(keys).count == 1)
        let cloudFront = try ["https://d1.cloudfront.net/a.mp4?Expires=1&Signature=x&Key-Pair-Id=K",
            "https://d1.cloudfront.net/a.mp4?Policy=p&Signature=y&Key-Pair-Id=K"].map {
            CacheKey(url: try #require(URL(string: $0)))
        }
        #expect(cloudFront[0] == cloudFront[1])
        // What names the bytes stays in the key, in its order.
        let a = CacheKey(url: try #require(URL(string: "https://cdn.example.com/v?id=7&token=abc&q=hd")))
        let b = CacheKey(url: try #require(URL(string: "https://cdn.example.com/v?id=7&token=zzz&q=hd")))
        let c = CacheKey(url: try #require(URL(string: "https://cdn.example.com/v?id=8&token=abc&q=hd")))
        #expect(a == b)
        #expect(a != c)
        #expect(CacheKey.normalize(try #require(URL(string: "https://cdn.example.com/v?id=7&token=abc&q=hd")))
            == "https://cdn.example.com/v?id=7&q=hd")
    }

    @Test func theExactRuleAndExtraNames() throws {
        let url = try #require(URL(string: "https://cdn.example.com/v.mp4?token=1&auth=2"))
        let other = try #require(URL(string: "https://cdn.example.com/v.mp4?token=9&auth=3"))
        #expect(CacheKey(url: url, rule: .exact) != CacheKey(url: other, rule: .exact))
        #expect(CacheKey(url: url) != CacheKey(url: other))
        let rule = CacheKeyRule.standard.ignoring(["auth"])
        #expect(CacheKey(url: url, rule: rule) == CacheKey(url: other, rule: rule))
        #expect(rule.ignores("AUTH") && rule.ignores("X-Amz-Whatever") && !rule.ignores("id"))
    }
}
