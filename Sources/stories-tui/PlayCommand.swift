import ArgumentParser
import Foundation
import MediaCache
import MediaOrigin
import StoriesUI
import StoryPlayer
import Terminal

/// `stories-tui [play] SOURCE...`: plays stories from playlists, folders, files, URLs and M3U lists.
struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play", abstract: "Play stories from playlists, folders, files or URLs (the default command).",
        discussion: """
            Sources: a JSON playlist; a folder (its videos and photos in name order, IMG_2 before IMG_10; each \
            subfolder one author, named after it); video and photo files; HLS playlists (.m3u8); http(s) URLs; \
            M3U lists of files or URLs (#EXTINF titles). Files that are not media are skipped with one line \
            saying how many. A URL that is not a media file is read by its first bytes: an RSS, Atom or JSON \
            feed is one author's stories (--since: the last 24h by default, or 3d, all), a web page is resolved \
            by yt-dlp (on PATH, or ytdlPath in the config). With no source, everything followed (stories-tui \
            follow add URL) is refreshed at once and played, authors with unseen stories first; a feed that \
            cannot be reached plays its last copy, marked OFFLINE.

            Stories are grouped by author (a folder's subfolders, or a JSON playlist's "authors"): left/right move \
            within the author and on to its neighbours, up/down jump to the previous or next author's first \
            unseen story, and after an author's last story the next author with unseen stories starts. A story is \
            seen once its first frame was shown; seen state is kept with the play counts in the cache directory \
            (`cache clear --seen` forgets both and keeps the cached videos), and a run starts at the first unseen story (--from-start: at \
            the first; files and URLs named one by one start at the first named). A run that starts at the first \
            story, everything seen or --from-start, plays every author in turn.

            Local files (named on the command line, in an M3U list or in a JSON playlist) are read straight from \
            disk as they play: nothing is copied into the cache, and the header says LOCAL. With --network, or a \
            JSON playlist's "network" (the demo's asks for 4g), they are served by a built-in origin over a \
            simulated network (\(NetworkProfile.named.map { "\($0.name) (\($0.summary))" }.joined(separator: ", "))) \
            through the cache, so a first pass shows loading and cache misses and a second pass plays from the \
            cache. --speed speeds that network up as much as the clock, so a story loads as it would \
            at 1x.

            The story's video is decoded and drawn in the story area, upright and in shape as the file says \
            (rotation, aspect, colours; HDR tone-mapped); --no-video shows text only. Stories are MP4 (plain or \
            fragmented), WebM, other files FFmpeg reads, photos (JPEG, PNG, WebP: 5 s unless the playlist gives \
            a duration) and HLS.

            Keys: left/right or h/l previous/next story, space pause, comma/period (or shift+left/right) seek a \
            second, 1-9 story N, r replay, c cache pane, v captions, ? all keys, q or Esc quit; a click on the left or right \
            half goes back or on. The screen needs 60x16; NO_COLOR turns colour off. \
            Pictures take the best the terminal offers: kitty graphics or sixel images where it answers that it \
            has them (not inside tmux), else cells of quadrant and half-block symbols, each cell's two colours \
            worked out from its pixels, in 24-bit colour where COLORTERM or terminfo says so, else in 256 \
            colours (with 16 colours, and sextants where the terminal draws them, chafa picks the symbols when \
            libchafa is installed); under NO_COLOR the picture keeps its shapes in the terminal's own colours \
            (ASCII shading without libchafa), and without UTF-8 it is drawn with ASCII characters by brightness. --picture chooses (half: half \
            blocks only, for fonts without the other symbols). \
            When stdin or stdout is not a terminal, progress lines are printed instead.

            While a story plays with enough buffered, the next two stories and the previous one are preloaded \
            (their header and first 3 seconds), paused whenever the playing story runs low; --no-preload \
            turns that off.

            Stories play with their sound (PulseAudio or PipeWire, else ALSA); m mutes and unmutes for the rest \
            of the session, --mute starts muted. While sound is heard the picture follows it; with no sound \
            server or device, or at a --speed other than 1, stories play silent and the cache pane says why.

            Captions come from clip.srt or clip.vtt beside a file (clip.en.vtt names the language), a JSON \
            playlist's "captions", the subtitle tracks inside a file, or an HLS stream's WebVTT renditions; --captions auto (the default) shows them \
            while the story is not heard, v turns them on or off (kept in the config), --caption-lang en,de picks \
            among several, --dump-captions prints them as SubRip.

            With --headless, one JSON object per line per event: refresh (one per feed or page read), caption, \
            story_start (with source and published), first_frame (startupMs, cache), \
            stall, stall_end, story_end (playCount, stalls, stallMs, framesShown, framesDropped, framesSkipped), skipped, error, \
            playlist_end, and sound (output: where sound goes, or reason: why there is none); with --frame-events also frame (timeMs: the picture now shown). Each has t (seconds since \
            the run started) and monotonic (the same moment on CLOCK_MONOTONIC), to line events up with a recording.
            """)

    @Argument(
        help: ArgumentHelp(
            "Playlists (.json), folders, video and photo files, .m3u8 HLS playlists, http(s) URLs or M3U lists.",
            valueName: "source"))
    var sources: [String] = []
    @Flag(help: "Start at the first story, not at the first one not seen yet.") var fromStart = false
    @Option(help: ArgumentHelp("Feeds and followed sources: stories of the last 24h (default), 3d, 90m, 2w or all.", valueName: "TIME"))
    var since: String?
    @Flag(help: "Run without the terminal UI, printing one JSON event per line.") var headless = false
    @Option(
        parsing: .unconditional,
        help: "Playback speed multiplier (e.g. 4 plays four times faster; the simulated network runs as much faster).")
    var speed: Double = 1
    @Option(help: ArgumentHelp("Serve local files through the cache over a simulated network: 3g, 4g, wifi or lan (otherwise they are read from disk, unless a JSON playlist asks for one with \"network\").", valueName: "PROFILE"))
    var network: String?
    @Flag(help: "Do not preload the next stories.") var noPreload = false
    @Flag(help: "Show stories that reached their maxViews too.") var all = false
    @Flag(help: "Do not decode the video: the story area shows text only (for slow terminals and screen readers).")
    var noVideo = false
    @Flag(help: "Start with the sound muted (m unmutes).") var mute = false
    @Option(help: ArgumentHelp("Where sound goes: auto (PulseAudio or PipeWire, else ALSA), pulse, alsa or off.", valueName: "OUTPUT"))
    var sound: String = "auto"
    @Flag(help: "With --headless: also a frame event for each picture shown.") var frameEvents = false
    @Flag(help: "Name every file passed over as not playable (otherwise the first three).") var verbose = false
    @Option(help: ArgumentHelp("When captions show: auto (while the sound is not heard; the default), on or off. v toggles them and the choice is kept in the config.", valueName: "MODE"))
    var captions: String?
    @Option(help: ArgumentHelp("Caption languages in order of preference, e.g. en,de.", valueName: "LANGS"))
    var captionLang: String?
    @Flag(help: "Print each story's captions as SubRip (SRT) and exit, without playing.") var dumpCaptions = false
    @Option(
        help: ArgumentHelp(
            "How pictures are drawn: auto (as the terminal answers), kitty, sixel, symbols, half or ascii.",
            valueName: "MODE"))
    var picture: String = "auto"
    @OptionGroup var cache: CacheDirOption
    @OptionGroup(title: "Cache budgets") var budgets: BudgetOptions

    func run() async throws {
        try await reportingFailures {
            guard speed > 0, speed.isFinite, speed <= 1000 else {
                throw CLIFailure(message: "--speed: must be a number above 0 and at most 1000, got \(speed)", exitCode: 2)
            }
            let profiles = NetworkProfile.named.map(\.name).joined(separator: ", ")
            if let network, NetworkProfile.named(network) == nil {
                throw CLIFailure(message: "--network: unknown profile '\(network)' (use \(profiles))", exitCode: 2)
            }
            let soundChoice = sound.lowercased()
            guard soundChoice == "off" || SoundBackend(rawValue: soundChoice) != nil else {
                throw CLIFailure(message: "--sound: unknown output '\(sound)' (use auto, pulse, alsa or off)", exitCode: 2)
            }
            let pictureChoice = picture.lowercased()
            guard pictureChoice == "auto" || PictureProtocol(rawValue: pictureChoice) != nil else {
                throw CLIFailure(
                    message: "--picture: unknown mode '\(picture)' (use auto, kitty, sixel, symbols, half or ascii)",
                    exitCode: 2)
            }
            let named = try PlaySources.named(sources)
            let settings = try FollowSettings.read(since: since)
            let captionSettings = try CaptionSettings.read(mode: captions, languages: captionLang)
            let interactive = !headless && isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
            let store = try cache.openStore(budgets: budgets)
            let loader = MediaLoader(
                store: store, configuration: LoaderDefaults.configuration, logger: CLILogging.logger(quiet: interactive))
            let playCounts = try cache.openPlayCounts(beside: store, create: !store.isReadOnly) ?? PlayCountStore.inMemory()
            let firstFrame = FirstFrameLatch()
            let loaded: PlaySources.Loaded
            do {
                loaded = try await PlaySources.load(
                    named, loader: loader, settings: settings, playCounts: playCounts,
                    showsProgress: isatty(STDERR_FILENO) == 1, snapshots: store.directory,
                    firstFrame: firstFrame)
            } catch {
                await loader.shutdown()
                try? store.close()
                throw error
            }
            let read = loaded.sources
            for line in PlaySources.skippedLines(read, all: verbose) { StandardStreams.writeError("\(line)\n") }
            for note in loaded.notes { StandardStreams.writeError("stories-tui: \(note)\n") }
            // What the checks of feeds read from their cached copies find (the list of people followed records it).
            let settling = Task { await loaded.settled() }
            let list = read.playlist
            if dumpCaptions {
                settling.cancel()
                let text = await CaptionDump.srt(of: list.stories, languages: captionSettings.languages, loader: loader)
                await loader.shutdown()
                try? store.close()
                try StandardStreams.printOut(String(text.dropLast()))
                return
            }
            // Local files are read from disk as they play, unless a simulated link is asked for: by --network, or by
            // a JSON playlist's "network" (the demo asks for 4g, to show the cache at work).
            let asked = network ?? (read.isJSONOnly ? list.network : nil)
            let servesFiles = asked != nil
            guard let profile = NetworkProfile.named(asked ?? "4g") else {
                settling.cancel()
                await loader.shutdown()
                try? store.close()
                let error = PlaylistError(
                    file: sources.count == 1 ? sources[0] : list.file.lastPathComponent, field: "network",
                    message: "unknown simulated link '\(asked ?? "")' (use \(profiles))")
                throw CLIFailure(message: "\(error)", exitCode: 2)
            }
            // Faster playback with the same network would stall where 1x does not: the simulated link keeps pace.
            let origin = list.hasLocalStories && servesFiles
                ? try await MediaOriginServer(
                    root: list.localRoot, folders: list.localFolders, profile: profile.scaled(by: speed)) : nil
            var player = PlayerConfiguration()
            player.decodesVideo = !noVideo
            player.reportsFrames = frameEvents
            player.captionLanguages = captionSettings.languages
            player.reportsCaptions = captionSettings.mode != .off
            let output: SoundOutput
            if soundChoice == "off" {
                output = .unavailable("turned off (--sound off)")
            } else if speed != 1 {
                output = .unavailable("only at --speed 1")
            } else {
                let backend = SoundBackend(rawValue: soundChoice) ?? .auto
                output = SoundOutput { () throws(SoundError) -> any SoundSink in try SystemSoundSink(backend: backend) }
            }
            let session = StorySession(
                playlist: list, loader: loader, resolve: StorySession.resolver(
                    originBase: origin?.baseURL, keyRule: settings.keyRule, naming: { loader.record($0, as: $1) }),
                clock: RealPlaybackClock(speed: speed), configuration: player, showAll: all,
                preload: noPreload ? nil : PreloadPolicy(),
                playCounts: playCounts,
                sound: output, muted: mute, fromStart: fromStart || read.namesStories, late: loaded.late)
            let stop = StopFlag()
            // A reader of stdout that went away (`| head -1`) ends the run quietly.
            let outputClosed = StopFlag()
            let workHandle = TaskHandle()
            let emitLine: @Sendable (String) -> Void = { line in
                guard !outputClosed.isRaised else { return }
                do {
                    try StandardStreams.printOut(line)
                } catch {
                    outputClosed.raise()
                    workHandle.cancel()
                }
            }
            // Watching for signals before anything is shown: a signal right after the first line still stops cleanly.
            let signals = SignalWatcher {
                stop.raise()
                if !interactive { workHandle.cancel() }
            }
            let work = Task { () -> PlaylistSummary in
                if headless {
                    let started = SoundOutput.monotonicSeconds()
                    let emitRefreshes: @Sendable ([RefreshReport]) -> Void = { reports in
                        for report in reports {
                            let now = SoundOutput.monotonicSeconds()
                            emitLine(PlayerEvent.refresh(report).jsonLine(t: now - started, monotonic: now))
                        }
                    }
                    emitRefreshes(loaded.refreshes)
                    // Feeds read from their cached copies are reported once their checks are over, beside play.
                    let late = Task { emitRefreshes(await settling.value.reports.filter { !loaded.refreshes.contains($0) }) }
                    defer { late.cancel() }
                    let summary = try await session.runHeadless { event in
                        firstFrame.note(event)
                        let now = SoundOutput.monotonicSeconds()
                        emitLine(event.jsonLine(t: now - started, monotonic: now))
                    }
                    await late.value
                    return summary
                } else if interactive {
                    let controller = try StoryController(session: session, onEvent: firstFrame.note)
                    try await TerminalApp.run(
                        controller: controller, stop: stop, picture: PictureProtocol(rawValue: pictureChoice),
                        captions: captionSettings.mode)
                    return controller.summary
                } else {
                    return try await session.runHeadless { event in
                        firstFrame.note(event)
                        emitLine(TextReporter.line(event, playlist: list))
                    }
                }
            }
            workHandle.set(work)
            let result = await work.result
            signals.stop()
            output.close()
            // The refresh beside play is given a moment to finish (what it found is kept and said), then let go.
            let giveUp = Task {
                try await Task.sleep(for: .seconds(3))
                settling.cancel()
            }
            for note in await settling.value.notes { StandardStreams.writeError("stories-tui: \(note)\n") }
            giveUp.cancel()
            await loader.shutdown()
            try? store.close()
            await origin?.shutdown()
            // A signal decides the exit code even when the reader of stdout went away at the same time.
            if outputClosed.isRaised {
                signals.exitIfSignalled()
                return
            }
            let summary: PlaylistSummary
            switch result {
            case .success(let value): summary = value
            case .failure(let error) where error is CancellationError:
                signals.exitIfSignalled()
                return
            case .failure(let error): throw CLIFailure(message: "\(error)", exitCode: 1)
            }
            // Like a media player on exit, however it was asked to quit (q, Ctrl-C, SIGTERM): what was watched and
            // where the bytes came from (not in the JSON stream).
            if !headless { emitLine(TextReporter.summary(summary)) }
            signals.exitIfSignalled()
            // Stories from feeds: a run that played something succeeded, whatever one source did.
            if summary.failed > 0, !(loaded.fromFeeds && summary.watched > 0) {
                throw CLIFailure(
                    message: "\(summary.failed) stor\(summary.failed == 1 ? "y" : "ies") could not play", exitCode: 1)
            }
        }
    }
}

