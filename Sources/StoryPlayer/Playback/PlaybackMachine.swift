import Foundation
import MediaCache

/// One story's playback as a value: every decision of the player is an event into it that returns what to do.
/// The player's threads report what they see (`observed`: the clock, bytes, frames, sound, failures), the viewer's
/// keys come as `paused` and `seek`, and the machine moves the state (loading, playing, stalled, paused, finished,
/// failed) and the playhead, starts and stops the sound, restarts the download a seek needs, gives up on bytes
/// that do not come, and says when the player must look again (`wake`). While the story's sound plays, the playhead
/// is the audio clock (the frame being heard); muted, silent or without a device it follows the system clock.
/// It holds the story's one status. Tested as a plain value.
struct PlaybackMachine {
    /// What the player's threads see at one moment.
    struct Observation: Equatable {
        /// The player's clock.
        var now: Double
        /// Seconds of media available from the playhead on (contiguous).
        var buffered: Double
        /// The first frame is decoded (always true when video is not decoded).
        var firstFrameReady = true
        /// Where the story's sound is: nil when it cannot be heard (muted, no sound in the story, no device).
        var sound: SoundReading?
        /// Whether the story's sound is heard, for the status.
        var storySound = StorySound.off
        /// The time of the next decoded frame to show, if one is waiting.
        var upcomingFrame: Double?
        /// Frames shown and dropped, and their cadence.
        var frames = FrameCounts()
        /// Seconds between frames, once known.
        var frameInterval: Double?
        /// The media time the download has reached.
        var downloadedThrough = Double.infinity
        /// The media time the parts whose lengths are known reach (an HLS story learns more as it plays).
        var knownThrough = Double.infinity
        /// The bytes of the story, as far as known.
        var contentLength: Int64?
        /// The check against the origin could not reach it: the cached copy plays.
        var offline = false
        /// Why the download stopped, if it failed.
        var downloadFailure: String?
        /// Why the decoder stopped, if it failed.
        var decoderFailure: String?
        /// The cached copy this attempt started with was replaced by another version.
        var versionChanged = false
    }

    /// What happens to the story.
    enum Event: Equatable {
        /// Time passed; this is what the player's threads see now.
        case observed(Observation)
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
        /// Look again at this clock time at the latest (nil: only when woken by bytes, a frame, a key or a failure).
        case wake(at: Double?)
    }

    let storyID: String
    let startThreshold: Double
    /// The clock's time when the story was asked for (for the startup time).
    let start: Double
    /// Longest wait for bytes, in the clock's seconds, before the story fails; nil: no limit.
    let waitLimit: Double?
    /// Since when the story has waited for its first bytes (this attempt's start: a story that starts over on a
    /// new version waits anew).
    let waitingSince: Double
    /// How often the audio clock is read while the sound is about to start.
    static let soundStartInterval = 0.005
    /// Longest the first frame is held while it is not yet known whether the story will be heard (the sound device
    /// still opening): long enough for a sound server to answer, short enough that one that does not is not waited on.
    static let soundOpenWait = 1.0
    private(set) var status = PlaybackStatus()
    private(set) var paused = false
    private(set) var soundPlaying = false
    /// The file stops inside its payload: the decoder failing at the missing bytes is its end, not an error.
    private(set) var endsEarly = false
    private var last: Double?
    private var seen: Observation?
    private var stallStart: Double?
    /// The sound ended before the picture: the system clock carries on (until a seek brings sound back).
    private var soundOver = false
    /// Since when the picture has been held at its playhead for a device still opening (nil: it is not).
    private var heldForSoundSince: Double?
    /// The hold for an opening device ran out: the picture goes on, and the sound joins it once the device opens.
    private var stoppedHoldingForSound = false
    /// Seconds of the current stall spent waiting for bytes (paused time not counted).
    private var starved: Double = 0
    /// Seconds waited before the current stall (loading, earlier stalls) since the story last played smoothly:
    /// an origin that sends a little now and then (each retry's first bytes, then nothing) ends the story after
    /// `waitLimit` seconds of waiting in all, not of each wait.
    private var waitedBefore: Double = 0
    /// Seconds of media played since the last wait ended.
    private var playedSinceWait: Double = 0
    /// Media played without a stall that makes the waits before it forgotten (a link that recovered).
    static let recoveryPlay = 2.0

