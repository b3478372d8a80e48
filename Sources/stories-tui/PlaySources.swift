import Following
import Foundation
import MediaCache
import StoryPlayer

/// What `play` plays: the sources named (feeds and pages among their URLs read into stories), or with none,
/// everything followed, refreshed at once.
enum PlaySources {
    /// The stories and what reading them found.
    struct Loaded {
        var sources: StorySources
        /// One sentence per source that failed or is offline.
        var notes: [String]
        /// One report per feed or page read.
        var refreshes: [RefreshReport]
        /// Stories came from feeds or pages (the run succeeds when anything played).
        var fromFeeds: Bool
        /// The reports and notes once the checks of feeds read from their cached copies are over (the list of
        /// people followed then records them); the reports above, at once, when none was.
        var settled: @Sendable () async -> (reports: [RefreshReport], notes: [String]) = { ([], []) }
        /// Where stories whose pages are resolved as they come up find their media; nil: none is.
        var late: LateSources?
    }

    /// The sources `arguments` name, read as files and URLs (nil for none: the followed sources); a bad one is
    /// one sentence and exit code 2, before anything is opened.
    static func named(_ arguments: [String]) throws(CLIFailure) -> StorySources? {
        guard !arguments.isEmpty else { return nil }
        do {
            return try StorySources.load(arguments)
        } catch {
            throw CLIFailure(message: "\(error)", exitCode: 2)
        }
    }

    /// What was passed over, for stderr: the counts by why, then each file with why (relative to `directory` when
    /// inside it): the first three, or every one when `all`.
    static func skippedLines(
        _ sources: StorySources, all: Bool, directory: String = FileManager.default.currentDirectoryPath
    ) -> [String] {
        guard let note = sources.skippedNote else { return [] }
        let shown = all ? sources.skippedFiles : Array(sources.skippedFiles.prefix(3))
        let inside = directory.hasSuffix("/") ? directory : directory + "/"
        var lines = ["stories-tui: \(note)"]
        for file in shown {
            let path = file.path.hasPrefix(inside) ? String(file.path.dropFirst(inside.count)) : file.path
            lines.append("  \(path): \(file.reason)")
        }
        let rest = sources.skippedFiles.count - shown.count
        if rest > 0 { lines.append("  and \(rest) more (--verbose names every one)") }
        return lines
    }

    /// Reads the feeds and pages among `named` (nil: the followed sources) through `loader`; `playCounts` say
    /// what was seen.
    /// The stories of the last refresh of everything followed are kept in `snapshots` (the cache directory).
    static func load(
        _ named: StorySources?, loader: MediaLoader, settings: FollowSettings, playCounts: PlayCountStore,
        showsProgress: Bool, snapshots: URL, firstFrame: FirstFrameLatch
    ) async throws(CLIFailure) -> Loaded {
        // The people followed play from their feeds' cached copies at once (a reopened app shows its stories
        // without waiting on twenty origins); feeds named on the command line are read fresh.
        let expander = SourceExpander(
            loader: loader, pages: settings.pageResolver, since: settings.since, cachedFirst: named == nil)
        let progress: @Sendable (Int, Int) -> Void = { done, total in
            guard showsProgress, total > 1 else { return }
            StandardStreams.writeError(done < total ? "\rreading \(total) sources: \(done) done" : "\r\u{1B}[K")
        }
        guard var read = named else {
            return try await following(
                expander: expander, settings: settings, playCounts: playCounts, progress: progress, snapshots: snapshots,
                firstFrame: firstFrame, refresher: SourceExpander(loader: loader, pages: settings.pageResolver, since: settings.since))
        }
        guard read.playlist.stories.contains(where: SourceExpander.mayBeFeedOrPage) else {
            return Loaded(sources: read, notes: [], refreshes: [], fromFeeds: false)
        }
        let expansion = await expander.expand(read.playlist.stories, progress: progress)
        for (why, count) in expansion.skipped { read.skipped[StorySources.itemReason + why, default: 0] += count }
        guard !expansion.stories.isEmpty else {
            throw CLIFailure(message: nothingMessage(expansion, settings: settings, sources: expansion.refreshes.count), exitCode: 1)
        }
        read.playlist.stories = expansion.stories
        read.isJSONOnly = false
        // A feed or page names many stories, in an order of its own.
        if !expansion.refreshes.isEmpty { read.namesStories = false }
        var loaded = Loaded(sources: read, notes: expansion.notes, refreshes: expansion.refreshes, fromFeeds: !expansion.refreshes.isEmpty)
        loaded.settled = { [refreshes = expansion.refreshes] in (refreshes, []) }
        loaded.late = expander.lateSources(known: expansion.resolved)
        return loaded
    }

