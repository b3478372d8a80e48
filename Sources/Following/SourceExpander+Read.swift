import Foundation
import StoryPlayer
import MediaCache

extension SourceExpander {
    /// What following `url` would give: its report (author, status, items), or why it cannot be followed.
    public func probe(_ url: URL, name: String?) async -> (report: RefreshReport?, isPage: Bool, refusal: String?) {
        let read = await read(url, name: name, sniffing: true)
        if let unreachable = read.unreachable { return (nil, false, unreachable) }
        if read.isMedia { return (nil, false, "is a video, not a feed or a page (play it with stories-tui URL)") }
        if let report = read.report, report.status == .error {
            return (report, read.isPage, "\(report.message ?? "could not be read")")
        }
        return (read.report, read.isPage, nil)
    }

    /// Reads one source: with `sniffing`, a URL whose first bytes are media stays a story of its own.
    func read(_ url: URL, name: String?, sniffing: Bool) async -> SourceRead {
        let started = ContinuousClock.now
        // (A copy the first bytes' read just cached is no copy of an earlier refresh.)
        let cachedBefore = loader.cached(CacheKey(url: url)) != nil
        if sniffing {
            let kind: FeedParser.DocumentKind
            do {
                let info = try await loader.contentInformation(for: url)
                let length = min(4096, info.contentLength ?? 4096)
                let head = length > 0
                    ? try await loader.data(LoadingRequest(url: url, requestedOffset: 0, requestedLength: length)) : []
                kind = FeedParser.kind(of: head, contentType: info.contentType)
            } catch {
                // The player says what failed, as for any URL.
                return SourceRead(isMedia: true, unreachable: "\(error)")
            }
            switch kind {
            case .media, .hls: return SourceRead(isMedia: true)
            case .page: return await readPage(url, name: name, started: started, status: .fresh)
            case .feed: break
            }
        }
        var document: DocumentFetcher.Document
        let before = DocumentFetcher.cachedCopy(of: url, loader: loader)
        do {
            document = try await DocumentFetcher.fetch(
                url, loader: loader, timeout: feedTimeout, waitingForCheck: !cachedFirst || sniffing)
            if !cachedBefore, document.status == .notModified { document.status = .fresh }
        } catch {
            return failed(url, author: name ?? Self.host(url), error.message, started: started)
        }
        switch FeedParser.kind(of: [UInt8](document.data.prefix(4096)), contentType: document.contentType) {
        case .page:
            return await readPage(url, name: name, started: started, status: document.status)
        case .media, .hls:
            return failed(
                url, author: name ?? Self.host(url),
                "is media, not a feed or a page (play it with stories-tui URL)", started: started)
        case .feed:
            break
        }
        let feed: Feed
        do {
            feed = try FeedParser.parse(document.data, url: url)
        } catch {
            return failed(url, author: name ?? Self.host(url), error.message, started: started)
        }
        let author = name ?? feed.title.flatMap { $0.isEmpty ? nil : $0 } ?? Self.host(url)
        var result = FeedStories.stories(of: feed, from: url, author: author, since: since, now: now)
        result.stories = await resolvePages(in: result.stories)
        var read = SourceRead(stories: result.stories, skipped: result.skipped)
        if document.checkPending { read.pendingCheck = before }
        if document.status == .offline {
            read.note = "\(author): OFFLINE, showing the stories cached at the last refresh (\(document.failure ?? "the origin could not be reached"))"
        }
        read.report = RefreshReport(
            url: url, author: author, status: document.status, items: feed.items.count, stories: result.stories.count,
            milliseconds: Self.milliseconds(since: started), message: document.status == .offline ? document.failure : nil)
        return read
    }

    /// A page: its videos through yt-dlp, as stories of `name` (else the uploader, else the host).
    private func readPage(_ url: URL, name: String?, started: ContinuousClock.Instant, status: RefreshStatus) async -> SourceRead {
        let page: PageResolver.Page
        do {
            page = try await pages.resolve(url)
        } catch {
            return failed(url, author: name ?? Self.host(url), error.message, started: started)
        }
        let author = name ?? page.uploader ?? Self.host(url)
        var stories: [Story] = []
        for entry in page.entries {
            var story = Story(
                id: entry.id.map { "page\n\(url.absoluteString)\n\($0)" } ?? entry.url.absoluteString,
                title: entry.title ?? StorySources.name(of: url), source: .remote(entry.url), author: author)
            story.origin = .page
            story.published = entry.published
            story.seenKey = story.id
            story.cacheKey = Self.pageKey(url, entry)
            stories.append(story)
        }
        var read = SourceRead(stories: stories)
        read.isPage = true
        read.report = RefreshReport(
            url: url, author: author, status: status, items: page.entries.count, stories: stories.count,
            milliseconds: Self.milliseconds(since: started))
        return read
    }

    /// Feed items that link a page: each resolved to its media (at most four at once), or marked with why not.
    private func resolvePages(in stories: [Story]) async -> [Story] {
        let indices = stories.indices.filter { stories[$0].origin == .page }
        guard !indices.isEmpty else { return stories }
        var resolved = stories
        await withTaskGroup(of: (Int, Result<PageResolver.Page, FeedError>).self) { group in
            var next = 0
            func startNext() {
                guard next < indices.count else { return }
                let index = indices[next]
                next += 1
                guard case .remote(let page) = stories[index].source else { return }
                group.addTask {
                    do throws(FeedError) { return (index, .success(try await pages.resolve(page))) } catch { return (index, .failure(error)) }
                }
            }
            for _ in 0..<min(4, indices.count) { startNext() }
            while let (index, result) = await group.next() {
                guard case .remote(let page) = stories[index].source else { continue }
                switch result {
                case .success(let found):
                    if let entry = found.entries.first {
                        resolved[index].source = .remote(entry.url)
                        resolved[index].cacheKey = Self.pageKey(page, entry)
                    }
                case .failure(let error):
                    resolved[index].unavailable = error.message
                }
                startNext()
            }
        }
        return resolved
    }

    /// The cache key of a page's media: the page and the format, so a freshly signed media URL is the same entry.
    static func pageKey(_ page: URL, _ entry: PageResolver.Entry) -> String {
        "page\n\(CacheKey.normalize(page))\n\(entry.id ?? "")\n\(entry.formatID ?? "")"
    }

    private func failed(_ url: URL, author: String, _ message: String, started: ContinuousClock.Instant) -> SourceRead {
        var read = SourceRead()
        read.note = "\(author): \(OriginURL.withoutCredentials(url).absoluteString) \(message)"
        read.report = RefreshReport(
            url: url, author: author, status: .error, items: 0, stories: 0,
            milliseconds: Self.milliseconds(since: started), message: message)
        return read
    }

    static func host(_ url: URL) -> String { url.host ?? url.absoluteString }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }
}
