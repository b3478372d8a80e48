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
        guard let subtitles = SubtitleStreams(format: context) else { return [] }
        for index in 0..<Int(context.pointee.nb_streams) where !subtitles.holds(Int32(index)) {
            context.pointee.streams[index]?.pointee.discard = AVDISCARD_ALL
        }
        guard let packet = av_packet_alloc() else { return [] }
        defer {
            var freed: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&freed)
        }
        var packets = 0
        while packets < packetLimit, av_read_frame(context, packet) >= 0 {
            packets += 1
            if subtitles.holds(packet.pointee.stream_index) { subtitles.decode(packet) }
            av_packet_unref(packet)
        }
        return subtitles.tracks
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
