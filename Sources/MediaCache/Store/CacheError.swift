/// Errors from the cache; each message says what happened and what to do.
public enum CacheError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A file-system operation failed.
    case io(String)
    /// The index could not be read or written.
    case index(String)
    /// The resource is not in the cache.
    case notCached(CacheKey)
    /// Bytes were asked for that are not cached.
    case rangeNotCached(CacheKey, ByteRange)
    /// The resource was replaced by a new version while it was being read or written.
    case resourceChanged(CacheKey)
    /// A write fell outside the resource's known length.
    case outOfBounds(CacheKey, ByteRange, length: Int64)
    /// Cached bytes failed their checksum: they were dropped from the cache and must be fetched again.
    case corruptData(CacheKey, ByteRange)

    /// True for failures of the disk or the index (full, read-only, I/O error): the caller can go on without
    /// caching, unlike a version change or a bad range.
    public var isStorageFailure: Bool {
        switch self {
        case .io, .index: return true
        default: return false
        }
    }

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .io(let message): return message
        case .index(let message): return "cache index: \(message)"
        case .notCached(let key): return "resource \(key) is not in the cache"
        case .rangeNotCached(let key, let range):
            return "resource \(key): bytes \(range.lowerBound)-\(range.upperBound - 1) are not cached"
        case .resourceChanged(let key):
            return "resource \(key) changed at the origin while in use; request it again"
        case .corruptData(let key, let range):
            return "resource \(key): cached bytes \(range.lowerBound)-\(range.upperBound - 1) failed their checksum and were dropped; fetch them again"
        case .outOfBounds(let key, let range, let length):
            return "resource \(key): write \(range.lowerBound)-\(range.upperBound - 1) is past its length \(length)"
        }
    }
}
