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
        let busy = CacheError.inUse("/c")
        #expect("\(busy)" == "cache directory /c is in use by another process (wait for it to finish or use a different cache directory)")
        #expect(CacheLocation.describe(busy)
            == "cache directory /c is in use by another stories-tui process (wait for it to finish or pass a different --cache-dir)")
        let full = CacheError.index("cannot open /c/index.sqlite: the disk is full (free some space or use a different cache directory)")
        #expect(CacheLocation.describe(full).hasSuffix("(free some space or pass a different --cache-dir)"))
    }

    @Test func aHeldCacheIsReportedWithTheOptionToChange() async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        try FileManager.default.createDirectory(atPath: cache.path, withIntermediateDirectories: true)
        let fd = open(cache.path + "/lock", O_RDWR | O_CREAT, 0o600)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let result = try await CLI.run(["cache", "stats", "--cache-dir", cache.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("in use by another stories-tui process"), "\(result.stderr)")
        #expect(result.stderr.contains("pass a different --cache-dir"), "\(result.stderr)")
    }

    @Test func originsSeeTheProgramsName() {
        #expect(LoaderDefaults.configuration.client.userAgent == "stories-tui MediaCache")
        #expect(LoaderConfiguration().client.userAgent == "MediaCache")
    }
}
