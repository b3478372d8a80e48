import Foundation
import MediaFormats
import Testing

/// RFC 8216's examples and each tag a stored story uses, parsed; malformed playlists get one line naming the line.
@Suite struct HLSPlaylistParserTests {
    private let base = URL(string: "http://media.example.com/stories/a/index.m3u8")!

    private func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let playlist) = try HLSPlaylistParser.parse(text, url: base) else {
            Issue.record("not a media playlist")
            throw HLSPlaylistError(line: 0, "not a media playlist")
        }
        return playlist
    }

    @Test func theSimpleMediaPlaylistOfTheRFC() throws {
        let playlist = try media("""
            #EXTM3U
            #EXT-X-TARGETDURATION:10
            #EXT-X-VERSION:3
            #EXTINF:9.009,
            http://media.example.com/first.ts
            #EXTINF:9.009,
            http://media.example.com/second.ts
            #EXTINF:3.003,
            http://media.example.com/third.ts
            #EXT-X-ENDLIST
            """)
        #expect(playlist.targetDuration == 10)
        #expect(playlist.isComplete)
        #expect(playlist.segments.map(\.url.absoluteString) == [
            "http://media.example.com/first.ts", "http://media.example.com/second.ts", "http://media.example.com/third.ts",
        ])
        #expect(abs(playlist.duration - 21.021) < 1e-9)
        #expect(playlist.segmentIndex(at: 0) == 0)
        #expect(playlist.segmentIndex(at: 9.5) == 1)
        #expect(playlist.segmentIndex(at: 100) == 2)
        #expect(playlist.segmentCount(covering: 3) == 1)
        #expect(playlist.segmentCount(covering: 9.1) == 2)
        #expect(abs(playlist.start(ofSegment: 2) - 18.018) < 1e-9)
    }

    @Test func aLivePlaylistIsReadButNotComplete() throws {
        let playlist = try media("""
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:8
            #EXT-X-MEDIA-SEQUENCE:2680

            #EXTINF:7.975,
            https://priv.example.com/fileSequence2680.ts
            #EXTINF:7.941,
            https://priv.example.com/fileSequence2681.ts
            """)
        #expect(!playlist.isComplete)
        #expect(playlist.segments.map(\.sequence) == [2680, 2681])
    }

    @Test func keysApplyToTheSegmentsAfterThem() throws {
        let playlist = try media("""
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-MEDIA-SEQUENCE:7794
            #EXT-X-TARGETDURATION:15
            #EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=52"
            #EXTINF:2.833,
            http://media.example.com/fileSequence52-A.ts
            #EXT-X-KEY:METHOD=AES-128,URI="key53.bin",IV=0x1
            #EXTINF:15.0,
            http://media.example.com/fileSequence53-A.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:1,
            clear.ts
            #EXT-X-ENDLIST
            """)
        #expect(playlist.segments[0].key == HLSKey(url: URL(string: "https://priv.example.com/key.php?r=52")!))
        #expect(playlist.segments[1].key?.url.absoluteString == "http://media.example.com/stories/a/key53.bin")
        #expect(playlist.segments[1].key?.iv == [UInt8](repeating: 0, count: 15) + [1])
        #expect(playlist.segments[2].key == nil)
        #expect(playlist.segments[2].url.absoluteString == "http://media.example.com/stories/a/clear.ts")
        #expect(playlist.segments.map(\.sequence) == [7794, 7795, 7796])
    }

    @Test func theMasterPlaylistOfTheRFCAndChoosingAVariant() throws {
        let parsed = try HLSPlaylistParser.parse("""
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000
            http://example.com/low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=2560000,AVERAGE-BANDWIDTH=2000000,RESOLUTION=1280x720
            http://example.com/mid.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=7680000,AVERAGE-BANDWIDTH=6000000
            http://example.com/hi.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=65000,CODECS="mp4a.40.5,avc1.4d401e"
            ../audio-only.m3u8
            """, url: base)
        guard case .master(let master) = parsed else {
            Issue.record("not a master playlist")
            return
        }
        #expect(master.variants.count == 4)
        #expect(master.variants[1].resolution == HLSResolution(width: 1280, height: 720))
        #expect(master.variants[1].averageBandwidth == 2_000_000)
        #expect(master.variants[3].codecs == "mp4a.40.5,avc1.4d401e")
        #expect(master.variants[3].url.absoluteString == "http://media.example.com/stories/audio-only.m3u8")
        // Lowest first while the throughput is unknown; then the highest that fits with headroom.
        #expect(master.variant(forThroughput: nil)?.bandwidth == 65_000)
        #expect(master.variant(forThroughput: 4_000_000)?.bandwidth == 2_560_000)
        #expect(master.variant(forThroughput: 100_000_000)?.bandwidth == 7_680_000)
        #expect(master.variant(forThroughput: 10)?.bandwidth == 65_000)
    }

    @Test func byteRangesAndInitializationSections() throws {
        let playlist = try media("""
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-VERSION:7
            #EXT-X-MAP:URI="main.mp4",BYTERANGE="720@0"
            #EXT-X-BYTERANGE:1000@720
            #EXTINF:4.0,
            main.mp4
            #EXT-X-BYTERANGE:500
            #EXTINF:4.0,
            main.mp4
            #EXT-X-ENDLIST
            """)
        #expect(playlist.segments[0].map == HLSMap(url: URL(string: "http://media.example.com/stories/a/main.mp4")!, byteRange: 0..<720))
        #expect(playlist.segments[0].byteRange == 720..<1720)
        #expect(playlist.segments[1].byteRange == 1720..<2220)
        #expect(playlist.segments[1].map == playlist.segments[0].map)
    }

    @Test(arguments: [
        ("", "line 1: not an HLS playlist (it must start with #EXTM3U)"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:abc,\na.ts", "line 3: #EXTINF duration 'abc' is not a number of seconds"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\"\n#EXTINF:1,\na.ts",
         "line 3: #EXT-X-KEY METHOD=SAMPLE-AES is not supported (only NONE and AES-128 are)"),
        ("#EXTM3U\na.ts", "line 2: 'a.ts' follows neither #EXTINF nor #EXT-X-STREAM-INF"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:1,", "the last #EXTINF has no URI after it"),
        ("#EXTM3U\n#EXTINF:1,\na.ts", "a media playlist needs #EXT-X-TARGETDURATION"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8", "line 2: #EXT-X-STREAM-INF needs BANDWIDTH, a whole number of bits per second"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=\"1\nv.m3u8", "line 2: #EXT-X-STREAM-INF attribute BANDWIDTH has an unclosed quoted string"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:1,\nftp://x/a.ts", "line 4: 'ftp://x/a.ts' is not an http or https URI (absolute, or relative to the playlist)"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-BYTERANGE:10\n#EXTINF:1,\na.ts", "line 5: #EXT-X-BYTERANGE without an offset must follow a byte range of the same URI"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-BYTERANGE:x@1\n#EXTINF:1,\na.ts", "line 3: #EXT-X-BYTERANGE byte range 'x@1' is not LENGTH[@OFFSET]"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:1,\na.ts", "line 5: a playlist cannot hold both variants and segments"),
        ("#EXTM3U\n#EXT-X-VERSION:3", "the playlist names no variant and no segment"),
    ])
    func malformedPlaylistsGetOneLine(text: String, message: String) {
        #expect(throws: HLSPlaylistError.self) { try HLSPlaylistParser.parse(text, url: base) }
        do {
            _ = try HLSPlaylistParser.parse(text, url: base)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func aPlaylistOnThisMachineNamesFilesBesideIt() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg0.ts\n#EXTINF:2,\n/clips/other/seg1.ts\n#EXT-X-ENDLIST\n"
        let file = URL(fileURLWithPath: "/clips/hls/v0/index.m3u8")
        guard case .media(let playlist) = try HLSPlaylistParser.parse(text, url: file) else {
            Issue.record("not a media playlist")
            return
        }
        #expect(playlist.segments.map(\.url.path) == ["/clips/hls/v0/seg0.ts", "/clips/other/seg1.ts"])
        #expect(playlist.segments.allSatisfy { $0.url.isFileURL })
        // One from the network never names a file on this machine.
        let remote = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nfile:///etc/passwd\n"
        #expect(throws: HLSPlaylistError.self) { _ = try HLSPlaylistParser.parse(remote, url: base) }
    }

    @Test func crlfLinesAByteOrderMarkAndUnknownTagsAreFine() throws {
        let playlist = try media("\u{FEFF}#EXTM3U\r\n#EXT-X-TARGETDURATION:2\r\n#EXT-X-INDEPENDENT-SEGMENTS\r\n# a comment\r\n#EXTINF:2,title, with comma\r\nseg0.ts\r\n#EXT-X-ENDLIST\r\n")
        #expect(playlist.segments.count == 1)
        #expect(playlist.segments[0].duration == 2)
    }

    @Test func recognisesPlaylistsByTypeOrName() {
        #expect(HLSPlaylistParser.isPlaylist(url: URL(string: "http://x/a.M3U8?s=1")!, contentType: nil))
        #expect(HLSPlaylistParser.isPlaylist(url: URL(string: "http://x/a")!, contentType: "application/vnd.apple.mpegurl; charset=utf-8"))
        #expect(!HLSPlaylistParser.isPlaylist(url: URL(string: "http://x/a.mp4")!, contentType: "video/mp4"))
        for type in ["Application/X-MpegURL", " audio/mpegurl ;x=1", "\taudio/x-mpegurl", "application/vnd.apple.mpegurl;"] {
            #expect(HLSPlaylistParser.isPlaylist(contentType: type), "\(type)")
        }
        for type in ["", ";", "application/vnd.apple.mpegurlx", "application/vnd.apple.mpegur", "x-mpegurl", "text/plain"] {
            #expect(!HLSPlaylistParser.isPlaylist(contentType: type), "\(type)")
        }
        #expect(!HLSPlaylistParser.isPlaylist(contentType: nil))
        #expect(HLSPlaylistParser.isPlaylistPath(URL(string: "http://x/dir/LIVE.m3U8")!))
        #expect(!HLSPlaylistParser.isPlaylistPath(URL(string: "http://x/m3u8")!))
        #expect(!HLSPlaylistParser.isPlaylistPath(URL(string: "http://x/a.m3u8/b")!))
    }
}
