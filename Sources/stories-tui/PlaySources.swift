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

    /// Reads the feeds and pages among `named` (nil: the followed sources) through `loader`; `playCounts` say
    /// what was seen.
    static func load(
        _ named: StorySources?, loader: MediaLoader, settings: FollowSettings, playCounts: PlayCountStore,
        showsProgress: Bool
    ) async throws(CLIFailure) -> Loaded {
        let expander = SourceExpander(loader: loader, pages: settings.pageResolver, since: settings.since)
        let progress: @Sendable (Int, Int) -> Void = { done, total in
            guard showsProgress, total > 1 else { return }
            StandardStreams.writeError(done < total ? "\rreading \(total) sources: \(done) done" : "\r\u{1B}[K")
        }
        guard var read = named else {
            return try await following(expander: expander, settings: settings, playCounts: playCounts, progress: progress)
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
        return Loaded(sources: read, notes: expansion.notes, refreshes: expansion.refreshes, fromFeeds: !expansion.refreshes.isEmpty)
    }

    /// Everything followed, refreshed at once; the list records what each refresh found.
    private static func following(
        expander: SourceExpander, settings: FollowSettings, playCounts: PlayCountStore,
        progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws(CLIFailure) -> Loaded {
        var list = try FollowSettings.loadList()
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
        let expansion = await expander.follow(
            list.entries.map { FollowedSource(name: $0.name, url: $0.url) }, isSeen: isSeen, progress: progress)
        let now = Date()
        for report in expansion.refreshes {
            guard let index = list.index(of: report.url.absoluteString) else { continue }
            if report.status != .error { list.entries[index].refreshed = now }
            list.entries[index].newStories = expansion.stories.filter { $0.author == report.author && !isSeen($0) }.count
            list.entries[index].lastError = report.status == .error || report.status == .offline ? report.message : nil
        }
        do {
            try list.save(path: FollowSettings.listFile())
        } catch {
            StandardStreams.writeError("stories-tui: \(error.message); refresh times were not kept\n")
        }
        var skipped: [String: Int] = [:]
        for (why, count) in expansion.skipped { skipped[StorySources.itemReason + why, default: 0] += count }
        guard !expansion.stories.isEmpty else {
            let failed = expansion.refreshes.allSatisfy { $0.status == .error }
            throw CLIFailure(
                message: nothingMessage(expansion, settings: settings, sources: list.entries.count), exitCode: failed ? 1 : 0)
        }
        let file = URL(fileURLWithPath: FollowSettings.listFile())
        var sources = StorySources(
            playlist: Playlist(title: "Following", stories: expansion.stories, file: file), skipped: skipped,
            isJSONOnly: false)
        sources.namesStories = false
        return Loaded(sources: sources, notes: expansion.notes, refreshes: expansion.refreshes, fromFeeds: true)
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
