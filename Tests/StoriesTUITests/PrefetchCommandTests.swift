import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

/// `stories-tui prefetch` as a user runs it.
@Suite struct PrefetchCommandTests {
    static let videos = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("assets/videos")

    private func listing(_ cache: ScratchDirectory) async throws -> [[String: Any]] {
        let result = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache.path])
        return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]])
    }

    @Test func secondsPrefetchTheHeaderAtTheEndAndTheFirstSecondsOnly() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let file = try #require(FileManager.default.contents(atPath: Self.videos.appendingPathComponent("tail-moov.mp4").path))
        origin.set(OriginResource(bytes: [UInt8](file)), at: "/tail.mp4")
        let url = origin.url("tail.mp4").absoluteString
        let result = try await CLI.run(["prefetch", url, "--seconds", "1", "--cache-dir", cache.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.hasPrefix("\(url): "), "\(result.text)")
        #expect(result.text.contains("cached for the first 1 s"))
        #expect(result.stderr.isEmpty, "no progress bar when stderr is not a terminal")
        let entry = try #require(try await listing(cache).first)
        let ranges = try #require(entry["ranges"] as? [[Int]])
        #expect(entry["complete"] as? Bool == false)
        #expect(ranges.first?.first == 0, "the start of the payload")
        #expect(ranges.last?.last == file.count, "the moov box at the end of the file")
        #expect((entry["cachedBytes"] as? Int ?? 0) < file.count / 2, "about a second of a five-second clip")
        await origin.shutdown()
    }

    @Test func fullPrefetchMakesTheNextReadFree() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let bytes = content(900_000)
        origin.set(OriginResource(bytes: bytes), at: "/a.bin")
        origin.set(OriginResource(bytes: content(1000, seed: 3)), at: "/b.bin")
        let result = try await CLI.run([
            "prefetch", origin.url("a.bin").absoluteString, origin.url("b.bin").absoluteString, "--full",
            "--cache-dir", cache.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.split(separator: "\n").count == 2)
        #expect(result.text.contains("900.0 kB of 900.0 kB cached for the whole file"))
        await origin.resetCounters()
        let again = try await CLI.run(["prefetch", origin.url("a.bin").absoluteString, "--full", "--cache-dir", cache.path])
        #expect(again.text.contains("0 B downloaded"), "\(again.text)")
        let fetched = try await CLI.run(["fetch", origin.url("a.bin").absoluteString, "--cache-dir", cache.path])
        #expect(fetched.stdout == Data(bytes))
        #expect(origin.bodyBytesSent == 0, "every byte came from the prefetch")
        await origin.shutdown()
    }

    @Test func anOriginThatIgnoresRangesIsNamedAsTheReasonForTheExtraBytes() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        origin.set(OriginResource(bytes: MP4Fixture.file(duration: 10, payload: 2_000_000, moovAtEnd: true)), at: "/tail.mp4")
        var faults = OriginFaults()
        faults.ignoreRange = true
        origin.setFaults(faults)
        let result = try await CLI.run(
            ["prefetch", origin.url("tail.mp4").absoluteString, "--seconds", "1", "--cache-dir", cache.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.contains("the origin ignores Range requests"), "\(result.text)")
        await origin.shutdown()
    }

    @Test func failuresAreReportedPerURLAndTheRestStillRuns() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        origin.set(OriginResource(bytes: content(5000)), at: "/ok.bin")
        let missing = origin.url("missing.bin").absoluteString
        let result = try await CLI.run([
            "prefetch", missing, origin.url("ok.bin").absoluteString, "--bytes", "1000", "--cache-dir", cache.path,
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("prefetch: \(missing): origin answered 404"), "\(result.stderr)")
        #expect(result.stderr.contains("1 of 2 URLs failed"))
        #expect(result.text.contains("1.0 kB of 5.0 kB cached for the first 1000 bytes"), "\(result.text)")
        await origin.shutdown()
    }

    @Test(arguments: [
        (["prefetch", "http://x/a", "--full", "--bytes", "5"], "use only one of --seconds, --bytes and --full"),
        (["prefetch", "ftp://x/a"], "unsupported scheme 'ftp'"),
        (["prefetch", "http://x/a", "--seconds", "0"], "--seconds: must be a number above 0"),
    ])
    func badInputExits2(arguments: [String], message: String) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run(arguments + ["--cache-dir", cache.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
