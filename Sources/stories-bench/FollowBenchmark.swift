import Following
import Foundation
import MediaCache
import MediaOrigin
import NIOConcurrencyHelpers
import StoryPlayer

/// Opening the people followed: 20 feeds that each answer after 100 ms, refreshed one at a time (the baseline)
/// and as `stories-tui` does; then, with every feed answering 304, the time from opening to the first frame
/// against the same cached stories opened as URLs.
///
///     swift run -c release stories-bench follow [--feeds N] [--rounds N]
enum FollowBenchmark {
    static func main(_ arguments: [String]) async {
        var arguments = arguments
        var feeds = 20
        var rounds = 5
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch (argument, arguments.first) {
            case ("--feeds", let value?):
                guard let n = Int(value), n > 0 else { PreloadBenchmark.fail("--feeds needs a number above 0") }
                feeds = n
            case ("--rounds", let value?):
                guard let n = Int(value), n > 0 else { PreloadBenchmark.fail("--rounds needs a number above 0") }
                rounds = n
            default:
                PreloadBenchmark.fail("usage: stories-bench follow [--feeds N] [--rounds N]")
            }
            arguments.removeFirst()
        }
        do {
            try await run(feeds: feeds, rounds: rounds)
        } catch {
            PreloadBenchmark.fail("follow: \(error)")
        }
    }

    static func run(feeds: Int, rounds: Int) async throws {
        let clips = try ["bars.mp4", "life.mp4", "mandel.mp4"].map {
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: "assets/videos/\($0)")))
        }
        let origin = try await MediaOriginServer(profile: NetworkProfile(bytesPerSecond: nil, latency: 0.1))
        defer { Task { await origin.shutdown() } }
        var sources: [FollowedSource] = []
        for n in 0..<feeds {
            origin.set(OriginResource(bytes: clips[n % clips.count], etag: "\"v\(n)\""), at: "/v/\(n).mp4")
            let date = HTTPDateText.now()
            let feed = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Author \(n)</title><item>"
                + "<title>Story \(n)</title><guid>s\(n)</guid><pubDate>\(date)</pubDate>"
                + "<enclosure url=\"\(origin.url("v/\(n).mp4").absoluteString)?token=\(UUID().uuidString)\" type=\"video/mp4\"/>"
                + "</item></channel></rss>"
            origin.set(OriginResource(bytes: Array(feed.utf8), etag: "\"f\(n)\"", contentType: "application/rss+xml"), at: "/f/\(n).rss")
            sources.append(FollowedSource(name: nil, url: origin.url("f/\(n).rss")))
        }
        print("\(feeds) feeds, each answering after 100 ms; \(rounds) rounds, fresh cache each")
        print("")
        print("refresh                 p50 ms   max ms")
        var times: [Int: [Double]] = [1: [], 16: []]
        for _ in 0..<rounds {
            for concurrency in [1, 16] {
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: directory) }
                let store = try CacheStore(directory: directory)
                let loader = MediaLoader(store: store)
                let start = ContinuousClock.now
                let expansion = await SourceExpander(loader: loader, concurrency: concurrency).follow(sources, isSeen: { _ in false })
                times[concurrency, default: []].append(milliseconds(ContinuousClock.now - start))
                guard expansion.stories.count == feeds else { PreloadBenchmark.fail("follow: \(expansion.notes)") }
                await loader.shutdown()
                try store.close()
            }
        }
        for concurrency in [1, 16] {
            let values = times[concurrency] ?? []
            print((concurrency == 1 ? "one at a time" : "16 at once").padding(toLength: 20, withPad: " ", startingAt: 0)
                + format(median(values)).leftPad(10) + format(values.max() ?? 0).leftPad(9))
        }

        // Opening to the first frame, everything cached: the feeds answer 304 (one round trip each, at once).
        print("")
        print("open to first frame, all cached     p50 ms   ratio")
        var open: [Bool: [Double]] = [false: [], true: []]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var stories: [Story] = []
        do {
            let store = try CacheStore(directory: directory)
            let loader = MediaLoader(store: store)
            stories = await SourceExpander(loader: loader).follow(sources, isSeen: { _ in false }).stories
            FollowSnapshot(sources: sources, since: SinceOption.defaultSeconds, stories: stories, skipped: [:]).save(to: directory)
            for story in stories {
                guard case .remote(let url) = story.source else { continue }
                _ = try await loader.data(LoadingRequest(url: url))
            }
            await loader.shutdown()
            try store.close()
        }
        for _ in 0..<rounds {
            for following in [false, true] {
                let store = try CacheStore(directory: directory)
                let loader = MediaLoader(store: store)
                let start = ContinuousClock.now
                let first = NIOLockedValueBox<Double?>(nil)
                // As `stories-tui` opens the people followed: the last refresh's stories at once, the feeds
                // refreshed beside (each answering 304).
                let refresh: Task<Void, Never>?
                let playlistStories: [Story]
                if following {
                    let snapshot = FollowSnapshot.load(from: directory)
                    playlistStories = snapshot?.stories(now: Date(), isSeen: { _ in false }) ?? []
                    // (After the first frame, as `stories-tui` starts it.)
                    refresh = Task { [sources] in
                        while first.withLockedValue({ $0 }) == nil, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
                        _ = await SourceExpander(loader: loader).follow(sources, isSeen: { _ in false })
                    }
                } else {
                    playlistStories = stories.map { Story(id: $0.id, title: $0.title, source: $0.source) }
                    refresh = nil
                }
                let playlist = Playlist(title: "bench", stories: playlistStories, file: directory.appendingPathComponent("p"))
                var configuration = PlayerConfiguration()
                configuration.decodesVideo = false
                let session = StorySession(
                    playlist: playlist, loader: loader, resolve: StorySession.resolver(originBase: nil),
                    clock: RealPlaybackClock(), configuration: configuration, showAll: true)
                let run = Task {
                    try await session.runHeadless { event in
                        guard case .firstFrame = event else { return }
                        first.withLockedValue { if $0 == nil { $0 = milliseconds(ContinuousClock.now - start) } }
                    }
                }
                while first.withLockedValue({ $0 }) == nil { try await Task.sleep(for: .milliseconds(2)) }
                run.cancel()
                _ = await run.result
                open[following, default: []].append(first.withLockedValue { $0 } ?? 0)
                await refresh?.value
                await loader.shutdown()
                try store.close()
            }
        }
        let base = median(open[false] ?? [])
        for following in [false, true] {
            let value = median(open[following] ?? [])
            print((following ? "following (feeds answer 304)" : "the same stories as URLs").padding(toLength: 33, withPad: " ", startingAt: 0)
                + format(value).leftPad(9) + String(format: "%.2fx", base > 0 ? value / base : 0).leftPad(8))
        }
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[values.count / 2]
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }
}

/// Today's date as RSS writes it.
enum HTTPDateText {
    static func now() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        return formatter.string(from: Date())
    }
}
