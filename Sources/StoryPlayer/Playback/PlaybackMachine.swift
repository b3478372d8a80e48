import Foundation
import MediaCache

/// One story's playback as a value: every decision of the player is an event into it that returns what to do.
/// The player's threads report each happening as its own event (bytes arrived, a frame decoded, the sound clock, a
/// failure, a new version at the origin), the viewer's keys come as `paused` and `seek`, and the clock's `tick` is
/// when the machine looks at what it was told: it moves the state (loading, playing, stalled, paused, finished,
/// failed) and the playhead, starts and stops the sound, restarts the download a seek needs, gives up on bytes
/// that do not come (before the file opens too), starts the story over on a new version, and says when the player
/// must look again (`wake`). Between ticks it answers where the playhead is (`status(at:)`) and how far the
/// download may read (`downloadLimit(at:)`). While the story's sound plays, the playhead is the audio clock (the
/// frame being heard); muted, silent or without a device it follows the system clock. Tested as a plain value.
struct PlaybackMachine: Sendable {
    /// What the download has, from the playhead on: told when bytes arrive, when the playhead moved over them, or
    /// when an HLS story learns a part's length.
    struct Bytes: Equatable {
        /// Seconds of media available from the playhead on (contiguous).
        var buffered: Double = 0
        /// The media time the download has reached.
        var downloadedThrough = Double.infinity
        /// The media time the parts whose lengths are known reach (an HLS story learns more as it plays).
        var knownThrough = Double.infinity
        /// The bytes of the story, as far as known.
        var contentLength: Int64?
    }

    /// What the decoder has: told when a frame is decoded or shown.
    struct Frames: Equatable {
        /// The first frame is decoded (always true when video is not decoded).
        var firstFrameReady = true
        /// The time of the next decoded frame to show, if one is waiting.
        var upcoming: Double?
        /// Frames shown and dropped, and their cadence.
        var counts = FrameCounts()
        /// Seconds between frames, once known.
        var interval: Double?
    }

    /// Where the story's sound is: told as the sound clock moves.
    struct Sound: Equatable {
        /// Where the story's sound is: nil when it cannot be heard (muted, no sound in the story, no device).
        var reading: SoundReading?
        /// Whether the story's sound is heard, for the status.
        var story = StorySound.off
    }

    /// What happens to the story.
    enum Event: Equatable {
        /// The clock reads `now`: the machine looks at what it was told (the timer, and the look after news).
        case tick(now: Double)
        /// Bytes arrived, or the playhead moved over them.
        case bytes(Bytes)
        /// The decoder decoded or showed a frame.
        case frames(Frames)
        /// The sound clock moved, or the story's sound became heard or not.
        case sound(Sound)
        /// The check against the origin could not reach it: the cached copy plays.
        case offline
        /// The download stopped with this failure.
        case downloadFailed(String)
        /// The decoder stopped with this failure.
        case decoderFailed(String)
        /// The cached copy this attempt started with was replaced by another version, seen at `now`.
        case versionChanged(now: Double)
        /// The viewer paused (true) or resumed.
        case paused(Bool)
        /// The viewer moved the playhead by this many seconds (ignored while loading).
        case seek(by: Double)
        /// The story's file was read: how long it plays, how many bytes, where they come from, and the one
        /// sentence about the file the viewer should know (a file cut short: it ends where its bytes do).
        case opened(duration: Double, contentLength: Int64?, cache: CacheOutcome, note: String?)
        /// The story cannot play: the sentence says why.
        case failed(String)
    }

    /// What the player does.
    enum Action: Equatable {
        /// Report an event.
        case emit(PlayerEvent)
        /// The playhead jumped (a seek): the decoder follows it.
        case seek(to: Double)
        /// The download starts again where the media at this time starts (a seek past what it reached).
        case restartDownload(at: Double)
        /// Play the story's sound from this time (what played before is dropped).
        case startSound(at: Double)
        /// Stop the story's sound at once.
        case stopSound
        /// The decoder shows the frame due at this time.
        case show(at: Double)
        /// The story waited `waitLimit` seconds for bytes that did not come: it fails, naming the origin's fault.
        case giveUp(waited: Double)
        /// The story stops with this error.
        case fail(String)
        /// The story starts over on the origin's new version: this attempt's download, decoder and sound end, and
        /// a new attempt opens the file again (the machine is loading again, waiting anew).
        case restart
        /// Look again at this clock time at the latest (nil: only when woken by bytes, a frame, a key or a failure).
        case wake(at: Double?)
    }

