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
        // Items that link a page are resolved when they are about to play (their media URLs expire).
        for index in result.stories.indices where result.stories[index].origin == .page {
            guard case .remote(let page) = result.stories[index].source else { continue }
            result.stories[index].resolvesLate = true
            result.stories[index].cacheKey = pageKey(page)
        }
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
        var resolved: [String: URL] = [:]
        for entry in page.entries {
            loader.setRequestHeaders(entry.headers, for: entry.url)
            // A video's own page (a playlist's entries have one) is what it is resolved from again next time.
            let own = entry.page ?? (page.entries.count == 1 ? url : nil)
            var story = Story(
                id: entry.id.map { "page\n\(url.absoluteString)\n\($0)" } ?? entry.url.absoluteString,
                title: entry.title ?? StorySources.name(of: url), source: .remote(own ?? entry.url), author: author)
            story.captions = entry.captionSources
            story.origin = .page
            story.published = entry.published
            story.seenKey = story.id
            if let own {
                story.resolvesLate = true
                story.cacheKey = pageKey(own)
                resolved[story.id] = entry.url
            } else {
                story.cacheKey = pageKey(url) + "\n" + (entry.id ?? entry.url.absoluteString)
            }
            stories.append(story)
        }
        var read = SourceRead(stories: stories)
        read.isPage = true
        read.resolved = resolved
        read.report = RefreshReport(
            url: url, author: author, status: status, items: page.entries.count, stories: stories.count,
            milliseconds: Self.milliseconds(since: started))
        return read
    }

    /// Where stories resolved late find their media: `yt-dlp` on their page, its first video, the headers it
    /// asks for set on the loader. `known` are the stories already resolved while their sources were read.
    public func lateSources(known: [String: URL] = [:]) -> LateSources {
        let late = LateSources { [pages, loader] story in
            guard case .remote(let page) = story.source else { return .failed("has no page to resolve") }
            do throws(FeedError) {
                let found = try await pages.resolve(page)
                guard let entry = found.entries.first else { return .failed("yt-dlp found no playable file on the page") }
                loader.setRequestHeaders(entry.headers, for: entry.url)
                return LateSources.Outcome.found(entry.url, captions: entry.captionSources)
            } catch {
                return .failed(error.message)
            }
        }
        for (id, url) in known { late.record(LateSources.Outcome.found(url, captions: []), forStory: id) }
        return late
    }

    /// The cache key of a page's media: the page and the format selector, so a freshly signed media URL is the
    /// same entry (a site that serves the selector another file makes a new version: its validators differ).
    func pageKey(_ page: URL) -> String { "page\n\(CacheKey.normalize(page))\n\(pages.format)" }

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
