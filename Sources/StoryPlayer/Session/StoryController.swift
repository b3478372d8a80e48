import Foundation
import MediaCache
import NIOConcurrencyHelpers

/// What a viewer can ask for.
public enum StoryCommand: Sendable, Equatable {
    /// The next story (→).
    case next
    /// The previous story (←).
    case previous
    /// Pause or resume (space).
    case togglePause
    /// Play the current story again from the start; after the end, start over (r).
    case replay
    /// Move the playhead by this many seconds within the story (`,` and `.`).
    case seek(by: Double)
    /// Jump to the current author's story at this index (digits 1–9); ignored when there is none or it reached
    /// its views.
    case jump(to: Int)
    /// The next author's first unseen story (↓).
    case nextAuthor
    /// The previous author's first unseen story (↑).
    case previousAuthor
    /// Mute or unmute the sound, for the rest of the session (m).
    case toggleMute
}

/// The one story loop: one player at a time, auto-advance, previous/next, pause, replay, play counts, and
/// preloading around the playing story, reporting `PlayerEvent`s. A UI drives it with commands and reads
/// snapshots (synchronous and cheap, so a UI thread can call them directly); a headless run lets it auto-advance
/// to the end (`playToEnd`). Players run as tasks.
public final class StoryController: Sendable {
    struct State {
        var navigator: StoryNavigator
        var player: Player?
        var playerTask: Task<Void, Never>?
        var watchTask: Task<Void, Never>?
        var generation = 0
        var paused = false
        /// The viewer muted the sound (kept from story to story).
        var muted = false
        var pictureBox: (width: Int, height: Int)?
        var stopped = false
        var samples: [(time: Double, bytes: Int64)] = []
        /// The story played last (skipped stories are reported between it and the next one).
        var lastPlayed = -1
        /// What this run did so far (see `PlaylistSummary`).
        var summary = PlaylistSummary()
        /// Stories whose view counted in this run (a view counts once per story and run, at its first frame).
        var viewed: Set<Int> = []
        /// Stories whose last attempt in this run failed.
        var failing: Set<Int> = []
        /// What each story played this session is made of (an HLS story's segments), once its player knew.
        var parts: [Int: MediaParts] = [:]
        /// What the screen shows of the store, as last read (see `snapshot`).
        var figures: StoreFigures?
        /// Reads `figures` again and again, once a screen asked for a snapshot.
        var figuresTask: Task<Void, Never>?
        /// Tasks waiting in `playToEnd` for the end of the playlist.
        var endWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    /// The session played.
    public let session: StorySession
    let state: NIOLockedValueBox<State>
    /// Seconds failed stories stay on screen before moving on.
    let failureDwell: Double
    /// Each story's cache key, in playlist order (resolved once: keys are hashes).
    let keys: [CacheKey]
    /// Each story's URL, in playlist order.
    let urls: [URL]
    /// Where events go.
    let emit: @Sendable (PlayerEvent) -> Void
    /// First frames decoded ahead for the stories next in line.
    public let ahead = FirstFramesAhead()
    /// Counts story changes, for the store figures (the playing story's cached map).
    let moves = ChangeSignal()
    let started = ContinuousClock.now

    /// A controller over `session`, before the first story; `onEvent` gets every event (story start and end,
    /// the player's, skips, the playlist's end).
    public init(
        session: StorySession, failureDwell: Double = 3, onEvent: @escaping @Sendable (PlayerEvent) -> Void = { _ in }
    ) throws {
        self.session = session
        self.failureDwell = failureDwell
        emit = onEvent
        let resolved = session.playlist.stories.map { session.resolve($0) }
        keys = resolved.map(\.key)
        urls = resolved.map(\.url)
        var initial = State(navigator: try session.makeNavigator())
        initial.muted = session.startsMuted
        state = NIOLockedValueBox(initial)
    }

    /// Starts the first eligible story (or finishes at once when none is).
    public func start() {
        announceSound()
        let fromStart = session.fromStart
        let index = state.withLockedValue { $0.navigator.resume(fromStart: fromStart) }
        play(index)
    }

