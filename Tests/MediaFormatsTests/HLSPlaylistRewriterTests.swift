import Foundation
import MediaFormats
import Testing

/// Every URI of a playlist goes through the rewrite; tags, ranges, comments and line ends stay.
@Suite struct HLSPlaylistRewriterTests {
    @Test func rewritesURILinesAndURIAttributesOnly() {
        let base = URL(string: "http://cdn.example/s/v1/index.m3u8")!
        let text = "#EXTM3U\r\n#EXT-X-KEY:METHOD=AES-128,URI=\"../key.bin\",IV=0x1\r\n"
            + "#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"720@0\"\r\n# a comment with URI=\"x\"\r\n"
            + "#EXT-X-FOO:XURI=\"keep.me\"\r\n#EXT-X-BYTERANGE:100@720\r\n#EXTINF:1,\r\nseg.mp4\r\n"
            + "#EXTINF:1,\r\nhttps://other.example/abs.ts\r\n\r\n#EXT-X-ENDLIST"
        let rewritten = HLSPlaylistRewriter.rewrite(text, base: base) { "P[" + $0.absoluteString + "]" }
        #expect(rewritten == "#EXTM3U\r\n#EXT-X-KEY:METHOD=AES-128,URI=\"P[http://cdn.example/s/key.bin]\",IV=0x1\r\n"
            + "#EXT-X-MAP:URI=\"P[http://cdn.example/s/v1/init.mp4]\",BYTERANGE=\"720@0\"\r\n# a comment with URI=\"x\"\r\n"
            + "#EXT-X-FOO:XURI=\"keep.me\"\r\n#EXT-X-BYTERANGE:100@720\r\n#EXTINF:1,\r\nP[http://cdn.example/s/v1/seg.mp4]\r\n"
            + "#EXTINF:1,\r\nP[https://other.example/abs.ts]\r\n\r\n#EXT-X-ENDLIST")
    }

    @Test func theRewrittenPlaylistParsesToTheSameSegments() throws {
        let base = URL(string: "http://cdn.example/s/index.m3u8")!
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n#EXTINF:2,\nsub/b.ts\n#EXT-X-ENDLIST\n"
        let rewritten = HLSPlaylistRewriter.rewrite(text, base: base) { $0.absoluteString }
        #expect(try HLSPlaylistParser.parse(rewritten, url: base) == HLSPlaylistParser.parse(text, url: base))
    }
}
