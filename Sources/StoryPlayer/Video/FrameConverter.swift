import CFFmpeg
import Foundation

/// Turns decoded frames into upright RGB pictures that fit a box: an HDR frame (PQ or HLG) tone-mapped to SDR, the
/// colour matrix and range the stream declares used for YUV to RGB, the sample aspect ratio honoured, and the
/// picture turned as its display matrix or EXIF orientation says. Used by the decoder's thread only.
final class FrameConverter {
    /// The stream's display matrix (a frame's own side data or EXIF orientation wins).
    let streamOrientation: PictureOrientation
    /// The stream's sample aspect ratio (width of a pixel over its height), when it declares one.
    let streamAspect: Double?
    private var scaler: OpaquePointer?
    private var scalerColours: ScalerColours?
    private var toneMap: ToneMapGraph?
    private var toneMapFailed = false

    /// What the scaler's colour tables were set up for. The sizes and format are part of it: a scaler made
    /// again for another size starts with BT.601 tables, and may sit at the address the old one had.
    private struct ScalerColours: Equatable {
        var context: OpaquePointer
        var source: [Int32]
        var target: [Int32]
        var matrix: Int32
        var fullRange: Bool
    }

    init(streamOrientation: PictureOrientation, streamAspect: Double?) {
        self.streamOrientation = streamOrientation
        self.streamAspect = streamAspect
    }

    deinit {
        if let scaler { sws_freeContext(scaler) }
    }

    /// The orientation of `frame`: its own display matrix, else its EXIF Orientation, else the stream's.
    func orientation(of frame: UnsafeMutablePointer<AVFrame>) -> PictureOrientation {
        if let side = av_frame_get_side_data(frame, AV_FRAME_DATA_DISPLAYMATRIX), side.pointee.size >= 36,
            let data = side.pointee.data
        {
            let matrix = data.withMemoryRebound(to: Int32.self, capacity: 9) { Array(UnsafeBufferPointer(start: $0, count: 9)) }
            return PictureOrientation(displayMatrix: matrix)
        }
        if let entry = av_dict_get(frame.pointee.metadata, "Orientation", nil, 0), let value = entry.pointee.value,
            let exif = Int(String(cString: value))
        {
            return PictureOrientation(exif: exif)
        }
        return streamOrientation
    }

    /// The size the picture is shown at (square pixels, upright) before fitting.
    func displaySize(of frame: UnsafeMutablePointer<AVFrame>, orientation: PictureOrientation) -> (width: Int, height: Int) {
        let sar = frame.pointee.sample_aspect_ratio
        let aspect = sar.num > 0 && sar.den > 0 ? Double(sar.num) / Double(sar.den) : (streamAspect ?? 1)
        let width = Swift.max(1, Int((Double(frame.pointee.width) * aspect).rounded()))
        let height = Swift.max(1, Int(frame.pointee.height))
        return orientation.swapsSides ? (height, width) : (width, height)
    }

    /// `frame` as an upright RGB picture fitting `box`, at media time `time`.
    func picture(from frame: UnsafeMutablePointer<AVFrame>, box: (width: Int, height: Int), time: Double) -> VideoFrame {
        let orientation = orientation(of: frame)
        let shown = displaySize(of: frame, orientation: orientation)
        var fitted = VideoFrame.fitted(videoWidth: shown.width, videoHeight: shown.height, box: box)
        // A box within a pixel or two of the video's shape (the picture's own cells) is filled exactly: what draws
        // it then needs no second scaling.
        if abs(fitted.width - box.width) <= Swift.max(2, box.width / 100),
            abs(fitted.height - box.height) <= Swift.max(2, box.height / 100)
        {
            fitted = box
        }
        let scaled = orientation.swapsSides ? (width: fitted.height, height: fitted.width) : fitted
        var source = frame
        var mapped: UnsafeMutablePointer<AVFrame>?
        defer { av_frame_free(&mapped) }
        if Self.isHDR(frame), !toneMapFailed {
            if let result = toneMapped(frame, to: scaled) {
                mapped = result
                source = result
            }
        }
        let rgb = scale(source, to: scaled)
        return VideoFrame(
            width: fitted.width, height: fitted.height,
            rgb: orientation.apply(to: rgb, width: scaled.width, height: scaled.height), time: time)
    }

    /// True for a frame whose transfer is PQ (SMPTE 2084) or HLG (ARIB STD-B67).
    static func isHDR(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        frame.pointee.color_trc == AVCOL_TRC_SMPTE2084 || frame.pointee.color_trc == AVCOL_TRC_ARIB_STD_B67
    }

