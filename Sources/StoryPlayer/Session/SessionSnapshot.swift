import Foundation
import MediaCache

/// One story as a display shows it.
public struct StoryRow: Sendable, Equatable {
    /// The story's id.
    public var id: String
    /// Its title.
    public var title: String
    /// Plays so far (across runs).
    public var plays: Int
    /// Its play limit, if any.
    public var maxViews: Int?
    /// False once it reached `maxViews` (it is skipped unless all are shown).
    public var eligible: Bool
    /// Its length in bytes, once known.
    public var contentLength: Int64?
    /// Bytes of it cached.
    public var cachedBytes: Int64
    /// Its preload, if one is queued, running or done.
    public var preload: PreloadProgress?
    /// Its last attempt in this run could not play.
    public var failed: Bool
    /// Whose story it is (nil when the playlist names no authors).
    public var author: String?
    /// A file on this machine read from disk as it plays (not through the cache).
    public var isLocal: Bool
    /// How long ago it was posted (`3 h ago`), for a feed item.
    public var age: String?

    /// A row.
    public init(
        id: String, title: String, plays: Int = 0, maxViews: Int? = nil, eligible: Bool = true,
        contentLength: Int64? = nil, cachedBytes: Int64 = 0, preload: PreloadProgress? = nil, failed: Bool = false,
        author: String? = nil, isLocal: Bool = false, age: String? = nil
    ) {
        self.age = age
        self.isLocal = isLocal
        self.author = author
        self.failed = failed
        self.id = id
        self.title = title
        self.plays = plays
        self.maxViews = maxViews
        self.eligible = eligible
        self.contentLength = contentLength
        self.cachedBytes = cachedBytes
        self.preload = preload
    }

    /// Seen: played in this run or an earlier one (its first frame was shown).
    public var seen: Bool { plays > 0 }

    /// Cached share 0…1, once the length is known.
    public var cachedFraction: Double? {
        guard let contentLength, contentLength > 0 else { return nil }
        return Double(cachedBytes) / Double(contentLength)
    }
}

/// Session-wide cache and network figures.
public struct SessionTotals: Sendable, Equatable {
    /// Bytes saved by the cache this session (`LoaderMetrics.cacheBytes`: preloaded bytes are not saved ones).
    public var cacheBytes: Int64 = 0
    /// Bytes received from the origin this session, preloads included (live, as they arrive).
    public var originBytes: Int64 = 0
    /// Bytes on disk now.
    public var diskUsed: Int64 = 0
    /// The disk budget (partial plus complete).
    public var diskLimit: Int64 = 0
    /// Recent download speed, bytes per second.
    public var networkBytesPerSecond: Double = 0

    /// Totals.
    public init(
        cacheBytes: Int64 = 0, originBytes: Int64 = 0, diskUsed: Int64 = 0, diskLimit: Int64 = 0,
        networkBytesPerSecond: Double = 0
    ) {
        self.cacheBytes = cacheBytes
        self.originBytes = originBytes
        self.diskUsed = diskUsed
        self.diskLimit = diskLimit
        self.networkBytesPerSecond = networkBytesPerSecond
    }

    /// Bytes saved ÷ (bytes saved + origin bytes), once anything moved (`LoaderMetrics.hitRatio`).
    public var hitRatio: Double? {
        let total = cacheBytes + originBytes
        return total > 0 ? Double(cacheBytes) / Double(total) : nil
    }
}

/// Everything the stories screen shows, at one moment.
public struct SessionSnapshot: Sendable, Equatable {
    /// The playlist's title.
    public var title: String
    /// Every story in playlist order.
    public var stories: [StoryRow]
    /// The current story, nil before the first and after the last.
    public var current: Int?
    /// True after the last story (or when none is eligible).
    public var finished = false
    /// True while the user paused.
    public var paused = false
    /// The current story's playback.
    public var status: PlaybackStatus?
    /// The current video's cached byte ranges.
    public var cachedRanges = ByteRangeSet()
    /// Session totals.
    public var totals = SessionTotals()
    /// False when preloading is off.
    public var preloading = true
    /// The current story's picture at the playhead (nil before its first frame and when video is off).
    public var frame: VideoFrame?
    /// The viewer muted the sound.
    public var muted = false
    /// Whether sound can be heard in this session (nil: the session plays without sound).
    public var sound: SoundAvailability?
    /// The current story has captions (read from beside it, its playlist or its file).
    public var hasCaptions = false
    /// What its captions show at the playhead.
    public var caption: CaptionShown?

    /// The authors in order, each with its stories' indices (one unnamed group when no author is named).
    public var authors: [AuthorGroup] { AuthorGroup.groups(ofAuthors: stories.map(\.author)) }

    /// The current story's author group (nil before the first story and after the last).
    public var currentAuthor: AuthorGroup? {
        guard let current else { return nil }
        return authors.first { $0.stories.contains(current) }
    }

    /// A snapshot.
    public init(
        title: String, stories: [StoryRow], current: Int? = nil, finished: Bool = false, paused: Bool = false,
        status: PlaybackStatus? = nil, cachedRanges: ByteRangeSet = ByteRangeSet(), totals: SessionTotals = SessionTotals(),
        preloading: Bool = true, frame: VideoFrame? = nil, muted: Bool = false, sound: SoundAvailability? = nil
    ) {
        self.muted = muted
        self.sound = sound
        self.title = title
        self.stories = stories
        self.current = current
        self.finished = finished
        self.paused = paused
        self.status = status
        self.cachedRanges = cachedRanges
        self.totals = totals
        self.preloading = preloading
        self.frame = frame
    }
}

/// What one run of a playlist did, for the summary printed at its end.
public struct PlaylistSummary: Sendable, Equatable {
    /// Stories whose first frame was shown (each once, however often it was shown).
    public var watched = 0
    /// Story plays that reached the end.
    public var finished = 0
    /// Stories that could not play (each once).
    public var failed = 0
    /// Stories passed over because they reached their view limit.
    public var skipped = 0
    /// Stalls.
    public var stalls = 0
    /// Seconds spent stalled.
    public var stallSeconds = 0.0
    /// Bytes saved by the cache, as `LoaderMetrics.cacheBytes` defines them.
    public var cacheBytes: Int64 = 0
    /// Bytes received from the origin, as `LoaderMetrics.originBytesReceived` defines them.
    public var originBytes: Int64 = 0
    /// Times the sound ran out while it played (the decoder fell behind the device).
    public var soundUnderruns = 0

    /// An empty summary.
    public init() {}
}
