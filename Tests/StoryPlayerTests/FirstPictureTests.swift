import CFFmpeg
import Foundation
import MediaFormats
import MediaTestSupport
import Testing

@testable import StoryPlayer

/// A story's first picture decoded without the demuxer (while its libraries load at launch) is the picture the
/// demuxing decoder shows first: the same pixels, upright, in shape and in its colours.
@Suite(.serialized, .decodesOnWallClock) struct FirstPictureTests {
    static let box = (width: 96, height: 96)

    /// The demuxing decoder's first picture of `bytes`.
    static func demuxed(_ bytes: [UInt8]) throws -> VideoFrame? {
        let reader = try FrameReader(source: MemoryByteSource(bytes))
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let current = frame, let time = try reader.decode(into: current) else { return nil }
        return reader.picture(current, box: box, time: time)
    }

    /// The first picture as read and decoded without a demuxer.
    static func early(_ bytes: [UInt8]) async throws -> VideoFrame? {
        let reader = ArrayReader(bytes: bytes)
        let picture: FirstPicture?
        switch try await MediaLayout.read(from: reader, length: Int64(bytes.count)) {
        case .mp4(let layout):
            picture = FirstPicture.mp4(moov: try await reader.read(layout.moov))
        case .image(let kind):
            picture = FirstPicture.photo(kind, length: Int64(bytes.count))
        default:
            picture = nil
        }
        guard let picture else { return nil }
        let sample = try await reader.read(picture.sample)
        return FirstPictureDecoder.decode(picture, sample: sample, box: box)
    }

    /// Both pictures of the file `url`: the same size, and pixels within a rounding step of each other.
    static func expectSamePicture(_ url: URL, _ what: String) async throws {
        let bytes = [UInt8](try Data(contentsOf: url))
        let expected = try #require(try demuxed(bytes), "\(what): the demuxer decoded nothing")
        let early = try #require(try await early(bytes), "\(what): decoded nothing without the demuxer")
        #expect(early.width == expected.width && early.height == expected.height,
            "\(what): \(early.width)x\(early.height), the demuxer's \(expected.width)x\(expected.height)")
        let differences = zip(early.rgb, expected.rgb).map { abs(Int($0) - Int($1)) }
        #expect(differences.max() ?? 255 <= 1, "\(what): pixels differ by up to \(differences.max() ?? -1)")
    }

    @Test func theBundledClipsFirstPictureIsTheDemuxersFirst() async throws {
        let clip = VideoDecoderTests.videos.appendingPathComponent("bars.mp4")
        try await Self.expectSamePicture(clip, "bars.mp4")
    }

    @Test func phoneMediaFirstPicturesAreTheDemuxersFirst() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        var files: [(String, String)] = []
        for rotation in [90, 180, 270] { files.append((try await media.rotated(rotation), "turned \(rotation)°")) }
        files.append((try await media.anamorphic(), "anamorphic"))
        files.append((try await media.tagged709("0x3080C0"), "tagged BT.709"))
        files.append((try await media.fullRange("0x3080C0"), "full range"))
        for type in ["jpg", "png", "webp"] { files.append((try await media.photo(type), "a \(type) photo")) }
        files.append((try await media.exifPhoto(orientation: 6), "a photo with EXIF orientation 6"))
        let hevc = try await media.ffmpeg(
            "hevc.mp4",
            ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "1", "-c:v", "libx265", "-x265-params",
             "log-level=error", "-tag:v", "hvc1", "-pix_fmt", "yuv420p"])
        files.append((hevc.lastPathComponent, "HEVC"))
        for (name, what) in files {
            try await Self.expectSamePicture(media.folder.appendingPathComponent(name), what)
        }
    }

    @Test func whatCannotBeDecodedAloneIsLeftToTheDemuxer() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        // A fragmented MP4's samples are in its fragments, not its header; WebM has no `moov`.
        for name in [try await media.fragmented(), try await media.webm()] {
            #expect(try await Self.early([UInt8](try Data(contentsOf: media.folder.appendingPathComponent(name)))) == nil, "\(name)")
        }
    }
}
