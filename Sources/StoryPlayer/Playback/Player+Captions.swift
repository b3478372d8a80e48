import Foundation
import MediaFormats

extension Player {
    /// The captions chosen for this story (nil: none, or not read yet).
    public var captions: CaptionTrack? { shared.withLockedValue { $0.captions } }

    /// What the captions show at the playhead now.
    public var captionShown: CaptionShown? {
        guard let track = captions else { return nil }
        return CaptionShown(track, at: status.position)
    }

    /// Starts reading the story's caption files and, for a file on disk, its subtitle streams.
    func readCaptions() -> Task<Void, Never>? {
        let file = captionFile.flatMap { $0.lowercased().hasSuffix(".m3u8") ? nil : $0 }
        guard !captionSources.isEmpty || file != nil else { return nil }
        let languages = configuration.captionLanguages
        // Small files on this machine are read now: their first cue is never late, however busy the machine.
        let (first, sources) = CaptionLoading.readSmallLocal(captionSources)
        addCaptionTracks(first, languages: languages)
        let loader = loader
        return Task { [self] in
            let tracks = await CaptionLoading.tracks(for: sources, loader: loader)
            addCaptionTracks(tracks, languages: languages)
            guard let file, !Task.isCancelled else { return }
            // FFmpeg's calls block: on a thread of their own.
            let embedded = await withCheckedContinuation { (done: CheckedContinuation<[CaptionTrack], Never>) in
                DispatchQueue.global(qos: .utility).async { done.resume(returning: EmbeddedCaptions.tracks(inFile: file)) }
            }
            // The whole tracks replace what the decoder passed so far (it goes on reading them in step with the
            // picture, so a cue due before this read ends is not missed).
            shared.withLockedValue { s in
                s.embeddedWhole = true
                s.captionTracks = s.captionTracks.filter { $0.origin != .embedded } + embedded
                s.captions = CaptionTrack.choose(s.captionTracks, languages: languages)
            }
            wakeup.signal()
        }
    }

    /// Adds tracks read from the file or beside it, and chooses among all of them again.
    func addCaptionTracks(_ tracks: [CaptionTrack], languages: [String]) {
        guard !tracks.isEmpty else { return }
        shared.withLockedValue { s in
            s.captionTracks += tracks
            s.captions = CaptionTrack.choose(s.captionTracks, languages: languages)
        }
        wakeup.signal()
    }

    /// Starts reading the subtitle renditions of an HLS story's `master`; nil when it lists none.
    func readHLSCaptions(_ master: HLSMasterPlaylist) -> Task<Void, Never>? {
        guard !master.subtitles.isEmpty else { return nil }
        let (loader, partKey, languages) = (loader, partKey, configuration.captionLanguages)
        return Task { [self] in
            let reads = await HLSCaptions.read(master, languages: languages, loader: loader, partKey: partKey)
            guard !reads.isEmpty, !Task.isCancelled else { return }
            shared.withLockedValue { $0.hlsCaptions += reads }
            wakeup.signal()
        }
    }

    /// The subtitle streams arrive as the decoder reads on: its tracks replace the embedded ones whenever they
    /// gained cues, until a file on this machine has been read whole.
    private func adoptStreamedCaptions(_ decoder: MediaDecoder?) {
        guard let decoder else { return }
        let tracks = decoder.subtitleTracks
        let count = tracks.reduce(0) { $0 + $1.cues.count }
        let languages = configuration.captionLanguages
        shared.withLockedValue { s in
            guard count != s.streamedCues, !s.embeddedWhole else { return }
            s.streamedCues = count
            s.captionTracks = s.captionTracks.filter { $0.origin != .embedded } + tracks
            s.captions = CaptionTrack.choose(s.captionTracks, languages: languages)
        }
    }

    /// Reports a caption that began showing (once each), and returns when what shows changes next on the clock
    /// (nil: it does not change while the story plays on). HLS renditions read meanwhile join once the stream's
    /// zero is known (the decoder opened; without one, the first mapped segment's time stands for it).
    func captionWake(_ status: PlaybackStatus, reported: inout CaptionReporting, decoder: MediaDecoder?) -> Double? {
        if decoder?.isOpen ?? true {
            let reads = shared.withLockedValue { s in
                defer { s.hlsCaptions = [] }
                return s.hlsCaptions
            }
            if !reads.isEmpty {
                let origin = decoder?.timeOrigin
                addCaptionTracks(reads.map { HLSCaptions.track($0, origin: origin) }, languages: configuration.captionLanguages)
            }
        }
        adoptStreamedCaptions(decoder)
        guard let track = captions else { return nil }
        let position = status.position
        if configuration.reportsCaptions {
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
        if let shown, shown != reported.shown, configuration.reportsCaptions {
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
