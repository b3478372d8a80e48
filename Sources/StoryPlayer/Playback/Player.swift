import Foundation
import MediaCache
import MediaFormats
import NIOConcurrencyHelpers

/// A story's player. It consumes bytes the way AVPlayer's resource loader asks for them: content information, then
/// the file's header (MP4, fragmented MP4, WebM; a photo whole), then the payload at its real rate (payload bytes /
/// duration), reading ahead and stalling when the data does not keep up. It decodes the picture and the sound from
/// those bytes and plays the sound on the session's `SoundOutput`; while sound is heard the audio clock drives the
/// playhead, otherwise the injected clock does. The decisions are `PlaybackMachine`'s; this class runs the threads.
public final class Player: Sendable {
    let loader: MediaLoader
    let url: URL
    /// The cache key the video lives under.
    public let key: CacheKey
    let clock: PlaybackClock
    let configuration: PlayerConfiguration
    let fallbackDuration: Double?
    /// The key each part of an HLS story (variant playlists, segments) is cached under.
    let partKey: @Sendable (URL) -> CacheKey
    /// Where this player adds what it measures of the link, and where an HLS story looks to pick its variant.
    let throughput: ThroughputEstimate?
    let onEvent: @Sendable (PlayerEvent) -> Void
    let storyID: String
    /// Where sound goes; nil: the story plays silent.
    let sound: SoundOutput?
    /// This player's name on the sound output.
    let soundID = Player.nextSoundID.withLockedValue { id in
        id += 1
        return id
    }
    private static let nextSoundID = NIOLockedValueBox(0)
    struct Shared {
        var muted = false
        var status = PlaybackStatus()
        var paused = false
        var downloadedEnd: Int64 = 0
        var failure: String?
        var decoder: MediaDecoder?
        var box: (width: Int, height: Int)
        var seekBy: Double = 0
        var run: MediaRun?
        /// The first frame, decoded ahead of this story's turn: shown until the decoder has one.
        var held: VideoFrame?
        /// The file stops inside its payload: the decoder failing at the missing bytes is its end, not an error.
        var endsEarly = false
    }
    let shared: NIOLockedValueBox<Shared>

    /// A player for `url` (an MP4, or an HLS playlist whose variant playlists and segments are cached under
    /// `partKey`); `fallbackDuration` is used for media that is neither.
    public init(
        loader: MediaLoader, url: URL, cacheKey: CacheKey? = nil, storyID: String, clock: PlaybackClock,
        configuration: PlayerConfiguration = PlayerConfiguration(), fallbackDuration: Double? = nil,
        partKey: @escaping @Sendable (URL) -> CacheKey = { CacheKey(url: $0) }, throughput: ThroughputEstimate? = nil,
        sound: SoundOutput? = nil, muted: Bool = false, onEvent: @escaping @Sendable (PlayerEvent) -> Void = { _ in }
    ) {
        self.sound = sound
        self.partKey = partKey
        self.throughput = throughput
        self.loader = loader
        self.url = url
        key = cacheKey ?? CacheKey(url: url)
        self.storyID = storyID
        self.clock = clock
        self.configuration = configuration
        self.fallbackDuration = fallbackDuration
        self.onEvent = onEvent
        var initial = Shared(box: (configuration.pictureWidth, configuration.pictureHeight))
        initial.muted = muted
        shared = NIOLockedValueBox(initial)
    }

    /// Mutes or unmutes the story's sound (the playhead then follows the system clock, or the audio clock again).
    public func setMuted(_ muted: Bool) { shared.withLockedValue { $0.muted = muted } }

    /// The current status.
    public var status: PlaybackStatus { shared.withLockedValue { $0.status } }

    /// The resources the story plays, once known (an HLS story's segments as one run).
    /// (Parts whose lengths are not learned yet count at the average size of those that are.)
    var parts: MediaParts? { shared.withLockedValue { $0.run }?.estimated }

    /// Pauses or resumes (a paused player neither moves nor counts stall time).
    public func setPaused(_ paused: Bool) { shared.withLockedValue { $0.paused = paused } }

