import Foundation
import MediaCache

/// How a story's video is reached: the URL to load and the key its bytes are cached under.
public struct ResolvedSource: Sendable {
    /// The URL the loader fetches.
    public var url: URL
    /// A stable cache key (local files are served from a port that changes between runs).
    public var key: CacheKey
    /// The key of a resource the story's own refers to (an HLS story's variant playlists and segments).
    public var partKey: @Sendable (URL) -> CacheKey

    /// Creates a resolved source; parts are keyed by their URL unless `partKey` says otherwise.
    public init(url: URL, key: CacheKey, partKey: @escaping @Sendable (URL) -> CacheKey = { CacheKey(url: $0) }) {
        self.url = url
        self.key = key
        self.partKey = partKey
    }
}

/// Runs a playlist: navigation, players, play counts persisted beside the cache.
public final class StorySession: Sendable {
    /// The playlist.
    public let playlist: Playlist
    let loader: MediaLoader
    let resolve: @Sendable (Story) -> ResolvedSource
    let clock: PlaybackClock
    let configuration: PlayerConfiguration
    let showAll: Bool
    /// Where play counts persist; nil keeps them for this run only.
    public let playCounts: PlayCountStore?
    /// Preloads around the playing story; nil when preloading is off.
    public let preload: PreloadDriver?
    /// The link as this session's players measured it.
    public let throughput: ThroughputEstimate
    /// Where the stories' sound goes; nil: stories play silent.
    public let sound: SoundOutput?
    /// Counts changes of what its players show (a first frame, a state, a frame), for a screen that waits on it.
    public let updates = ChangeSignal()
    /// Stories start muted (the viewer can unmute them).
    let startsMuted: Bool
    /// The run starts at the first story, not at the first one not seen yet.
    let fromStart: Bool
    /// Stories whose media URL is found when they are about to play; nil: none is.
    public let late: LateSources?
    /// Where views are written, one after another, off the playback path.
    private let viewWrites = DispatchQueue(label: "stories-tui.play-counts", qos: .utility)

    /// A session over `playlist`; `resolve` maps stories to URLs and keys; `preload` (nil: off) preloads the
    /// neighbours of the playing story; `playCounts` (nil: this run only) keeps the counts `maxViews` is checked
    /// against and seen state is read from; `fromStart` starts at the first story even when it was seen.
    public init(
        playlist: Playlist, loader: MediaLoader, resolve: @escaping @Sendable (Story) -> ResolvedSource,
        clock: PlaybackClock, configuration: PlayerConfiguration = PlayerConfiguration(), showAll: Bool = false,
        preload: PreloadPolicy? = nil, playCounts: PlayCountStore? = nil, sound: SoundOutput? = nil,
        muted: Bool = false, fromStart: Bool = false, late: LateSources? = nil
    ) {
        let resolve = Self.resolving(resolve, late: late)
        self.late = late
        self.fromStart = fromStart
        self.sound = sound
        startsMuted = muted
        self.playCounts = playCounts
        let throughput = ThroughputEstimate()
        self.throughput = throughput
        self.preload = preload.map { policy in
            var configuration = PreloadConfiguration()
            configuration.seconds = policy.seconds
            return PreloadDriver(
                preloader: Preloader(loader: loader, configuration: configuration, planner: MediaPreloadPlanning()), policy: policy,
                resolve: resolve, loader: loader, throughput: throughput, late: late)
        }
        self.playlist = playlist
        self.loader = loader
        self.resolve = resolve
        self.clock = clock
        self.configuration = configuration
        self.showAll = showAll
    }

    /// Maps stories to URLs: remote ones as they are, local ones through the built-in origin at `originBase`
    /// under a key that does not depend on its port (so the cache carries over between runs). A file named by a
    /// path relative to a JSON playlist is served at that path (the origin's root is the playlist's folder), any
    /// other file at its own absolute path (the origin serves its folder there). Without an origin, local files
    /// are `file:` URLs, which the loader reads straight from disk (nothing is cached).
    /// Remote URLs are keyed under `keyRule` (which query parameters name no bytes), unless the story names its key.
    /// `naming` hears each served file's key with the file's own URL, for the loader to record it by (`record(_:as:)`):
    /// listed by path, not by the origin's port of one run.
    public static func resolver(
        originBase: URL?, keyRule: CacheKeyRule = .standard,
        naming: (@Sendable (CacheKey, URL) -> Void)? = nil
    ) -> @Sendable (Story) -> ResolvedSource {
        { story in
            switch story.source {
            case .remote(let url):
                return ResolvedSource(url: url, key: story.cacheKey.map { CacheKey(custom: $0) } ?? CacheKey(url: url, rule: keyRule))
            case .local(let path, let file):
                let filePath = file.standardizedFileURL.path
                guard let base = originBase else {
                    return ResolvedSource(url: URL(fileURLWithPath: filePath), key: Self.localKey(filePath)) { part in
                        part.isFileURL ? Self.localKey(part.standardizedFileURL.path) : CacheKey(url: part)
                    }
                }
                let absolute = path.hasPrefix("/")
                // The folder URL paths are relative to: the root for absolute paths, else the playlist's folder.
                let folder = absolute ? "/" : StorySource.servedFolder(path: path, file: file).path
                let url = base.appendingPathComponent(absolute ? filePath : path)
                let key = Self.localKey(filePath)
                naming?(key, URL(fileURLWithPath: filePath))
                return ResolvedSource(url: url, key: key) { part in
                    // A part served by the same origin is a file of that folder: keyed by its path, like the story.
                    guard part.host == base.host, part.port == base.port else { return CacheKey(url: part) }
                    let relative = part.path.drop { $0 == "/" }
                    let partPath = URL(fileURLWithPath: folder).appendingPathComponent(String(relative)).standardizedFileURL.path
                    let partKey = Self.localKey(partPath)
                    naming?(partKey, URL(fileURLWithPath: partPath))
                    return partKey
                }
            }
        }
    }