    /// What the machine was told last, of each kind.
    struct Facts: Equatable {
        var bytes = Bytes()
        var frames = Frames()
        var sound = Sound()
        var offline = false
        var downloadFailure: String?
        var decoderFailure: String?
    }

    let storyID: String
    let startThreshold: Double
    /// Seconds of media the download reads ahead of the playhead.
    let readAhead: Double
    /// The clock's time when the story was asked for (for the startup time).
    let start: Double
    /// Longest wait for bytes, in the clock's seconds, before the story fails; nil: no limit.
    let waitLimit: Double?
    /// Since when the story has waited for its first bytes (this attempt's start: a story that starts over on a
    /// new version waits anew).
    private(set) var waitingSince: Double
    /// How often one story starts over because the origin's version changed under it.
    static let maxRestarts = 2
    /// How often it started over so far.
    private(set) var restarts = 0
    /// How often the audio clock is read while the sound is about to start.
    static let soundStartInterval = 0.005
    /// Longest a story ready to start waits for its sound (the device still opening, its first sample not yet
    /// heard): long enough for a sound server to answer, short enough that one that does not is not waited on.
    static let soundOpenWait = 1.0
    /// Media played without a stall that makes the waits before it forgotten (a link that recovered).
    static let recoveryPlay = 2.0
    var status = PlaybackStatus()
    var paused = false
    var soundPlaying = false
    /// The file stops inside its payload: the decoder failing at the missing bytes is its end, not an error.
    var endsEarly = false
    /// What it was told.
    var facts = Facts()
    /// It was told what the player's threads see at least once (the first look tells everything, even what
    /// equals the defaults of `facts`).
    private(set) var told = false
    /// The clock's time at the last tick.
    var last: Double?
    var stallStart: Double?
    /// The sound ended before the picture: the system clock carries on (until a seek brings sound back).
    var soundOver = false
    /// Since when the story, ready to start, has waited for its sound (a device still opening, or sound asked to
    /// start and not heard yet; nil: it does not wait).
    var heldForSoundSince: Double?
    /// The wait for the sound ran out: the picture goes on, and the sound joins it once it can.
    var stoppedHoldingForSound = false
    /// Seconds of the current stall spent waiting for bytes (paused time not counted).
    var starved: Double = 0
    /// Seconds waited before the current stall (loading, earlier stalls) since the story last played smoothly:
    /// an origin that sends a little now and then (each retry's first bytes, then nothing) ends the story after
    /// `waitLimit` seconds of waiting in all, not of each wait.
    var waitedBefore: Double = 0
    /// Seconds of media played since the last wait ended.
    var playedSinceWait: Double = 0

    /// A story loading, asked for at `start`; it gives up after `waitLimit` seconds without the bytes it needs
    /// (counted from `waitingSince` while it loads, from the stall's start while stalled).
    init(
        storyID: String, startThreshold: Double, readAhead: Double = 2, start: Double, waitLimit: Double? = nil,
        waitingSince: Double? = nil
    ) {
        self.storyID = storyID
        self.startThreshold = startThreshold
        self.readAhead = readAhead
        self.start = start
        self.waitLimit = waitLimit
        self.waitingSince = waitingSince ?? start
    }

