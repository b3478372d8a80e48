import CFFmpeg
import Foundation

/// Why a video could not be decoded, as one line for the story area.
public struct VideoDecodeError: Error, CustomStringConvertible, Equatable {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The demuxer's I/O: reads and seeks go to a `DemuxerByteSource`, never to a file or socket of its own.
private final class AVIOBridge {
    let source: any DemuxerByteSource
    var position: Int64 = 0
    /// Set when a read failed for a reason other than the end of the video.
    var failure: Error?
    init(source: any DemuxerByteSource) { self.source = source }
}

private let avioRead: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = {
    opaque, buffer, size in
    guard let opaque, let buffer, size > 0 else { return stories_averror_eio() }
    let bridge = Unmanaged<AVIOBridge>.fromOpaque(opaque).takeUnretainedValue()
    do {
        let count = try bridge.source.read(
            into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)), at: bridge.position)
        if count == 0 { return stories_averror_eof() }
        bridge.position += Int64(count)
        return Int32(count)
    } catch {
        bridge.failure = error
        return stories_averror_exit()
    }
}

private let avioSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
    guard let opaque else { return -1 }
    let bridge = Unmanaged<AVIOBridge>.fromOpaque(opaque).takeUnretainedValue()
    let length = bridge.source.length
    let mode = whence & ~stories_avseek_force()
    if mode == stories_avseek_size() { return length }
    let target: Int64
    switch mode {
    case SEEK_SET: target = offset
    case SEEK_CUR: target = bridge.position + offset
    case SEEK_END: target = length + offset
    default: return -1
    }
    guard target >= 0, target <= length else { return -1 }
    bridge.position = target
    return target
}

/// A file read through a `DemuxerByteSource`: its first video stream decoded frame by frame and scaled to RGB, and
/// its sound (the best audio stream) decoded and resampled, both from one demuxer (each stream's packets wait in
/// a queue of their own while the other is read). Blocking: it lives on the decoder's own thread and is used by it
/// only.
final class FrameReader {
    private let bridge: AVIOBridge
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let converter: FrameConverter
    private let streamIndex: Int32
    private let timeBase: Double
    private let startTime: Int64
    /// The stream time, in seconds, that is the story's zero (an MPEG-TS stream starts at its first timestamp).
    var timeOrigin: Double { Double(startTime) * timeBase }
    /// The file's subtitle streams, decoded as the demuxer passes their packets.
    private var subtitles: SubtitleStreams?
    /// Called with every subtitle track so far when one gains a cue.
    var onSubtitles: (([CaptionTrack]) -> Void)?
    private var draining = false
    /// Packets read for one stream while the other was wanted, in order.
    private var videoPackets: [UnsafeMutablePointer<AVPacket>?] = []
    /// The sound stream, when the file has one and it is decoded (see `FrameReader+Sound.swift`).
    var sound: SoundStream?
    /// The demuxer reached the end of the file.
    private var demuxEnded = false
    /// False: video packets are dropped as they are read.
    private let pictures: Bool
    /// Pixels across and down of the coded picture.
    let width: Int
    let height: Int
    /// Frames a second the stream declares (its average rate), when it does.
    let framesPerSecond: Double?
    /// Seconds the container says the media lasts (FFmpeg's figure), when it says.
    let containerDuration: Double?
    /// Whether the file's header said all about its streams, so that no frames were decoded ahead to probe them.
    let openedFromHeader: Bool