    /// The YUV-to-RGB matrix for `frame` as swscale numbers it: what the stream declares, else BT.709 for HD
    /// pictures and BT.601 below (what players assume for untagged video); none for RGB pictures.
    static func matrix(of frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        // The output's own table: the scaler's pass through YUV and back is then exact.
        if isRGBFamily(frame.pointee.format) { return stories_sws_cs_default() }
        switch frame.pointee.colorspace {
        case AVCOL_SPC_BT709: return 1
        case AVCOL_SPC_FCC: return 4
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M: return 5
        case AVCOL_SPC_SMPTE240M: return 7
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: return 9
        default: return frame.pointee.height >= 720 ? 1 : 5
        }
    }

    /// True for pictures stored as RGB, a palette or grey levels (PNG, GIF, BMP, WebP lossless): no YUV matrix
    /// applies to them. The scaler still passes them through YUV inside, so both its tables must be the same one
    /// (else RGB encoded as BT.601 came out decoded as BT.709 for pictures 720 px tall or more: green 254 as 215).
    static func isRGBFamily(_ format: Int32) -> Bool {
        switch AVPixelFormat(format) {
        case AV_PIX_FMT_RGB24, AV_PIX_FMT_BGR24, AV_PIX_FMT_RGBA, AV_PIX_FMT_BGRA, AV_PIX_FMT_ARGB, AV_PIX_FMT_ABGR,
            AV_PIX_FMT_0RGB, AV_PIX_FMT_RGB0, AV_PIX_FMT_0BGR, AV_PIX_FMT_BGR0, AV_PIX_FMT_RGB48BE, AV_PIX_FMT_RGB48LE,
            AV_PIX_FMT_BGR48BE, AV_PIX_FMT_BGR48LE, AV_PIX_FMT_RGBA64BE, AV_PIX_FMT_RGBA64LE, AV_PIX_FMT_BGRA64BE,
            AV_PIX_FMT_BGRA64LE, AV_PIX_FMT_RGB565LE, AV_PIX_FMT_RGB565BE, AV_PIX_FMT_RGB555LE, AV_PIX_FMT_RGB555BE,
            AV_PIX_FMT_PAL8, AV_PIX_FMT_GBRP, AV_PIX_FMT_GBRAP, AV_PIX_FMT_GBRP16LE, AV_PIX_FMT_GBRP16BE,
            AV_PIX_FMT_GBRAP16LE, AV_PIX_FMT_GBRAP16BE, AV_PIX_FMT_GRAY8, AV_PIX_FMT_GRAY16BE, AV_PIX_FMT_GRAY16LE,
            AV_PIX_FMT_YA8, AV_PIX_FMT_YA16BE, AV_PIX_FMT_YA16LE, AV_PIX_FMT_MONOWHITE, AV_PIX_FMT_MONOBLACK:
            return true
        default:
            return false
        }
    }

    /// True when `frame`'s YUV uses the full 0-255 range (JPEG's), not the video range 16-235.
    static func isFullRange(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        // RGB, palette and grey pictures use every level.
        if isRGBFamily(frame.pointee.format) { return true }
        if frame.pointee.color_range == AVCOL_RANGE_JPEG { return true }
        switch AVPixelFormat(frame.pointee.format) {
        case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUVJ440P, AV_PIX_FMT_YUVJ411P:
            return true
        default: return false
        }
    }

