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

    /// RGB, palette and grey pictures go through no YUV matrix, whatever their height: a 1280x720 PNG's pure
    /// green used to come out as 215 and its red with G=23 (RGB encoded as BT.601, decoded as BT.709), and grey
    /// levels were stretched as if they were video range.
    @Test(arguments: [(1280, 720), (720, 1280), (320, 240)])
    func rgbPaletteAndGreyPicturesKeepTheirColours(width: Int, height: Int) throws {
        var why = [CChar](repeating: 0, count: 256)
        try #require(stories_ffmpeg_load(&why, why.count) == 1, "FFmpeg is needed")
        let converter = FrameConverter(streamOrientation: .upright, streamAspect: nil)
        let colours: [(r: UInt8, g: UInt8, b: UInt8)] = [(0, 254, 0), (230, 0, 0), (20, 40, 200), (128, 128, 128)]
        for colour in colours {
            // RGB24.
            var rgb = [UInt8](repeating: 0, count: width * height * 3)
            for i in 0..<(width * height) { (rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]) = (colour.r, colour.g, colour.b) }
            let pixel = try Self.convert(converter, width: width, height: height, format: AV_PIX_FMT_RGB24, planes: [rgb],
                lineSizes: [width * 3])
            #expect(Self.close(pixel, colour), "rgb24 \(width)x\(height) \(colour): \(pixel)")
            // A palette of one colour (FFmpeg's PAL8: index plane, then 256 native-endian ARGB words).
            let indices = [UInt8](repeating: 0, count: width * height)
            var palette = [UInt8](repeating: 0, count: 1024)
            let word = UInt32(0xFF00_0000) | UInt32(colour.r) << 16 | UInt32(colour.g) << 8 | UInt32(colour.b)
            withUnsafeBytes(of: word) { palette.replaceSubrange(0..<4, with: $0) }
            let indexed = try Self.convert(converter, width: width, height: height, format: AV_PIX_FMT_PAL8,
                planes: [indices, palette], lineSizes: [width, 0])
            #expect(Self.close(indexed, colour), "pal8 \(width)x\(height) \(colour): \(indexed)")
        }
        // Grey levels, full range: 16 stays 16, 235 stays 235.
        for level: UInt8 in [16, 128, 235] {
            let grey = [UInt8](repeating: level, count: width * height)
            let pixel = try Self.convert(converter, width: width, height: height, format: AV_PIX_FMT_GRAY8, planes: [grey],
                lineSizes: [width])
            #expect(Self.close(pixel, (level, level, level)), "gray8 \(width)x\(height) \(level): \(pixel)")
        }
    }

    private static func close(_ pixel: (r: UInt8, g: UInt8, b: UInt8), _ colour: (r: UInt8, g: UInt8, b: UInt8)) -> Bool {
        abs(Int(pixel.r) - Int(colour.r)) <= 2 && abs(Int(pixel.g) - Int(colour.g)) <= 2
            && abs(Int(pixel.b) - Int(colour.b)) <= 2
    }

    /// The centre pixel of a `width`x`height` picture of `format` made of `planes`, shrunk to a small box.
    private static func convert(
        _ converter: FrameConverter, width: Int, height: Int, format: AVPixelFormat, planes: [[UInt8]],
        lineSizes: [Int]
    ) throws -> (r: UInt8, g: UInt8, b: UInt8) {
        let frame = try #require(av_frame_alloc())
        defer {
            var owned: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&owned)
        }
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = format.rawValue
        var plane0 = planes[0]
        var plane1 = planes.count > 1 ? planes[1] : []
        return plane0.withUnsafeMutableBufferPointer { p0 in
            plane1.withUnsafeMutableBufferPointer { p1 in
                frame.pointee.data.0 = p0.baseAddress
                frame.pointee.data.1 = p1.count > 0 ? p1.baseAddress : nil
                frame.pointee.linesize.0 = Int32(lineSizes[0])
                frame.pointee.linesize.1 = Int32(lineSizes.count > 1 ? lineSizes[1] : 0)
                let box = width > height ? (64, 36) : (width == height ? (40, 40) : (36, 64))
                let picture = converter.picture(from: frame, box: box, time: 0)
                frame.pointee.data.0 = nil
                frame.pointee.data.1 = nil
                return picture.pixel(x: picture.width / 2, y: picture.height / 2)
            }
        }
    }
}
