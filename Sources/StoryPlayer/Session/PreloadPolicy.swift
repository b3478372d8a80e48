import Foundation
import MediaCache
import MediaFormats
import NIOConcurrencyHelpers

/// When and what to preload around the playing story: a small state machine with no I/O. Preloading opens once
/// the playing story has started and its buffer reaches the high-water mark (or holds the rest of the video), and
/// closes when the buffer falls below the low-water mark, so preloads never take bandwidth a stall would need.
public struct PreloadPolicy: Sendable, Equatable {
    /// Stories after the current one to preload.
    public var ahead = 2
    /// Stories before the current one to preload (for ←).
    public var behind = 1
    /// Seconds of payload each preload fetches after the header.
    public var seconds: Double = 3
    /// Buffered seconds below which preloading pauses.
    public var lowWater: Double = 0.75
    /// Buffered seconds above which preloading resumes.
    public var highWater: Double = 1.5
    /// True while preloading may run.
    public private(set) var isOpen = false

    /// The defaults.
    public init() {}

    /// Feeds the playing story's status; returns true when the gate changed (read `isOpen`).
    public mutating func update(_ status: PlaybackStatus) -> Bool {
        let before = isOpen
        switch status.state {
        case .loading, .stalled:
            isOpen = false
        case .playing, .paused:
            if status.isBufferedToEnd || status.bufferedSeconds >= highWater {
                isOpen = true
            } else if status.bufferedSeconds < lowWater {
                isOpen = false
            }
        case .finished, .failed:
            // Nothing more to protect until the next story starts.
            isOpen = true
        }
        return isOpen != before
    }

    /// When, on the player's clock, the gate changes with no news: an open gate while the story plays closes as
    /// its buffer runs below the low-water mark (the playhead eats it); nil when nothing changes by itself.
    public func nextChange(of status: PlaybackStatus, at now: Double) -> Double? {
        guard isOpen, status.state == .playing, !status.isBufferedToEnd else { return nil }
        return now + Swift.max(0, status.bufferedSeconds - lowWater) + 0.001
    }

    /// Closes the gate (a new story is starting).
    public mutating func storyChanged() { isOpen = false }

    /// The stories to preload around `current`, nearest first: where auto-advance and → go (at an author's end,
    /// another author's first unseen story), the next eligible ones up to `ahead`, then the previous `behind`.
    public func targets(around current: Int, navigator: StoryNavigator) -> [Int] {
        var result = Array(Self.upcoming(after: current, navigator: navigator).prefix(ahead))
        var i = current + 1
        while result.count < ahead, i < navigator.stories.count {
            if navigator.isEligible(i), !result.contains(i) { result.append(i) }
            i += 1
        }
        var back: [Int] = []
        i = current - 1
        while back.count < behind, i >= 0 {
            if navigator.isEligible(i), !result.contains(i) { back.append(i) }
            i -= 1
        }
        return result + back
    }
}

extension PreloadPolicy {
    /// Where auto-advance and then → go from story `index`, each once.
    public static func upcoming(after index: Int, navigator: StoryNavigator) -> [Int] {
        var auto = navigator
        auto.jump(to: index)
        var right = navigator
        right.jump(to: index)
        var result: [Int] = []
        for next in [auto.advance(), right.next()] {
            if let next, !result.contains(next) { result.append(next) }
        }
        return result
    }
}

/// Runs a `PreloadPolicy` against a `Preloader` for one session: re-plans on every story change and opens or
/// closes the gate as the playing story's buffer moves.
public final class PreloadDriver: Sendable {
    /// The preloader driven.
    public let preloader: Preloader
    let resolve: @Sendable (Story) -> ResolvedSource
    let policy: NIOLockedValueBox<PreloadPolicy>
    /// Reads HLS stories' playlists to preload their first segments; nil: an HLS story's playlist alone.
    let loader: MediaLoader?
    /// The link as the session's players measured it: an HLS story preloads the variant it will start on.
    let throughput: ThroughputEstimate?
    /// Counts re-plans, so a slow reading of playlists never replaces a newer plan.
    private let plans = NIOLockedValueBox(0)
    /// The resources an HLS story's preload became (its playlists and first segments), by the story's key.
    private let expansions = NIOLockedValueBox([CacheKey: [CacheKey]]())
    /// Stories found when about to play: those in line are resolved here, then preloaded.
    let late: LateSources?

    /// A driver of `preloader` with `policy`; `resolve` maps stories to URLs and keys; with `loader`, an HLS
    /// story's preload is its playlists and the segments of its first seconds.
    public init(
        preloader: Preloader, policy: PreloadPolicy, resolve: @escaping @Sendable (Story) -> ResolvedSource,
        loader: MediaLoader? = nil, throughput: ThroughputEstimate? = nil, late: LateSources? = nil
    ) {
        self.late = late
        self.throughput = throughput
        self.preloader = preloader
        self.resolve = resolve
        self.policy = NIOLockedValueBox(policy)
        self.loader = loader
    }