/// Human-readable progress lines for `play` without `--headless`.
enum TextReporter {
    /// The line printed when the player quits.
    static func summary(_ summary: PlaylistSummary) -> String {
        let stories = "\(summary.watched) stor\(summary.watched == 1 ? "y" : "ies") watched"
            + (summary.failed > 0 ? ", \(summary.failed) failed" : "")
            + (summary.skipped > 0 ? ", \(summary.skipped) skipped" : "")
        // Files read from disk move no byte through the cache: saying "0 B saved" of them would be beside the point.
        let bytes = summary.cacheBytes == 0 && summary.originBytes == 0
            ? (summary.watched > 0 ? "read from disk" : "nothing downloaded")
            : "\(ByteFormat.string(summary.cacheBytes)) saved by the cache, "
                + "\(ByteFormat.string(summary.originBytes)) from the origin"
        let stalls = summary.stalls == 0
            ? "no stalls"
            : "\(summary.stalls) stall\(summary.stalls == 1 ? "" : "s") (\(String(format: "%.1f", summary.stallSeconds)) s)"
        return "\(stories) \(dot) \(bytes) \(dot) \(stalls)"
    }

    private static let dot = "·"

    static func line(_ event: PlayerEvent, playlist: Playlist) -> String {
        let line: String
        switch event {
        case .storyStart(let index, _, let title, _, let author, let seen, _, _):
            line = "▶ [\(index + 1)/\(playlist.stories.count)] " + (author.map { "\($0): " } ?? "") + title
                + (seen ? " (seen)" : "")
        case .skipped(let index, _, let plays, let maxViews):
            line = "· [\(index + 1)/\(playlist.stories.count)] \(playlist.stories[index].title): skipped (seen \(plays) of \(maxViews) times)"
        case .firstFrame(_, let startupMs, let cache, let duration):
            line = "  first frame after \(startupMs) ms · \(cache.rawValue) · \(String(format: "%.1f", duration)) s"
        case .stall(_, let positionMs):
            line = "  stalled at \(String(format: "%.1f", Double(positionMs) / 1000)) s"
        case .stallEnd(_, let durationMs):
            line = "  resumed after \(durationMs) ms"
        case .storyEnd(_, let playCount, let stalls, let stallMs, let completed, let frames):
            let pictures = frames.shown > 0
                ? " · \(frames.shown) frame\(frames.shown == 1 ? "" : "s") shown, \(frames.dropped) dropped" : ""
            line = "  \(completed ? "finished" : "stopped") · played \(playCount)× · \(stalls) stall\(stalls == 1 ? "" : "s") (\(stallMs) ms)\(pictures)"
        case .variant(_, let positionMs, let bandwidth, let resolution):
            let picture = resolution.map { "\($0), " } ?? ""
            line = "  from \(String(format: "%.1f", Double(positionMs) / 1000)) s: the \(picture)\(bandwidth / 1000) kbit/s variant"
        case .failed(_, let message):
            line = "  error: \(message)"
        case .note(_, let message):
            line = "  note: \(message)"
        case .frame(_, let timeMs):
            line = "  frame at \(String(format: "%.3f", Double(timeMs) / 1000)) s"
        case .refresh(let report):
            line = "\(report.author): \(report.status.rawValue), \(report.stories) of \(report.items) item\(report.items == 1 ? "" : "s") to play"
                + (report.message.map { " (\($0))" } ?? "")
        case .caption(_, let shown):
            line = "  \(String(format: "%.1f", shown.start)) s: " + shown.text.replacingOccurrences(of: "\n", with: " / ")
        case .sound(let output, let reason):
            line = output.map { "sound: \($0)" } ?? "no sound: \(reason ?? "unknown")"
        case .playlistEnd(let summary):
            line = "done: \(summary.finished) played, \(summary.skipped) skipped"
                + (summary.failed > 0 ? ", \(summary.failed) failed" : "")
        }
        return line
    }
}
