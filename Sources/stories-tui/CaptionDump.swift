import Foundation
import MediaCache
import MediaFormats
import StoryPlayer

/// `play --dump-captions`: each story's captions as SubRip, the track chosen as the screen would choose it.
enum CaptionDump {
    /// The SRT text of `stories`' captions (a `# title` line before each story's when there are several); ends
    /// with a newline.
    static func srt(of stories: [Story], languages: [String], loader: MediaLoader) async -> String {
        var out = ""
        for story in stories {
            var tracks = await CaptionLoading.tracks(for: story.captions, loader: loader)
            if case .local(_, let file) = story.source { tracks += EmbeddedCaptions.tracks(inFile: file.path) }
            let track = CaptionTrack.choose(tracks, languages: languages)
            if stories.count > 1 {
                let about = track.map { " (\([$0.language, $0.origin.rawValue].compactMap { $0 }.joined(separator: ", ")))" } ?? " (no captions)"
                out += "# \(story.title)\(about)\n\n"
            }
            for (number, cue) in (track?.cues ?? []).enumerated() {
                out += "\(number + 1)\n\(time(cue.start)) --> \(time(cue.end))\n"
                out += (cue.italic ? "<i>\(cue.text)</i>" : cue.text) + "\n\n"
            }
        }
        return out.isEmpty ? "\n" : out
    }

    /// `hh:mm:ss,mmm`.
    static func time(_ seconds: Double) -> String {
        let total = Int((seconds * 1000).rounded())
        return String(format: "%02d:%02d:%02d,%03d", total / 3_600_000, total / 60_000 % 60, total / 1000 % 60, total % 1000)
    }
}
