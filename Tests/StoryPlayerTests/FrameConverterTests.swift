import CFFmpeg
import Foundation
import Testing

@testable import StoryPlayer

/// The colour matrix a frame declares is used for every picture made of it, however often the picture's box
/// changes: a scaler made again for a new size (often at the address the old one had) used to keep BT.601, so a
/// BT.709 story's pure green came out as 215 instead of 254 for the rest of the story.
@Suite struct FrameConverterTests {
    @Test func theDeclaredMatrixHoldsWhenTheScalerIsMadeAgainForANewBox() throws {
        var why = [CChar](repeating: 0, count: 256)
        try #require(stories_ffmpeg_load(&why, why.count) == 1, "FFmpeg is needed: \(String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        let (width, height) = (1280, 720)
        // Pure green in BT.709, video range.
        var luma = [UInt8](repeating: 173, count: width * height)
        var blue = [UInt8](repeating: 42, count: width * height / 4)
        var red = [UInt8](repeating: 26, count: width * height / 4)
        let frame = try #require(av_frame_alloc())
        defer {
            var owned: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&owned)
        }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.colorspace = AVCOL_SPC_BT709
        frame.pointee.color_range = AVCOL_RANGE_MPEG
        let converter = FrameConverter(streamOrientation: .upright, streamAspect: nil)
        luma.withUnsafeMutableBufferPointer { y in
            blue.withUnsafeMutableBufferPointer { u in
                red.withUnsafeMutableBufferPointer { v in
                    frame.pointee.data.0 = y.baseAddress
                    frame.pointee.data.1 = u.baseAddress
                    frame.pointee.data.2 = v.baseAddress
                    frame.pointee.linesize.0 = Int32(width)
                    frame.pointee.linesize.1 = Int32(width / 2)
                    frame.pointee.linesize.2 = Int32(width / 2)
                    for (round, box) in [(64, 36), (32, 18), (64, 36), (48, 27), (32, 18), (96, 54)].enumerated() {
                        let picture = converter.picture(from: frame, box: box, time: 0)
                        let pixel = picture.pixel(x: picture.width / 2, y: picture.height / 2)
                        #expect(pixel.g >= 245 && pixel.r <= 12 && pixel.b <= 12, "box \(round) \(box): \(pixel)")
                    }
                    frame.pointee.data.0 = nil
                    frame.pointee.data.1 = nil
                    frame.pointee.data.2 = nil
                }
            }
        }
    }
}