    /// `frame` scaled to `size`, as RGB, with the colour matrix and range it declares.
    private func scale(_ frame: UnsafeMutablePointer<AVFrame>, to size: (width: Int, height: Int)) -> [UInt8] {
        let width = Int32(size.width), height = Int32(size.height)
        // Area averaging with full chroma interpolation: a true box average when shrinking, no fringes at edges.
        scaler = sws_getCachedContext(
            scaler, frame.pointee.width, frame.pointee.height, AVPixelFormat(frame.pointee.format),
            width, height, AV_PIX_FMT_RGB24, SWS_AREA | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND, nil, nil, nil)
        var rgb = [UInt8](repeating: 0, count: size.width * size.height * 3)
        guard let scaler else { return rgb }
        let colours = ScalerColours(
            context: scaler, source: [frame.pointee.width, frame.pointee.height, frame.pointee.format],
            target: [width, height], matrix: Self.matrix(of: frame), fullRange: Self.isFullRange(frame))
        if colours != scalerColours {
            scalerColours = colours
            // RGB output is full range; a source that is RGB already ignores this (and says so with -1).
            _ = sws_setColorspaceDetails(
                scaler, sws_getCoefficients(colours.matrix), colours.fullRange ? 1 : 0,
                sws_getCoefficients(stories_sws_cs_default()), 1, 0, 1 << 16, 1 << 16)
        }
        rgb.withUnsafeMutableBufferPointer { output in
            var planes: [UnsafeMutablePointer<UInt8>?] = [output.baseAddress, nil, nil, nil]
            var strides: [Int32] = [width * 3, 0, 0, 0]
            withUnsafePointer(to: frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sources in
                    withUnsafePointer(to: frame.pointee.linesize) { lines in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { lineSizes in
                            _ = sws_scale(scaler, sources, lineSizes, 0, frame.pointee.height, &planes, &strides)
                        }
                    }
                }
            }
        }
        return rgb
    }

    /// `frame` tone-mapped to SDR BT.709 at `size` (shrunk first: tone-mapping the few pixels shown costs little);
    /// nil when the filters are missing, and then later HDR frames are converted as they are.
    private func toneMapped(_ frame: UnsafeMutablePointer<AVFrame>, to size: (width: Int, height: Int))
        -> UnsafeMutablePointer<AVFrame>?
    {
        let input = ToneMapGraph.Input(
            width: frame.pointee.width, height: frame.pointee.height, format: frame.pointee.format,
            outWidth: Int32(size.width), outHeight: Int32(size.height))
        if toneMap?.input != input {
            toneMap = ToneMapGraph(input)
            if toneMap == nil {
                toneMapFailed = true
                return nil
            }
        }
        return toneMap?.run(frame)
    }
}

/// A libavfilter graph that tone-maps PQ/HLG frames to SDR BT.709 (zscale to linear light, the Möbius curve, which
/// keeps tones in SDR's range as they are and rolls off the highlights, zscale back), sized to the picture shown.
final class ToneMapGraph {
    struct Input: Equatable {
        var width: Int32
        var height: Int32
        var format: Int32
        var outWidth: Int32
        var outHeight: Int32
    }

    let input: Input
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private var source: UnsafeMutablePointer<AVFilterContext>?
    private var sink: UnsafeMutablePointer<AVFilterContext>?

    /// The filters for frames of `input`; nil when they cannot be set up (no libavfilter, or no zscale in it).
    init?(_ input: Input) {
        self.input = input
        guard stories_ffmpeg_load_filters(nil, 0) == 1, let graph = avfilter_graph_alloc(),
            let buffer = avfilter_get_by_name("buffer"),
            let bufferSink = avfilter_get_by_name("buffersink")
        else { return nil }
        self.graph = graph
        let arguments = "video_size=\(input.width)x\(input.height):pix_fmt=\(input.format):time_base=1/90000:pixel_aspect=1/1"
        guard avfilter_graph_create_filter(&source, buffer, "in", arguments, nil, graph) >= 0,
            avfilter_graph_create_filter(&sink, bufferSink, "out", nil, nil, graph) >= 0
        else { return nil }
        let chain = "zscale=w=\(input.outWidth):h=\(input.outHeight):filter=bilinear:t=linear:npl=100,format=gbrpf32le,"
            + "zscale=p=bt709,tonemap=tonemap=mobius:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
        var outputs = avfilter_inout_alloc()
        var inputs = avfilter_inout_alloc()
        defer {
            avfilter_inout_free(&outputs)
            avfilter_inout_free(&inputs)
        }
        guard let sourceEnd = outputs, let sinkEnd = inputs else { return nil }
        sourceEnd.pointee.name = av_strdup("in")
        sourceEnd.pointee.filter_ctx = source
        sourceEnd.pointee.pad_idx = 0
        sourceEnd.pointee.next = nil
        sinkEnd.pointee.name = av_strdup("out")
        sinkEnd.pointee.filter_ctx = sink
        sinkEnd.pointee.pad_idx = 0
        sinkEnd.pointee.next = nil
        // The parser takes the two lists and leaves in them what it did not connect (freed above).
        guard avfilter_graph_parse_ptr(graph, chain, &inputs, &outputs, nil) >= 0, avfilter_graph_config(graph, nil) >= 0
        else { return nil }
    }

    deinit { avfilter_graph_free(&graph) }

    /// `frame` through the filters (the caller frees the result); nil when the filters refused it.
    func run(_ frame: UnsafeMutablePointer<AVFrame>) -> UnsafeMutablePointer<AVFrame>? {
        guard let source, let sink, av_buffersrc_add_frame_flags(source, frame, Int32(AV_BUFFERSRC_FLAG_KEEP_REF)) >= 0
        else { return nil }
        var output = av_frame_alloc()
        guard let result = output, av_buffersink_get_frame(sink, result) >= 0 else {
            av_frame_free(&output)
            return nil
        }
        return result
    }
}
