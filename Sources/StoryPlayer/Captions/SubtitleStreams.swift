import CFFmpeg
import Foundation
import MediaFormats

/// The subtitle streams of an open file, each with FFmpeg's decoder for it: packets of those streams become cues
/// (mov_text/tx3g, SubRip, WebVTT and ASS text). Used on the thread that demuxes; not shared.
final class SubtitleStreams {
    /// One stream's decoder, clock and what it gave.
    struct Stream {
        var decoder: UnsafeMutablePointer<AVCodecContext>
        var timeBase: Double
        var language: String?
        var cues: [CaptionCue] = []
        /// Cues already given (a seek makes the demuxer read them again).
        var seen: Set<String> = []
    }

    private(set) var streams: [Int32: Stream] = [:]

    /// The decoders of `format`'s subtitle streams; nil when it has none FFmpeg can decode.
    init?(format: UnsafeMutablePointer<AVFormatContext>) {
        for index in 0..<Int(format.pointee.nb_streams) {
            guard let stream = format.pointee.streams[index], let parameters = stream.pointee.codecpar,
                parameters.pointee.codec_type == AVMEDIA_TYPE_SUBTITLE,
                let codec = avcodec_find_decoder(parameters.pointee.codec_id),
                let decoder = avcodec_alloc_context3(codec)
            else { continue }
            decoder.pointee.pkt_timebase = stream.pointee.time_base
            guard avcodec_parameters_to_context(decoder, parameters) >= 0, avcodec_open2(decoder, codec, nil) >= 0 else {
                var failed: UnsafeMutablePointer<AVCodecContext>? = decoder
                avcodec_free_context(&failed)
                continue
            }
            let base = stream.pointee.time_base
            let language = av_dict_get(stream.pointee.metadata, "language", nil, 0).flatMap { entry in
                entry.pointee.value.map { String(cString: $0) }
            }.flatMap { $0 == "und" || $0.isEmpty ? nil : $0 }
            streams[Int32(index)] = Stream(
                decoder: decoder, timeBase: base.den == 0 ? 0 : Double(base.num) / Double(base.den), language: language)
        }
        if streams.isEmpty { return nil }
    }

    deinit {
        for stream in streams.values {
            var decoder: UnsafeMutablePointer<AVCodecContext>? = stream.decoder
            avcodec_free_context(&decoder)
        }
    }

    /// True when `index` is one of these streams.
    func holds(_ index: Int32) -> Bool { streams[index] != nil }

    /// Decodes `packet` (of one of these streams) into cues on the file's own clock, less `origin` seconds;
    /// returns the new ones.
    @discardableResult
    func decode(_ packet: UnsafeMutablePointer<AVPacket>, origin: Double = 0) -> [CaptionCue] {
        let index = packet.pointee.stream_index
        guard var stream = streams[index], stream.cues.count < CaptionDocument.cueLimit else { return [] }
        var subtitle = AVSubtitle()
        var got: Int32 = 0
        guard avcodec_decode_subtitle2(stream.decoder, &subtitle, &got, packet) >= 0, got != 0 else { return [] }
        defer { avsubtitle_free(&subtitle) }
        let pts = packet.pointee.pts == stories_av_nopts_value() ? packet.pointee.dts : packet.pointee.pts
        guard pts != stories_av_nopts_value() else { return [] }
        let at = Double(pts) * stream.timeBase - origin
        let start = at + Double(subtitle.start_display_time) / 1000
        var end = at + Double(subtitle.end_display_time) / 1000
        if subtitle.end_display_time == 0 || subtitle.end_display_time == UInt32.max {
            end = packet.pointee.duration > 0 ? at + Double(packet.pointee.duration) * stream.timeBase : start + 3
        }
        var lines: [String] = []
        for rectIndex in 0..<Int(subtitle.num_rects) {
            guard let rect = subtitle.rects[rectIndex] else { continue }
            if let ass = rect.pointee.ass {
                lines.append(EmbeddedCaptions.dialogueText(String(cString: ass)))
            } else if let text = rect.pointee.text {
                lines.append(String(cString: text))
            }
        }
        guard let cue = CaptionDocument.cue(start: start, end: end, lines: lines.flatMap { $0.split(separator: "\n").map(String.init) }),
            stream.seen.insert("\(cue.start)|\(cue.text)").inserted
        else { return [] }
        stream.cues.append(cue)
        streams[index] = stream
        return [cue]
    }

    /// The tracks decoded so far, in stream order.
    var tracks: [CaptionTrack] {
        streams.keys.sorted().compactMap { key in
            guard let stream = streams[key], !stream.cues.isEmpty else { return nil }
            return CaptionTrack(language: stream.language, origin: .embedded, cues: stream.cues)
        }
    }
}
