import Foundation
import MediaCache
import MediaOrigin
import MediaTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One cache directory used by several real processes at once: the proxy streaming, a headless player and a
/// prefetch, all on the same stories.
@Suite struct SharedCacheProcessTests {
    @Test(.timeLimit(.minutes(5))) func serveHeadlessPlayAndPrefetchShareOneCache() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let cache = scratch.path + "/cache"
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        // Slow enough that the three processes overlap on every story.
        let origin = try await MediaOriginServer(profile: NetworkProfile(bytesPerSecond: 6_000_000, latency: 0.01))
        let names = ["a", "b", "c"]
        var sources: [String: [UInt8]] = [:]
        for (index, name) in names.enumerated() {
            var bytes = MP4Fixture.file(duration: 2, payload: 1_200_000)
            // Distinct payloads: a byte served for the wrong story would show.
            for offset in stride(from: bytes.count - 1_000_000, to: bytes.count, by: 997) { bytes[offset] = UInt8(index + 1) }
            sources[name] = bytes
            origin.set(OriginResource(bytes: bytes, etag: "\"\(name)\""), at: "/\(name).mp4")
        }
        let urls = names.map { origin.url("\($0).mp4").absoluteString }
        let playlist = scratch.path + "/playlist.json"
        let stories = names.map { "{\"id\": \"\($0)\", \"url\": \"\(origin.url("\($0).mp4").absoluteString)\"}" }
        try Data("{\"title\": \"shared\", \"stories\": [\(stories.joined(separator: ", "))]}".utf8)
            .write(to: URL(fileURLWithPath: playlist))

        let (serve, base) = try await ServeProcess.start(["--cache-dir", cache, "--port", "0", "--quiet"])
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        async let play = CLI.run(["play", playlist, "--headless", "--no-video", "--speed", "10", "--cache-dir", cache])
        async let prefetch = CLI.run(["prefetch"] + urls + ["--full", "--cache-dir", cache])
        async let proxied = withThrowingTaskGroup(of: (String, CLIResult).self) { group in
            for name in names {
                let encoded = origin.url("\(name).mp4").absoluteString.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
                group.addTask {
                    let out = scratch.path + "/\(name).proxied"
                    let result = try await CLI.runTool(
                        "/usr/bin/env", ["curl", "-sf", "--max-time", "120", "-o", out, base + "media?url=" + encoded])
                    return (name, result)
                }
            }
            var results: [(String, CLIResult)] = []
            for try await result in group { results.append(result) }
            return results
        }
        let (played, prefetched, streamed) = try await (play, prefetch, proxied)
        #expect(played.status == 0, "play: \(played.stderr)")
        #expect(prefetched.status == 0, "prefetch: \(prefetched.stderr)")
        for (name, result) in streamed {
            #expect(result.status == 0, "curl \(name): \(result.stderr)")
            let got = FileManager.default.contents(atPath: scratch.path + "/\(name).proxied")
            #expect(got == Data(sources[name] ?? []), "the proxy served other bytes for \(name)")
        }
        try await ServeProcess.stop(serve)
        let total = sources.values.reduce(0) { $0 + $1.count }
        print("shared cache: three processes, origin sent \(origin.bodyBytesSent) bytes for \(total) bytes of stories")
        // Three processes wanted every byte; the origin sent each about once.
        #expect(origin.bodyBytesSent <= Int64(total) + 3 * 512 * 1024, "sent \(origin.bodyBytesSent) for \(total)")

        // The index agrees with itself and with the files: every story complete, every byte right.
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache])
        let figures = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(figures["entries"] as? Int == 3)
        #expect(figures["completeBytes"] as? Int == total)
        #expect(figures["partialBytes"] as? Int == 0)
        let store = try CacheStore(directory: URL(fileURLWithPath: cache), readOnly: true)
        for (name, url) in zip(names, urls) {
            let key = CacheKey(url: try #require(URL(string: url)))
            let info = try #require(store.info(for: key))
            #expect(info.isComplete)
            #expect(try store.read(key: key, range: 0..<Int64(sources[name]?.count ?? 0)) == sources[name])
        }
        try store.close()
        await origin.resetCounters()
        let again = try await CLI.run(["prefetch"] + urls + ["--full", "--cache-dir", cache])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(origin.bodyBytesSent == 0)
        await origin.shutdown()
    }

    /// Eight `fetch` processes started at once on a cache directory that does not exist yet: one creates the
    /// index, the others wait for it; all succeed with the right bytes.
    @Test(.timeLimit(.minutes(5))) func eightFetchesOnANewDirectoryAllSucceed() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        let cache = scratch.path + "/cache"
        let origin = try await MediaOriginServer()
        let bytes = content(200_000)
        origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        let url = origin.url("v.mp4").absoluteString
        let results = try await withThrowingTaskGroup(of: (Int, CLIResult).self) { group in
            for index in 0..<8 {
                group.addTask {
                    (index, try await CLI.run(["fetch", url, "-o", scratch.path + "/out\(index)", "--cache-dir", cache]))
                }
            }
            var results: [(Int, CLIResult)] = []
            for try await result in group { results.append(result) }
            return results
        }
        for (index, result) in results {
            #expect(result.status == 0, "fetch \(index): \(result.stderr)")
            #expect(FileManager.default.contents(atPath: scratch.path + "/out\(index)") == Data(bytes))
        }
        await origin.shutdown()
    }
}
