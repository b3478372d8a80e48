import Foundation
import MediaCache

/// Player tuning, in seconds of media.
public struct PlayerConfiguration: Sendable, Equatable {
    /// Buffered media needed for the first frame and to resume after a stall.
    public var startThreshold: Double = 0.5
    /// Media read ahead of the playhead.
    public var readAhead: Double = 2
    /// Decode the video and keep the frame at the playhead (off: only bytes are consumed, as before pictures).
    public var decodesVideo = false
    /// Report each new picture shown as a `frame` event (for lining a run up with a recording of its sound).
    public var reportsFrames = false
    /// Decode the first frame of the stories → and auto-advance go to once they are preloaded, so they show it
    /// at once (only while video is decoded).
    public var decodesAhead = true
    /// Longest wait for bytes, in wall-clock seconds, before the story's first frame or in a stall, before the
    /// story fails naming the origin's fault; nil: it waits as long as the loader keeps trying.
    public var waitLimit: Double? = 30
    /// The picture's box in pixels until a display says otherwise (`setPictureBox`).
    public var pictureWidth = 120
    /// See `pictureWidth`.
    public var pictureHeight = 70
    /// Caption languages in order of preference (`en`, `de`); empty: the track without a language, else the first.
    public var captionLanguages: [String] = []
    /// Report each caption as it shows as a `caption` event (off with `--captions off`).
    public var reportsCaptions = true

    /// The defaults.
    public init() {}
}

/// Where a player is.
public enum PlaybackState: String, Sendable {
    case loading, playing, stalled, paused, finished, failed
}

/// Whether a story's sound is heard.
public enum StorySound: String, Sendable {
    /// Not known yet (the file is opening).
    case unknown
    /// The story's sound plays.
    case playing
    /// The story has sound; the viewer muted it.
    case muted
    /// The story has no sound.
    case silent
    /// Sound is off for the session (no device, or not asked for).
    case off
}

/// Everything a display needs about the current playback.
public struct PlaybackStatus: Sendable, Equatable {
    /// The state.
    public var state: PlaybackState = .loading
    /// Seconds played.
    public var position: Double = 0
    /// Seconds in all, once known.
    public var duration: Double?
    /// Seconds buffered ahead of the playhead.
    public var bufferedSeconds: Double = 0
    /// Time to first frame, once shown.
    public var startupMs: Int?
    /// Stalls so far.
    public var stalls = 0
    /// Seconds spent stalled.
    public var stallSeconds: Double = 0
    /// Cache state when the story started.
    public var cache: CacheOutcome?
    /// Total bytes of the video, once known.
    public var contentLength: Int64?
    /// Why playback failed.
    public var error: String?
    /// One sentence about the story's file the viewer should know (it was cut short), once read.
    public var note: String?
    /// Frames shown and dropped (zero when video is not decoded).
    public var frames = FrameCounts()
    /// Seconds between the frames shown (the video's cadence), once known: how often a display redraws.
    public var frameInterval: Double?
    /// Whether its sound is heard.
    public var sound = StorySound.unknown

    /// A player's status before it starts.
    public init() {}

    /// True when everything from the playhead to the end is buffered.
    public var isBufferedToEnd: Bool {
        duration.map { position + bufferedSeconds >= $0 - 1e-6 } ?? false
    }
}
