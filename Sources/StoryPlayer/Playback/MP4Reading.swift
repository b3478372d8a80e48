import Foundation
import MediaCache
import MediaFormats

/// Reads byte ranges of a resource through a loader, so header reads are cached like any other read.
public struct LoaderRangeReader: ByteRangeReader {
    let loader: MediaLoader
    let url: URL
    let key: CacheKey

    /// A reader of `url` cached under `key`.
    public init(loader: MediaLoader, url: URL, key: CacheKey) {
        self.loader = loader
        self.url = url
        self.key = key
    }

    /// The bytes of `range`.
    public func read(_ range: Range<Int64>) async throws -> [UInt8] {
        try await loader.data(
            LoadingRequest(url: url, cacheKey: key, requestedOffset: range.lowerBound,
                requestedLength: Int64(range.count)))
    }
}

/// Preload planning for MP4 stories: the header boxes up to `moov`, `moov` itself (at the end of the file too) and
/// the first seconds of payload at the file's average bitrate.
public struct MP4PreloadPlanning: PreloadPlanning {
    /// The planner.
    public init() {}

    /// The ranges the first `seconds` need, or nil when the resource is not a readable MP4.
    public func ranges(
        forFirst seconds: Double, length: Int64, read: @escaping @Sendable (ByteRange) async throws -> [UInt8]
    ) async -> [ByteRange]? {
        guard let layout = try? await MP4BoxReader.layout(of: ClosureReader(read: read), length: length) else {
            return nil
        }
        return layout.rangesForFirst(seconds: seconds, length: length)
    }

    private struct ClosureReader: ByteRangeReader {
        let read: @Sendable (ByteRange) async throws -> [UInt8]
        func read(_ range: Range<Int64>) async throws -> [UInt8] { try await read(range) }
    }
}
