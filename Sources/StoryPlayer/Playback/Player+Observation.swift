import Foundation
import MediaCache

extension Player {
    /// What the player's threads see now, for the machine.
    func observe(
        _ run: MediaRun, _ machine: PlaybackMachine, generation: Int64?, decoder: MediaDecoder?
    ) -> PlaybackMachine.Observation {
        let now = clock.now
        let (muted, held, downloadedEnd, failure) = shared.withLockedValue { s in
            (s.muted, s.held != nil, s.downloadedEnd, s.failure)
        }
        let story = storySound(decoder: decoder, queue: decoder?.sound, muted: muted)
        let parts = run.parts
        return PlaybackMachine.Observation(
            now: now, buffered: bufferedSeconds(at: machine.status.position, in: parts, downloadedEnd: downloadedEnd),
            firstFrameReady: decoder.map { !$0.decodesPictures || $0.frame != nil || held } ?? true,
            sound: story == .playing ? (machine.soundPlaying ? sound?.reading(id: soundID) : .waiting) : nil,
            storySound: story, upcomingFrame: decoder?.upcoming, frames: decoder?.counts ?? FrameCounts(),
            frameInterval: decoder?.cadence?.interval, downloadedThrough: parts.seconds(at: downloadedEnd),
            knownThrough: parts.knownEnd,
            // Grows as an HLS story learns its segments' lengths.
            contentLength: run.estimatedLength, offline: loader.isOffline(key), downloadFailure: failure,
            decoderFailure: decoder?.failure.map { "\($0)" }, versionChanged: versionChanged(since: generation))
    }

    /// Whether the story's sound can be heard now, for the machine and the header.
    func storySound(decoder: MediaDecoder?, queue: SoundQueue?, muted: Bool) -> StorySound {
        guard let sound, let decoder else { return .off }
        if case .unavailable = sound.availability { return .off }
        guard decoder.isOpen else { return .unknown }
        guard queue != nil else { return .silent }
        if muted { return .muted }
        if case .opening = sound.availability { return .unknown }
        return .playing
    }
}
