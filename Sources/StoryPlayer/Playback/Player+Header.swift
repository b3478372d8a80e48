import Foundation
import MediaCache
import MediaFormats

/// How long a story plays and where its payload lies, read from the file before playing it.
extension Player {
    /// A photo story's seconds when the playlist gives none (Instagram's default).
    static let photoSeconds = 5.0

    /// How long the story plays and where its payload lies: from the container (MP4, fragmented MP4, WebM), for a
    /// photo the playlist's duration or 5 s, otherwise the playlist's duration or what FFmpeg reports.
    func readHeader(length: Int64) async throws -> (Double, Range<Int64>) {
        let layout: MediaLayout?
        do {
            layout = try await MediaLayout.read(from: LoaderRangeReader(loader: loader, url: url, key: key), length: length)
        } catch let error as MediaLayoutError {
            throw PlayerError("\(error)")
        } catch let error as MP4Error {
            guard let fallbackDuration else { throw PlayerError("\(error) and the playlist gives no duration for it") }
            return (fallbackDuration, 0..<length)
        } catch let error as MatroskaError {
            guard let fallbackDuration else { throw PlayerError("\(error) and the playlist gives no duration for it") }
            return (fallbackDuration, 0..<length)
        }
        if case .image = layout { return (fallbackDuration ?? Self.photoSeconds, 0..<length) }
        let payload = layout?.payload(length: length) ?? 0..<length
        if let duration = layout?.duration { return (duration, payload) }
        if let fallbackDuration { return (fallbackDuration, payload) }
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
        return (probed, payload)
    }
}