    /// Handles one event and returns what to do, in order.
    mutating func handle(_ event: Event) -> [Action] {
        guard status.state != .finished, status.state != .failed || isFailure(event) else { return [] }
        var actions: [Action] = []
        switch event {
        case .tick(let now):
            tick(now, &actions)
            return actions
        case .bytes(let bytes):
            told = true
            facts.bytes = bytes
            status.contentLength = bytes.contentLength ?? status.contentLength
            return []
        case .frames(let frames):
            told = true
            facts.frames = frames
            status.frames = frames.counts
            status.frameInterval = frames.interval
            return []
        case .sound(let sound):
            told = true
            facts.sound = sound
            status.sound = sound.story
            return []
        case .offline:
            facts.offline = true
            status.cache = .offline
            return []
        case .downloadFailed(let failure):
            facts.downloadFailure = failure
            return []
        case .decoderFailed(let failure):
            facts.decoderFailure = failure
            return []
        case .versionChanged(let now):
            startOver(at: now, &actions)
            return actions
        case .paused(let paused):
            self.paused = paused
            if status.state == .playing, paused { status.state = .paused }
            if status.state == .paused, !paused { status.state = .playing }
        case .seek(let seconds):
            // The sound starts again at the new playhead once a look there finds it can play on.
            seek(by: seconds, &actions)
            return actions
        case .opened(let duration, let length, let cache, let note):
            status.duration = duration
            status.contentLength = length
            status.cache = facts.offline ? .offline : cache
            if let note {
                status.note = note
                endsEarly = true
                actions.append(.emit(.note(id: storyID, message: note)))
            }
        case .failed(let message):
            if soundPlaying { actions.append(.stopSound) }
            soundPlaying = false
            status.state = .failed
            status.error = message
            actions.append(.emit(.failed(id: storyID, message: message)))
            return actions
        }
        soundFollowsPlayback(&actions)
        return actions
    }

    private func isFailure(_ event: Event) -> Bool {
        if case .failed = event { return status.error == nil }
        return false
    }

    /// The origin holds a new version: the story starts over on it (never a picture mixing the two), at most
    /// `maxRestarts` times, waiting anew from `now`; after that it fails.
    private mutating func startOver(at now: Double, _ actions: inout [Action]) {
        guard restarts < Self.maxRestarts else { return end(with: .fail("the video changed at the origin"), &actions) }
        if soundPlaying { actions.append(.stopSound) }
        var again = PlaybackMachine(
            storyID: storyID, startThreshold: startThreshold, readAhead: readAhead, start: start, waitLimit: waitLimit,
            waitingSince: now)
        again.restarts = restarts + 1
        again.paused = paused
        self = again
        actions.append(.restart)
    }

    private mutating func seek(by seconds: Double, _ actions: inout [Action]) {
        guard seconds != 0, status.state != .loading, let duration = status.duration else { return }
        status.position = Swift.max(0, Swift.min(duration - 0.001, status.position + seconds))
        actions.append(.seek(to: status.position))
        // Past what the download reached: it restarts where the new playhead's data starts (an HLS story's
        // segment, from its key frame) instead of reading the gap.
        if told, status.position >= facts.bytes.knownThrough || status.position > facts.bytes.downloadedThrough {
            actions.append(.restartDownload(at: status.position))
        }
        soundOver = false
        if soundPlaying {
            actions.append(.stopSound)
            soundPlaying = false
        }
        // What was buffered was measured at the old playhead: nothing is known at the new one until told.
        status.bufferedSeconds = 0
        facts.bytes.buffered = 0
    }

    /// The story fails: its sound stops first, then `action` says why.
    mutating func end(with action: Action, _ actions: inout [Action]) {
        status.state = .failed
        if soundPlaying { actions.append(.stopSound) }
        soundPlaying = false
        actions.append(action)
    }

    /// Sound plays exactly while the story plays and can be heard: a pause, a stall, muting or the end stop it at
    /// once, and it starts again at the playhead.
    mutating func soundFollowsPlayback(_ actions: inout [Action]) {
        let audible = facts.sound.reading != nil
        // A story ready to start waits for its sound to be heard (`waitsForSound`): it is asked to start then.
        let starting = status.state == .loading && heldForSoundSince != nil
        let wanted = audible && (status.state == .playing || starting) && !paused && !soundOver
        if wanted, !soundPlaying {
            actions.append(.startSound(at: status.position))
            soundPlaying = true
        } else if !wanted, soundPlaying {
            actions.append(.stopSound)
            soundPlaying = false
        }
    }
}