    private func update(_ change: (inout PlaybackStatus) -> Void) { shared.withLockedValue { change(&$0.status) } }

    /// The picture at the playhead: nil before the first frame and when video is not decoded.
    public var frame: VideoFrame? {
        let (decoder, held) = shared.withLockedValue { ($0.decoder, $0.held) }
        return decoder?.frame ?? held
    }

    /// Scales later frames to fit `box` pixels (a display's picture area, two pixels per cell row).
    public func setPictureBox(_ box: (width: Int, height: Int)) {
        let decoder = shared.withLockedValue { s -> MediaDecoder? in
            guard s.box != box else { return nil }
            s.box = box
            return s.decoder
        }
        decoder?.resize(to: box)
    }

    /// Moves the playhead by `seconds` (negative: back) within the story.
    public func seek(by seconds: Double) { shared.withLockedValue { $0.seekBy += seconds } }

    /// Plays to the end (or until the task is cancelled) and returns the final status. When the origin turns out
    /// to hold a new version while a cached copy plays (the check runs beside playback), the story starts over on
    /// the new version: never a picture mixing the two.
    @discardableResult
    public func run() async -> PlaybackStatus {
        // One viewing: bytes downloaded for it (or preloaded for it) are not "saved" when read again during it.
        await loader.viewing(key: key) { await runViewing() }
    }

    private func runViewing() async -> PlaybackStatus {
        let start = clock.now
        var restarts = 0
        while true {
            var generation: Int64?
            do {
                try await attempt(start: start, generation: &generation)
            } catch is CancellationError {
            } catch {
                if versionChanged(since: generation), restarts < Self.maxRestarts {
                    restarts += 1
                    shared.withLockedValue { s in
                        s.status = PlaybackStatus()
                        s.downloadedEnd = 0
                        s.failure = nil
                        s.seekBy = 0
                        s.endsEarly = false
                    }
                    continue
                }
                let message = "\(error)"
                update {
                    $0.state = .failed
                    $0.error = message
                }
                onEvent(.failed(id: storyID, message: message))
            }
            return status
        }
    }

    /// How often one run starts over because the origin's version changed under it.
    static let maxRestarts = 2

    /// True when the cached copy this attempt started with was replaced by another version.
    private func versionChanged(since generation: Int64?) -> Bool {
        guard let generation, let current = loader.store.info(for: key)?.generation else { return false }
        return current != generation
    }

    private func attempt(start: Double, generation: inout Int64?) async throws {
        let initiallyCached = loader.store.availableRanges(for: key)
        let (loader, url, key) = (self.loader, self.url, self.key)
        // This attempt waits from now (a story started over on a new version waits anew).
        let waitingSince = clock.now
        let info = try await withinWaitLimit(since: waitingSince) {
            try await loader.contentInformation(for: url, key: key)
        }
        generation = loader.store.info(for: key)?.generation
        guard let length = info.contentLength, length > 0 else {
            throw PlayerError("the origin did not say how long the video is")
        }
        if HLSPlaylistParser.isPlaylist(url: url, contentType: info.contentType) {
            // An HLS story: its variant's segments, read one after another as one run of bytes, all of them
            // part of this viewing (and those of a variant it switches to, as it learns of them).
            let (partKey, bitsPerSecond) = (self.partKey, throughput?.bitsPerSecond)
            let plan = try await withinWaitLimit(since: waitingSince) {
                try await HLSStory.plan(
                    loader: loader, url: url, key: key, length: length, partKey: partKey, throughput: bitsPerSecond)
            }
            let started = generation
            try await loader.viewing(keys: plan.keys) { scope in
                let story = HLSStory.start(plan, loader: loader)
                let switcher = plan.master.flatMap { master in
                    plan.variant.map {
                        HLSVariantSwitch(master: master, current: $0, loader: loader, partKey: partKey, scope: scope)
                    }
                }
                try await playRun(
                    story.run, duration: story.duration, cache: story.cache, start: start, waitingSince: waitingSince,
                    generation: started, switcher: switcher)
            }
            return
        }
        let header = try await withinWaitLimit(since: waitingSince) { try await self.readHeader(length: length) }
        if let note = header.note {
            shared.withLockedValue {
                $0.status.note = note
                $0.endsEarly = true
            }
            onEvent(.note(id: storyID, message: note))
        }
        try await playRun(
            MediaRun(
                MediaParts(url: url, key: key, length: length, payload: header.payload, duration: header.duration)),
            duration: header.duration, cache: CacheOutcome(cached: initiallyCached, length: length), start: start,
            waitingSince: waitingSince, generation: generation, switcher: nil)
    }

