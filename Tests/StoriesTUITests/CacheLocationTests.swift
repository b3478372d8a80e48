import Foundation
import MediaCache
import Testing

@testable import stories_tui

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the program keeps its cache and how it words the library's failures to open it.
@Suite struct CacheLocationTests {
    @Test func cacheDirectoryPrecedence() {
        let env = ["STORIES_CACHE_DIR": "/s", "XDG_CACHE_HOME": "/x", "HOME": "/h"]
        #expect(CacheLocation.resolve(explicit: "/flag", environment: env).path == "/flag")
        #expect(CacheLocation.resolve(explicit: nil, environment: env).path == "/s")
        #expect(CacheLocation.resolve(explicit: nil, environment: ["XDG_CACHE_HOME": "/x", "HOME": "/h"]).path
            == "/x/stories-tui")
        #expect(CacheLocation.resolve(explicit: nil, environment: ["HOME": "/h"]).path == "/h/.cache/stories-tui")
        #expect(CacheLocation.resolve(explicit: "~/c", environment: ["HOME": "/h"]).path == "/h/c")
    }

    @Test func theLibrarySaysWhatHappenedAndTheProgramWhichOptionToChange() {
        let full = CacheError.index("cannot open /c/index.sqlite: the disk is full (free some space or use a different cache directory)")
        #expect(CacheLocation.describe(full).hasSuffix("(free some space or pass a different --cache-dir)"))
    }

    /// Another process in the middle of opening the cache (holding the directory lock exclusively, as the first
    /// process after a crash does while it sweeps) does not hold up commands that only look.
    @Test(.timeLimit(.minutes(5))) func inspectingACacheInUseNeverWaits() async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let store = try CacheStore(directory: URL(fileURLWithPath: cache.path))
        let key = CacheKey(url: try #require(URL(string: "http://127.0.0.1/a.mp4")))
        guard case .cacheable(let generation, _) = try store.prepare(
            key: key, metadata: ResourceMetadata(url: "http://127.0.0.1/a.mp4", contentLength: 10))
        else { throw CacheError.notCached(key) }
        try store.write(key: key, generation: generation, offset: 0, bytes: [UInt8](repeating: 7, count: 10))
        let fd = open(cache.path + "/lock", O_RDWR)
        #expect(fd >= 0)
        defer { close(fd) }
        // The store holds its shared lock; take it over exclusively as an opening process would.
        try store.close()
        // (A process another test is starting may hold a copy of the store's descriptor between its fork and its
        // exec, and with it the shared lock: wait for that to pass, with a deadline.)
        let deadline = ContinuousClock.now + .seconds(120)
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        while !locked, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        #expect(locked)
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache.path])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(String(decoding: stats.stdout, as: UTF8.self).contains("\"entries\":1"))
        let list = try await CLI.run(["cache", "ls", "--cache-dir", cache.path])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(String(decoding: list.stdout, as: UTF8.self).contains("10 B of 10 B, complete"))
    }

    @Test func originsSeeTheProgramsName() {
        #expect(LoaderDefaults.configuration.client.userAgent == "stories-tui MediaCache")
        #expect(LoaderConfiguration().client.userAgent == "MediaCache")
    }
}
