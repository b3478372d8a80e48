import Foundation
import MediaCache
import MediaFormats

/// Reads a story's caption files into tracks: local files from disk, remote ones through the loader (cached like
/// the media). A file that cannot be read is passed over: the story plays as it would without it.
public enum CaptionLoading {
    /// The tracks of `sources`, in their order, those that gave at least one cue.
    public static func tracks(for sources: [CaptionSource], loader: MediaLoader) async -> [CaptionTrack] {
        var tracks: [CaptionTrack] = []
        for source in sources {
            guard !Task.isCancelled, let bytes = await read(source.location, loader: loader) else { continue }
            let cues = CaptionDocument.parse(bytes).cues
            guard !cues.isEmpty else { continue }
            tracks.append(CaptionTrack(language: source.language, origin: .sidecar, cues: cues))
        }
        return tracks
    }

    /// Files on this machine no larger than this are read before the story starts (a caption file is a few
    /// kilobytes; reading it costs less than a frame, and its first cue is then never late).
    public static let readFirstLimit = 1 << 20

    /// The tracks of the local caption files among `sources` small enough to read at once, and the sources left.
    public static func readSmallLocal(_ sources: [CaptionSource]) -> (tracks: [CaptionTrack], rest: [CaptionSource]) {
        var tracks: [CaptionTrack] = []
        var rest: [CaptionSource] = []
        for source in sources {
            guard case .local(_, let file) = source.location,
                let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int,
                size <= readFirstLimit
            else {
                rest.append(source)
                continue
            }
            guard let data = FileManager.default.contents(atPath: file.path) else { continue }
            let cues = CaptionDocument.parse([UInt8](data)).cues
            if !cues.isEmpty { tracks.append(CaptionTrack(language: source.language, origin: .sidecar, cues: cues)) }
        }
        return (tracks, rest)
    }

    /// At most `CaptionDocument.byteLimit` bytes of the file or URL, nil when it cannot be read.
    static func read(_ location: StorySource, loader: MediaLoader) async -> [UInt8]? {
        switch location {
        case .local(_, let file):
            guard let handle = try? FileHandle(forReadingFrom: file) else { return nil }
            defer { try? handle.close() }
            guard let data = try? handle.read(upToCount: CaptionDocument.byteLimit) else { return nil }
            return [UInt8](data)
        case .remote(let url):
            return try? await loader.data(
                LoadingRequest(url: url, requestedOffset: 0, requestedLength: Int64(CaptionDocument.byteLimit)))
        }
    }

    /// Caption files beside `file`: `clip.srt`, `clip.vtt`, `clip.en.vtt` (language from the name) among `names`
    /// (the folder's entries), in name order.
    public static func sidecars(of file: URL, among names: [String]) -> [CaptionSource] {
        let base = file.deletingPathExtension().lastPathComponent
        let folder = file.deletingLastPathComponent()
        var found: [CaptionSource] = []
        for name in names.sorted() {
            let ext = (name as NSString).pathExtension.lowercased()
            guard ext == "srt" || ext == "vtt" else { continue }
            let stem = (name as NSString).deletingPathExtension
            var language: String?
            if stem == base {
                language = nil
            } else if stem.hasPrefix(base + "."), case let tag = String(stem.dropFirst(base.count + 1)),
                isLanguageTag(tag)
            {
                language = tag
            } else {
                continue
            }
            let path = folder.appendingPathComponent(name).path
            found.append(CaptionSource(location: .local(path: path, file: URL(fileURLWithPath: path)), language: language))
        }
        return found
    }

    /// `en`, `pt-BR`, `zh-Hans`: letters, with subtags after hyphens.
    public static func isLanguageTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return false
        }
        return parts.dropFirst().allSatisfy { (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }
}
