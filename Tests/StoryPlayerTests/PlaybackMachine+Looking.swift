@testable import StoryPlayer

extension PlaybackMachine {
    /// What the player's threads see at one moment, for tests that tell the machine everything at once.
    struct Observation: Equatable {
        var now: Double
        var buffered: Double
        var firstFrameReady = true
        var sound: SoundReading?
        var storySound = StorySound.off
        var upcomingFrame: Double?
        var frames = FrameCounts()
        var frameInterval: Double?
        var downloadedThrough = Double.infinity
        var knownThrough = Double.infinity
        var contentLength: Int64?
        var offline = false
        var downloadFailure: String?
        var decoderFailure: String?
    }

    /// Tells the machine `seen` as the player does, each kind of happening as its own event, then lets it look at
    /// the clock; returns every action, in order.
    mutating func look(_ seen: Observation) -> [Action] {
        var actions = handle(
            .bytes(
                Bytes(
                    buffered: seen.buffered, downloadedThrough: seen.downloadedThrough, knownThrough: seen.knownThrough,
                    contentLength: seen.contentLength)))
        actions += handle(
            .frames(
                Frames(
                    firstFrameReady: seen.firstFrameReady, upcoming: seen.upcomingFrame, counts: seen.frames,
                    interval: seen.frameInterval)))
        actions += handle(.sound(Sound(reading: seen.sound, story: seen.storySound)))
        if seen.offline { actions += handle(.offline) }
        if let failure = seen.downloadFailure { actions += handle(.downloadFailed(failure)) }
        if let failure = seen.decoderFailure { actions += handle(.decoderFailed(failure)) }
        return actions + handle(.tick(now: seen.now))
    }
}
