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
        /// Media URLs of stories resolved late that were resolved while their pages were read, by story id
        /// (for `lateSources(known:)`).
        public var resolved: [String: URL] = [:]
        /// Feeds read from their cached copies while their checks against the origin run: the index of the
        /// report, and the copy as it was (see `settle`).
        var pending: [(report: Int, before: ResourceInfo)] = []

        /// True while some feed's check against the origin is still running.
        public var hasPendingChecks: Bool { !pending.isEmpty }
    }

    let loader: MediaLoader
    let pages: PageResolver
    /// How far back stories go (nil: all).
    let since: TimeInterval?
    let now: Date
    /// Sources read at once.
    let concurrency: Int
    /// Followed feeds with a whole cached copy are read from it at once, their checks running beside.
    let cachedFirst: Bool
    /// How long one feed is given.
    let feedTimeout: Duration

    /// An expander reading through `loader`, resolving pages with `pages`, keeping items of the last `since`
    /// seconds before `now`, reading `concurrency` sources at once, each within `feedTimeout`. With `cachedFirst`, a followed feed cached
    /// whole plays from that copy without waiting for the origin (a reopened app shows its stories at once);
    /// `settle` says what the checks found, and posts they find show at the next open.
    public init(
        loader: MediaLoader, pages: PageResolver = PageResolver(), since: TimeInterval? = SinceOption.defaultSeconds,
        now: Date = Date(), concurrency: Int = 16, cachedFirst: Bool = false, feedTimeout: Duration = .seconds(10)
    ) {
        self.feedTimeout = feedTimeout
        self.cachedFirst = cachedFirst
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
        let order = Self.order(reads.map(\.stories), isSeen: isSeen)
        var expansion = Expansion(stories: [], skipped: [:], notes: [], refreshes: [])
        for index in order { expansion.absorb(reads[index]) }
        // Reports in the order followed.
        expansion.refreshes = []
        for read in reads {
            guard let report = read.report else { continue }
            if let before = read.pendingCheck { expansion.pending.append((expansion.refreshes.count, before)) }
            expansion.refreshes.append(report)
        }
        return expansion
    }

    /// The order authors play in, as indices of `authors` (each one's stories): those with stories not seen yet
    /// first, the most recently posted first, then the rest the same way; ties keep the order followed.
    public static func order(_ authors: [[Story]], isSeen: (Story) -> Bool) -> [Int] {
        let newest = authors.map { $0.compactMap(\.published).max() ?? .distantPast }
        let unseen = authors.map { $0.contains { !isSeen($0) } }
        return authors.indices.sorted { a, b in
            if unseen[a] != unseen[b] { return unseen[a] }
            return newest[a] == newest[b] ? a < b : newest[a] > newest[b]
        }
    }

    /// The reports once every check of a copy read at once is over (the others as they were), and one note per
    /// feed found offline.
    public func settle(_ expansion: Expansion) async -> (reports: [RefreshReport], notes: [String]) {
        var reports = expansion.refreshes
        var notes: [String] = []
        await withTaskGroup(of: (Int, RefreshStatus, String?).self) { group in
            for (index, before) in expansion.pending {
                let url = reports[index].url
                group.addTask {
                    let (status, failure) = await DocumentFetcher.settle(url, before: before, loader: loader)
                    return (index, status, failure)
                }
            }
            for await (index, status, failure) in group {
                reports[index].status = status
                switch status {
                case .offline:
                    reports[index].message = failure
                    notes.append("\(reports[index].author): OFFLINE, showing the stories cached at the last refresh (\(failure ?? "the origin could not be reached"))")
                case .fresh:
                    reports[index].message = "new posts show at the next open"
                default:
                    break
                }
            }
        }
        return (reports, notes)
    }

    /// What one source gave.
    struct SourceRead: Sendable {
        var isMedia = false
        /// Why the first bytes could not be read (a URL kept as a story: its player says so).
        var unreachable: String?
        var isPage = false
        /// The copy before a read that did not wait for its check.
        var pendingCheck: ResourceInfo?
        var stories: [Story] = []
        var skipped: [String: Int] = [:]
        var note: String?
        var report: RefreshReport?
        var resolved: [String: URL] = [:]
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
        resolved.merge(read.resolved) { first, _ in first }
    }
}
