import Foundation

/// One story's playback as a value: the player's threads (download, decoder, sound output, clock) report what they
/// see each tick, and the machine moves the state (loading, playing, stalled, paused, finished) and the playhead
/// and returns what to do. While the story's sound plays, the playhead is the audio clock (the frame being heard);
/// muted, silent or without a device it follows the system clock. Tested as a plain value.
struct PlaybackMachine {
    /// What the player's threads see at one tick.
    struct Observation: Equatable {
        /// The player's clock.
        var now: Double
        /// Seconds of media available from the playhead on (contiguous).
        var buffered: Double
        /// The first frame is decoded (always true when video is not decoded).
        var firstFrameReady = true
        /// Where the story's sound is: nil when it cannot be heard (muted, no sound in the story, no device).
        var sound: SoundReading?
    }

    /// What the player does after a tick.
    enum Action: Equatable {
        /// Report an event.
        case emit(PlayerEvent)
        /// The playhead jumped (a seek): the decoder and the download follow it.
        case seek(to: Double)
        /// Play the story's sound from this time (what played before is dropped).
        case startSound(at: Double)
        /// Stop the story's sound at once.
        case stopSound
        /// The story waited `waitLimit` seconds for bytes that did not come: it fails, naming the origin's fault.
        case giveUp(waited: Double)
    }

    let storyID: String
    let duration: Double
    let startThreshold: Double
    /// The clock's time when the story was asked for (for the startup time).
    let start: Double
    /// Longest wait for bytes, in the clock's seconds, before the story fails; nil: no limit.
    let waitLimit: Double?
    /// Since when the story has waited for its first bytes (this attempt's start: a story that starts over on a
    /// new version waits anew).
    let waitingSince: Double
    private(set) var status: PlaybackStatus
    private(set) var paused = false
    private(set) var soundPlaying = false
    private var seekBy: Double = 0
    private var last: Double?
    private var stallStart: Double?
    /// The sound ended before the picture: the system clock carries on (until a seek brings sound back).
    private var soundOver = false
    /// Seconds of the current stall spent waiting for bytes (paused time not counted).
    private var starved: Double = 0

    /// A story of `duration` seconds, loading, asked for at `start`; it gives up after `waitLimit` seconds
    /// without the bytes it needs (counted from `start` while it loads, from the stall's start while stalled).
    init(
        storyID: String, duration: Double, startThreshold: Double, start: Double, waitLimit: Double? = nil,
        waitingSince: Double? = nil, status: PlaybackStatus = PlaybackStatus()
    ) {
        self.storyID = storyID
        self.duration = duration
        self.startThreshold = startThreshold
        self.start = start
        self.waitLimit = waitLimit
        self.waitingSince = waitingSince ?? start
        self.status = status
        self.status.duration = duration
    }

    /// Pauses or resumes (applied at the next tick).
    mutating func setPaused(_ paused: Bool) { self.paused = paused }

    /// Moves the playhead by `seconds` at the next tick (ignored while loading).
    mutating func seek(by seconds: Double) { seekBy += seconds }

    /// One step: the playhead moves by the clock that drives it, within what is buffered.
    mutating func tick(_ seen: Observation) -> [Action] {
        var actions: [Action] = []
        let elapsed = Swift.max(0, seen.now - (last ?? seen.now))
        last = seen.now
        var buffered = seen.buffered
        if seekBy != 0, status.state != .loading {
            status.position = Swift.max(0, Swift.min(duration - 0.001, status.position + seekBy))
            actions.append(.seek(to: status.position))
            soundOver = false
            if soundPlaying {
                // The sound starts again at the new playhead once it plays on (the state below decides).
                actions.append(.stopSound)
                soundPlaying = false
            }
            // What was buffered was measured at the old playhead: nothing is known at the new one until next tick.
            buffered = 0
        }
        seekBy = 0
        let bufferedToEnd = status.position + buffered >= duration - 1e-6
        switch status.state {
        case .loading:
            if buffered >= startThreshold || bufferedToEnd, seen.firstFrameReady {
                status.state = paused ? .paused : .playing
                status.startupMs = Int(((seen.now - start) * 1000).rounded())
                actions.append(
                    .emit(.firstFrame(id: storyID, startupMs: status.startupMs ?? 0, cache: status.cache ?? .miss, duration: duration)))
            } else if buffered < startThreshold, !bufferedToEnd, let waitLimit, seen.now - waitingSince >= waitLimit {
                // Still without the bytes for a first frame (a decoder that is slow with them is no reason).
                status.state = .failed
                actions.append(.giveUp(waited: seen.now - waitingSince))
            }
        case .playing, .paused:
            if paused {
                status.state = .paused
                break
            }
            status.state = .playing
            var clock = elapsed
            if let reading = seen.sound, !soundOver {
                switch soundPlaying ? reading : .waiting {
                case .playing(let heard): clock = Swift.max(0, heard - status.position)
                // Sound that is about to start (or still behind what the device played before) holds the picture.
                case .waiting: clock = 0
                case .ended: soundOver = true
                }
            }
            let advance = Swift.min(clock, buffered)
            status.position = Swift.min(duration, status.position + advance)
            if status.position >= duration - 1e-6 {
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
                actions.append(
                    .emit(.stallEnd(id: storyID, durationMs: Int(((seen.now - (stallStart ?? seen.now)) * 1000).rounded()))))
            } else if let waitLimit, starved >= waitLimit {
                status.state = .failed
                actions.append(.giveUp(waited: starved))
            }
        case .finished, .failed:
            break
        }
        // Sound plays exactly while the story plays and can be heard: a pause, a stall, muting or the end stop it
        // at once, and it starts again at the playhead.
        let wanted = seen.sound != nil && status.state == .playing && !paused && !soundOver
        if wanted, !soundPlaying {
            actions.append(.startSound(at: status.position))
            soundPlaying = true
        } else if !wanted, soundPlaying {
            actions.append(.stopSound)
            soundPlaying = false
        }
        return actions
    }

    /// Sets what the player learns beside the clock (cache outcome, length, frames, buffered after the move).
    mutating func update(_ change: (inout PlaybackStatus) -> Void) { change(&status) }
}
