import Foundation

/// How much of a resource a preload fetches.
public enum PreloadAmount: Sendable, Equatable, Hashable {
    /// What the first seconds of playback need: the MP4 header (a `moov` at the end included) plus this many
    /// seconds of payload. Media that is not MP4 gets `PreloadConfiguration.fallbackBytes`.
    case seconds(Double)
    /// The first bytes of the file.
    case bytes(Int64)
    /// The whole file.
    case full
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
    /// Bytes fetched for `.seconds` when the media is not MP4 (its bitrate is unknown).
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

/// The byte ranges a preload of `amount` needs, given the resource's length and (for MP4) its layout.
public enum PreloadPlan {
    /// The ranges to have cached. For MP4 with `.seconds`: the header boxes the layout reader read (every box
    /// header up to `moov` and `moov` itself), plus `seconds` of payload at the file's average bitrate.
    public static func ranges(
        amount: PreloadAmount, length: Int64, layout: MP4Layout?, fallbackBytes: Int64
    ) -> ByteRangeSet {
        guard length > 0 else { return ByteRangeSet() }
        switch amount {
        case .full:
            return ByteRangeSet([0..<length])
        case .bytes(let count):
            return ByteRangeSet([0..<Swift.min(length, Swift.max(0, count))])
        case .seconds(let seconds):
            guard let layout, layout.duration > 0 else {
                return ByteRangeSet([0..<Swift.min(length, fallbackBytes)])
            }
            let bitrate = Double(layout.mdat.count) / layout.duration
            let payloadBytes = Int64((bitrate * Swift.max(0, seconds)).rounded(.up))
            var set = ByteRangeSet()
            // Everything before the payload (ftyp, and moov when it comes first) and the moov box wherever it is.
            if layout.mdat.lowerBound > 0 { set.insert(0..<layout.mdat.lowerBound) }
            set.insert(layout.moov)
            let payloadEnd = Swift.min(layout.mdat.upperBound, layout.mdat.lowerBound + payloadBytes)
            if payloadEnd > layout.mdat.lowerBound { set.insert(layout.mdat.lowerBound..<payloadEnd) }
            set.clamp(to: length)
            return set
        }
    }
}
