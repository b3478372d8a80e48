import CFFmpeg
import Foundation
import MediaFormats

/// Decodes a file's first picture (an MP4's first sample with its header's configuration, or a photo) with FFmpeg's
/// decoders alone, no demuxer:
/// the decoders load in about half the time the demuxers and their dependencies take, so a story opened at launch
/// shows its first frame while the rest still loads. The picture is the one the demuxing decoder shows first (the
/// same decoder, colour description, orientation and aspect), converted the same way.
enum FirstPictureDecoder {
    /// The picture `sample` (the bytes at `picture.sample`) holds, fitting `box`; nil when it does not decode.
    /// Blocking: it runs on a thread of its own.
    static func decode(_ picture: FirstPicture, sample: [UInt8], box: (width: Int, height: Int)) -> VideoFrame? {
        var error = [CChar](repeating: 0, count: 256)
        guard stories_ffmpeg_load_codecs(&error, error.count) == 1, !sample.isEmpty,
            let codec = avcodec_find_decoder(codecID(picture.codec))
        else { return nil }
        var context = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&context) }
        guard let codecContext = context else { return nil }
        if !picture.configuration.isEmpty {
            let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
            guard let extradata = av_mallocz(picture.configuration.count + padding) else { return nil }
            picture.configuration.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { extradata.copyMemory(from: base, byteCount: bytes.count) }
            }
            // Owned by the context from here (freed with it).
            codecContext.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
            codecContext.pointee.extradata_size = Int32(picture.configuration.count)
        }
        codecContext.pointee.width = Int32(picture.width)
        codecContext.pointee.height = Int32(picture.height)
        // One picture: no frame threads to wait for.
        codecContext.pointee.thread_count = 1
        if let colour = picture.colour {
            codecContext.pointee.color_primaries = AVColorPrimaries(UInt32(colour.primaries))
            codecContext.pointee.color_trc = AVColorTransferCharacteristic(UInt32(colour.transfer))
            codecContext.pointee.colorspace = AVColorSpace(UInt32(colour.matrix))
            codecContext.pointee.color_range = colour.fullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
        }
        av_log_set_level(stories_av_log_quiet())
        guard avcodec_open2(codecContext, codec, nil) >= 0 else { return nil }
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        guard let packet, av_new_packet(packet, Int32(sample.count)) >= 0, let data = packet.pointee.data else { return nil }
        sample.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { data.update(from: base, count: bytes.count) }
        }
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        // The one packet, then the end: the decoder gives its picture at once.
        guard avcodec_send_packet(codecContext, packet) >= 0 else { return nil }
        _ = avcodec_send_packet(codecContext, nil)
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let frame, avcodec_receive_frame(codecContext, frame) >= 0 else { return nil }
        // High dynamic range needs the tone-mapping filters, which wait for every library: not worth it here.
        guard !FrameConverter.isHDR(frame) else { return nil }
        let converter = FrameConverter(
            streamOrientation: picture.displayMatrix.map { PictureOrientation(displayMatrix: $0) } ?? .upright,
            streamAspect: picture.pixelAspect)
        return converter.picture(from: frame, box: box, time: 0)
    }

    private static func codecID(_ codec: FirstPicture.Codec) -> AVCodecID {
        switch codec {
        case .h264: AV_CODEC_ID_H264
        case .hevc: AV_CODEC_ID_HEVC
        case .jpeg: AV_CODEC_ID_MJPEG
        case .png: AV_CODEC_ID_PNG
        case .webp: AV_CODEC_ID_WEBP
        }
    }
}
