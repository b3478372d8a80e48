import Foundation

/// A data request: the `AVAssetResourceLoadingDataRequest` analogue.
public struct LoadingRequest: Sendable, Equatable {
    /// The origin URL.
    public var url: URL { didSet { key = cacheKey ?? CacheKey(url: url) } }
    /// A caller-chosen cache key (for signed URLs); nil to key by the normalized URL.
    public var cacheKey: CacheKey? { didSet { key = cacheKey ?? CacheKey(url: url) } }
    /// The key the bytes live under (hashed once, when the request is made).
    public private(set) var key: CacheKey
    /// First byte wanted.
    public var requestedOffset: Int64
    /// Bytes wanted; nil for everything to the end.
    public var requestedLength: Int64?
    /// When the reader goes away early, let its fetch finish the block in flight into the cache (true), or stop
    /// it at once to free the link (false: preloads that pause for playback).
    public var finishesBlockWhenAbandoned = true
    /// The version the caller already described to its own client (length and validators, e.g. a proxy's
    /// response headers): bytes of any other version fail with `resourceChanged` before the first is delivered.
    public var expectedVersion: ResourceMetadata?
    /// Fetched ahead of playback (a preload): what it downloads counts as downloaded when a player first reads
    /// it, not as saved by the cache, and it is not a played request in `LoaderMetrics`.
    public var isPreload = false
    /// For a client that may stop reading at any moment (a proxy's client probing a file): origin requests run
    /// at most this far past the reader's offset at first, then twice as far as it has read from the origin, so a
    /// client that reads a few bytes and leaves costs little and one that keeps reading soon gets large
    /// requests. Nil fetches the whole wanted range at once (a player that will read it all).
    public var readAhead: Int64?

    /// Creates a request.
    public init(url: URL, cacheKey: CacheKey? = nil, requestedOffset: Int64 = 0, requestedLength: Int64? = nil) {
        self.url = url
        self.cacheKey = cacheKey
        key = cacheKey ?? CacheKey(url: url)
        self.requestedOffset = requestedOffset
        self.requestedLength = requestedLength
    }
}

/// Where a chunk's bytes came from.
public enum ChunkSource: String, Sendable {
    /// Cached before the request began.
    case cache
    /// Fetched from the origin for this or a concurrent request.
    case origin
    /// Read from a file on this machine (a `file:` URL), never cached.
    case local
}

/// Bytes for a reader, in order.
public struct LoadedChunk: Sendable, Equatable {
    /// Offset of the first byte in the resource.
    public var offset: Int64
    /// The bytes.
    public var bytes: [UInt8]
    /// Where they came from.
    public var source: ChunkSource
}
