import Foundation
import MediaCache

extension Player {
    /// Tells the machine what happened since it last looked, each kind of happening as its own event (the bytes,
    /// the frames, the sound clock, a failure, the origin's new version), and then lets it look at the clock.
    /// A happening it already knows of is not told again (all of them at an attempt's first look).
    func tell(
        _ machine: inout PlaybackMachine, run: MediaRun, generation: Int64?, decoder: MediaDecoder?
    ) -> [PlaybackMachine.Action] {
        let now = clock.now
        if versionChanged(since: generation) { return machine.handle(.versionChanged(now: now)) }
        let (muted, held) = shared.withLockedValue { s in (s.muted, s.held != nil) }
        let (downloadedEnd, failure) = download.reached
        let first = !machine.told
        var actions: [PlaybackMachine.Action] = []
        func told(_ event: PlaybackMachine.Event) { actions += machine.handle(event) }
        let parts = run.parts
        let bytes = PlaybackMachine.Bytes(
            buffered: bufferedSeconds(at: machine.status.position, in: parts, downloadedEnd: downloadedEnd),
            downloadedThrough: parts.seconds(at: downloadedEnd), knownThrough: parts.knownEnd,
            // Grows as an HLS story learns its segments' lengths.
            contentLength: run.estimatedLength)
        if first || bytes != machine.facts.bytes { told(.bytes(bytes)) }
        let frames = PlaybackMachine.Frames(
            firstFrameReady: decoder.map { !$0.decodesPictures || $0.frame != nil || held } ?? true,
            upcoming: decoder?.upcoming, counts: decoder?.counts ?? FrameCounts(), interval: decoder?.cadence?.interval)
        if first || frames != machine.facts.frames { told(.frames(frames)) }
        let story = storySound(decoder: decoder, queue: decoder?.sound, muted: muted)
        let sound = PlaybackMachine.Sound(
            reading: story == .playing ? (machine.soundPlaying ? self.sound?.reading(id: soundID) : .waiting) : nil,
            story: story)
        if first || sound != machine.facts.sound { told(.sound(sound)) }
        if !machine.facts.offline, loader.isOffline(key) { told(.offline) }
        if let failure, machine.facts.downloadFailure != failure { told(.downloadFailed(failure)) }
        if let failure = decoder?.failure.map({ "\($0)" }), machine.facts.decoderFailure != failure {
            told(.decoderFailed(failure))
        }
        told(.tick(now: now))
        return actions
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