    /// Carries out a viewer's command.
    public func perform(_ command: StoryCommand) {
        switch command {
        case .next:
            let index = state.withLockedValue { s -> Int?? in
                guard !s.navigator.isFinished else { return .none }
                return .some(s.navigator.next())
            }
            if let index { play(index) }
        case .previous:
            let index = state.withLockedValue { s -> Int? in
                if s.navigator.isFinished {
                    guard let last = s.navigator.lastEligible else { return nil }
                    s.navigator.jump(to: last)
                    return last
                }
                return s.navigator.previous()
            }
            if let index { play(index) }
        case .togglePause:
            state.withLockedValue { s in
                guard s.player != nil else { return }
                s.paused.toggle()
                s.player?.setPaused(s.paused)
            }
        case .replay:
            let index = state.withLockedValue { s -> Int? in
                if let current = s.navigator.index { return current }
                return s.navigator.start()
            }
            play(index)
        case .toggleMute:
            let unmuted = state.withLockedValue { s in
                s.muted.toggle()
                s.player?.setMuted(s.muted)
                return !s.muted
            }
            // A session started muted opens the device the first time it is unmuted.
            if unmuted { session.sound?.start() }
        case .seek(let seconds):
            state.withLockedValue { $0.player }?.seek(by: seconds)
        case .nextAuthor, .previousAuthor:
            let index = state.withLockedValue { s -> Int? in
                guard let current = s.navigator.index else { return nil }
                let target = command == .nextAuthor ? s.navigator.nextAuthor() : s.navigator.previousAuthor()
                return target == current ? nil : target
            }
            if let index { play(index) }
        case .jump(let number):
            let index = state.withLockedValue { s -> Int? in
                guard !s.navigator.authors.isEmpty else { return nil }
                let author = s.navigator.authors[s.navigator.author(of: s.navigator.index ?? 0)].stories
                let target = author.lowerBound + number
                guard author.contains(target), s.navigator.isEligible(target) else { return nil }
                s.navigator.jump(to: target)
                return target
            }
            if let index { play(index) }
        }
    }

    /// Tells the player how large the picture is drawn (pixels, two per cell row); later players start with it.
    public func setPictureBox(_ box: (width: Int, height: Int)) {
        let player = state.withLockedValue { s -> Player? in
            s.pictureBox = box
            return s.player
        }
        player?.setPictureBox(box)
    }

    /// Plays from the first eligible story to the end of the playlist, auto-advancing, and returns how many
    /// stories played to their end. Cancelling the calling task stops the player and throws `CancellationError`.
    @discardableResult
    public func playToEnd() async throws -> PlaylistSummary {
        start()
        await CancellableWait.suspend(
            in: state,
            park: { s, id, continuation in
                guard !s.navigator.isFinished, !s.stopped else { return false }
                s.endWaiters[id] = continuation
                return true
            },
            unpark: { s, id in CancellableWait.waker(s.endWaiters.removeValue(forKey: id)) })
        await stop()
        try Task.checkCancellation()
        return summary
    }

    /// What this run did so far: stories watched, finished, failed and skipped, stalls, and the bytes the player
    /// got from the cache and from the origin.
    public var summary: PlaylistSummary {
        let metrics = session.loader.metrics
        var summary = state.withLockedValue { $0.summary }
        summary.cacheBytes = metrics.cacheBytes
        summary.originBytes = metrics.originBytesReceived
        summary.soundUnderruns = session.sound?.underruns ?? 0
        return summary
    }

    /// Stops the player and preloading.
    public func stop() async {
        let (player, watch, waiters, figures) = state.withLockedValue { s in
            s.stopped = true
            s.generation += 1
            defer {
                s.endWaiters.removeAll()
                s.figuresTask = nil
            }
            return (s.playerTask, s.watchTask, Array(s.endWaiters.values), s.figuresTask)
        }
        figures?.cancel()
        for waiter in waiters { waiter.resume() }
        player?.cancel()
        watch?.cancel()
        await player?.value
        await watch?.value
        await ahead.stop()
        await session.preload?.preloader.stop()
        session.sound?.close()
        await session.viewsWritten()
    }

