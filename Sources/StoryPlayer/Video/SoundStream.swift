import CFFmpeg
import Foundation

/// A file's sound as `FrameReader` decodes it: the best audio stream (AAC, Opus, MP3, whatever FFmpeg decodes),
/// resampled with libswresample to what the output takes, each run placed on the video's timeline by its decoded
/// timestamp. Lives on the decoder's thread with its reader.
final class SoundStream {
    /// The stream's index in the file.
    let streamIndex: Int32
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var resampler: OpaquePointer?
    private let timeBase: Double
    /// Seconds of the video's first frame on the file's clock: times are counted from it, as the picture's are.
    private let origin: Double
    private let output: SoundFormat
    private var packets: [UnsafeMutablePointer<AVPacket>?] = []
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var draining = false
    /// Where the next run starts when a frame has no timestamp of its own.
    private var next: Double?
    private var samples: [Int16] = []
    /// The input the resampler was opened for (sample format, rate, channels).
    private var input: (format: Int32, rate: Int32, channels: Int32)?

    /// The sound of `format`'s best audio stream (related to video stream `videoStream`), nil when it has none or
    /// FFmpeg has no decoder for it (the story then plays without sound).
    init?(format: UnsafeMutablePointer<AVFormatContext>?, videoStream: Int32, origin: Double, output: SoundFormat) {
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, videoStream, &decoder, 0)
        guard index >= 0, let decoder, let stream = format?.pointee.streams[Int(index)],
            let context = avcodec_alloc_context3(decoder)
        else { return nil }
        codec = context
        guard avcodec_parameters_to_context(context, stream.pointee.codecpar) >= 0,
            avcodec_open2(context, decoder, nil) >= 0, let frame = av_frame_alloc()
        else {
            avcodec_free_context(&codec)
            return nil
        }
        self.frame = frame
        streamIndex = index
        timeBase = av_q2d(stream.pointee.time_base)
        self.origin = origin
        self.output = output
    }

    /// Frees the decoder, the resampler and queued packets.
    func close() {
        FrameReader.free(&packets)
        avcodec_free_context(&codec)
        av_frame_free(&frame)
        swr_free(&resampler)
    }

    /// Keeps a packet read while the video was wanted.
    func queuePacket(_ packet: UnsafeMutablePointer<AVPacket>) { packets.append(packet) }

    /// The oldest queued packet, if any (the caller frees it).
    func takePacket() -> UnsafeMutablePointer<AVPacket>? { packets.isEmpty ? nil : packets.removeFirst() }

    /// Forgets everything before a seek.
    func restart() {
        FrameReader.free(&packets)
        if let codec { avcodec_flush_buffers(codec) }
        swr_free(&resampler)
        input = nil
        draining = false
        next = nil
    }

    /// Decodes the next frame of sound into `queue`; false at the end of the stream.
    func decode(from reader: FrameReader, into queue: SoundQueue) throws -> Bool {
        guard let codec, let frame else { return false }
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                defer { av_frame_unref(frame) }
                try append(frame, to: queue)
                return true
            }
            if received == stories_averror_eof() { return false }
            guard received == stories_averror_eagain() else {
                throw VideoDecodeError("the sound's data is damaged (\(FrameReader.message(received)))")
            }
            if draining { return false }
            if let packet = try reader.nextPacket(video: false) {
                var owned: UnsafeMutablePointer<AVPacket>? = packet
                let sent = avcodec_send_packet(codec, packet)
                av_packet_free(&owned)
                if sent < 0, sent != stories_averror_eagain() {
                    throw VideoDecodeError("the sound's data is damaged (\(FrameReader.message(sent)))")
                }
            } else {
                draining = true
                avcodec_send_packet(codec, nil)
            }
        }
    }

    private func append(_ frame: UnsafeMutablePointer<AVFrame>, to queue: SoundQueue) throws {
        let shape = (frame.pointee.format, frame.pointee.sample_rate, frame.pointee.ch_layout.nb_channels)
        if let input, input != shape {
            // The stream changed shape (a new segment's encoding): a resampler for the new one.
            swr_free(&resampler)
        }
        input = shape
        if resampler == nil {
            resampler = stories_resampler_open(frame, Int32(output.rate), Int32(output.channels))
            guard resampler != nil else { throw VideoDecodeError("cannot convert the story's sound") }
        }
        let inputRate = Swift.max(1, Int(frame.pointee.sample_rate))
        // What the resampler still holds from before comes out first: the run starts that much earlier.
        let held = Double(swr_get_delay(resampler, Int64(output.rate))) / Double(output.rate)
        let stamp = frame.pointee.best_effort_timestamp
        let start = stamp == stories_av_nopts_value() ? (next ?? 0) : Double(stamp) * timeBase - origin - held
        let room = Int(frame.pointee.nb_samples) * output.rate / inputRate + 256 + Int(held * Double(output.rate))
        if samples.count < room * output.channels { samples = [Int16](repeating: 0, count: room * output.channels) }
        let made = samples.withUnsafeMutableBufferPointer { buffer in
            stories_resample(resampler, frame, buffer.baseAddress, Int32(room))
        }
        guard made >= 0 else { throw VideoDecodeError("cannot convert the story's sound") }
        guard made > 0 else { return }
        queue.append(at: start, samples: Array(samples[0..<(Int(made) * output.channels)]))
        next = start + Double(made) / Double(output.rate)
    }
}
