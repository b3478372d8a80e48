import Foundation
import MediaCache
import StoryPlayer

/// A source a person follows: a feed or a page, under the name they gave it (else the feed's title).
public struct FollowedSource: Sendable, Equatable {
    /// The name shown for the author; nil: the feed's title, else its host.
    public var name: String?
    /// The feed's or page's URL.
    public var url: URL

    /// A followed source.
    public init(name: String?, url: URL) {
        self.name = name
        self.url = url
    }
}

/// Feeds and pages read into stories: URLs named on the command line that turn out to be feeds or pages, and the
/// sources a person follows, refreshed together through the cache.
public struct SourceExpander: Sendable {
    /// What the expansion gave.
    public struct Expansion: Sendable {
        /// The stories, an author's next to each other.
        public var stories: [Story]
        /// Items and entries passed over, by why.
        public var skipped: [String: Int]
        /// One sentence per source that failed or is offline, naming it.
        public var notes: [String]
        /// One report per feed or page read.
        public var refreshes: [RefreshReport]
    }

    let loader: MediaLoader
    let pages: PageResolver
    /// How far back stories go (nil: all).
    let since: TimeInterval?
    let now: Date
    /// Sources read at once.
    let concurrency: Int

    /// An expander reading through `loader`, resolving pages with `pages`, keeping items of the last `since`
    /// seconds before `now`.
    public init(
        loader: MediaLoader, pages: PageResolver = PageResolver(), since: TimeInterval? = SinceOption.defaultSeconds,
        now: Date = Date(), concurrency: Int = 8
    ) {
        self.loader = loader
        self.pages = pages
        self.since = since
        self.now = now
        self.concurrency = max(1, concurrency)
    }

    /// URLs that may be feeds or pages: a URL whose path does not end in a media extension.
    public static func mayBeFeedOrPage(_ story: Story) -> Bool {
        guard story.origin == .named, case .remote(let url) = story.source else { return false }
        let ext = url.pathExtension.lowercased()
        return !(StorySources.mediaExtensions.contains(ext) || ext == "m3u8" || ext == "m3u")
    }

    /// `stories` with every URL that is a feed or a page replaced by the stories it gives (media URLs stay).
    public func expand(_ stories: [Story], progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }) async -> Expansion {
        let candidates = stories.indices.filter { Self.mayBeFeedOrPage(stories[$0]) }
        let reads = await readAll(candidates.map { index -> (URL, String?) in
            guard case .remote(let url) = stories[index].source else { return (URL(fileURLWithPath: "/"), nil) }
            return (url, nil)
        }, sniffing: true, progress: progress)
        var byIndex: [Int: SourceRead] = [:]
        for (index, read) in zip(candidates, reads) { byIndex[index] = read }
        var expansion = Expansion(stories: [], skipped: [:], notes: [], refreshes: [])
        for (index, story) in stories.enumerated() {
            guard let read = byIndex[index], !read.isMedia else {
                expansion.stories.append(story)
                continue
            }
            expansion.absorb(read)
        }
        return expansion
    }

    /// The stories of everything followed, refreshed at once: authors with unseen stories first (the most
    /// recently posted first), then the rest. `isSeen` says whether a story was seen.
    public func follow(
        _ sources: [FollowedSource], isSeen: @escaping @Sendable (Story) -> Bool,
        progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }
    ) async -> Expansion {
        let reads = await readAll(sources.map { ($0.url, $0.name) }, sniffing: false, progress: progress)
        let ordered = reads.enumerated().sorted { a, b in
            let (x, y) = (a.element.stories, b.element.stories)
            let unseenX = x.contains { !isSeen($0) }
            let unseenY = y.contains { !isSeen($0) }
            if unseenX != unseenY { return unseenX }
            let newestX = x.compactMap(\.published).max() ?? .distantPast
            let newestY = y.compactMap(\.published).max() ?? .distantPast
            return newestX == newestY ? a.offset < b.offset : newestX > newestY
        }
        var expansion = Expansion(stories: [], skipped: [:], notes: [], refreshes: [])
        for (_, read) in ordered { expansion.absorb(read) }
        // Reports in the order followed.
        expansion.refreshes = reads.compactMap(\.report)
        return expansion
    }

    /// What one source gave.
    struct SourceRead: Sendable {
        var isMedia = false
        /// Why the first bytes could not be read (a URL kept as a story: its player says so).
        var unreachable: String?
        var isPage = false
        var stories: [Story] = []
        var skipped: [String: Int] = [:]
        var note: String?
        var report: RefreshReport?
    }

    /// Reads `sources` with at most `concurrency` at once, in their order.
    private func readAll(
        _ sources: [(URL, String?)], sniffing: Bool, progress: @escaping @Sendable (Int, Int) -> Void
    ) async -> [SourceRead] {
        var results = [SourceRead?](repeating: nil, count: sources.count)
        await withTaskGroup(of: (Int, SourceRead).self) { group in
            var next = 0
            var done = 0
            func startNext() {
                guard next < sources.count else { return }
                let (index, (url, name)) = (next, sources[next])
                next += 1
                group.addTask { (index, await read(url, name: name, sniffing: sniffing)) }
            }
            for _ in 0..<min(concurrency, sources.count) { startNext() }
            while let (index, read) = await group.next() {
                results[index] = read
                done += 1
                progress(done, sources.count)
                startNext()
            }
        }
        return results.map { $0 ?? SourceRead() }
    }
}

extension SourceExpander.Expansion {
    mutating func absorb(_ read: SourceExpander.SourceRead) {
        stories += read.stories
        for (why, count) in read.skipped { skipped[why, default: 0] += count }
        if let note = read.note { notes.append(note) }
        if let report = read.report { refreshes.append(report) }
    }
}
