import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

/// The decoder reads only through the loader: pictures decoded from the cache show the clip's known colours, and
/// a wrong byte in the cache would show as a wrong picture.
@Suite(.serialized, .decodesOnWallClock) struct VideoDecoderTests {
    static let videos = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("assets/videos")

    /// An origin serving the bundled clips, a store and a loader in a fresh directory.
    final class Rig: Sendable {
        let origin: MediaOriginServer
        let store: CacheStore
        let loader: MediaLoader
        let directory: URL

        init(root: URL = VideoDecoderTests.videos, loading: LoaderConfiguration = CacheHarness.defaultConfiguration) async throws {
            origin = try await MediaOriginServer(root: root)
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("decoder-\(UUID().uuidString)")
            var configuration = CacheConfiguration()
            configuration.minimumFreeDiskBytes = 0
            store = try CacheStore(directory: directory, configuration: configuration)
            loader = MediaLoader(store: store, configuration: loading)
        }

        func decoder(_ name: String, box: (width: Int, height: Int) = (96, 54)) async throws -> MediaDecoder {
            try await decoder(file: "\(name).mp4", box: box)
        }

        /// A decoder of the file `file` the origin serves.
        func decoder(file: String, box: (width: Int, height: Int)) async throws -> MediaDecoder {
            let url = origin.url(file)
            let info = try await loader.contentInformation(for: url, key: CacheKey(url: url))
            let length = try #require(info.contentLength)
            return MediaDecoder(loader: loader, url: url, key: CacheKey(url: url), length: length, box: box)
        }

        func close() async {
            await loader.shutdown()
            try? store.close()
            await origin.shutdown()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// True when `pixel` is within `tolerance` of `expected` in every channel.
    static func close(_ pixel: (r: UInt8, g: UInt8, b: UInt8), _ expected: (Int, Int, Int), tolerance: Int = 48) -> Bool {
        abs(Int(pixel.r) - expected.0) <= tolerance && abs(Int(pixel.g) - expected.1) <= tolerance
            && abs(Int(pixel.b) - expected.2) <= tolerance
    }

    @Test func theColourBarsComeOutOfTheCacheWithTheirColours() async throws {
        let rig = try await Rig()
        let decoder = try await rig.decoder("bars", box: (96, 54))
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 2.0)
        #expect(await eventually { (decoder.frame?.time ?? 0) >= 1.9 || decoder.failure != nil })
        #expect(decoder.failure == nil)
        let frame = try #require(decoder.frame)
        #expect(frame.width == 96 && frame.height == 54)
        // SMPTE bars: seven columns across the upper two thirds.
        let bars: [(String, (Int, Int, Int))] = [
            ("grey", (192, 192, 192)), ("yellow", (192, 192, 0)), ("cyan", (0, 192, 192)), ("green", (0, 192, 0)),
            ("magenta", (192, 0, 192)), ("red", (192, 0, 0)), ("blue", (0, 0, 192)),
        ]
        for (index, (name, colour)) in bars.enumerated() {
            let x = frame.width * (2 * index + 1) / 14
            let pixel = frame.pixel(x: x, y: frame.height / 4)
            #expect(Self.close(pixel, colour), "\(name) bar at x=\(x): \(pixel)")
        }
        // Every byte the decoder used came through the loader, and the origin sent each byte once at most.
        #expect(decoder.bytesRead > 0)
        let size = try #require(FileManager.default.contents(atPath: Self.videos.appendingPathComponent("bars.mp4").path)).count
        #expect(rig.origin.bodyBytesSent <= size)
        await rig.close()
    }

    /// The picture's own cells at the cell's pixel size are seldom exactly the video's shape (a 720×1280 video in
    /// 36×30 cells of 8×17 pixels: 288×510 against 287×510); what draws the frame is given exactly the box then, not
    /// a frame a pixel short that it would scale again. A box of another shape is still fitted.
    @Test(arguments: [((97, 54), (97, 54)), ((95, 55), (95, 55)), ((120, 54), (96, 54)), ((96, 80), (96, 54))])
    func aBoxWithinAPixelOrTwoOfTheVideosShapeIsFilledExactly(box: (Int, Int), expected: (Int, Int)) async throws {
        let rig = try await Rig()
        let decoder = try await rig.decoder("bars", box: box)
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 1.0)
        #expect(await eventually { decoder.frame != nil || decoder.failure != nil })
        let frame = try #require(decoder.frame)
        #expect(frame.width == expected.0 && frame.height == expected.1, "\(frame.width)x\(frame.height) for \(box)")
        #expect(frame.rgb.count == frame.width * frame.height * 3)
        await rig.close()
    }

