import CFFmpeg
import Foundation
import MediaFormats

/// Subtitle streams inside a media file (mov_text/tx3g in MP4 and MOV; SubRip, WebVTT and ASS in Matroska and
/// WebM) read through FFmpeg's subtitle decoders into tracks. Blocking: run it off the cooperative pool.
public enum EmbeddedCaptions {
    /// The most packets read looking for subtitles (a story is short; a feature film is not read whole).
    static let packetLimit = 2_000_000

    /// The subtitle tracks of the file at `path`, each with its language when the file says; none when it has
    /// none or cannot be read.
    public static func tracks(inFile path: String) -> [CaptionTrack] {
        var why = [CChar](repeating: 0, count: 256)
        guard stories_ffmpeg_load(&why, why.count) == 1 else { return [] }
        av_log_set_level(stories_av_log_quiet())
        var format: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&format, path, nil, nil) >= 0, let context = format else { return [] }
        defer { avformat_close_input(&format) }
        struct Stream {
            var decoder: UnsafeMutablePointer<AVCodecContext>
            var timeBase: Double
            var language: String?
            var cues: [CaptionCue] = []
        }
        var streams: [Int32: Stream] = [:]
        defer {
            for stream in streams.values {
                var decoder: UnsafeMutablePointer<AVCodecContext>? = stream.decoder
                avcodec_free_context(&decoder)
            }
        }
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar else { continue }
            guard parameters.pointee.codec_type == AVMEDIA_TYPE_SUBTITLE,
                let codec = avcodec_find_decoder(parameters.pointee.codec_id),
                let decoder = avcodec_alloc_context3(codec)
            else {
                stream.pointee.discard = AVDISCARD_ALL
                continue
            }
            decoder.pointee.pkt_timebase = stream.pointee.time_base
            guard avcodec_parameters_to_context(decoder, parameters) >= 0, avcodec_open2(decoder, codec, nil) >= 0 else {
                var failed: UnsafeMutablePointer<AVCodecContext>? = decoder
                avcodec_free_context(&failed)
                stream.pointee.discard = AVDISCARD_ALL
                continue
            }
            let base = stream.pointee.time_base
            let language = av_dict_get(stream.pointee.metadata, "language", nil, 0).flatMap { entry in
                entry.pointee.value.map { String(cString: $0) }
            }.flatMap { $0 == "und" || $0.isEmpty ? nil : $0 }
            streams[Int32(index)] = Stream(
                decoder: decoder, timeBase: base.den == 0 ? 0 : Double(base.num) / Double(base.den), language: language)
        }
        guard !streams.isEmpty, let packet = av_packet_alloc() else { return [] }
        defer {
            var freed: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&freed)
        }
        var packets = 0
        while packets < packetLimit, av_read_frame(context, packet) >= 0 {
            packets += 1
            defer { av_packet_unref(packet) }
            guard var stream = streams[packet.pointee.stream_index] else { continue }
            var subtitle = AVSubtitle()
            var got: Int32 = 0
            guard avcodec_decode_subtitle2(stream.decoder, &subtitle, &got, packet) >= 0, got != 0 else { continue }
            defer { avsubtitle_free(&subtitle) }
            let pts = packet.pointee.pts == stories_av_nopts_value() ? packet.pointee.dts : packet.pointee.pts
            guard pts != stories_av_nopts_value(), stream.cues.count < CaptionDocument.cueLimit else { continue }
            let at = Double(pts) * stream.timeBase
            let start = at + Double(subtitle.start_display_time) / 1000
            var end = at + Double(subtitle.end_display_time) / 1000
            if subtitle.end_display_time == 0 || subtitle.end_display_time == UInt32.max {
                end = packet.pointee.duration > 0 ? at + Double(packet.pointee.duration) * stream.timeBase : start + 3
            }
            var lines: [String] = []
            for index in 0..<Int(subtitle.num_rects) {
                guard let rect = subtitle.rects[index] else { continue }
                if let ass = rect.pointee.ass {
                    lines.append(dialogueText(String(cString: ass)))
                } else if let text = rect.pointee.text {
                    lines.append(String(cString: text))
                }
            }
            let cue = CaptionDocument.cue(start: start, end: end, lines: lines.flatMap { $0.split(separator: "\n").map(String.init) })
            if let cue { stream.cues.append(cue) }
            streams[packet.pointee.stream_index] = stream
        }
        return streams.keys.sorted().compactMap { key in
            guard let stream = streams[key], !stream.cues.isEmpty else { return nil }
            return CaptionTrack(language: stream.language, origin: .embedded, cues: stream.cues)
        }
    }

    /// The stream time, in seconds, at which the file at `path` starts (an MPEG-TS stream's first timestamp);
    /// nil when it cannot be read or does not say.
    public static func streamStart(ofFile path: String) -> Double? {
        var why = [CChar](repeating: 0, count: 256)
        guard stories_ffmpeg_load(&why, why.count) == 1 else { return nil }
        av_log_set_level(stories_av_log_quiet())
        var format: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&format, path, nil, nil) >= 0, let context = format else { return nil }
        defer { avformat_close_input(&format) }
        guard avformat_find_stream_info(context, nil) >= 0, context.pointee.start_time != stories_av_nopts_value() else {
            return nil
        }
        return Double(context.pointee.start_time) / 1_000_000
    }

    /// The text of an ASS dialogue line as FFmpeg gives it (`ReadOrder,Layer,Style,Name,MarginL,MarginR,MarginV,
    /// Effect,Text`), with `\N` as line breaks and `\h` as spaces.
    static func dialogueText(_ dialogue: String) -> String {
        let fields = dialogue.split(separator: ",", maxSplits: 8, omittingEmptySubsequences: false)
        let text = fields.count == 9 ? String(fields[8]) : dialogue
        return text.replacingOccurrences(of: "\\N", with: "\n").replacingOccurrences(of: "\\n", with: "\n")
            .replacingOccurrences(of: "\\h", with: " ")
    }
}
