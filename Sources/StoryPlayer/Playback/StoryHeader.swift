import Foundation
import MediaCache
import MediaFormats

/// What a story's file says before it plays: how long it plays, where its payload lies, and anything the viewer
/// should be told about it.
struct StoryHeader: Sendable, Equatable {
    /// Seconds that play (for a file cut short, the seconds its bytes hold).
    var duration: Double
    /// The payload's bytes.
    var payload: Range<Int64>
    /// One sentence about the file, shown and reported once (a file cut short); nil for most.
    var note: String?
    /// Seconds the file's header gives when it is more than what plays.
    var declaredDuration: Double?
    /// Where its first picture can be decoded from without a demuxer (an MP4's `moov`, not a fragmented one's; a
    /// photo), if anywhere.
    var firstPicture: FirstPictureSource?
}

/// How long a story plays and where its payload lies, read from the file before playing it.
extension StoryHeader {
    /// Why an MP4 whose boxes cannot be read cannot play: one cut inside its media data, before the header that
    /// follows it (a file written header-last and copied or downloaded only in part), says so.
    static func unreadable(_ error: MP4Error, length: Int64) -> String {
        if case .badBoxSize(let type, let offset, let size) = error, size > UInt64(max(0, length - offset)) {
            return "the file is cut short: it ends at byte \(length), inside its '\(type)' box of \(size) bytes, "
                + "before the header that says how to play it (copy or download it again)"
        }
        return "\(error): the file is damaged"
    }

    /// A photo story's seconds when the playlist gives none (Instagram's default).
    static let photoSeconds = 5.0

    /// How long the story at `url` (cached under `key`, `length` bytes) plays and where its payload lies: from the
    /// container (MP4, fragmented MP4, WebM), for a photo the playlist's duration (`fallbackDuration`) or 5 s,
    /// otherwise the playlist's duration or what FFmpeg reports. An MP4 cut inside its payload plays what it
    /// holds, with a note.
    static func read(
        loader: MediaLoader, url: URL, key: CacheKey, length: Int64, fallbackDuration: Double?
    ) async throws -> StoryHeader {
        let layout: MediaLayout?
        do {
            layout = try await MediaLayout.read(from: LoaderRangeReader(loader: loader, url: url, key: key), length: length)
        } catch let error as MediaLayoutError {
            throw PlayerError("\(error)")
        } catch let error as MP4Error {
            guard let fallbackDuration else { throw PlayerError(Self.unreadable(error, length: length)) }
            return StoryHeader(duration: fallbackDuration, payload: 0..<length)
        } catch let error as MatroskaError {
            guard let fallbackDuration else { throw PlayerError("\(error): the file is damaged or cut short") }
            return StoryHeader(duration: fallbackDuration, payload: 0..<length)
        }
        if case .image(let kind) = layout {
            return StoryHeader(
                duration: fallbackDuration ?? Self.photoSeconds, payload: 0..<length,
                firstPicture: FirstPicture.photo(kind, length: length).map { .photo($0) })
        }
        let payload = layout?.payload(length: length) ?? 0..<length
        if case .mp4(let mp4) = layout, mp4.truncated {
            let declared = fallbackDuration ?? mp4.duration
            let playable = declared * mp4.payloadFraction
            let note = "the file ends at byte \(length), \(Self.seconds(playable)) into the \(Self.seconds(declared)) its header gives: it plays what is there"
            return StoryHeader(
                duration: playable, payload: payload, note: note, declaredDuration: declared,
                firstPicture: mp4.fragmented ? nil : .mp4(moov: mp4.moov))
        }
        if case .mp4(let mp4) = layout {
            return StoryHeader(duration: mp4.duration, payload: payload, firstPicture: mp4.fragmented ? nil : .mp4(moov: mp4.moov))
        }
        if let duration = layout?.duration { return StoryHeader(duration: duration, payload: payload) }
        if let fallbackDuration { return StoryHeader(duration: fallbackDuration, payload: payload) }
        let probed: Double?
        do {
            probed = try await MediaProbe.duration(loader: loader, url: url, key: key, length: length)
        } catch let error as VideoDecodeError {
            throw PlayerError("\(error)")
        }
        guard let probed, probed > 0, probed.isFinite else {
            throw PlayerError(
                "the video does not say how long it plays (give the story a \"duration\" in the playlist)")
        }
        return StoryHeader(duration: probed, payload: payload)
    }

    /// Seconds as a person reads them: "2.9 s".
    static func seconds(_ value: Double) -> String { String(format: "%.1f s", value) }
}
