import CFFmpeg
import Foundation
import MediaCache
import MediaFormats
import MediaOrigin
import MediaTestSupport
import Testing

@testable import StoryPlayer

/// Media as phones and CDNs make it, played through the loader: the picture upright and in shape, the colours as
/// the stream declares them, the duration found without a playlist `duration`, and preloading only the first
/// seconds.
@Suite(.serialized, .decodesOnWallClock) struct PhoneMediaTests {
    typealias Rig = VideoDecoderTests.Rig

    static func configuration(box: (Int, Int) = (64, 64)) -> PlayerConfiguration {
        var configuration = PlayerConfiguration()
        configuration.decodesVideo = true
        configuration.pictureWidth = box.0
        configuration.pictureHeight = box.1
        // Wall-clock tests leave the 30 s wait limit out: on a loaded machine (CI runs the suite beside four busy
        // loops) reading a header can take that long. PlayerWaitingTests test the limit on virtual time.
        configuration.waitLimit = nil
        return configuration
    }

    /// Plays `name` from `media`'s folder to its end (sped up) and returns the player.
    static func play(
        _ name: String, in rig: Rig, box: (Int, Int) = (64, 64), duration: Double? = nil, speed: Double = 8
    ) async -> (Player, PlaybackStatus) {
        let player = Player(
            loader: rig.loader, url: rig.origin.url(name), storyID: name, clock: RealPlaybackClock(speed: speed),
            configuration: configuration(box: box), fallbackDuration: duration)
        let status = await player.run()
        return (player, status)
    }

    static func close(_ pixel: (r: UInt8, g: UInt8, b: UInt8), _ expected: (Int, Int, Int), tolerance: Int) -> Bool {
        VideoDecoderTests.close(pixel, expected, tolerance: tolerance)
    }

