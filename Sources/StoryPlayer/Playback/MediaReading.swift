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

/// Preload planning for story files: an MP4's header boxes up to `moov`, `moov` itself (at the end of the file too)
/// and the first seconds of payload at the file's average bitrate; a fragmented MP4's header, index and first
/// fragments; a WebM's header, Cues and first Clusters; a photo whole.
public struct MediaPreloadPlanning: PreloadPlanning {
    /// The planner.
    public init() {}

    /// The ranges the first `seconds` need, or nil when the resource is of no kind this planner reads (or says
    /// nothing of its duration).
    public func ranges(
        forFirst seconds: Double, length: Int64, read: @escaping @Sendable (ByteRange) async throws -> [UInt8]
    ) async -> [ByteRange]? {
        let reader = ClosureReader(read: read)
        guard let layout = try? await MediaLayout.read(from: reader, length: length) else { return nil }
        return await layout.rangesForFirst(seconds: seconds, length: length, reader: reader)
    }

    private struct ClosureReader: ByteRangeReader {
        let read: @Sendable (ByteRange) async throws -> [UInt8]
        func read(_ range: Range<Int64>) async throws -> [UInt8] { try await read(range) }
    }
}
