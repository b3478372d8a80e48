import Foundation
import MediaCache
import MediaFormats
import NIOConcurrencyHelpers

/// A story's words: the caption tracks read for it (files beside it, the file's subtitle streams, an HLS story's
/// renditions), the one chosen among them, and what its playback loop has reported of them. Reads run beside the
/// media; the player is woken when the words change.
final class StoryCaptions: Sendable {
    /// The story's caption files.
    let sources: [CaptionSource]
    /// The file on this machine its subtitle streams are read from (a local story served over the simulated
    /// network plays from a URL; its file is still here).
    let file: String?
    private let loader: MediaLoader
    private let partKey: @Sendable (URL) -> CacheKey
    private let languages: [String]
    private let reports: Bool
    private let storyID: String
    private let clock: PlaybackClock
    private let onEvent: @Sendable (PlayerEvent) -> Void
    /// Woken when the words change (the player's loop).
    private let changed: Wakeup

    /// What was read and chosen.
    private struct State {
        /// The captions shown, once read.
        var chosen: CaptionTrack?
        /// Every track read, to choose among.
        var tracks: [CaptionTrack] = []
        /// An HLS story's subtitle renditions, read, waiting for the stream's zero.
        var hlsReads: [HLSCaptions.Read] = []
        /// Cues of the file's subtitle streams taken from the decoder so far (a file not on this machine).
        var streamedCues = 0
        /// The file's subtitle streams were read whole (a file on this machine): the decoder's are not needed.
        var embeddedWhole = false
    }

    private let state = NIOLockedValueBox(State())

    /// The words of story `storyID`, from `sources` and the subtitle streams of `file`, chosen by `languages`.
    init(
        sources: [CaptionSource], file: String?, loader: MediaLoader, partKey: @escaping @Sendable (URL) -> CacheKey,
        languages: [String], reports: Bool, storyID: String, clock: PlaybackClock,
        onEvent: @escaping @Sendable (PlayerEvent) -> Void, changed: Wakeup
    ) {
        self.sources = sources
        self.file = file
        self.loader = loader
        self.partKey = partKey
        self.languages = languages
        self.reports = reports
        self.storyID = storyID
        self.clock = clock
        self.onEvent = onEvent
        self.changed = changed
    }

    /// The captions chosen (nil: none, or not read yet).
    var chosen: CaptionTrack? { state.withLockedValue { $0.chosen } }

    /// Starts reading the caption files and, for a file on disk, its subtitle streams.
    func read() -> Task<Void, Never>? {
        let file = file.flatMap { $0.lowercased().hasSuffix(".m3u8") ? nil : $0 }
        guard !sources.isEmpty || file != nil else { return nil }
        // Small files on this machine are read now: their first cue is never late, however busy the machine.
        let (first, rest) = CaptionLoading.readSmallLocal(sources)
        add(first)
        let loader = loader
        return Task { [self] in
            add(await CaptionLoading.tracks(for: rest, loader: loader))
            guard let file, !Task.isCancelled else { return }
            // FFmpeg's calls block: on a thread of their own.
            let embedded = await withCheckedContinuation { (done: CheckedContinuation<[CaptionTrack], Never>) in
                DispatchQueue.global(qos: .utility).async { done.resume(returning: EmbeddedCaptions.tracks(inFile: file)) }
            }
            // The whole tracks replace what the decoder passed so far (it goes on reading them in step with the
            // picture, so a cue due before this read ends is not missed).
            state.withLockedValue { s in
                s.embeddedWhole = true
                s.tracks = s.tracks.filter { $0.origin != .embedded } + embedded
                s.chosen = CaptionTrack.choose(s.tracks, languages: languages)
            }
            changed.signal()
        }
    }

    /// Adds tracks read from the file or beside it, and chooses among all of them again.
    func add(_ tracks: [CaptionTrack]) {
        guard !tracks.isEmpty else { return }
        state.withLockedValue { s in
            s.tracks += tracks
            s.chosen = CaptionTrack.choose(s.tracks, languages: languages)
        }
        changed.signal()
    }

    /// Starts reading the subtitle renditions of an HLS story's `master`; nil when it lists none.
    func readHLS(_ master: HLSMasterPlaylist) -> Task<Void, Never>? {
        guard !master.subtitles.isEmpty else { return nil }
        let (loader, partKey, languages) = (loader, partKey, languages)
        return Task { [self] in
            let reads = await HLSCaptions.read(master, languages: languages, loader: loader, partKey: partKey)
            guard !reads.isEmpty, !Task.isCancelled else { return }
            state.withLockedValue { $0.hlsReads += reads }
            changed.signal()
        }
    }

    /// The subtitle streams arrive as the decoder reads on: its tracks replace the embedded ones whenever they
    /// gained cues, until a file on this machine has been read whole.
    private func adoptStreamed(_ decoder: MediaDecoder?) {
        guard let decoder else { return }
        let tracks = decoder.subtitleTracks
        let count = tracks.reduce(0) { $0 + $1.cues.count }
        state.withLockedValue { s in
            guard count != s.streamedCues, !s.embeddedWhole else { return }
            s.streamedCues = count
            s.tracks = s.tracks.filter { $0.origin != .embedded } + tracks
            s.chosen = CaptionTrack.choose(s.tracks, languages: languages)
        }
    }

    /// Reports a caption that began showing (once each), and returns when what shows changes next on the clock
    /// (nil: it does not change while the story plays on). HLS renditions read meanwhile join once the stream's
    /// zero is known (the decoder opened; without one, the first mapped segment's time stands for it).
    func wake(_ status: PlaybackStatus, reported: inout CaptionReporting, decoder: MediaDecoder?) -> Double? {
        if decoder?.isOpen ?? true {
            let reads = state.withLockedValue { s in
                defer { s.hlsReads = [] }
                return s.hlsReads
            }
            if !reads.isEmpty {
                let origin = decoder?.timeOrigin
                add(reads.map { HLSCaptions.track($0, origin: origin) })
            }
        }
        adoptStreamed(decoder)
        guard let track = chosen else { return nil }
        let position = status.position
        if reports {
            // A loop that woke late (a busy machine) still reports the cues that came and went since it last
            // looked; a jump (a seek) does not.
            if let through = reported.through, position - through > 0.1, position - through <= 1 {
                for cue in track.cues where cue.start > through && cue.start <= position && cue.end <= position {
                    onEvent(.caption(id: storyID, shown: CaptionShown(
                        text: cue.text, italic: cue.italic, start: cue.start, end: cue.end, language: track.language,
                        origin: track.origin)))
                }
            }
        }
        let shown = CaptionShown(track, at: position)
        if let shown, shown != reported.shown, reports {
            onEvent(.caption(id: storyID, shown: shown))
        }
        reported.shown = shown
        reported.through = position
        guard status.state == .playing, let next = track.nextChange(after: status.position) else { return nil }
        return clock.now + Swift.max(0.001, next - status.position)
    }
}

/// What the playback loop has reported of a story's captions: the caption showing at its last look, and the
/// playhead then.
struct CaptionReporting {
    var shown: CaptionShown?
    var through: Double?
}
