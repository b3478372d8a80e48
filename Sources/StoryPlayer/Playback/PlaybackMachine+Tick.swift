import Foundation

/// The machine's look at what it was told, at each tick of the clock, and what it answers between ticks.
extension PlaybackMachine {
    /// The clock reads `now`: moves the playhead by the time passed (the audio clock's while the sound is heard),
    /// moves the state, and says what to do and when to look again.
    mutating func tick(_ now: Double, _ actions: inout [Action]) {
        let elapsed = Swift.max(0, now - (last ?? now))
        last = now
        if let failure = failure() { return end(with: .fail(failure), &actions) }
        guard let duration = status.duration else {
            // Before the file opens: the wait for its length and its header is bounded too.
            if let waitLimit, now - waitingSince >= waitLimit {
                return end(with: .giveUp(waited: now - waitingSince), &actions)
            }
            actions.append(.wake(at: waitLimit.map { waitingSince + $0 }))
            return
        }
        let buffered = facts.bytes.buffered
        let bufferedToEnd = status.position + buffered >= duration - 1e-6
        var advance = 0.0
        switch status.state {
        case .loading:
            if buffered >= startThreshold || bufferedToEnd, facts.frames.firstFrameReady {
                // The story starts with its sound: at its first frame, until its first sample is heard.
                if !paused, waitsForSound(now) { break }
                heldForSoundSince = nil
                status.state = paused ? .paused : .playing
                status.startupMs = Int(((now - start) * 1000).rounded())
                waitedBefore = Swift.max(0, now - waitingSince)
                playedSinceWait = 0
                actions.append(
                    .emit(.firstFrame(id: storyID, startupMs: status.startupMs ?? 0, cache: status.cache ?? .miss, duration: duration)))
            } else if heldForSoundSince != nil {
                // No longer ready to start (the bytes or the frame went): nor is the sound asked for.
                heldForSoundSince = nil
            } else if buffered < startThreshold, !bufferedToEnd, let waitLimit, now - waitingSince >= waitLimit {
                // Still without the bytes for a first frame (a decoder that is slow with them is no reason).
                return end(with: .giveUp(waited: now - waitingSince), &actions)
            }
        case .playing, .paused:
            if paused {
                status.state = .paused
                break
            }
            status.state = .playing
            var clock = elapsed
            if let reading = facts.sound.reading, !soundOver {
                switch soundPlaying ? reading : .waiting {
                case .playing(let heard): clock = Swift.max(0, heard - status.position)
                // Sound that is about to start (or still behind what the device played before) holds the picture.
                case .waiting: clock = 0
                case .ended: soundOver = true
                }
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
                stallStart = now
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
                    .emit(.stallEnd(id: storyID, durationMs: Int(((now - (stallStart ?? now)) * 1000).rounded()))))
            } else if let waitLimit, waitedBefore + starved >= waitLimit {
                return end(with: .giveUp(waited: waitedBefore + starved), &actions)
            }
        case .finished, .failed:
            break
        }
        status.bufferedSeconds = Swift.max(0, buffered - advance)
        // What was buffered is now behind the playhead by what it moved over.
        facts.bytes.buffered = status.bufferedSeconds
        if let failure = facts.downloadFailure, status.bufferedSeconds <= 0, status.state != .finished,
            status.state != .loading
        {
            return end(with: .fail(failure), &actions)
        }
        if status.state != .loading { actions.append(.show(at: status.position)) }
        soundFollowsPlayback(&actions)
        if status.state != .finished { actions.append(.wake(at: nextWake(now))) }
    }

    /// The status at clock time `now`: while the story plays, the playhead is where the clock has moved it since
    /// the last tick (within what is buffered and the story's end; not while the picture waits for its sound), so
    /// the player wakes for frames and events, not to move a progress bar.
    func status(at now: Double) -> PlaybackStatus {
        guard status.state == .playing, let duration = status.duration, let last,
            !(soundPlaying && !soundOver && facts.sound.reading == .waiting)
        else { return status }
        var moved = status
        let elapsed = Swift.max(0, Swift.min(now - last, status.bufferedSeconds, duration - status.position))
        moved.position += elapsed
        moved.bufferedSeconds -= elapsed
        return moved
    }

    /// How far (in media time) the download may have read at clock time `now`: `readAhead` seconds past the
    /// playhead, as AVPlayer reads; `moving` when that limit moves on with the clock (the story plays), so a
    /// download ahead of it waits until then, and otherwise until the playhead moves.
    func downloadLimit(at now: Double) -> (through: Double, moving: Bool) {
        let current = status(at: now)
        return (current.position + readAhead, current.state == .playing && !paused)
    }

    /// Whether a story ready to start (bytes and a first frame) waits for its sound: for a device still opening,
    /// or for sound asked to start at the playhead that is not heard yet, so its first frame is shown as its first
    /// sample is heard (a device's buffer filling, a server slow to answer at launch). At most `soundOpenWait` from
    /// when it began to wait; then the picture starts alone and the sound joins it.
    private mutating func waitsForSound(_ now: Double) -> Bool {
        let waits: Bool
        switch (facts.sound.story, facts.sound.reading) {
        case (.unknown, _): waits = true
        case (_, .waiting?): waits = true
        case (_, .playing(let heard)?): waits = !soundPlaying || heard < status.position
        default: waits = false
        }
        guard waits, !soundOver, !stoppedHoldingForSound else {
            heldForSoundSince = nil
            return false
        }
        let since = heldForSoundSince ?? now
        heldForSoundSince = since
        guard now - since < Self.soundOpenWait else {
            heldForSoundSince = nil
            stoppedHoldingForSound = true
            return false
        }
        return true
    }

    /// A failure that ends the story whatever is buffered.
    private func failure() -> String? {
        if let failure = facts.decoderFailure, !endsEarly {
            // Bytes that did not come are the origin's fault, not the video's.
            return facts.downloadFailure ?? "cannot decode the video: \(failure)"
        }
        if let failure = facts.downloadFailure, status.state == .loading, facts.bytes.buffered <= 0 { return failure }
        return nil
    }

    /// When the player must look again without being woken: the next frame, the buffer running dry, the end, the
    /// sound starting, the wait limit. Bytes, frames, keys and failures wake it sooner.
    private func nextWake(_ now: Double) -> Double? {
        switch status.state {
        case .loading:
            // With the bytes there, the decoder's first frame is what it waits for (and wakes it).
            let buffered = facts.bytes.buffered
            let haveBytes = buffered >= startThreshold || status.position + buffered >= (status.duration ?? 0) - 1e-6
            // Waiting for the sound to start: the audio clock is read again soon (the device's wait is bounded).
            if haveBytes, let since = heldForSoundSince {
                let end = since + Self.soundOpenWait
                return end > now ? Swift.min(now + Self.soundStartInterval, end) : now + Self.soundStartInterval
            }
            return haveBytes ? nil : waitLimit.map { waitingSince + $0 }
        case .stalled:
            return paused ? nil : waitLimit.map { now + Swift.max(0, $0 - waitedBefore - starved) }
        case .playing:
            guard let duration = status.duration else { return nil }
            var due = [now + (duration - status.position), now + status.bufferedSeconds]
            if let upcoming = facts.frames.upcoming, upcoming > status.position {
                due.append(now + (upcoming - status.position))
            }
            if soundPlaying, !soundOver, facts.sound.reading == .waiting { due.append(now + Self.soundStartInterval) }
            return due.min()
        case .paused, .finished, .failed:
            return nil
        }
    }
}
