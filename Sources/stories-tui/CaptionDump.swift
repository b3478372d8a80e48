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
            let url: URL
            switch story.source {
            case .local(_, let file): url = file
            case .remote(let remote): url = remote
            }
            if url.pathExtension.lowercased() == "m3u8" {
                tracks += await hlsTracks(url, languages: languages, loader: loader)
            } else if url.isFileURL {
                tracks += EmbeddedCaptions.tracks(inFile: url.path)
            }
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

    /// An HLS story's subtitle renditions on its clock: zero is where a file's stream starts, as the player's
    /// decoder finds it; for a URL, the first segment's timestamp map stands for it.
    private static func hlsTracks(_ url: URL, languages: [String], loader: MediaLoader) async -> [CaptionTrack] {
        let key = CacheKey(url: url)
        guard let info = try? await loader.contentInformation(for: url, key: key), let length = info.contentLength,
            length > 0, length <= Int64(HLSPlaylistParser.maxBytes),
            let bytes = try? await loader.data(LoadingRequest(url: url, cacheKey: key, requestedLength: length)),
            case .master(let master)? = try? HLSPlaylistParser.parse(bytes, url: url)
        else { return [] }
        let reads = await HLSCaptions.read(master, languages: languages, loader: loader) { CacheKey(url: $0) }
        let origin = url.isFileURL ? EmbeddedCaptions.streamStart(ofFile: url.path) : nil
        return reads.map { HLSCaptions.track($0, origin: origin) }
    }

    /// `hh:mm:ss,mmm`.
    static func time(_ seconds: Double) -> String {
        let total = Int((seconds * 1000).rounded())
        return String(format: "%02d:%02d:%02d,%03d", total / 3_600_000, total / 60_000 % 60, total / 1000 % 60, total % 1000)
    }
}