    /// A frame that stays on screen (a still, a pause) is drawn again at a new size when the picture's box changes.
    @Test func theFrameOnScreenIsConvertedAgainWhenTheBoxChanges() async throws {
        let rig = try await Rig()
        let decoder = try await rig.decoder("bars", box: (96, 54))
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 1.0)
        #expect(await eventually { (decoder.frame?.time ?? 0) >= 0.9 || decoder.failure != nil })
        let before = try #require(decoder.frame)
        let shown = decoder.counts.shown
        #expect(before.width == 96)
        decoder.resize(to: (48, 27))
        #expect(await eventually { decoder.frame?.width == 48 })
        #expect(decoder.frame?.height == 27 && decoder.frame?.time == before.time)
        #expect(decoder.counts.shown == shown)  // the same frame, not a new one
        await rig.close()
    }

    @Test func theHeaderAtTheEndIsFoundBySeekingThroughTheLoader() async throws {
        let rig = try await Rig()
        let decoder = try await rig.decoder("tail-moov")
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 1.0)
        #expect(await eventually { (decoder.frame?.time ?? 0) >= 0.9 || decoder.failure != nil })
        #expect(decoder.failure == nil)
        #expect(decoder.frame != nil)
        await rig.close()
    }

    @Test func framesOvertakenByThePlayheadAreDroppedNotQueued() async throws {
        let rig = try await Rig()
        let decoder = try await rig.decoder("mandel")
        decoder.start()
        defer { decoder.stop() }
        #expect(await eventually { decoder.frame != nil })
        // Jumping the playhead a second ahead makes the 24 frames between due at once: one is shown.
        decoder.show(at: 1.0)
        #expect(await eventually { (decoder.frame?.time ?? 0) >= 0.99 })
        let counts = decoder.counts
        #expect(counts.shown == 2)
        #expect(counts.dropped == 24)
        await rig.close()
    }

    @Test func aSeekShowsTheFrameAtTheNewTimeWithoutCountingDrops() async throws {
        let rig = try await Rig()
        let decoder = try await rig.decoder("life")
        decoder.start()
        defer { decoder.stop() }
        #expect(await eventually { decoder.frame != nil })
        decoder.seek(to: 3.0)
        #expect(await eventually { abs((decoder.frame?.time ?? 0) - 3.0) < 0.02 })
        #expect(decoder.counts.dropped == 0)
        decoder.seek(to: 1.0)
        #expect(await eventually { abs((decoder.frame?.time ?? 0) - 1.0) < 0.02 })
        #expect(decoder.counts.dropped == 0)
        await rig.close()
    }

    @Test(arguments: [
        ("text", Array("this is not a video at all, just some words".utf8)),
        ("zeros", [UInt8](repeating: 0, count: 5000)),
    ])
    func contentThatIsNotVideoFailsWithAReason(name: String, bytes: [UInt8]) async throws {
        let rig = try await Rig()
        rig.origin.set(OriginResource(bytes: bytes), at: "/\(name).mp4")
        let decoder = try await rig.decoder(name)
        decoder.start()
        defer { decoder.stop() }
        #expect(await eventually { decoder.failure != nil })
        #expect(decoder.frame == nil)
        #expect(decoder.failure?.description.isEmpty == false)
        await rig.close()
    }

    @Test func aCorruptedMiddleDoesNotCrashOrHang() async throws {
        let rig = try await Rig()
        let data = try #require(FileManager.default.contents(atPath: Self.videos.appendingPathComponent("bars.mp4").path))
        var bytes = [UInt8](data)
        for index in stride(from: bytes.count / 3, to: bytes.count * 2 / 3, by: 7) { bytes[index] ^= 0x5A }
        rig.origin.set(OriginResource(bytes: bytes), at: "/broken.mp4")
        let decoder = try await rig.decoder("broken")
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 5.0)
        // It either decodes to the end (the codec conceals damage) or fails with a reason; it never hangs.
        #expect(await eventually { decoder.failure != nil || (decoder.frame?.time ?? 0) >= 4.9 })
        await rig.close()
    }
}

/// The sound comes out of the same bytes as the picture, on the picture's timeline.
@Suite(.serialized, .decodesOnWallClock) struct SoundDecodingTests {
    /// The dominant frequency of `samples` (mono), by zero crossings.
    static func frequency(_ samples: [Int16], rate: Int) -> Double {
        let crossings = zip(samples, samples.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        return Double(crossings) / 2 / (Double(samples.count) / Double(rate))
    }

    /// Reads `seconds` of the queue from `start` on, left channel only.
    static func left(of queue: SoundQueue, from start: Double, seconds: Double) -> [Int16] {
        var cursor = queue.frame(at: start)
        var buffer = [Int16](repeating: 0, count: Int(seconds * Double(queue.format.rate)) * queue.format.channels)
        _ = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
        return stride(from: 0, to: buffer.count, by: queue.format.channels).map { buffer[$0] }
    }

    @Test(arguments: [("bars.mp4", 440.0), ("hls/v0/seg0.ts", 988.0)])
    func eachStorysToneIsDecodedFromItsStart(file: String, hertz: Double) async throws {
        let rig = try await VideoDecoderTests.Rig()
        let decoder = try await Self.decoder(rig, file)
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 0)
        #expect(await eventually { (decoder.sound?.decodedThrough ?? 0) >= 0.45 || decoder.failure != nil })
        #expect(decoder.failure == nil)
        let queue = try #require(decoder.sound)
        // The first sound is at the picture's start (a TS segment's clock starts near 1.4 s, AAC's priming samples
        // are left out): within a frame of 0, never a second or more off.
        let head = Self.left(of: queue, from: 0, seconds: 0.4)
        let firstSound = try #require(head.firstIndex { abs($0) > 500 })
        #expect(Double(firstSound) / 48_000 < 0.04)
        let tone = Self.frequency(Array(head[4800...]), rate: 48_000)
        #expect(abs(tone - hertz) < hertz * 0.02, "heard \(tone) Hz")
        await rig.close()
    }