    /// Opens the video: reads its header through `source` and sets up the decoder for its first video stream.
    /// `soundFormat`: decode the sound too, resampled to it; `pictures` false: video packets are read past, not
    /// decoded (sound only).
    init(source: any DemuxerByteSource, soundFormat: SoundFormat? = nil, pictures: Bool = true) throws {
        self.pictures = pictures
        bridge = AVIOBridge(source: source)
        var why = [CChar](repeating: 0, count: 512)
        guard stories_ffmpeg_load(&why, why.count) == 1 else {
            let reason = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw VideoDecodeError(
                "no picture: \(reason); install FFmpeg's libraries (Debian: libavformat59 libavcodec59 libswscale6)")
        }
        av_log_set_level(stories_av_log_quiet())
        guard let context = avformat_alloc_context() else { throw VideoDecodeError("out of memory") }
        let bufferSize = 64 * 1024
        guard let buffer = av_malloc(bufferSize) else {
            avformat_free_context(context)
            throw VideoDecodeError("out of memory")
        }
        let opaque = Unmanaged.passUnretained(bridge).toOpaque()
        guard let io = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(bufferSize), 0, opaque, avioRead, nil, avioSeek)
        else {
            av_free(buffer)
            avformat_free_context(context)
            throw VideoDecodeError("out of memory")
        }
        context.pointee.pb = io
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        // Otherwise the MPEG-TS demuxer reads the last few hundred kilobytes of the run to estimate a duration the
        // playlist already gives: for an HLS story, its last segments fetched before the first frame.
        if source.durationIsKnown { context.pointee.skip_estimate_duration_from_pts = 1 }
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let status = avformat_open_input(&opened, nil, nil, nil)
        format = opened
        var ioRef: UnsafeMutablePointer<AVIOContext>? = io
        if status < 0 {
            // avformat_open_input frees the context on failure; the I/O context is ours.
            format = nil
            Self.freeIO(&ioRef)
            throw bridge.failure.map { VideoDecodeError("cannot read the video: \($0)") }
                ?? VideoDecodeError("not a video this player can read (\(Self.message(status)))")
        }
        // An MP4's header already says what the streams are; FFmpeg would decode frames to learn it again (12-18 ms
        // of a 1080x1920 clip's first frame). Other containers, or an MP4 whose header leaves something out, are probed.
        openedFromHeader = Self.headerSuffices(opened)
        guard openedFromHeader || avformat_find_stream_info(opened, nil) >= 0 else {
            Self.close(format: &format, io: &ioRef)
            throw VideoDecodeError("cannot find the video's streams")
        }
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard index >= 0, let decoder, let stream = opened?.pointee.streams[Int(index)] else {
            Self.close(format: &format, io: &ioRef)
            throw VideoDecodeError(
                index == stories_averror_decoder_not_found() ? "no decoder for this video's codec" : "the file holds no video stream")
        }
        guard let codecContext = avcodec_alloc_context3(decoder) else {
            Self.close(format: &format, io: &ioRef)
            throw VideoDecodeError("out of memory")
        }
        codec = codecContext
        avcodec_parameters_to_context(codecContext, stream.pointee.codecpar)
        // Large or fast pictures decode on several threads (frame and slice threading); small ones on one, which
        // shows the first frame soonest.
        let pixels = Int(stream.pointee.codecpar.pointee.width) * Int(stream.pointee.codecpar.pointee.height)
        let rate = stream.pointee.avg_frame_rate
        let fps = rate.num > 0 && rate.den > 0 ? Double(rate.num) / Double(rate.den) : nil
        if pixels * Int((fps ?? 30).rounded()) > 1280 * 720 * 30 {
            codecContext.pointee.thread_count = Int32(Swift.min(4, ProcessInfo.processInfo.activeProcessorCount))
            codecContext.pointee.thread_type = stories_ff_thread_frame_slice()
        } else {
            codecContext.pointee.thread_count = 1
        }
        guard avcodec_open2(codecContext, decoder, nil) >= 0 else {
            avcodec_free_context(&codec)
            Self.close(format: &format, io: &ioRef)
            throw VideoDecodeError("cannot open the decoder for \(String(cString: decoder.pointee.name))")
        }
        streamIndex = index
        timeBase = av_q2d(stream.pointee.time_base)
        startTime = stream.pointee.start_time == stories_av_nopts_value() ? 0 : stream.pointee.start_time
        width = Int(codecContext.pointee.width)
        height = Int(codecContext.pointee.height)
        // A still picture's stream declares its own rate (25): not a cadence.
        framesPerSecond = fps.flatMap { $0 > 0 && $0 < 1000 ? $0 : nil }
        let formatDuration = opened?.pointee.duration ?? stories_av_nopts_value()
        if formatDuration != stories_av_nopts_value(), formatDuration > 0 {
            containerDuration = Double(formatDuration) / Double(AV_TIME_BASE)
        } else if stream.pointee.duration != stories_av_nopts_value(), stream.pointee.duration > 0 {
            containerDuration = Double(stream.pointee.duration) * timeBase
        } else {
            containerDuration = nil
        }
        var matrixSize = 0
        let orientation = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &matrixSize).flatMap { data in
            matrixSize >= 36
                ? data.withMemoryRebound(to: Int32.self, capacity: 9) {
                    PictureOrientation(displayMatrix: Array(UnsafeBufferPointer(start: $0, count: 9)))
                } : nil
        }
        let sar = stream.pointee.sample_aspect_ratio.num > 0 && stream.pointee.sample_aspect_ratio.den > 0
            ? stream.pointee.sample_aspect_ratio : stream.pointee.codecpar.pointee.sample_aspect_ratio
        converter = FrameConverter(
            streamOrientation: orientation ?? .upright,
            streamAspect: sar.num > 0 && sar.den > 0 ? Double(sar.num) / Double(sar.den) : nil)
        packet = av_packet_alloc()
        if let opened { subtitles = SubtitleStreams(format: opened) }
        guard width > 0, height > 0 else {
            throw VideoDecodeError("the video has no picture size")
        }
        if let soundFormat {
            sound = SoundStream(format: opened, videoStream: index, origin: Double(startTime) * timeBase, output: soundFormat)
        }
    }

    deinit {
        Self.free(&videoPackets)
        sound?.close()
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        var io = format?.pointee.pb
        Self.close(format: &format, io: &io)
    }

    private static func close(
        format: inout UnsafeMutablePointer<AVFormatContext>?, io: inout UnsafeMutablePointer<AVIOContext>?
    ) {
        if format != nil { avformat_close_input(&format) }
        freeIO(&io)
    }

    private static func freeIO(_ io: inout UnsafeMutablePointer<AVIOContext>?) {
        guard let context = io else { return }
        av_freep(&context.pointee.buffer)
        avio_context_free(&io)
    }

    /// Whether `format`'s header describes the streams played fully: an MP4 or QuickTime file with a picture, whose
    /// pictures and sound all name their codec, pictures their size, sound its rate and channels.
    static func headerSuffices(_ format: UnsafeMutablePointer<AVFormatContext>?) -> Bool {
        guard let format, let name = format.pointee.iformat?.pointee.name, String(cString: name).hasPrefix("mov,"),
            format.pointee.nb_streams > 0, let streams = format.pointee.streams
        else { return false }
        var pictures = 0
        for index in 0..<Int(format.pointee.nb_streams) {
            guard let parameters = streams[index]?.pointee.codecpar?.pointee else { return false }
            // Timecode, metadata and text tracks are not decoded here (captions open the file on their own).
            guard parameters.codec_type == AVMEDIA_TYPE_VIDEO || parameters.codec_type == AVMEDIA_TYPE_AUDIO else { continue }
            guard parameters.codec_id != AV_CODEC_ID_NONE else { return false }
            if parameters.codec_type == AVMEDIA_TYPE_VIDEO {
                guard parameters.width > 0, parameters.height > 0 else { return false }
                pictures += 1
            } else if parameters.sample_rate <= 0 || parameters.ch_layout.nb_channels <= 0 {
                return false
            }
        }
        return pictures > 0
    }

    /// The text of a libav error code.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes the next frame into `frame` and returns its time in seconds; nil at the end of the video.
    func decode(into frame: UnsafeMutablePointer<AVFrame>) throws -> Double? {
        guard let codec else { return nil }
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                let stamp = frame.pointee.best_effort_timestamp
                let pts = stamp == stories_av_nopts_value() ? frame.pointee.pts : stamp
                return pts == stories_av_nopts_value() ? 0 : Double(pts - startTime) * timeBase
            }
            if received == stories_averror_eof() { return nil }
            guard received == stories_averror_eagain() else {
                throw VideoDecodeError("the video's data is damaged (\(Self.message(received)))")
            }
            if draining { return nil }
            if let next = try nextPacket(video: true) {
                var queued: UnsafeMutablePointer<AVPacket>? = next
                let sent = avcodec_send_packet(codec, next)
                av_packet_free(&queued)
                if sent < 0, sent != stories_averror_eagain() {
                    throw VideoDecodeError("the video's data is damaged (\(Self.message(sent)))")
                }
            } else {
                draining = true
                avcodec_send_packet(codec, nil)
            }
        }
    }

    /// The next packet of the video (`video`) or of the sound, from its queue or the demuxer (packets of the other
    /// stream read on the way are queued for it); nil at the end of the file. The caller frees it.
    func nextPacket(video: Bool) throws -> UnsafeMutablePointer<AVPacket>? {
        while true {
            if video, !videoPackets.isEmpty { return videoPackets.removeFirst() }
            if !video, let queued = sound?.takePacket() { return queued }
            guard !demuxEnded, let format, let packet else { return nil }
            let read = av_read_frame(format, packet)
            if read < 0 {
                if let failure = bridge.failure { throw VideoDecodeError("cannot read the video: \(failure)") }
                guard read == stories_averror_eof() else {
                    throw VideoDecodeError("cannot read the video (\(Self.message(read)))")
                }
                demuxEnded = true
                return nil
            }
            let index = packet.pointee.stream_index
            guard index == streamIndex || (sound?.streamIndex == index) else {
                if let subtitles, subtitles.holds(index), !subtitles.decode(packet, origin: timeOrigin).isEmpty {
                    onSubtitles?(subtitles.tracks)
                }
                av_packet_unref(packet)
                continue
            }
            guard let copy = av_packet_alloc() else { throw VideoDecodeError("out of memory") }
            av_packet_move_ref(copy, packet)
            if index == streamIndex {
                if video { return copy }
                if pictures {
                    videoPackets.append(copy)
                } else {
                    var dropped: UnsafeMutablePointer<AVPacket>? = copy
                    av_packet_free(&dropped)
                }
            } else {
                if !video { return copy }
                sound?.queuePacket(copy)
            }
        }
    }

    /// Frees queued packets.
    static func free(_ packets: inout [UnsafeMutablePointer<AVPacket>?]) {
        for i in packets.indices { av_packet_free(&packets[i]) }
        packets.removeAll()
    }

    /// Forgets what was read before a seek: queued packets, the decoders' state, the end of the file.
    private func restart() {
        Self.free(&videoPackets)
        if let codec { avcodec_flush_buffers(codec) }
        sound?.restart()
        draining = false
        demuxEnded = false
    }

    /// Moves to the last key frame at or before `seconds`; the next decoded frames start there.
    func seek(to seconds: Double) throws {
        guard let format else { return }
        let stamp = startTime + Int64(Swift.max(0, seconds) / timeBase)
        let status = av_seek_frame(format, streamIndex, stamp, AVSEEK_FLAG_BACKWARD)
        if status < 0 {
            if let failure = bridge.failure { throw VideoDecodeError("cannot read the video: \(failure)") }
            throw VideoDecodeError("cannot seek in the video (\(Self.message(status)))")
        }
        restart()
    }

    /// Moves to run offset `offset` (where a key frame starts, as at an HLS segment's start); the next decoded
    /// frames start there.
    func seek(toByte offset: Int64) throws {
        guard let format else { return }
        let status = av_seek_frame(format, -1, offset, AVSEEK_FLAG_BYTE)
        if status < 0 {
            if let failure = bridge.failure { throw VideoDecodeError("cannot read the video: \(failure)") }
            throw VideoDecodeError("cannot seek in the video (\(Self.message(status)))")
        }
        restart()
    }

    /// `frame` as an upright RGB picture fitting `box` (see `FrameConverter`).
    func picture(_ frame: UnsafeMutablePointer<AVFrame>, box: (width: Int, height: Int), time: Double) -> VideoFrame {
        converter.picture(from: frame, box: box, time: time)
    }
}
