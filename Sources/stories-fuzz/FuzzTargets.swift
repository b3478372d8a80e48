import Following
import Foundation
import HTTPSemantics
import MediaCache
import MediaFormats
import MediaProxy
import StoryPlayer

/// The parsers that read outside input, each fed arbitrary bytes; a violated invariant traps so the fuzzer
/// reports it. Built with `-sanitize=fuzzer -DFUZZING` this is a libFuzzer binary (the target is chosen with
/// STORIES_FUZZ_TARGET); built normally it replays the committed corpus (`swift run stories-fuzz DIR`).
enum FuzzTarget: String, CaseIterable {
    case contentRange, rangeHeader, url, playlist, mp4, hls, feed, captions

    /// The target named by STORIES_FUZZ_TARGET (content-range parsing by default).
    static var selected: FuzzTarget {
        ProcessInfo.processInfo.environment["STORIES_FUZZ_TARGET"].flatMap(FuzzTarget.init(rawValue:)) ?? .contentRange
    }

    /// Runs one input through the parser and checks what it returned.
    func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch self {
        case .contentRange:
            if let parsed = ContentRange(text) {
                if let range = parsed.range, let length = parsed.completeLength {
                    precondition(range.lowerBound >= 0 && range.upperBound < length, "range outside the length")
                }
                precondition(parsed.range != nil || parsed.completeLength != nil, "neither a range nor a length")
            }
        case .rangeHeader:
            let length = Int64(bytes.first ?? 0) * 1_000
            if case .partial(let range) = ByteRangeRequest(header: text, length: length) {
                precondition(range.lowerBound >= 0 && range.upperBound < length && range.lowerBound <= range.upperBound,
                    "a partial answer outside the resource")
            }
        case .url:
            if let url = try? OriginURL.parse(text) {
                let scheme = url.scheme?.lowercased()
                precondition(scheme == "http" || scheme == "https", "a URL with another scheme passed")
                precondition(OriginURL.withoutCredentials(url).password == nil, "credentials survived redaction")
                _ = CacheKey(url: url)
            }
        case .playlist:
            _ = try? PlaylistParser.parse(
                Data(bytes), name: "playlist.json", file: URL(fileURLWithPath: "/fuzz/playlist.json"))
        case .hls:
            let base = URL(string: "http://fuzz.example/stories/index.m3u8")!
            if case .media(let playlist) = try? HLSPlaylistParser.parse(bytes, url: base) {
                precondition(!playlist.segments.isEmpty, "a media playlist without segments passed")
                for segment in playlist.segments {
                    precondition(segment.duration.isFinite && segment.duration >= 0, "a segment of no sensible duration")
                    if let range = segment.byteRange { precondition(range.lowerBound >= 0, "a byte range before the start") }
                }
                precondition(playlist.duration.isFinite, "an endless playlist")
            }
            let rewritten = HLSPlaylistRewriter.rewrite(text, base: base) { "http://proxy.example/media?url=" + $0.absoluteString }
            precondition(!text.contains("\n") || rewritten.contains("\n"), "rewriting lost the lines")
        case .captions:
            // A caption file: every cue kept has a sane timing and text, the track answers at any time.
            let parsed = CaptionDocument.parse(bytes)
            precondition(parsed.cues.count <= CaptionDocument.cueLimit, "more cues than a file keeps")
            for cue in parsed.cues {
                precondition(cue.start >= 0 && cue.end > cue.start && cue.end.isFinite, "a cue with a broken timing")
                precondition(!cue.text.isEmpty, "an empty cue")
            }
            let track = CaptionTrack(language: nil, origin: .sidecar, cues: parsed.cues)
            for time in [0, 0.5, 1, 59.9, 3600] as [Double] {
                _ = track.cues(at: time)
                if let next = track.nextChange(after: time) { precondition(next > time, "a change that is not ahead") }
            }
        case .feed:
            // A feed as fetched from a public address, then its stories; and the same bytes as an OPML list.
            let base = URL(string: "https://fuzz.example/@ana.rss")!
            if let feed = try? FeedParser.parse(Data(bytes), url: base) {
                let result = FeedStories.stories(of: feed, from: base, author: "Ana", since: nil, now: Date())
                precondition(result.stories.count <= FeedStories.maximumStories, "more stories than an author keeps")
                for story in result.stories {
                    guard case .remote(let url) = story.source else { preconditionFailure("a feed named a local file") }
                    precondition(["http", "https"].contains(url.scheme?.lowercased() ?? ""), "a feed story of another scheme")
                    precondition(!AddressScope.isPrivate(host: url.host), "a public feed reached a private address")
                }
            }
            for entry in (try? FollowList.parseOPML(Data(bytes))) ?? [] {
                precondition(["http", "https"].contains(entry.url.scheme?.lowercased() ?? ""), "an OPML entry of another scheme")
            }
        case .mp4:
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                let reader = MemoryReader(bytes: bytes)
                let length = Int64(bytes.count)
                if let layout = try? await MP4BoxReader.layout(of: reader, length: length) {
                    // The first picture, as the player reads it before the demuxer loads.
                    let moov = Array(bytes[Int(layout.moov.lowerBound)..<Int(layout.moov.upperBound)])
                    if let picture = FirstPicture.mp4(moov: moov) {
                        precondition(picture.sample.lowerBound >= 0 && !picture.sample.isEmpty, "a first sample of no sense")
                    }
                }
                // Every kind the player tells apart (fragmented MP4, WebM, photos) and its preload plan.
                if let layout = try? await MediaLayout.read(from: reader, length: length) {
                    precondition(layout.duration.map { $0.isFinite && $0 >= 0 } ?? true, "a duration of no sense")
                    let payload = layout.payload(length: length)
                    precondition(payload.lowerBound >= 0 && payload.upperBound <= length, "a payload outside the file")
                    for range in await layout.rangesForFirst(seconds: 3, length: length, reader: reader) ?? [] {
                        precondition(range.lowerBound >= 0 && range.upperBound <= length, "a preload outside the file")
                    }
                }
                done.signal()
            }
            done.wait()
        }
    }
}

/// Bytes in memory, read the way the loader would serve them.
struct MemoryReader: ByteRangeReader {
    let bytes: [UInt8]

    func read(_ range: Range<Int64>) async throws -> [UInt8] {
        let lower = Int(Swift.max(0, Swift.min(range.lowerBound, Int64(bytes.count))))
        let upper = Int(Swift.max(Int64(lower), Swift.min(range.upperBound, Int64(bytes.count))))
        return Array(bytes[lower..<upper])
    }
}

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTarget.selected.run(bytes)
    return 0
}

#if FUZZING
/// libFuzzer's driver, called from our entry point (the package's executables get a renamed `main`).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The executable's entry point under the fuzzer: hands the command line to libFuzzer.
@_cdecl("stories_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}
#else
/// Replays every file of a corpus folder (`Fuzz/corpus` by default) through its target.
@main
enum CorpusReplay {
    static func main() {
        let root = CommandLine.arguments.dropFirst().first ?? "Fuzz/corpus"
        var total = 0
        for target in FuzzTarget.allCases {
            let folder = (root as NSString).appendingPathComponent(target.rawValue)
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
                guard let data = FileManager.default.contents(atPath: (folder as NSString).appendingPathComponent(name))
                else { continue }
                target.run(Array(data))
                total += 1
            }
        }
        print("replayed \(total) corpus inputs without a failure")
    }
}
#endif