    /// The playing story is now `current` (nil: none): closes the gate and re-plans the queue.
    public func storyChanged(to current: Int?, navigator: StoryNavigator) {
        let (targets, seconds) = policy.withLockedValue { p -> ([Int], Double) in
            p.storyChanged()
            return (current.map { p.targets(around: $0, navigator: navigator) } ?? [], p.seconds)
        }
        preloader.pause()
        let plan = plans.withLockedValue { count -> Int in
            count += 1
            return count
        }
        let stories = navigator.stories
        let pending = targets.filter { late?.isPending(stories[$0]) == true }
        replan(targets, stories: stories, playing: current.map { stories[$0] }, seconds: seconds, plan: plan)
        guard let late, !pending.isEmpty else { return }
        // Stories in line whose pages are not resolved yet: resolved one after another, nearest first (an
        // extractor is a process of its own: the playing story keeps the machine), each joining the queue
        // as it is found.
        Task { [self] in
            for index in pending {
                guard plans.withLockedValue({ $0 }) == plan else { return }
                await late.resolve(stories[index])
                guard plans.withLockedValue({ $0 }) == plan else { return }
                replan(targets, stories: stories, playing: current.map { stories[$0] }, seconds: seconds, plan: plan)
            }
        }
    }

    /// Queues the preloads of `targets` (those that can be loaded now) for plan `plan`.
    private func replan(_ targets: [Int], stories: [Story], playing: Story?, seconds: Double, plan: Int) {
        let playing = playing.map { resolve($0).key }
        let sources = targets.filter { late?.isPending(stories[$0]) != true }.map { resolve(stories[$0]) }
        preloader.reset(
            sources.map { PreloadTarget(url: $0.url, key: $0.key, amount: .seconds(seconds)) }, playing: playing)
        // A playlist by its name, or by the type its cached copy was served with.
        let isPlaylist: @Sendable (ResolvedSource) -> Bool = { [loader] source in
            HLSPlaylistParser.isPlaylist(
                url: source.url, contentType: loader?.cached(source.key)?.metadata.contentType)
        }
        guard let loader, sources.contains(where: isPlaylist) else { return }
        // HLS stories: once their playlists are read, their first segments replace them in the same order.
        Task { [self] in
            var expanded: [PreloadTarget] = []
            for source in sources {
                let whole = PreloadTarget(url: source.url, key: source.key, amount: .seconds(seconds))
                guard isPlaylist(source) else {
                    expanded.append(whole)
                    continue
                }
                let parts = (try? await HLSStory.preloadTargets(
                    loader: loader, source: source, seconds: seconds, throughput: throughput?.bitsPerSecond)) ?? [whole]
                expansions.withLockedValue { $0[source.key] = parts.map(\.key) }
                expanded += parts
            }
            guard plans.withLockedValue({ $0 }) == plan else { return }
            preloader.reset(expanded, playing: playing)
        }
    }

    /// True once the story under `key` is preloaded: its resource, or every resource an HLS story's preload became.
    public func isPreloaded(_ key: CacheKey) -> Bool { progress(of: key, in: preloader.progress)?.phase == .preloaded }

    /// The preload of the story under `key`, given the preloader's `progress`: its resource's, or for an HLS story
    /// the resources its preload became, as one (failed if one failed, preloaded once all are, else the phase of
    /// the first not done; bytes summed).
    public func progress(of key: CacheKey, in progress: [CacheKey: PreloadProgress]) -> PreloadProgress? {
        guard let parts = expansions.withLockedValue({ $0[key] }), !parts.isEmpty else { return progress[key] }
        let each = parts.map { progress[$0] }
        if each.allSatisfy({ $0 == nil }) { return nil }
        let known = each.compactMap { $0 }
        let needed = known.count == parts.count && known.allSatisfy({ $0.neededBytes != nil })
            ? known.reduce(Int64(0)) { $0 + ($1.neededBytes ?? 0) } : nil
        var whole = PreloadProgress(phase: .preloaded, neededBytes: needed, cachedBytes: known.reduce(0) { $0 + $1.cachedBytes })
        if let failed = known.first(where: { $0.phase == .failed }) {
            whole.phase = .failed
            whole.error = failed.error
        } else if let pending = each.first(where: { $0?.phase != .preloaded }) {
            whole.phase = pending?.phase ?? .queued
        }
        return whole
    }

    /// True while preloading (and decoding ahead) may run: the playing story has enough buffered.
    public var isOpen: Bool { policy.withLockedValue { $0.isOpen } }

    /// Feeds the playing story's status, opening or closing the gate.
    public func observe(_ status: PlaybackStatus) {
        let (changed, open) = policy.withLockedValue { p in (p.update(status), p.isOpen) }
        guard changed else { return }
        if open { preloader.resume() } else { preloader.pause() }
    }

    /// Feeds `player`'s status to the gate whenever it changes, and when its buffer would run below the low-water
    /// mark with no news, then calls `each` (also when a preload moved on); until the task is cancelled. Told, not
    /// looking: nothing runs while nothing changes.
    public func watch(_ player: Player, clock: PlaybackClock, each: @Sendable () -> Void = {}) async {
        while !Task.isCancelled {
            let (seenPlayer, seenPreloads) = (player.changes.version, preloader.changes.version)
            let status = player.status
            observe(status)
            each()
            let now = clock.now
            let deadline = policy.withLockedValue { $0.nextChange(of: status, at: now) }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await player.changes.wait(after: seenPlayer) }
                group.addTask { await self.preloader.changes.wait(after: seenPreloads) }
                if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
                await group.next()
                group.cancelAll()
            }
        }
    }
}