    /// A story loading, asked for at `start`; it gives up after `waitLimit` seconds without the bytes it needs
    /// (counted from `waitingSince` while it loads, from the stall's start while stalled).
    init(storyID: String, startThreshold: Double, start: Double, waitLimit: Double? = nil, waitingSince: Double? = nil) {
        self.storyID = storyID
        self.startThreshold = startThreshold
        self.start = start
        self.waitLimit = waitLimit
        self.waitingSince = waitingSince ?? start
    }

    /// Handles one event and returns what to do, in order.
    mutating func handle(_ event: Event) -> [Action] {
        guard status.state != .finished, status.state != .failed || isFailure(event) else { return [] }
        var actions: [Action] = []
        switch event {
        case .observed(let observation):
            observe(observation, &actions)
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
            status.cache = cache
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

    private mutating func seek(by seconds: Double, _ actions: inout [Action]) {
        guard seconds != 0, status.state != .loading, let duration = status.duration else { return }
        status.position = Swift.max(0, Swift.min(duration - 0.001, status.position + seconds))
        actions.append(.seek(to: status.position))
        // Past what the download reached: it restarts where the new playhead's data starts (an HLS story's
        // segment, from its key frame) instead of reading the gap.
        if let seen, status.position >= seen.knownThrough || status.position > seen.downloadedThrough {
            actions.append(.restartDownload(at: status.position))
        }
        soundOver = false
        if soundPlaying {
            actions.append(.stopSound)
            soundPlaying = false
        }
        // What was buffered was measured at the old playhead: nothing is known at the new one until looked at.
        status.bufferedSeconds = 0
    }

    private mutating func observe(_ seen: Observation, _ actions: inout [Action]) {
        self.seen = seen
        let elapsed = Swift.max(0, seen.now - (last ?? seen.now))
        last = seen.now
        status.contentLength = seen.contentLength ?? status.contentLength
        if seen.offline { status.cache = .offline }
        status.sound = seen.storySound
        status.frames = seen.frames
        status.frameInterval = seen.frameInterval
        if let failure = failure(seen) { return end(with: .fail(failure), &actions) }
        guard let duration = status.duration else {
            actions.append(.wake(at: nil))
            return
        }
        let buffered = seen.buffered
        let bufferedToEnd = status.position + buffered >= duration - 1e-6
        var advance = 0.0
        switch status.state {
        case .loading:
            if buffered >= startThreshold || bufferedToEnd, seen.firstFrameReady {
                status.state = paused ? .paused : .playing
                status.startupMs = Int(((seen.now - start) * 1000).rounded())
                // The wait for a device still opening counts from the first frame.
                if seen.storySound == .unknown, !stoppedHoldingForSound { heldForSoundSince = seen.now }
                waitedBefore = Swift.max(0, seen.now - waitingSince)
                playedSinceWait = 0
                actions.append(
                    .emit(.firstFrame(id: storyID, startupMs: status.startupMs ?? 0, cache: status.cache ?? .miss, duration: duration)))
            } else if buffered < startThreshold, !bufferedToEnd, let waitLimit, seen.now - waitingSince >= waitLimit {
                // Still without the bytes for a first frame (a decoder that is slow with them is no reason).
                return end(with: .giveUp(waited: seen.now - waitingSince), &actions)
            }
        case .playing, .paused:
            if paused {
                status.state = .paused
                break
            }
            status.state = .playing
            var clock = elapsed
            if let reading = seen.sound, !soundOver {
                heldForSoundSince = nil
                switch soundPlaying ? reading : .waiting {
                case .playing(let heard): clock = Swift.max(0, heard - status.position)
                // Sound that is about to start (or still behind what the device played before) holds the picture.
                case .waiting: clock = 0
                case .ended: soundOver = true
                }
            } else if holdsForSound(seen) {
                // The story may be heard once the device opens: its first sample is heard with its first frame,
                // not skipped for the time the device took.
                clock = 0
            }
            advance = Swift.min(clock, buffered)
            status.position = Swift.min(duration, status.position + advance)
            playedSinceWait += advance
            if playedSinceWait >= Self.recoveryPlay { waitedBefore = 0 }
            if status.position >= duration - 1e-6 {
                // At the end exactly (the sum of many steps may fall a rounding error short of it).
                status.position = duration
                status.state = .finished
            } else if advance < clock || buffered - advance <= 0 {
                status.state = .stalled
                status.stalls += 1
                stallStart = seen.now
                starved = 0
                actions.append(.emit(.stall(id: storyID, positionMs: Int(status.position * 1000))))
            }
        case .stalled:
            if !paused {
                status.stallSeconds += elapsed
                starved += elapsed
            }
            if buffered >= startThreshold || bufferedToEnd {
                status.state = .playing
                waitedBefore += starved
                playedSinceWait = 0
                actions.append(
                    .emit(.stallEnd(id: storyID, durationMs: Int(((seen.now - (stallStart ?? seen.now)) * 1000).rounded()))))
            } else if let waitLimit, waitedBefore + starved >= waitLimit {
                return end(with: .giveUp(waited: waitedBefore + starved), &actions)
            }
        case .finished, .failed:
            break
        }
        status.bufferedSeconds = Swift.max(0, buffered - advance)
        if let failure = seen.downloadFailure, status.bufferedSeconds <= 0, status.state != .finished, status.state != .loading {
            return end(with: .fail(failure), &actions)
        }
        if status.state != .loading { actions.append(.show(at: status.position)) }
        soundFollowsPlayback(&actions, seen: seen)
        if status.state != .finished { actions.append(.wake(at: nextWake(seen))) }
    }

    /// Whether the playhead waits at its place for a sound device that is still opening (at most `soundOpenWait`
    /// from when it began to wait, and never once the story's sound was heard or ended).
    private mutating func holdsForSound(_ seen: Observation) -> Bool {
        guard seen.storySound == .unknown, !soundOver, !stoppedHoldingForSound else {
            heldForSoundSince = nil
            return false
        }
        let since = heldForSoundSince ?? seen.now
        heldForSoundSince = since
        guard seen.now - since < Self.soundOpenWait else {
            heldForSoundSince = nil
            stoppedHoldingForSound = true
            return false
        }
        return true
    }

    /// The story fails: its sound stops first, then `action` says why.
    private mutating func end(with action: Action, _ actions: inout [Action]) {
        status.state = .failed
        if soundPlaying { actions.append(.stopSound) }
        soundPlaying = false
        actions.append(action)
    }

    /// A failure that ends the story whatever is buffered.
    private func failure(_ seen: Observation) -> String? {
        if seen.versionChanged { return "the video changed at the origin" }
        if let failure = seen.decoderFailure, !endsEarly {
            // Bytes that did not come are the origin's fault, not the video's.
            return seen.downloadFailure ?? "cannot decode the video: \(failure)"
        }
        if let failure = seen.downloadFailure, status.state == .loading, seen.buffered <= 0 { return failure }
        return nil
    }

    /// Sound plays exactly while the story plays and can be heard: a pause, a stall, muting or the end stop it at
    /// once, and it starts again at the playhead.
    private mutating func soundFollowsPlayback(_ actions: inout [Action], seen: Observation? = nil) {
        let audible = (seen ?? self.seen)?.sound != nil
        let wanted = audible && status.state == .playing && !paused && !soundOver
        if wanted, !soundPlaying {
            actions.append(.startSound(at: status.position))
            soundPlaying = true
        } else if !wanted, soundPlaying {
            actions.append(.stopSound)
            soundPlaying = false
        }
    }

    /// When the player must look again without being woken: the next frame, the buffer running dry, the end, the
    /// sound starting, the wait limit. Bytes, frames, keys and failures wake it sooner.
    private func nextWake(_ seen: Observation) -> Double? {
        let now = seen.now
        switch status.state {
        case .loading:
            // With the bytes there, the decoder's first frame is what it waits for (and wakes it).
            let haveBytes = seen.buffered >= startThreshold || status.position + seen.buffered >= (status.duration ?? 0) - 1e-6
            return haveBytes ? nil : waitLimit.map { waitingSince + $0 }
        case .stalled:
            return paused ? nil : waitLimit.map { now + Swift.max(0, $0 - waitedBefore - starved) }
        case .playing:
            guard let duration = status.duration else { return nil }
            var due = [now + (duration - status.position), now + status.bufferedSeconds]
            if let upcoming = seen.upcomingFrame, upcoming > status.position { due.append(now + (upcoming - status.position)) }
            if soundPlaying, !soundOver, seen.sound == .waiting { due.append(now + Self.soundStartInterval) }
            if let since = heldForSoundSince {
                due.append(Swift.min(now + Self.soundStartInterval, since + Self.soundOpenWait))
            }
            return due.min()
        case .paused, .finished, .failed:
            return nil
        }
    }
}