    /// Plays the run `run` (its media lasting `duration` seconds), decoding it when asked to.
    private func playRun(
        _ run: MediaRun, duration: Double, cache: CacheOutcome, start: Double, waitingSince: Double,
        generation: Int64?, switcher: HLSVariantSwitch?
    ) async throws {
        var cache = cache
        if loader.isOffline(key) { cache = .offline }
        if url.isFileURL { cache = .local }
        shared.withLockedValue { $0.run = run }
        update {
            $0.contentLength = run.estimated.length
            $0.cache = cache
            $0.duration = duration
        }
        var decoder: MediaDecoder?
        // Sound is decoded whenever a device can play it (muted too: unmuting is then heard at once).
        let soundFormat = sound.flatMap { output -> SoundFormat? in
            if case .unavailable = output.availability { return nil }
            return .standard
        }
        if configuration.decodesVideo || soundFormat != nil {
            let box = shared.withLockedValue { $0.box }
            var onFrame: (@Sendable (Double) -> Void)?
            if configuration.reportsFrames {
                let id = storyID
                let report = onEvent
                onFrame = { (time: Double) -> Void in
                    report(PlayerEvent.frame(id: id, timeMs: Int((time * 1000).rounded())))
                }
            }
            let video = MediaDecoder(
                loader: loader, run: run, box: box, soundFormat: soundFormat, pictures: configuration.decodesVideo,
                onFrame: onFrame)
            shared.withLockedValue { $0.decoder = video }
            video.start()
            decoder = video
        }
        // The last frame stays readable after the decoder stops, for the still at the end.
        defer { decoder?.stop() }
        try await play(
            run, duration: duration, start: start, waitingSince: waitingSince, cache: cache, generation: generation,
            decoder: decoder, switcher: switcher)
    }

