import Foundation
import MediaFormats

/// Where a story's captions come from, as the headless `caption` event's `source` says.
public enum CaptionOrigin: String, Sendable, Equatable, Codable {
    /// A file beside the story's (`clip.srt`, `clip.en.vtt`) or named by the playlist.
    case sidecar
    /// A subtitle stream inside the media file.
    case embedded
    /// An HLS subtitle rendition.
    case hls
}

/// A caption file a story names: beside a local file, or in a playlist's `captions` field.
public struct CaptionSource: Sendable, Equatable {
    /// The file or URL.
    public var location: StorySource
    /// Its language (`en`, `pt-BR`), from the name or the playlist; nil when not said.
    public var language: String?

    /// A caption source.
    public init(location: StorySource, language: String?) {
        self.location = location
        self.language = language
    }
}

/// One language's cues for a story.
public struct CaptionTrack: Sendable, Equatable {
    /// Its language, when known.
    public var language: String?
    /// Where it came from.
    public var origin: CaptionOrigin
    /// Its cues in order of start.
    public var cues: [CaptionCue]

    /// A track; `cues` are sorted by start.
    public init(language: String?, origin: CaptionOrigin, cues: [CaptionCue]) {
        self.language = language
        self.origin = origin
        self.cues = cues.sorted { $0.start == $1.start ? $0.end < $1.end : $0.start < $1.start }
    }

    /// The cues showing at `time` (overlapping ones together, in order of start).
    public func cues(at time: Double) -> [CaptionCue] {
        // The last cue starting at or before `time`, found by halving; the ones before it that still last are few.
        let low = firstStart(after: time)
        var showing: [CaptionCue] = []
        var index = low - 1
        var looked = 0
        while index >= 0, looked < 64 {
            if cues[index].end > time { showing.append(cues[index]) }
            index -= 1
            looked += 1
        }
        return showing.reversed()
    }

    /// The next moment after `time` at which what shows changes (a cue starts or ends), nil when none does.
    public func nextChange(after time: Double) -> Double? {
        let ends = cues(at: time).map(\.end)
        let nextStart = cues[firstStart(after: time)...].first?.start
        return (ends + [nextStart].compactMap { $0 }).min()
    }

    /// The index of the first cue starting after `time`.
    private func firstStart(after time: Double) -> Int {
        var low = 0
        var high = cues.count
        while low < high {
            let middle = (low + high) / 2
            if cues[middle].start <= time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Picks the track to show among `tracks`: the first in `languages` order that matches (`en` matches `en-US`),
    /// else one without a language or the first.
    public static func choose(_ tracks: [CaptionTrack], languages: [String]) -> CaptionTrack? {
        for wanted in languages.map(normalized) {
            if let match = tracks.first(where: { track in
                guard let language = track.language.map(normalized) else { return false }
                return language == wanted || language.hasPrefix(wanted + "-") || wanted.hasPrefix(language + "-")
            }) { return match }
        }
        return tracks.first { $0.language == nil } ?? tracks.first
    }
}

extension CaptionTrack {
    /// Files name languages by ISO 639-2 (`eng`, `ger`), people by ISO 639-1 (`en`, `de`): the common ones as the
    /// two-letter code, lowercased.
    static func normalized(_ language: String) -> String {
        let lower = language.lowercased()
        let parts = lower.split(separator: "-", maxSplits: 1)
        guard let first = parts.first else { return lower }
        let short = twoLetter[String(first)] ?? String(first)
        return parts.count > 1 ? short + "-" + parts[1] : short
    }

    private static let twoLetter: [String: String] = [
        "eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "por": "pt", "ita": "it",
        "jpn": "ja", "zho": "zh", "chi": "zh", "rus": "ru", "kor": "ko", "ara": "ar", "hin": "hi", "nld": "nl",
        "dut": "nl", "pol": "pl", "tur": "tr", "swe": "sv", "ukr": "uk", "ces": "cs", "cze": "cs", "ell": "el",
        "gre": "el", "heb": "he", "ind": "id", "vie": "vi", "tha": "th", "dan": "da", "fin": "fi", "nor": "no",
        "hun": "hu", "ron": "ro", "rum": "ro",
    ]
}

/// What the screen and the events show of a story's captions now.
public struct CaptionShown: Sendable, Equatable {
    /// The lines showing (overlapping cues one after the other).
    public var text: String
    /// Every showing cue is in italics.
    public var italic: Bool
    /// When the first showing cue started, in story seconds.
    public var start: Double
    /// When the last showing cue ends.
    public var end: Double
    /// The track's language.
    public var language: String?
    /// Where the track came from.
    public var origin: CaptionOrigin

    /// A caption showing.
    public init(
        text: String, italic: Bool = false, start: Double, end: Double, language: String? = nil,
        origin: CaptionOrigin = .sidecar
    ) {
        self.text = text
        self.italic = italic
        self.start = start
        self.end = end
        self.language = language
        self.origin = origin
    }

    /// What `track` shows at `time`, nil when nothing.
    public init?(_ track: CaptionTrack, at time: Double) {
        let cues = track.cues(at: time)
        guard let first = cues.first else { return nil }
        text = cues.map(\.text).joined(separator: "\n")
        italic = cues.allSatisfy(\.italic)
        start = first.start
        end = cues.map(\.end).max() ?? first.end
        language = track.language
        origin = track.origin
    }
}