    /// Starts story `index` (nil: the end), replacing the current player.
    private func play(_ index: Int?) {
        let (generation, old, oldWatch, navigator) = state.withLockedValue {
            s -> (Int, Task<Void, Never>?, Task<Void, Never>?, StoryNavigator) in
            s.generation += 1
            defer {
                s.playerTask = nil
                s.watchTask = nil
                s.player = nil
                s.paused = false
            }
            return (s.generation, s.playerTask, s.watchTask, s.navigator)
        }
        old?.cancel()
        oldWatch?.cancel()
        moves.signal()
        guard state.withLockedValue({ !$0.stopped }) else { return }
        session.preload?.storyChanged(to: index, navigator: navigator)
        let passed = state.withLockedValue { s -> [Int] in
            let passed = s.navigator.skipped(after: s.lastPlayed, before: index)
            s.summary.skipped += passed.count
            if let index { s.lastPlayed = index }
            return passed
        }
        let stories = session.playlist.stories
        for i in passed {
            emit(.skipped(index: i, id: stories[i].id, plays: navigator.plays(i), maxViews: stories[i].maxViews ?? 0))
        }
        guard let index else {
            finish()
            return
        }
        if let late = session.late, late.isPending(stories[index]) {
            // Its page is resolved first (at most as long as the resolver allows); the rest plays meanwhile.
            let task = Task { [self] in
                await late.resolve(stories[index])
                guard !Task.isCancelled else { return }
                start(index, generation: generation, navigator: navigator)
            }
            state.withLockedValue { s in
                if s.generation == generation { s.playerTask = task } else { task.cancel() }
            }
            return
        }
        start(index, generation: generation, navigator: navigator)
    }

    /// Starts the player of story `index` for play `generation`.
    private func start(_ index: Int, generation: Int, navigator: StoryNavigator) {
        let story = session.playlist.stories[index]
        let muted = state.withLockedValue { $0.muted }
        let player = session.makePlayer(for: index, muted: muted) { [self] event in
            if case .firstFrame = event { countView(of: index) }
            emit(event)
        }
        emit(.storyStart(
            index: index, id: story.id, title: story.title, url: player.url.absoluteString, author: story.author,
            seen: navigator.isSeen(index), source: story.originName, published: story.published))
        if let box = state.withLockedValue({ $0.pictureBox }) { player.setPictureBox(box) }
        // Decoded ahead: the story's first frame is on screen before its decoder has opened the file.
        if let frame = ahead.take(index, key: keys[index], box: decodeBox) { player.hold(frame) }
        let task = Task { [self] in
            let status = await player.run()
            let plays = state.withLockedValue { s -> Int in
                s.summary.stalls += status.stalls
                s.summary.stallSeconds += status.stallSeconds
                switch status.state {
                case .finished:
                    s.summary.finished += 1
                    s.failing.remove(index)
                case .failed:
                    if s.failing.insert(index).inserted { s.summary.failed += 1 }
                default: break
                }
                return s.navigator.plays(index)
            }
            emit(.storyEnd(
                id: story.id, playCount: plays, stalls: status.stalls,
                stallMs: Int((status.stallSeconds * 1000).rounded()), completed: status.state == .finished,
                frames: status.frames))
            await ended(generation: generation, status: status)
        }
        let watch = session.preload.map { _ in Task { await self.watch(player, generation: generation) } }
        let current = state.withLockedValue { s -> Bool in
            guard s.generation == generation else { return false }
            s.player = player
            s.playerTask = task
            s.watchTask = watch
            return true
        }
        if !current {
            task.cancel()
            watch?.cancel()
        }
    }

    /// The playlist ended: says so and wakes `playToEnd`.
    private func finish() {
        let waiters = state.withLockedValue { s in
            defer { s.endWaiters.removeAll() }
            return Array(s.endWaiters.values)
        }
        emit(.playlistEnd(summary))
        for waiter in waiters { waiter.resume() }
    }

    /// A story showed its first frame: its view counts, once per run (going back to it, or replaying it, shows
    /// it again without counting again).
    private func countView(of index: Int) {
        let first = state.withLockedValue { s -> Bool in
            guard s.viewed.insert(index).inserted else { return false }
            s.navigator.recordPlay(of: index)
            s.summary.watched += 1
            return true
        }
        if first { session.recordView(of: index) }
    }

    /// Auto-advance: a finished story moves on; a failed one moves on after showing its error for a while.
    private func ended(generation: Int, status: PlaybackStatus) async {
        guard status.state == .finished || status.state == .failed else { return }
        if status.state == .failed {
            try? await session.clock.sleep(until: session.clock.now + failureDwell)
        }
        let next = state.withLockedValue { s -> Int?? in
            guard s.generation == generation, !s.stopped else { return .none }
            return .some(s.navigator.advance())
        }
        if let next { play(next) }
    }
}
