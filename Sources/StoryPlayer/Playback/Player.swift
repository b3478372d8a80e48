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
    /// Why the story cannot play, known before it started.
    let unavailable: String?
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
        /// The machine as of its last look (nil before the story starts): what everybody reads of the story.
        var machine: PlaybackMachine?
        var paused = false
        var decoder: MediaDecoder?
        var box: (width: Int, height: Int)
        var seekBy: Double = 0
        var run: MediaRun?
        /// The first frame, decoded ahead of this story's turn: shown until the decoder has one.
        var held: VideoFrame?
    }
    let shared: NIOLockedValueBox<Shared>
    /// Wakes the playback loop: bytes it waits for, a frame, a key, a failure, the check against the origin.
    let wakeup: Wakeup
    /// Wakes the download when the playhead moved (it reads at most `readAhead` seconds ahead).
    let progress: Wakeup
    /// The story's words: its caption tracks, the one chosen, what was reported.
    let words: StoryCaptions
    /// The story's download: what it read through, why it failed.
    let download: StoryDownload
    /// How long the story waits for bytes, and what it says when it gives up.
    let waiting: StoryWaiting
    /// Counts changes of `status` (each time the machine's status is published: a state, bytes arrived, a frame),
    /// for the session's readers, which wait on it instead of looking at an interval.
    public let changes = ChangeSignal()
    /// Also told of each change, with those of the session's other players (the screen waits on it).
    let updates: ChangeSignal?

    /// A player for `url` (an MP4, or an HLS playlist whose variant playlists and segments are cached under
    /// `partKey`); `fallbackDuration` is used for media that is neither. A story whose `unavailable` says why it
    /// cannot play fails with that sentence without a request.
    public init(
        loader: MediaLoader, url: URL, cacheKey: CacheKey? = nil, storyID: String, clock: PlaybackClock,
        configuration: PlayerConfiguration = PlayerConfiguration(), fallbackDuration: Double? = nil,
        partKey: @escaping @Sendable (URL) -> CacheKey = { CacheKey(url: $0) }, throughput: ThroughputEstimate? = nil,
        sound: SoundOutput? = nil, muted: Bool = false, unavailable: String? = nil, captions: [CaptionSource] = [],
        captionFile: String? = nil, updates: ChangeSignal? = nil,
        onEvent: @escaping @Sendable (PlayerEvent) -> Void = { _ in }
    ) {
        self.updates = updates
        self.unavailable = unavailable
        self.sound = sound
        self.partKey = partKey
        self.throughput = throughput
        self.loader = loader
        self.url = url
        self.storyID = storyID
        self.clock = clock
        self.configuration = configuration
        self.fallbackDuration = fallbackDuration
        self.onEvent = onEvent
        var initial = Shared(box: (configuration.pictureWidth, configuration.pictureHeight))
        initial.muted = muted
        let shared = NIOLockedValueBox(initial)
        self.shared = shared
        let (wakeup, progress) = (Wakeup(), Wakeup())
        (self.wakeup, self.progress) = (wakeup, progress)
        let key = cacheKey ?? CacheKey(url: url)
        self.key = key
        words = StoryCaptions(
            sources: captions, file: captionFile ?? (url.isFileURL ? url.path : nil), loader: loader, partKey: partKey,
            languages: configuration.captionLanguages, reports: configuration.reportsCaptions, storyID: storyID,
            clock: clock, onEvent: onEvent, changed: wakeup)
        waiting = StoryWaiting(loader: loader, url: url, key: key, clock: clock, limit: configuration.waitLimit)
        download = StoryDownload(
            loader: loader, clock: clock, throughput: throughput, storyID: storyID, onEvent: onEvent,
            limit: { shared.withLockedValue { $0.machine }?.downloadLimit(at: clock.now) ?? (.infinity, false) },
            progress: progress, changed: wakeup)
    }

    /// Mutes or unmutes the story's sound (the playhead then follows the system clock, or the audio clock again).
    public func setMuted(_ muted: Bool) {
        shared.withLockedValue { $0.muted = muted }
        wakeup.signal()
    }

    /// The current status. While the story plays, the playhead is where the clock has moved it since the player
    /// last looked (within what is buffered): the player wakes for frames and events, not to move a progress bar.
    public var status: PlaybackStatus {
        shared.withLockedValue { $0.machine }?.status(at: clock.now) ?? PlaybackStatus()
    }

    /// The resources the story plays, once known (an HLS story's segments as one run).
    /// (Parts whose lengths are not learned yet count at the average size of those that are.)
    var parts: MediaParts? { shared.withLockedValue { $0.run }?.estimated }

    /// Pauses or resumes (a paused player neither moves nor counts stall time).
    public func setPaused(_ paused: Bool) {
        shared.withLockedValue { $0.paused = paused }
        wakeup.signal()
        progress.signal()
    }

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
    public func seek(by seconds: Double) {
        shared.withLockedValue { $0.seekBy += seconds }
        wakeup.signal()
    }

    /// Plays to the end (or until the task is cancelled) and returns the final status. When the origin turns out
    /// to hold a new version while a cached copy plays (the check runs beside playback), the story starts over on
    /// the new version: never a picture mixing the two.
    @discardableResult
    public func run() async -> PlaybackStatus {
        // One viewing: bytes downloaded for it (or preloaded for it) are not "saved" when read again during it.
        await loader.viewing(key: key) { await runViewing() }
    }

    private func runViewing() async -> PlaybackStatus {
        // Captions are read beside the media: a story never waits for its words.
        let captionsRead = words.read()
        defer { captionsRead?.cancel() }
        var machine = PlaybackMachine(
            storyID: storyID, startThreshold: configuration.startThreshold, readAhead: configuration.readAhead,
            start: clock.now, waitLimit: waiting.clockLimit)
        while true {
            var generation: Int64?
            publish(machine)
            do {
                if let unavailable { throw PlayerError(unavailable) }
                try await attempt(&machine, generation: &generation)
            } catch is CancellationError {
            } catch is StartOver {
                startingOver()
                continue
            } catch {
                var message = "\(error)"
                // Bytes of two versions met (the decoder fails on them, or a check found the new one): the
                // machine says whether the story starts over.
                if versionChanged(since: generation) {
                    let actions = machine.handle(.versionChanged(now: clock.now))
                    if actions.contains(.restart) {
                        startingOver()
                        continue
                    }
                    for case .fail(let reason) in actions { message = reason }
                }
                for action in machine.handle(.failed(message)) {
                    if case .emit(let event) = action { onEvent(event) }
                }
                publish(machine)
            }
            return status
        }
    }

    /// The machine said to start over on the origin's new version (`PlaybackMachine.Action.restart`).
    struct StartOver: Error {}

    /// Forgets what the last attempt's download and keys left.
    private func startingOver() {
        download.reset()
        shared.withLockedValue { $0.seekBy = 0 }
    }

    /// Makes `machine` the one everybody reads.
    func publish(_ machine: PlaybackMachine) {
        shared.withLockedValue { $0.machine = machine }
        progress.signal()
        changes.signal()
        updates?.signal()
    }

    /// True when the cached copy this attempt started with was replaced by another version.
    func versionChanged(since generation: Int64?) -> Bool {
        guard let generation, let current = loader.cached(key)?.generation else { return false }
        return current != generation
    }

    private func attempt(_ machine: inout PlaybackMachine, generation: inout Int64?) async throws {
        let initiallyCached = loader.cachedRanges(key)
        let (loader, url, key) = (self.loader, self.url, self.key)
        let info = try await waiting.untilOpened(&machine) {
            try await loader.contentInformation(for: url, key: key)
        }
        generation = loader.cached(key)?.generation
        guard let length = info.contentLength, length > 0 else {
            throw PlayerError("the origin did not say how long the video is")
        }
        if HLSPlaylistParser.isPlaylist(url: url, contentType: info.contentType) {
            // An HLS story: its variant's segments, read one after another as one run of bytes, all of them
            // part of this viewing (and those of a variant it switches to, as it learns of them).
            // The variant playlists read to plan it are part of the same viewing: read again when the story
            // switches variant, they were not saved by the cache.
            let (partKey, bitsPerSecond) = (self.partKey, throughput?.bitsPerSecond)
            let started = generation
            try await loader.viewing(keys: [key]) { scope in
                let plan = try await waiting.untilOpened(&machine) {
                    try await HLSStory.plan(
                        loader: loader, url: url, key: key, length: length, partKey: partKey, throughput: bitsPerSecond,
                        scope: scope)
                }
                scope.include(plan.keys)
                let subtitles = plan.master.map { words.readHLS($0) }
                defer { subtitles??.cancel() }
                let story = HLSStory.start(plan, loader: loader)
                let switcher = plan.master.flatMap { master in
                    plan.variant.map {
                        HLSVariantSwitch(master: master, current: $0, loader: loader, partKey: partKey, scope: scope)
                    }
                }
                let cache = await HLSStory.outcome(story.cache, of: plan, loader: loader, partKey: partKey, scope: scope)
                try await playRun(
                    story.run, machine: &machine, duration: story.duration, cache: cache, note: nil, firstPicture: nil,
                    generation: started, switcher: switcher)
            }
            return
        }
        let fallbackDuration = fallbackDuration
        let header = try await waiting.untilOpened(&machine) {
            try await StoryHeader.read(
                loader: loader, url: url, key: key, length: length, fallbackDuration: fallbackDuration)
        }
        try await playRun(
            MediaRun(
                MediaParts(url: url, key: key, length: length, payload: header.payload, duration: header.duration)),
            machine: &machine, duration: header.duration, cache: CacheOutcome(cached: initiallyCached, length: length),
            note: header.note, firstPicture: header.firstPicture, generation: generation, switcher: nil)
    }

    /// Plays the run `run` (its media lasting `duration` seconds), decoding it when asked to (its first picture
    /// from `firstPicture` too, beside the decoder).
    private func playRun(
        _ run: MediaRun, machine: inout PlaybackMachine, duration: Double, cache: CacheOutcome, note: String?,
        firstPicture: FirstPictureSource?, generation: Int64?, switcher: HLSVariantSwitch?
    ) async throws {
        var cache = cache
        if loader.isOffline(key) { cache = .offline }
        if url.isFileURL { cache = .local }
        shared.withLockedValue { $0.run = run }
        let wakeup = self.wakeup
        run.whenDecoderWaits { [progress] in progress.signal() }
        for action in machine.handle(.opened(duration: duration, contentLength: run.estimated.length, cache: cache, note: note)) {
            if case .emit(let event) = action { onEvent(event) }
        }
        publish(machine)
        var decoder: MediaDecoder?
        var early: Task<Void, Never>?
        defer { early?.cancel() }
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
                onFrame: onFrame, onChange: { wakeup.signal() })
            let held = shared.withLockedValue { s in
                s.decoder = video
                return s.held != nil
            }
            decoder = video
            let shown = firstPicture.flatMap { picture in
                configuration.decodesVideo && !held ? showFirstPictureEarly(picture, box: box, decoder: video) : nil
            }
            if let shown, case .photo? = firstPicture {
                // A photo's decoder has only the same picture to show and no sound: it starts once the picture is
                // held (or could not be made), instead of decoding it a second time on the other core.
                early = Task {
                    await withTaskCancellationHandler { await shown.value } onCancel: { shown.cancel() }
                    video.start()
                }
            } else {
                // A video's decoder starts at once: its sound, which the story's start waits for, comes from it.
                video.start()
                early = shown
            }
        }
        // The last frame stays readable after the decoder stops, for the still at the end.
        defer { decoder?.stop() }
        try await play(run, machine: &machine, generation: generation, decoder: decoder, switcher: switcher)
    }
}
