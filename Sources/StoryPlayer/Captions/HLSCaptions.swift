import Foundation
import MediaCache
import MediaFormats

/// An HLS story's WebVTT subtitle renditions: their playlists and segments read through the loader (cached like
/// the video's), each segment's cues placed on the stream's MPEG-TS clock by its `X-TIMESTAMP-MAP`.
public enum HLSCaptions {
    /// A rendition's cues before the story's zero is known: on the MPEG-TS clock (seconds) when the segments
    /// said how they map, else on the presentation's own clock.
    public struct Read: Sendable, Equatable {
        /// The rendition's language.
        public var language: String?
        /// Its cues.
        public var cues: [CaptionCue]
        /// The cues are MPEG-TS times (take the stream's first timestamp off), not story times.
        public var onTransportClock: Bool
        /// The first segment's mapped MPEG-TS time, the zero to use when the stream's own is not known.
        public var firstMapped: Double?
    }

    /// Renditions read at most (a master may list dozens of languages).
    static let renditionLimit = 4
    /// Segments read at most per rendition.
    static let segmentLimit = 600

    /// Reads the subtitle renditions of `master` (those of the languages in `languages` first, then the default,
    /// at most four); a rendition or segment that cannot be read is passed over.
    public static func read(
        _ master: HLSMasterPlaylist, languages: [String], loader: MediaLoader, partKey: @escaping @Sendable (URL) -> CacheKey
    ) async -> [Read] {
        var chosen: [HLSRendition] = []
        for wanted in languages.map(CaptionTrack.normalized) {
            chosen += master.subtitles.filter { rendition in
                rendition.language.map(CaptionTrack.normalized).map { $0 == wanted || $0.hasPrefix(wanted + "-") } == true
                    && !chosen.contains(rendition)
            }
        }
        chosen += master.subtitles.filter(\.isDefault).filter { !chosen.contains($0) }
        chosen += master.subtitles.filter { !chosen.contains($0) }
        var reads: [Read] = []
        for rendition in chosen.prefix(renditionLimit) {
            guard !Task.isCancelled else { break }
            if let read = await read(rendition, loader: loader, partKey: partKey) { reads.append(read) }
        }
        return reads
    }

    private static func read(
        _ rendition: HLSRendition, loader: MediaLoader, partKey: @escaping @Sendable (URL) -> CacheKey
    ) async -> Read? {
        let key = partKey(rendition.url)
        guard let info = try? await loader.contentInformation(for: rendition.url, key: key),
            case .media(let playlist)? = try? await HLSStory.playlist(
                loader: loader, url: rendition.url, key: key, length: info.contentLength)
        else { return nil }
        var cues: [CaptionCue] = []
        var mapped = false
        var firstMapped: Double?
        for segment in playlist.segments.prefix(segmentLimit) {
            guard !Task.isCancelled else { break }
            var request = LoadingRequest(url: segment.url, cacheKey: partKey(segment.url))
            if let range = segment.byteRange {
                request.requestedOffset = range.lowerBound
                request.requestedLength = Int64(range.count)
            } else {
                request.requestedLength = Int64(CaptionDocument.byteLimit)
            }
            guard let bytes = try? await loader.data(request) else { continue }
            let parsed = CaptionDocument.parse(bytes)
            for var cue in parsed.cues {
                if let map = parsed.timestampMap {
                    // The cue's time on the MPEG-TS clock.
                    cue.start = cue.start - map.local + map.mpegts
                    cue.end = cue.end - map.local + map.mpegts
                    mapped = true
                    if firstMapped == nil { firstMapped = map.mpegts - map.local }
                }
                cues.append(cue)
            }
        }
        guard !cues.isEmpty else { return nil }
        return Read(language: rendition.language, cues: cues, onTransportClock: mapped, firstMapped: firstMapped)
    }

    /// `read`'s cues as a track on the story's clock, whose zero is the stream time `origin` (nil: not known, the
    /// first mapped segment's time stands for it). MPEG-TS times that wrapped past 2^33 ticks are unwrapped.
    public static func track(_ read: Read, origin: Double?) -> CaptionTrack {
        guard read.onTransportClock else {
            return CaptionTrack(language: read.language, origin: .hls, cues: read.cues)
        }
        let zero = origin ?? read.firstMapped ?? 0
        let wrap = Double(1 << 33) / 90_000
        let cues = read.cues.compactMap { cue -> CaptionCue? in
            var cue = cue
            var shift = -zero
            if cue.start - zero < -wrap / 2 { shift += wrap }
            if cue.start - zero > wrap / 2 { shift -= wrap }
            cue.start += shift
            cue.end += shift
            return cue.end > 0 ? cue : nil
        }
        return CaptionTrack(language: read.language, origin: .hls, cues: cues)
    }
}
