import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

import MediaCache

/// The code of the article "Caching video while it plays" (MediaCache.docc), run against a local origin. The
/// article quotes these lines; `theArticleQuotesThisFile` fails when a quoted block is not here word for word.
@Suite struct ArticleExampleTests {
    @Test func openAnswerPreloadAndBudget() async throws {
        let origin = try await MediaOriginServer()
        origin.set(OriginResource(bytes: content(700_000), etag: "\"v1\""), at: "/video.mp4")
        origin.set(OriginResource(bytes: content(2_000_000, seed: 2), etag: "\"v1\""), at: "/next.mp4")
        let cacheDirectory = TemporaryDirectory().url
        defer { try? FileManager.default.removeItem(at: cacheDirectory) }
        let videoURL = origin.url("video.mp4")
        let nextVideoURL = origin.url("next.mp4")

        // Opening a cache
        var configuration = CacheConfiguration()
        configuration.partialByteLimit = 200_000_000  // bytes of videos only partly cached
        configuration.completeByteLimit = 500_000_000  // bytes of videos cached whole
        configuration.completeMaxAge = 7 * 86_400  // seconds since a video was last played
        let store = try CacheStore(directory: cacheDirectory, configuration: configuration)
        let loader = MediaLoader(store: store)

        // Answering a player's loading requests
        let info = try await loader.contentInformation(for: videoURL)
        // info.contentLength, info.contentType and isByteRangeAccessSupported answer the player's first question.
        var request = LoadingRequest(url: videoURL, requestedOffset: 0, requestedLength: 64 << 10)
        request.requestedLength = nil  // to the end of the file
        var received = 0
        for try await chunk in loader.load(request) {
            // chunk.offset, chunk.bytes: hand them to the player as they arrive.
            received += chunk.bytes.count
        }

        // Preloading
        let preloader = Preloader(loader: loader)
        preloader.reset([PreloadTarget(url: nextVideoURL, amount: .bytes(512 << 10))])
        await preloader.waitUntilIdle()
        // While the playing video runs low on buffered bytes:
        preloader.pause()
        // …and once it has enough again:
        preloader.resume()

        // Budgets
        let evicted = try store.enforceBudgets()  // also runs as bytes are written
        let stats = try store.stats()

        await preloader.stop()
        await loader.shutdown()
        try store.close()
        await origin.shutdown()

        #expect(info.contentLength == 700_000)
        #expect(received == 700_000)
        #expect(evicted.isEmpty)
        #expect(stats.entries == 2)
        #expect(stats.completeBytes == 700_000)
        #expect(stats.partialBytes == 512 << 10)
    }

    @Test func theArticleQuotesThisFile() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/MediaCache/MediaCache.docc/CachingVideoWhilePlaying.md"),
            encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let normalized = { (text: String) in
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let sourceLines = normalized(source).joined(separator: "\n")
        let blocks = article.components(separatedBy: "```swift").dropFirst().compactMap {
            $0.components(separatedBy: "```").first
        }
        #expect(blocks.count >= 4, "the article shows its code")
        for block in blocks {
            let lines = normalized(block)
            // A block may leave out lines between its parts: each run of lines must appear here in order.
            #expect(sourceLines.contains(lines.joined(separator: "\n")), "not in ArticleExampleTests.swift:\n\(block)")
        }
    }
}
