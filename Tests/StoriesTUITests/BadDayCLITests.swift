import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The command line on a bad day: malformed URLs, readers that go away, devices as output, stale leftovers.
@Suite struct BadDayCLITests {
    @Test(arguments: [
        (["fetch", "http://127.0.0.1:99999/x"], "port 99999 is out of range"),
        (["fetch", "http://127.0.0.1:65536/x"], "port 65536 is out of range"),
        (["prefetch", "http://127.0.0.1:9/a.mp4", "http://127.0.0.1:99999/x"], "port 99999 is out of range"),
        (["cache", "clear", "http://127.0.0.1:70000/x"], "port 70000 is out of range"),
        (["play", "assets/playlist.json", "--speed", "-1"], "--speed: must be a number above 0 and at most 1000, got -1.0"),
        (["play", "assets/playlist.json", "--speed", "0"], "--speed: must be a number above 0 and at most 1000, got 0.0"),
    ])
    func badArgumentsAreBadInputInOneLineNotACrash(arguments: [String], message: String) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run(arguments + ["--cache-dir", cache.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    @Test(arguments: [
        ("{\"stories\": [{\"id\": \"a\", \"url\": \"http://127.0.0.1:99999/a.mp4\"}]}",
         "playlist.json: stories[0] (\"a\").url: 'http://127.0.0.1:99999/a.mp4' port 99999 is out of range"),
        ("{\"stories\": [{\"id\": \"a\", \"url\": \"http://127.0.0.1/a.mp4\", \"duration\": 1e308}]}",
         "playlist.json: stories[0] (\"a\").duration: must be at most 86400 seconds"),
    ])
    func badPlaylistValuesAreBadInput(text: String, message: String) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        try FileManager.default.createDirectory(at: cache.url, withIntermediateDirectories: true)
        let playlist = cache.url.appendingPathComponent("playlist.json")
        try Data(text.utf8).write(to: playlist)
        let result = try await CLI.run(["play", playlist.path, "--headless", "--cache-dir", cache.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func aReaderThatGoesAwayEndsFetchQuietly() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let bytes = content(3_000_000)
        origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        let result = try await CLI.runClosingStdout(
            ["fetch", origin.url("v.mp4").absoluteString, "--cache-dir", cache.path], keep: 100)
        #expect(result.stdout == Data(bytes[0..<100]))
        #expect([0, 141].contains(result.status), "status \(result.status): \(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        await origin.shutdown()
    }

    @Test func aReaderThatGoesAwayEndsHeadlessPlayQuietly() async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.runClosingStdout(
            ["play", HeadlessPlayTests.playlistPath, "--headless", "--speed", "25", "--network", "lan", "--no-video",
             "--cache-dir", cache.path], keep: 20)
        #expect(result.stdout.count == 20)
        #expect([0, 141].contains(result.status), "status \(result.status): \(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    @Test func outputToAFIFOWritesIntoItAndLeavesItAFIFO() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        try FileManager.default.createDirectory(at: cache.url, withIntermediateDirectories: true)
        let bytes = content(500_000)
        origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        let fifo = cache.url.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // The reader of the FIFO, as a consumer process would be.
        let reader = Task.detached { () -> Data in
            guard let handle = FileHandle(forReadingAtPath: fifo) else { return Data() }
            defer { try? handle.close() }
            return handle.readDataToEndOfFile()
        }
        let result = try await CLI.run(
            ["fetch", origin.url("v.mp4").absoluteString, "--output", fifo, "--cache-dir", cache.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(await reader.value == Data(bytes))
        var info = stat()
        #expect(lstat(fifo, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced by a regular file")
        await origin.shutdown()
    }

    @Test func stalePartialOutputsOfKilledFetchesAreRemoved() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        try FileManager.default.createDirectory(at: cache.url, withIntermediateDirectories: true)
        origin.set(OriginResource(bytes: content(1_000)), at: "/v.mp4")
        let output = cache.url.appendingPathComponent("out.mp4").path
        // A pid that cannot exist (above the kernel's pid_max) and one that does (ours).
        let stale = output + ".partial-99999999"
        let live = output + ".partial-\(getpid())"
        for path in [stale, live] { #expect(FileManager.default.createFile(atPath: path, contents: Data([1, 2]))) }
        let result = try await CLI.run(
            ["fetch", origin.url("v.mp4").absoluteString, "--output", output, "--cache-dir", cache.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.contents(atPath: output) == Data(content(1_000)))
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(FileManager.default.fileExists(atPath: live))
        await origin.shutdown()
    }
}
