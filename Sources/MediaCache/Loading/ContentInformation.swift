import Foundation

/// What a player needs before asking for data: the `AVAssetResourceLoadingContentInformationRequest` analogue.
public struct ContentInformation: Sendable, Equatable {
    /// Total length, when the origin declared it.
    public var contentLength: Int64?
    /// The origin's `Content-Type`.
    public var contentType: String?
    /// Always true: the loader serves any byte range, whatever the origin supports.
    public var isByteRangeAccessSupported: Bool
    /// The validators stored with the bytes.
    public var etag: String?
    /// The `Last-Modified` stored with the bytes.
    public var lastModified: String?
}

/// A cached copy opened for sending straight from its data file (see `MediaLoader.openSettledCopy`).
public struct SettledCopy: Sendable {
    /// Read-only descriptor of the data file, which the receiver closes; nil when the receiver said it holds this
    /// version's file open already (`holding`).
    public let descriptor: Int32?
    /// Which version this is: pass it as `holding` while the descriptor is kept open.
    public let version: Int64
    /// The stored version (its length is known).
    public let information: ContentInformation
    /// The bytes picked to send, checked and counted; nil when none were picked.
    public let range: ByteRange?
    /// When the origin last confirmed this version, as far as the loader knows (nil: not known, e.g. with
    /// revalidation off).
    public let confirmedAt: Date?
}

/// How much of a request (or of a resource, when a player starts it) the cache answered: the one classification
/// every report uses (the loader's requests, the player's cache indicator, the proxy's log).
public enum CacheOutcome: String, Sendable, Codable {
    /// Every byte was cached.
    case hit = "HIT"
    /// Some bytes were cached.
    case partial = "PARTIAL"
    /// No byte was cached.
    case miss = "MISS"
    /// The origin cannot be reached: what is cached is served, the rest cannot load.
    case offline = "OFFLINE"
    /// A file on this machine, read from disk as it is (nothing cached).
    case local = "LOCAL"

    /// HIT when `cached` holds all `length` bytes, MISS when it holds none, else PARTIAL.
    public init(cached: ByteRangeSet, length: Int64) {
        self = cached.contains(0..<length) ? .hit : (cached.isEmpty ? .miss : .partial)
    }
}
