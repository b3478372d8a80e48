import Foundation

/// Whether every byte of a resource is cached.
public enum ResourceState: String, Sendable, Codable {
    /// Some bytes (possibly none) are cached; the data file lives in `temp/`.
    case partial
    /// Every byte is cached; the data file lives in `media/`.
    case complete
}

/// What the origin said about a resource: its identity and validators.
public struct ResourceMetadata: Sendable, Equatable {
    /// The origin URL.
    public var url: String
    /// Total length in bytes, when known.
    public var contentLength: Int64?
    /// The `Content-Type`, when known.
    public var contentType: String?
    /// The strong or weak `ETag`, when given.
    public var etag: String?
    /// The `Last-Modified` value, verbatim.
    public var lastModified: String?

    /// Creates metadata.
    public init(
        url: String, contentLength: Int64? = nil, contentType: String? = nil, etag: String? = nil,
        lastModified: String? = nil
    ) {
        self.url = url
        self.contentLength = contentLength
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
    }

    /// True when `other` describes a different version of the content (validators or length differ).
    public func isDifferentVersion(from other: ResourceMetadata) -> Bool {
        if let a = contentLength, let b = other.contentLength, a != b { return true }
        if etag != nil || other.etag != nil { return etag != other.etag }
        if lastModified != nil || other.lastModified != nil { return lastModified != other.lastModified }
        return false
    }
}

/// A snapshot of one cached resource as the index records it.
public struct ResourceInfo: Sendable, Equatable {
    /// The resource's key.
    public var key: CacheKey
    /// Origin metadata and validators.
    public var metadata: ResourceMetadata
    /// Recorded (durable) byte ranges.
    public var ranges: ByteRangeSet
    /// Partial or complete.
    public var state: ResourceState
    /// When the resource was first cached.
    public var createdAt: Date
    /// When the resource was last read or written.
    public var lastAccess: Date
    /// Bumped whenever the resource is replaced by a new version.
    public var generation: Int64
    /// Bytes of this resource served from the cache, across runs.
    public var servedFromCache: Int64
    /// Bytes of this resource fetched from the origin, across runs.
    public var fetchedFromOrigin: Int64

    /// Bytes cached.
    public var cachedBytes: Int64 { ranges.total }

    /// True when every byte up to a known length is recorded.
    public var isComplete: Bool {
        guard let length = metadata.contentLength else { return false }
        return ranges.contains(0..<length)
    }
}

/// Cumulative totals across every run that used the cache directory.
public struct CacheTotals: Sendable, Equatable, Codable {
    /// Bytes fetched from origins.
    public var originBytes: Int64 = 0
    /// Bytes served to readers from disk.
    public var cacheHitBytes: Int64 = 0

    /// Zero totals.
    public init(originBytes: Int64 = 0, cacheHitBytes: Int64 = 0) {
        self.originBytes = originBytes
        self.cacheHitBytes = cacheHitBytes
    }
}
