import Foundation

/// How much of a resource a preload fetches.
public enum PreloadAmount: Sendable, Equatable, Hashable {
    /// What the first seconds of playback need, as the preloader's `PreloadPlanning` works them out for the
    /// media's format (e.g. an MP4's header plus that much payload). Without a planner, or for media it does not
    /// recognise, `PreloadConfiguration.fallbackBytes` from the start.
    case seconds(Double)
    /// The first bytes of the file.
    case bytes(Int64)
    /// These byte ranges (clamped to the resource's length).
    case ranges([ByteRange])
    /// The whole file.
    case full
}

/// Turns "the first seconds of playback" into byte ranges for the media formats it knows; the cache itself knows
/// none, so a player that preloads `.seconds` passes one to its `Preloader`.
public protocol PreloadPlanning: Sendable {
    /// The byte ranges the first `seconds` of a resource of `length` bytes need, reading what it must through
    /// `read` (the preloader's loader: those bytes are cached too); nil when the resource is not in a format this
    /// planner knows.
    func ranges(forFirst seconds: Double, length: Int64, read: @escaping @Sendable (ByteRange) async throws -> [UInt8])
        async -> [ByteRange]?
}

/// One resource to preload.
public struct PreloadTarget: Sendable, Equatable, Hashable {
    /// The URL fetched.
    public var url: URL
    /// The key its bytes are cached under.
    public var key: CacheKey
    /// How much to fetch.
    public var amount: PreloadAmount

    /// A target; the key defaults to the URL's.
    public init(url: URL, key: CacheKey? = nil, amount: PreloadAmount) {
        self.url = url
        self.key = key ?? CacheKey(url: url)
        self.amount = amount
    }
}

/// Preloader tuning.
public struct PreloadConfiguration: Sendable, Equatable {
    /// Seconds of payload `resetPreloading(urls:)` fetches after the header.
    public var seconds: Double = 3
    /// Bytes fetched for `.seconds` when no planner knows the media's format (its bitrate is unknown).
    public var fallbackBytes: Int64 = 512 << 10
    /// The unit of work between checks of the pause gate: a pause takes effect within one slice.
    public var sliceBytes: Int64 = 128 << 10

    /// The defaults.
    public init() {}
}

/// Where a preload stands.
public enum PreloadPhase: String, Sendable, Equatable {
    /// Waiting for its turn (nearest first).
    case queued
    /// Fetching.
    case preloading
    /// Held back because playback needs the bandwidth.
    case paused
    /// Everything it needs is cached.
    case preloaded
    /// It could not be preloaded (the message says why).
    case failed
}

/// A preload's progress, for displays.
public struct PreloadProgress: Sendable, Equatable {
    /// The phase.
    public var phase: PreloadPhase
    /// Bytes the preload needs in all, once known.
    public var neededBytes: Int64?
    /// Of those, bytes already cached.
    public var cachedBytes: Int64 = 0
    /// Why it failed.
    public var error: String?

    /// A progress value.
    public init(phase: PreloadPhase, neededBytes: Int64? = nil, cachedBytes: Int64 = 0, error: String? = nil) {
        self.phase = phase
        self.neededBytes = neededBytes
        self.cachedBytes = cachedBytes
        self.error = error
    }

    /// 0…1, once the need is known.
    public var fraction: Double? {
        guard let neededBytes else { return nil }
        return neededBytes == 0 ? 1 : Double(cachedBytes) / Double(neededBytes)
    }
}

/// The byte ranges a preload of `amount` needs, given the resource's length and what the planner said.
public enum PreloadPlan {
    /// The ranges to have cached: for `.seconds`, `planned` (the planner's ranges) or else the first
    /// `fallbackBytes`.
    public static func ranges(
        amount: PreloadAmount, length: Int64, planned: [ByteRange]?, fallbackBytes: Int64
    ) -> ByteRangeSet {
        guard length > 0 else { return ByteRangeSet() }
        var set: ByteRangeSet
        switch amount {
        case .full:
            set = ByteRangeSet([0..<length])
        case .bytes(let count):
            set = ByteRangeSet([0..<Swift.min(length, Swift.max(0, count))])
        case .ranges(let ranges):
            set = ByteRangeSet(ranges.filter { !$0.isEmpty && $0.lowerBound >= 0 })
        case .seconds:
            set = ByteRangeSet(planned?.filter { !$0.isEmpty && $0.lowerBound >= 0 } ?? [0..<Swift.min(length, fallbackBytes)])
        }
        set.clamp(to: length)
        return set
    }
}