    /// The device's reads keep sound decoded ahead of them however long the playhead stands still (a player whose
    /// ticks are late on a busy machine). Before, sound was decoded only half a second past the playhead, and a
    /// late tick let the device run dry.
    @Test func soundIsDecodedAheadOfTheDevicesReadsWhileThePlayheadStandsStill() async throws {
        let rig = try await VideoDecoderTests.Rig()
        let decoder = try await Self.decoder(rig, "bars.mp4")
        decoder.start()
        defer { decoder.stop() }
        decoder.show(at: 0)
        #expect(await eventually { decoder.sound != nil || decoder.failure != nil })
        let queue = try #require(decoder.sound)
        var cursor = queue.frame(at: 0)
        var buffer = [Int16](repeating: 0, count: 4_800 * queue.format.channels)
        // Two seconds read a tenth at a time, as a device does, with the playhead still at 0: each tenth is
        // decoded before it is read (before, decoding stopped half a second past the playhead and the wait for
        // a later tenth never ended).
        for step in 1...20 {
            let wanted = queue.seconds(at: cursor) + 0.1
            try #require(await eventually { (queue.decodedThrough ?? 0) >= wanted || decoder.failure != nil }, "read \(step)")
            let read = buffer.withUnsafeMutableBufferPointer { queue.read(at: &cursor, into: $0) }
            #expect(read == .sound(frames: 4_800), "read \(step): \(read)")
        }
        #expect(decoder.failure == nil)
        await rig.close()
    }

    /// A decoder of `file` in `media`'s folder, decoding sound too, and its rig.
    static func decoder(_ media: PhoneMedia, _ file: String) async throws -> (VideoDecoderTests.Rig, MediaDecoder) {
        let rig = try await VideoDecoderTests.Rig(root: media.folder)
        return (rig, try await decoder(rig, file))
    }

    /// A decoder of `file` from `rig`'s origin, decoding sound too (not started).
    static func decoder(_ rig: VideoDecoderTests.Rig, _ file: String) async throws -> MediaDecoder {
        let url = rig.origin.url(file)
        let info = try await rig.loader.contentInformation(for: url, key: CacheKey(url: url))
        return MediaDecoder(
            loader: rig.loader, url: url, key: CacheKey(url: url), length: try #require(info.contentLength),
            box: (32, 18), soundFormat: .standard)
    }

    @Test(arguments: [("aac", "mp4"), ("libopus", "webm"), ("libmp3lame", "mkv")])
    func phoneCodecsAreHeardAtTheirPitch(codec: String, container: String) async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            return
        }
        defer { media.remove() }
        let (rig, decoder) = try await Self.decoder(media, try await media.toneClip(hertz: 660, codec: codec, container: container))
        decoder.start()
        decoder.show(at: 0)
        #expect(await eventually { (decoder.sound?.decodedThrough ?? 0) >= 0.45 || decoder.failure != nil })
        #expect(decoder.failure == nil)
        let queue = try #require(decoder.sound)
        let head = Self.left(of: queue, from: 0, seconds: 0.4)
        let firstSound = try #require(head.firstIndex { abs($0) > 500 })
        #expect(Double(firstSound) / 48_000 < 0.04, "\(codec): sound starts at \(Double(firstSound) / 48_000) s")
        let tone = Self.frequency(Array(head[4800...]), rate: 48_000)
        #expect(abs(tone - 660) < 660 * 0.02, "\(codec): heard \(tone) Hz")
        decoder.stop()
        await rig.close()
    }

    @Test func aStoryWithoutSoundSaysSo() async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            return
        }
        defer { media.remove() }
        let (rig, decoder) = try await Self.decoder(media, try await media.sixtyFPS())
        decoder.start()
        #expect(await eventually { decoder.isOpen })
        #expect(decoder.failure == nil)
        #expect(decoder.sound == nil)
        decoder.stop()
        await rig.close()
    }
}