    /// Everything followed, refreshed at once; the list records what each refresh found.
    /// With a snapshot of the last refresh, its stories play at once and `refresher` refreshes everything beside
    /// them (what it finds shows at the next open); without one, `expander` reads every feed first.
    private static func following(
        expander: SourceExpander, settings: FollowSettings, playCounts: PlayCountStore,
        progress: @escaping @Sendable (Int, Int) -> Void, snapshots: URL, firstFrame: FirstFrameLatch,
        refresher: SourceExpander
    ) async throws(CLIFailure) -> Loaded {
        let list = try FollowSettings.loadList()
        guard !list.entries.isEmpty else {
            throw CLIFailure(
                message: """
                    nothing to play: you follow no one yet.
                      Follow someone's feed or page:  stories-tui follow add https://example.social/@ana.rss
                      Import a feed reader's list:    stories-tui follow import subscriptions.opml
                      Or open what you have:          stories-tui ~/Videos/stories  (a folder, files, URLs or a playlist)
                    """, exitCode: 2)
        }
        let counts = (try? playCounts.counts()) ?? [:]
        let isSeen: @Sendable (Story) -> Bool = { (counts[StorySession.playKey($0)] ?? 0) > 0 }
        let followed = list.entries.map { FollowedSource(name: $0.name, url: $0.url) }
        let file = URL(fileURLWithPath: FollowSettings.listFile())
        if let snapshot = FollowSnapshot.load(from: snapshots), snapshot.matches(followed, since: settings.since) {
            let stories = snapshot.stories(now: Date(), isSeen: isSeen)
            if !stories.isEmpty {
                var skipped: [String: Int] = [:]
                for (why, count) in snapshot.skippedItems { skipped[StorySources.itemReason + why, default: 0] += count }
                var sources = StorySources(
                    playlist: Playlist(title: "Following", stories: stories, file: file), skipped: skipped, isJSONOnly: false)
                sources.namesStories = false
                var loaded = Loaded(sources: sources, notes: [], refreshes: [], fromFeeds: true)
                loaded.late = expander.lateSources()
                loaded.settled = { [list] in
                    // After the first picture: the story the person opened the app for does not share its start
                    // with twenty requests.
                    await firstFrame.wait(atMost: .seconds(2))
                    let expansion = await refresher.follow(followed, isSeen: isSeen)
                    guard !Task.isCancelled else { return ([], []) }
                    FollowSnapshot(sources: followed, since: settings.since, stories: expansion.stories, skipped: expansion.skipped)
                        .save(to: snapshots)
                    record(expansion.refreshes, stories: expansion.stories, isSeen: isSeen, in: list)
                    return (expansion.refreshes, expansion.notes)
                }
                return loaded
            }
        }
        let expansion = await expander.follow(followed, isSeen: isSeen, progress: progress)
        FollowSnapshot(sources: followed, since: settings.since, stories: expansion.stories, skipped: expansion.skipped)
            .save(to: snapshots)
        var skipped: [String: Int] = [:]
        for (why, count) in expansion.skipped { skipped[StorySources.itemReason + why, default: 0] += count }
        guard !expansion.stories.isEmpty else {
            // Nothing to play while the checks run: wait for them, so the list and the message say what they found.
            var expansion = expansion
            let (reports, notes) = await expander.settle(expansion)
            expansion.refreshes = reports
            expansion.notes += notes
            record(expansion.refreshes, stories: [], isSeen: isSeen, in: list)
            let failed = expansion.refreshes.allSatisfy { $0.status == .error }
            throw CLIFailure(
                message: nothingMessage(expansion, settings: settings, sources: list.entries.count), exitCode: failed ? 1 : 0)
        }
        var sources = StorySources(
            playlist: Playlist(title: "Following", stories: expansion.stories, file: file), skipped: skipped,
            isJSONOnly: false)
        sources.namesStories = false
        // Feeds read from their cached copies: their reports once the checks are over; the list records them.
        let settled: @Sendable () async -> (reports: [RefreshReport], notes: [String]) = { [list, expansion] in
            let (reports, notes) = await expander.settle(expansion)
            record(reports, stories: expansion.stories, isSeen: isSeen, in: list)
            return (reports, notes)
        }
        var loaded = Loaded(
            sources: sources, notes: expansion.notes, refreshes: expansion.hasPendingChecks ? [] : expansion.refreshes,
            fromFeeds: true)
        loaded.settled = settled
        loaded.late = expander.lateSources(known: expansion.resolved)
        return loaded
    }

    /// Keeps what each refresh found in the list of people followed.
    private static func record(
        _ reports: [RefreshReport], stories: [Story], isSeen: @Sendable (Story) -> Bool, in list: FollowList
    ) {
        var list = list
        let now = Date()
        for report in reports {
            guard let index = list.index(of: report.url.absoluteString) else { continue }
            if report.status != .error { list.entries[index].refreshed = now }
            list.entries[index].newStories = stories.filter { $0.author == report.author && !isSeen($0) }.count
            list.entries[index].lastError = report.status == .error || report.status == .offline ? report.message : nil
        }
        do {
            try list.save(path: FollowSettings.listFile())
        } catch {
            StandardStreams.writeError("stories-tui: \(error.message); refresh times were not kept\n")
        }
    }

    /// Why nothing plays, with what each source said.
    private static func nothingMessage(_ expansion: SourceExpander.Expansion, settings: FollowSettings, sources: Int) -> String {
        let lines = expansion.notes.map { "  " + $0 }
        let window = settings.since.map { "in the last \(SinceOption.describe($0))" } ?? "at all"
        let what = sources == 1 ? "the source given" : "the \(sources) sources"
        let hint = settings.since == nil ? "" : " (--since 3d or --since all shows older stories)"
        return (["nothing to play: \(what) posted no video or photo \(window)\(hint)"] + lines).joined(separator: "\n")
    }
}

/// Opens once the run's first story shows its first frame (or a story could not play): what waits for it starts
/// after the picture the person opened the app for.
final class FirstFrameLatch: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() { (stream, continuation) = AsyncStream<Void>.makeStream() }

    /// Notes an event of the run.
    func note(_ event: PlayerEvent) {
        switch event {
        case .firstFrame, .failed, .playlistEnd: continuation.finish()
        default: break
        }
    }

    /// Returns once open, or after `limit`.
    func wait(atMost limit: Duration) async {
        let timer = Task { [continuation] in
            try await Task.sleep(for: limit)
            continuation.finish()
        }
        for await _ in stream {}
        timer.cancel()
    }
}
