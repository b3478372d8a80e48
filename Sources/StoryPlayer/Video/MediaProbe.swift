import Foundation
import MediaCache

/// Asks FFmpeg how long a file of a kind the player does not parse itself plays, reading through the loader on a
/// thread of its own (libav calls block).
enum MediaProbe {
    /// Seconds FFmpeg reports for `url` (`length` bytes, cached under `key`); nil when it reports none.
    static func duration(loader: MediaLoader, url: URL, key: CacheKey, length: Int64) async throws -> Double? {
        let source = PartsByteSource(loader: loader, run: MediaRun(MediaParts(url: url, key: key, length: length)))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Double?, Error>) in
                let thread = Thread {
                    continuation.resume(with: Result { try FrameReader(source: source).containerDuration })
                }
                thread.name = "stories-tui.probe"
                thread.stackSize = 4 << 20
                thread.start()
            }
        } onCancel: {
            source.cancel()
        }
    }
}
