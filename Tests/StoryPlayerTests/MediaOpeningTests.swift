import CFFmpeg
import Foundation
import MediaTestSupport
import Testing

@testable import StoryPlayer

/// How a file is opened before its first frame: what an MP4's header says is taken as said; what it leaves out, and
/// other containers, are probed by decoding ahead.
@Suite struct MediaOpeningTests {
    static let clip = [
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
        "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
    ]

    /// The first frame's time and every frame's, the picture's size and rate and the duration, as a reader gives them.
    static func opened(_ url: URL) throws -> (reader: FrameReader, times: [Double]) {
        let reader = try FrameReader(source: MemoryByteSource([UInt8](try Data(contentsOf: url))), soundFormat: .standard)
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&frame) }
        var times: [Double] = []
        while let current = frame, let time = try reader.decode(into: current) {
            times.append(time)
            av_frame_unref(current)
        }
        return (reader, times)
    }

    @Test func anMP4OpensFromItsHeaderWithTheSameTimesAsAProbedFile() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        // Without an edit list the picture starts two frames after the sound, as many phones write B-frame video.
        let mp4 = try await media.ffmpeg("clip.mp4", Self.clip + ["-use_editlist", "0"])
        let mkv = try await media.ffmpeg("clip.mkv", Self.clip)
        let (fromHeader, headerTimes) = try Self.opened(mp4)
        let (probed, probedTimes) = try Self.opened(mkv)
        #expect(fromHeader.openedFromHeader)
        #expect(!probed.openedFromHeader)
        #expect(fromHeader.width == 320 && fromHeader.height == 240)
        #expect(fromHeader.framesPerSecond == 30)
        #expect(abs((fromHeader.containerDuration ?? 0) - 2) < 0.1, "\(fromHeader.containerDuration ?? -1)")
        #expect(headerTimes.count == 60 && probedTimes.count == 60, "\(headerTimes.count) and \(probedTimes.count)")
        #expect(headerTimes.first == 0, "the picture's first frame is the story's zero: \(headerTimes.first ?? -1)")
        #expect(zip(headerTimes, probedTimes).allSatisfy { abs($0 - $1) < 0.002 })
    }

    @Test func anMP4WithATimecodeTrackOpensFromItsHeaderAndPlaysItsPicture() async throws {
        guard let media = try phoneMedia() else { return }
        defer { media.remove() }
        // A data track (as cameras and editors write a timecode) is not played, so it needs no probing either.
        let mp4 = try await media.ffmpeg("timecode.mp4", Self.clip + ["-timecode", "00:00:00:00"])
        let (reader, times) = try Self.opened(mp4)
        #expect(reader.openedFromHeader)
        #expect(times.count == 60 && times.first == 0, "\(times.count) frames from \(times.first ?? -1)")
    }
}