    private func play(
        _ run: MediaRun, duration: Double, start: Double, waitingSince: Double, cache: CacheOutcome,
        generation: Int64?, decoder: MediaDecoder?, switcher: HLSVariantSwitch?
    ) async throws {
        var download = startDownload(run, from: run.parts.played.lowerBound, switcher: switcher)
        defer {
            download.cancel()
            sound?.stop(id: soundID)
        }
        var tick = decoder == nil ? configuration.tick : Swift.min(configuration.tick, 0.02)
        var machine = PlaybackMachine(
            storyID: storyID, duration: duration, startThreshold: configuration.startThreshold, start: start,
            waitLimit: clockWaitLimit, waitingSince: waitingSince, status: status)
        while true {
            try Task.checkCancellation()
            let now = clock.now
            let (paused, failure, seekBy, muted, held, endsEarly) = shared.withLockedValue { s in
                defer { s.seekBy = 0 }
                return (s.paused, s.failure, s.seekBy, s.muted, s.held != nil, s.endsEarly)
            }
            if versionChanged(since: generation) { throw PlayerError("the video changed at the origin") }
            if let failure = decoder?.failure, !endsEarly {
                // Bytes that did not come are the origin's fault, not the video's.
                throw PlayerError(shared.withLockedValue { $0.failure } ?? "cannot decode the video: \(failure)")
            }
            machine.setPaused(paused)
            if seekBy != 0 { machine.seek(by: seekBy) }
            // The check against the origin runs beside playback: show when it could not reach the origin.
            machine.update { status in
                if loader.isOffline(key) { status.cache = .offline }
                // Grows as an HLS story learns its segments' lengths.
                status.contentLength = run.estimatedLength
            }
            let queue = decoder?.sound
            let story = storySound(decoder: decoder, queue: queue, muted: muted)
            let reading: SoundReading? = story == .playing
                ? (machine.soundPlaying ? sound?.reading(id: soundID) : .waiting) : nil
            let seen = PlaybackMachine.Observation(
                now: now, buffered: bufferedSeconds(at: machine.status.position, in: run.parts),
                firstFrameReady: decoder.map { !$0.decodesPictures || $0.frame != nil || held } ?? true, sound: reading)
            for action in machine.tick(seen) {
                switch action {
                case .emit(let event):
                    onEvent(event)
                case .seek(let position):
                    decoder?.seek(to: position)
                    // Past what the download reached: it restarts where the new playhead's data starts (an HLS
                    // story's segment, from its key frame; what is cached there comes from the disk) instead of
                    // reading the gap.
                    let parts = run.parts
                    if parts.knownEnd <= position
                        || parts.offset(at: position) > shared.withLockedValue({ $0.downloadedEnd })
                    {
                        download.cancel()
                        download = startDownload(run, at: position, switcher: switcher)
                    }
                case .startSound(let position):
                    if let queue { sound?.play(queue, from: position, id: soundID) }
                case .stopSound:
                    sound?.stop(id: soundID)
                case .giveUp:
                    let parts = run.parts
                    let byte = parts.offset(at: machine.status.position)
                    let reached = Swift.max(
                        byte + parts.contiguousCached(from: byte, in: loader.store),
                        shared.withLockedValue { $0.downloadedEnd })
                    throw PlayerError(waitSentence(at: reached, of: run.estimatedLength))
                }
            }
            let position = machine.status.position
            let after = bufferedSeconds(at: position, in: run.parts)
            if let failure, after <= 0, machine.status.state != .finished {
                throw PlayerError(failure)
            }
            machine.update { status in
                status.bufferedSeconds = after
                status.sound = story
                if let decoder {
                    status.frames = decoder.counts
                    status.frameInterval = decoder.cadence?.interval
                }
            }
            decoder?.show(at: position)
            // Twice a shown frame: each frame is due at a tick, at an even beat.
            if let interval = machine.status.frameInterval, interval > 0 { tick = Swift.min(tick, interval / 2) }
            let final = machine.status
            update { $0 = final }
            if final.state == .finished { return }
            // The next frame is due before the next tick: wake when it is, so it is shown on time.
            var wait = tick
            if final.state == .playing, let upcoming = decoder?.upcoming, upcoming > position {
                wait = Swift.max(0.001, Swift.min(wait, upcoming - position))
            }
            try await clock.sleep(until: now + wait)
        }
    }

    /// Whether the story's sound can be heard now, for the machine and the header.
    private func storySound(decoder: MediaDecoder?, queue: SoundQueue?, muted: Bool) -> StorySound {
        guard let sound, let decoder else { return .off }
        if case .unavailable = sound.availability { return .off }
        guard decoder.isOpen else { return .unknown }
        guard queue != nil else { return .silent }
        if muted { return .muted }
        if case .opening = sound.availability { return .unknown }
        return .playing
    }

    /// Seconds of media available from the playhead at `position` on (contiguous), from disk or from a
    /// stream-through download.
    private func bufferedSeconds(at position: Double, in parts: MediaParts) -> Double {
        let byte = parts.offset(at: position)
        let onDisk = parts.contiguousCached(from: byte, in: loader.store)
        let streamed = shared.withLockedValue { $0.downloadedEnd } - byte
        let bytes = Swift.min(Swift.max(onDisk, streamed, 0), parts.played.upperBound - byte)
        return Swift.max(0, parts.seconds(at: byte + bytes) - parts.seconds(at: byte))
    }
}

/// A playback failure with its cause.
struct PlayerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