    /// `resolve`, with stories resolved late loading from the URL they resolved to, under the key they name.
    private static func resolving(
        _ resolve: @escaping @Sendable (Story) -> ResolvedSource, late: LateSources?
    ) -> @Sendable (Story) -> ResolvedSource {
        guard let late else { return resolve }
        return { story in
            guard case .found(let url, _)? = late.known(story) else { return resolve(story) }
            var found = story
            found.source = .remote(url)
            return resolve(found)
        }
    }

    /// The key of a local file's bytes (served over a simulated link), by its absolute, standardized path.
    public static func localKey(_ path: String) -> CacheKey { CacheKey(custom: "local-file\n\(path)") }

    /// The key a story's play count is stored under.
    public static func playKey(_ story: Story) -> CacheKey {
        if let seenKey = story.seenKey { return CacheKey(custom: "story-seen\n\(seenKey)") }
        return CacheKey(custom: "story-play\n\(story.id)\n\(story.urlText)")
    }

    /// Play counts of every story, as persisted (all 0 without a `PlayCountStore`).
    public func loadPlayCounts() throws -> [String: Int] {
        let counts = try playCounts?.counts() ?? [:]
        var result: [String: Int] = [:]
        for story in playlist.stories { result[story.id] = counts[Self.playKey(story)] ?? 0 }
        return result
    }

    /// A new navigator with the persisted play counts.
    public func makeNavigator() throws -> StoryNavigator {
        StoryNavigator(stories: playlist.stories, playCounts: try loadPlayCounts(), showAll: showAll)
    }

    /// A player for story `index`.
    public func makePlayer(
        for index: Int, muted: Bool = false, onEvent: @escaping @Sendable (PlayerEvent) -> Void
    ) -> Player {
        let story = playlist.stories[index]
        let source = resolve(story)
        return Player(
            loader: loader, url: source.url, cacheKey: source.key, storyID: story.id, clock: clock,
            configuration: configuration, fallbackDuration: story.duration, partKey: source.partKey,
            throughput: throughput, sound: sound, muted: muted, unavailable: story.unavailable ?? lateFailure(story),
            captions: story.captions + lateCaptions(story), captionFile: Self.localFile(story), updates: updates,
            onEvent: onEvent)
    }

    /// The path of a local story's file.
    private static func localFile(_ story: Story) -> String? {
        if case .local(_, let file) = story.source { return file.path }
        return nil
    }

    /// The caption files a story resolved late was found with.
    private func lateCaptions(_ story: Story) -> [CaptionSource] {
        if case .found(_, let captions)? = late?.known(story) { return captions }
        return []
    }

    /// Why a story resolved late cannot play, once that is known.
    private func lateFailure(_ story: Story) -> String? {
        if case .failed(let reason)? = late?.known(story) { return reason }
        if let late, late.isPending(story) { return "its page was not resolved" }
        return nil
    }

    /// Counts a view of story `index` in the persisted play counts (the controller calls it once per story and
    /// run, at its first frame). Written on a queue of its own, in order: the playback path never waits on the
    /// disk (or on another process holding the file); `viewsWritten()` waits for what is queued.
    public func recordView(of index: Int) {
        let story = playlist.stories[index]
        let (counts, key, resource) = (playCounts, Self.playKey(story), resolve(story).key)
        viewWrites.async {
            // Another process holding the file past the busy timeout (5 s) is waited out a few times over.
            for _ in 0..<4 {
                if (try? counts?.record(key, resource: resource)) != nil { break }
            }
        }
    }

    /// Returns once every view recorded so far is written.
    public func viewsWritten() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in viewWrites.async { done.resume() } }
    }

    /// Plays every eligible story in order (auto-advance), reporting events; returns what the run did. The same
    /// loop as the interactive screen (`StoryController`), without a viewer and without the pause on a failed
    /// story.
    @discardableResult
    public func runHeadless(emit: @escaping @Sendable (PlayerEvent) -> Void) async throws -> PlaylistSummary {
        try await StoryController(session: self, failureDwell: 0, onEvent: emit).playToEnd()
    }
}
