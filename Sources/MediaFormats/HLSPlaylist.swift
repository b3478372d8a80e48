import Foundation

/// An HLS playlist (RFC 8216): a master playlist naming variants, or a media playlist of segments.
public enum HLSPlaylist: Sendable, Equatable {
    /// Variants of one stream at several bitrates.
    case master(HLSMasterPlaylist)
    /// The segments of one variant.
    case media(HLSMediaPlaylist)
}

/// A master playlist: the variants a player chooses between.
public struct HLSMasterPlaylist: Sendable, Equatable {
    /// In the playlist's order.
    public var variants: [HLSVariant]
    /// Its subtitle renditions (`#EXT-X-MEDIA:TYPE=SUBTITLES` with a URI).
    public var subtitles: [HLSRendition] = []

    /// A master playlist of `variants`.
    public init(variants: [HLSVariant], subtitles: [HLSRendition] = []) {
        self.variants = variants
        self.subtitles = subtitles
    }

    /// The variants from the lowest bandwidth to the highest.
    public var byBandwidth: [HLSVariant] { variants.sorted { $0.bandwidth < $1.bandwidth } }

    /// The highest variant whose bandwidth fits `throughput` (bits per second) with `headroom` (0.7: use at most
    /// 70 % of it); the lowest when none fits, or when the throughput is not known yet.
    public func variant(forThroughput throughput: Double?, headroom: Double = 0.7) -> HLSVariant? {
        let sorted = byBandwidth
        guard let throughput, throughput > 0 else { return sorted.first }
        return sorted.last { Double($0.bandwidth) <= throughput * headroom } ?? sorted.first
    }
}

/// One `#EXT-X-STREAM-INF` entry.
public struct HLSVariant: Sendable, Equatable {
    /// The variant's media playlist.
    public var url: URL
    /// Peak bits per second (`BANDWIDTH`).
    public var bandwidth: Int
    /// Average bits per second (`AVERAGE-BANDWIDTH`), when given.
    public var averageBandwidth: Int?
    /// Width and height of the picture (`RESOLUTION`), when given.
    public var resolution: HLSResolution?
    /// The `CODECS` string, when given.
    public var codecs: String?

    /// A variant from its parts.
    public init(url: URL, bandwidth: Int, averageBandwidth: Int? = nil, resolution: HLSResolution? = nil, codecs: String? = nil) {
        self.url = url
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.resolution = resolution
        self.codecs = codecs
    }
}

/// One `#EXT-X-MEDIA` rendition (a subtitle track).
public struct HLSRendition: Sendable, Equatable {
    /// Its media playlist.
    public var url: URL
    /// `GROUP-ID`.
    public var group: String
    /// `LANGUAGE`, when given.
    public var language: String?
    /// `NAME`.
    public var name: String?
    /// `DEFAULT=YES`.
    public var isDefault: Bool

    /// A rendition from its parts.
    public init(url: URL, group: String, language: String?, name: String?, isDefault: Bool) {
        self.url = url
        self.group = group
        self.language = language
        self.name = name
        self.isDefault = isDefault
    }
}

/// A picture size, `WIDTHxHEIGHT`.
public struct HLSResolution: Sendable, Equatable {
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// A size from its parts.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// A media playlist: the segments of one variant, in playing order.
public struct HLSMediaPlaylist: Sendable, Equatable {
    /// The longest a segment may last (`#EXT-X-TARGETDURATION`), seconds.
    public var targetDuration: Double
    /// The sequence number of the first segment (`#EXT-X-MEDIA-SEQUENCE`).
    public var mediaSequence: Int
    /// `VOD` or `EVENT` (`#EXT-X-PLAYLIST-TYPE`), when given.
    public var playlistType: String?
    /// True when `#EXT-X-ENDLIST` closes the playlist: no segment will be added (video on demand).
    public var isComplete: Bool
    /// In playing order.
    public var segments: [HLSSegment]

    /// Seconds, the sum of the segments' durations.
    public var duration: Double { segments.reduce(0) { $0 + $1.duration } }

    /// The seconds each segment covers, from 0 at the first segment's start.
    public var segmentTimes: [Range<Double>] {
        var start = 0.0
        return segments.map { segment in
            defer { start += segment.duration }
            return start..<(start + Swift.max(0, segment.duration))
        }
    }

    /// Seconds at which segment `index` starts.
    public func start(ofSegment index: Int) -> Double {
        segments.prefix(Swift.max(0, Swift.min(index, segments.count))).reduce(0) { $0 + $1.duration }
    }

    /// The index of the segment holding `time` seconds (the last one past the end, the first before the start).
    public func segmentIndex(at time: Double) -> Int {
        var start = 0.0
        for (index, segment) in segments.enumerated() {
            if time < start + segment.duration { return index }
            start += segment.duration
        }
        return Swift.max(0, segments.count - 1)
    }

    /// How many segments from the first cover at least `seconds` of playing (at least one, when there is one).
    public func segmentCount(covering seconds: Double) -> Int {
        var covered = 0.0
        for (index, segment) in segments.enumerated() {
            covered += segment.duration
            if covered >= seconds { return index + 1 }
        }
        return segments.count
    }
}

/// One media segment (`#EXTINF` and the URI after it).
public struct HLSSegment: Sendable, Equatable {
    /// Where its bytes are.
    public var url: URL
    /// Seconds.
    public var duration: Double
    /// Only these bytes of `url` (`#EXT-X-BYTERANGE`); nil for all of it.
    public var byteRange: Range<Int64>?
    /// The initialization section that must come before it (`#EXT-X-MAP`, fMP4), when there is one.
    public var map: HLSMap?
    /// How it is encrypted (`#EXT-X-KEY`), nil when it is not.
    public var key: HLSKey?
    /// Its media sequence number.
    public var sequence: Int

    /// A segment from its parts.
    public init(url: URL, duration: Double, byteRange: Range<Int64>? = nil, map: HLSMap? = nil, key: HLSKey? = nil, sequence: Int = 0) {
        self.url = url
        self.duration = duration
        self.byteRange = byteRange
        self.map = map
        self.key = key
        self.sequence = sequence
    }
}

/// An initialization section (`#EXT-X-MAP`).
public struct HLSMap: Sendable, Equatable {
    /// Where its bytes are.
    public var url: URL
    /// Only these bytes of `url`; nil for all of it.
    public var byteRange: Range<Int64>?

    /// A map from its parts.
    public init(url: URL, byteRange: Range<Int64>? = nil) {
        self.url = url
        self.byteRange = byteRange
    }
}

/// AES-128 encryption of whole segments (`#EXT-X-KEY:METHOD=AES-128`).
public struct HLSKey: Sendable, Equatable {
    /// Where the 16-byte key is (fetched through the cache like any resource).
    public var url: URL
    /// The initialization vector (16 bytes), when given; otherwise the segment's sequence number.
    public var iv: [UInt8]?

    /// A key from its parts.
    public init(url: URL, iv: [UInt8]? = nil) {
        self.url = url
        self.iv = iv
    }
}

/// Why a playlist cannot be used: one sentence that names the line.
public struct HLSPlaylistError: Error, Equatable, CustomStringConvertible {
    /// The 1-based line the problem is on; 0 for the playlist as a whole.
    public var line: Int
    /// What is wrong and, where it helps, what would be right.
    public var reason: String

    /// An error from its parts.
    public init(line: Int, _ reason: String) {
        self.line = line
        self.reason = reason
    }

    /// `line 7: #EXTINF duration 'abc' is not a number`, or the reason alone for the whole playlist.
    public var description: String { line > 0 ? "line \(line): \(reason)" : reason }
}