    @Test(arguments: [90, 180, 270]) func aPhoneClipWithADisplayMatrixIsShownUpright(rotation: Int) async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let name = try await media.rotated(rotation)
        let rig = try await Rig(root: media.folder)
        let (player, status) = await Self.play(name, in: rig)
        #expect(status.state == .finished, "\(status.error ?? "")")
        let frame = try #require(player.frame)
        // Upright: portrait 180:320, red above, blue below.
        let aspect: Double = Double(frame.width) / Double(frame.height)
        #expect(abs(aspect - 0.5625) < 0.028, "\(frame.width)x\(frame.height)")
        #expect(Self.close(frame.pixel(x: frame.width / 2, y: frame.height / 4), (255, 0, 0), tolerance: 40))
        #expect(Self.close(frame.pixel(x: frame.width / 2, y: frame.height * 3 / 4), (0, 0, 255), tolerance: 40))
        await rig.close()
    }

    @Test func anAnamorphicClipIsShownAtItsDisplayAspect() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        let (player, status) = await Self.play(try await media.anamorphic(), in: rig, box: (120, 120))
        #expect(status.state == .finished, "\(status.error ?? "")")
        let frame = try #require(player.frame)
        let expected: Double = 352.0 * 16 / 11 / 288
        let aspect: Double = Double(frame.width) / Double(frame.height)
        #expect(abs(aspect - expected) < 0.05 * expected, "\(frame.width)x\(frame.height)")
        await rig.close()
    }

    @Test func theDeclaredColourMatrixAndRangeAreUsed() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        for name in [try await media.tagged709("0xC83232"), try await media.fullRange("0xC83232")] {
            let (player, status) = await Self.play(name, in: rig)
            #expect(status.state == .finished, "\(name): \(status.error ?? "")")
            let frame = try #require(player.frame)
            let pixel = frame.pixel(x: frame.width / 2, y: frame.height / 2)
            #expect(Self.close(pixel, (200, 50, 50), tolerance: 8), "\(name): \(pixel)")
        }
        await rig.close()
    }

    @Test(arguments: ["arib-std-b67", "smpte2084"]) func anHDRClipIsToneMappedToSDR(transfer: String) async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        let (player, status) = await Self.play(try await media.hdr(transfer: transfer, level: 160), in: rig)
        #expect(status.state == .finished, "\(status.error ?? "")")
        let frame = try #require(player.frame)
        let pixel = frame.pixel(x: frame.width / 2, y: frame.height / 2)
        // Neutral, and near the grey it was made from (tone-mapping keeps a diffuse grey near its SDR level);
        // decoded as if SDR, HLG comes out washed out and PQ dark.
        #expect(abs(Int(pixel.r) - Int(pixel.g)) <= 6 && abs(Int(pixel.b) - Int(pixel.g)) <= 6, "\(pixel)")
        #expect(abs(Int(pixel.g) - 160) <= 20, "\(transfer): \(pixel)")
        await rig.close()
    }

    @Test func aFragmentedMP4PlaysWithItsDurationFromTheFragments() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let name = try await media.fragmented()
        let bytes = [UInt8](try Data(contentsOf: media.folder.appendingPathComponent(name)))
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: bytes), length: Int64(bytes.count))
        #expect(layout.fragmented)
        #expect(abs(layout.duration - 3) < 0.05, "\(layout.duration)")
        let rig = try await Rig(root: media.folder)
        let (player, status) = await Self.play(name, in: rig)
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(abs((status.duration ?? 0) - 3) < 0.05)
        #expect(status.frames.shown >= 1 && status.frames.shown + status.frames.dropped <= 90, "\(status.frames)")
        #expect(player.frame != nil)
        await rig.close()
    }

    @Test func aTruncatedMP4PlaysWhatItHasAndEndsWithANote() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let name = try await media.truncated(seconds: 6, fraction: 0.5)
        let bytes = [UInt8](try Data(contentsOf: media.folder.appendingPathComponent(name)))
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: bytes), length: Int64(bytes.count))
        #expect(layout.truncated)
        #expect(layout.mdat.upperBound == Int64(bytes.count))
        #expect(abs(layout.duration - 6) < 0.05, "\(layout.duration)")
        let rig = try await Rig(root: media.folder)
        let (player, status) = await Self.play(name, in: rig)
        #expect(status.state == .finished, "\(status.error ?? "")")
        // About half of it is there: it plays that much, not the header's whole 6 s, and says why.
        let duration = status.duration ?? 0
        #expect(duration > 1.5 && duration < 4.5, "\(duration)")
        #expect(status.position >= duration - 0.05, "\(status.position) of \(duration)")
        #expect(status.note?.contains("6.0 s its header gives") == true, "\(status.note ?? "no note")")
        // How many of its frames are on screen in time depends on the machine (it plays at 8×); that every frame
        // of the half that is there decodes does not.
        #expect(status.frames.shown >= 1 && status.frames.shown + status.frames.dropped <= 180, "\(status.frames)")
        #expect(player.frame != nil)
        await rig.close()
        let decoded = try Self.framesDecoded(bytes)
        #expect(decoded.count >= Int(duration * 30) - 2 && decoded.count <= 180, "\(decoded.count) frames for \(duration) s")
        #expect(decoded == decoded.sorted(), "frame times out of order")
    }

    /// The times of every frame the decoder gets out of `bytes`, read straight from memory (no clock involved).
    static func framesDecoded(_ bytes: [UInt8]) throws -> [Double] {
        let reader = try FrameReader(source: MemoryByteSource(bytes))
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&frame) }
        var times: [Double] = []
        while let current = frame, let time = try? reader.decode(into: current) {
            times.append(time)
            av_frame_unref(current)
        }
        return times
    }

    @Test func aWebMPlaysWithItsDurationFromTheSegmentInfo() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let name = try await media.webm()
        let bytes = [UInt8](try Data(contentsOf: media.folder.appendingPathComponent(name)))
        let layout = try await MatroskaReader.layout(of: ArrayReader(bytes: bytes), length: Int64(bytes.count))
        #expect(abs((layout.duration ?? 0) - 3) < 0.05, "\(String(describing: layout.duration))")
        #expect(layout.cues != nil)
        let rig = try await Rig(root: media.folder)
        let (_, status) = await Self.play(name, in: rig)
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(abs((status.duration ?? 0) - 3) < 0.05)
        #expect(status.frames.shown >= 1 && status.frames.shown + status.frames.dropped <= 90, "\(status.frames)")
        await rig.close()
    }

    @Test(arguments: ["fragmented", "webm"]) func preloadingFetchesOnlyTheFirstSecondsOfFragmentsAndClusters(kind: String)
        async throws
    {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let name = kind == "webm" ? try await media.webm(seconds: 6) : try await media.fragmented(seconds: 6)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: media.folder.appendingPathComponent(name).path)[.size] as? Int)
        let rig = try await Rig(root: media.folder)
        let url = rig.origin.url(name)
        let preloader = Preloader(loader: rig.loader, planner: MediaPreloadPlanning())
        let result = try await preloader.preload(PreloadTarget(url: url, amount: .seconds(1)))
        #expect(result.phase == .preloaded)
        let cached = rig.store.availableRanges(for: CacheKey(url: url)).reduce(0) { $0 + $1.count }
        // The header and index, then about a second of a six-second file, rounded to whole fragments or Clusters
        // (and to the cache's blocks).
        #expect(cached > size / 6, "\(cached) of \(size)")
        #expect(cached < size / 2, "\(cached) of \(size)")
        await rig.close()
    }

    @Test(arguments: ["fragmented", "webm"]) func aSeekLandsOnTheFragmentOrClusterHoldingTheTarget(kind: String) async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let name = kind == "webm" ? try await media.webm() : try await media.fragmented()
        let rig = try await Rig(root: media.folder)
        let decoder = try await rig.decoder(file: name, box: (32, 24))
        decoder.start()
        defer { decoder.stop() }
        #expect(await eventually { decoder.frame != nil })
        decoder.seek(to: 2.5)
        #expect(await eventually { abs((decoder.frame?.time ?? 0) - 2.5) < 0.02 || decoder.failure != nil })
        #expect(decoder.failure == nil)
        await rig.close()
    }

    @Test(arguments: ["jpg", "png", "webp"]) func aPhotoShowsAsAStillForFiveSeconds(type: String) async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        let (player, status) = await Self.play(try await media.photo(type), in: rig, speed: 20)
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(status.duration == 5)
        let frame = try #require(player.frame)
        let aspect: Double = Double(frame.width) / Double(frame.height)
        #expect(abs(aspect - 4.0 / 3) < 0.066, "\(frame.width)x\(frame.height)")
        await rig.close()
    }

    @Test func aPhotoTakesThePlaylistsDurationAndItsEXIFOrientation() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        // Orientation 6: turned a quarter clockwise to show; red (left) goes on top.
        let (player, status) = await Self.play(try await media.exifPhoto(orientation: 6), in: rig, duration: 2, speed: 20)
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(status.duration == 2)
        let frame = try #require(player.frame)
        #expect(frame.height > frame.width, "\(frame.width)x\(frame.height)")
        #expect(Self.close(frame.pixel(x: frame.width / 2, y: frame.height / 4), (255, 0, 0), tolerance: 48))
        #expect(Self.close(frame.pixel(x: frame.width / 2, y: frame.height * 3 / 4), (0, 0, 255), tolerance: 48))
        await rig.close()
    }

    @Test func aHEICPhotoIsRefusedInASentence() async throws {
        let rig = try await Rig()
        let ftyp: [UInt8] = [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
        rig.origin.set(OriginResource(bytes: ftyp + [UInt8](repeating: 7, count: 4_000)), at: "/photo.heic")
        let (_, status) = await Self.play("photo.heic", in: rig)
        #expect(status.state == .failed)
        #expect(status.error?.contains("convert the photo to JPEG") == true, "\(status.error ?? "")")
        await rig.close()
    }

    @Test func aContainerThePlayerDoesNotParsePlaysWithFFmpegsDuration() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        let (_, status) = await Self.play(try await media.transportStream(), in: rig)
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(abs((status.duration ?? 0) - 2) < 0.1, "\(String(describing: status.duration))")
        await rig.close()
    }

    @Test func aFileWithNoDurationAnywhereAsksForOneInThePlaylist() async throws {
        let rig = try await Rig()
        rig.origin.set(OriginResource(bytes: Array(repeating: 0x42, count: 20_000)), at: "/junk.bin")
        let (_, status) = await Self.play("junk.bin", in: rig)
        #expect(status.state == .failed)
        #expect(status.error?.contains("\"duration\"") == true || status.error?.contains("not a video") == true, "\(status.error ?? "")")
        await rig.close()
    }

    @Test func sixtyFramesASecondAreShownEverySecondFrameAtAnEvenCadence() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        let rig = try await Rig(root: media.folder)
        let decoder = try await rig.decoder(file: try await media.sixtyFPS(), box: (32, 24))
        decoder.start()
        defer { decoder.stop() }
        #expect(await eventually { decoder.frame != nil })
        #expect(decoder.cadence?.step == 2)
        // The playhead moves a 60th of a second at a time: every second frame is shown, one after another.
        var shownTimes: [Double] = [try #require(decoder.frame?.time)]
        for step in 1...60 {
            let target = Double(step) / 60
            decoder.show(at: target)
            if step % 2 == 0 {
                #expect(await eventually { (decoder.frame?.time ?? 0) >= target - 0.001 })
                shownTimes.append(decoder.frame?.time ?? -1)
            }
        }
        let gaps = zip(shownTimes.dropFirst(), shownTimes).map { $0 - $1 }
        #expect(gaps.allSatisfy { abs($0 - 2.0 / 60) < 0.002 }, "\(gaps)")
        #expect(decoder.counts.dropped == 0)
        #expect(decoder.counts.shown == 31)
        await rig.close()
    }
}


/// A folder to make phone media in; nil (a skip, or with STORIES_REQUIRE_E2E=1 a failure) without ffmpeg.
func phoneMedia() throws -> PhoneMedia? {
    if let media = try PhoneMedia.make() { return media }
    if PhoneMedia.required {
        Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it")
    } else {
        print("skipping: \(PhoneMedia.missing)")
    }
    return nil
}

/// Bytes in memory as the demuxer reads them.
final class MemoryByteSource: DemuxerByteSource, @unchecked Sendable {
    // Sendable: `bytes` never changes; `bytesRead` is only touched on the one thread that decodes.
    private let bytes: [UInt8]
    private(set) var bytesRead: Int64 = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var length: Int64 { Int64(bytes.count) }
    var durationIsKnown: Bool { false }
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset < length else { return 0 }
        let count = Swift.min(buffer.count, bytes.count - Int(offset))
        bytes.withUnsafeBytes { source in
            guard let from = source.baseAddress else { return }
            buffer.baseAddress?.copyMemory(from: from + Int(offset), byteCount: count)
        }
        bytesRead += Int64(count)
        return count
    }
    func cancel() {}
}
