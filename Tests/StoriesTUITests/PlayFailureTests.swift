import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

/// A story that cannot play is reported as a failure everywhere, and the run says what it did when it ends.
@Suite struct PlayFailureTests {
    private func playlist(in folder: ScratchDirectory, origin: MediaOriginServer) throws -> String {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        origin.set(OriginResource(bytes: MP4Fixture.file(duration: 1, payload: 20_000)), at: "/good.mp4")
        let json = """
            {"title": "Mixed", "stories": [
              {"id": "good", "title": "Good", "url": "\(origin.url("good.mp4").absoluteString)"},
              {"id": "gone", "title": "Gone", "url": "\(origin.url("gone.mp4").absoluteString)"}
            ]}
            """
        let path = folder.url.appendingPathComponent("playlist.json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func headlessRunsCountFailuresAndExitNonZero() async throws {
        let origin = try await MediaOriginServer()
        let folder = ScratchDirectory()
        defer { folder.cleanup() }
        let path = try playlist(in: folder, origin: origin)
        let result = try await CLI.run(
            ["play", path, "--headless", "--no-video", "--speed", "10", "--cache-dir", folder.path + "/cache"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("1 story could not play"), "\(result.stderr)")
        let end = try #require(result.text.split(separator: "\n").last)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(end.utf8)) as? [String: Any])
        #expect(json["event"] as? String == "playlist_end")
        #expect(json["played"] as? Int == 1)
        #expect(json["failed"] as? Int == 1)
        await origin.shutdown()
    }

    /// A header-last MP4 cut inside its media data says it is cut short, not that a playlist lacks a duration.
    @Test func aFileCutBeforeItsHeaderSaysSo() async throws {
        let folder = ScratchDirectory()
        defer { folder.cleanup() }
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let whole = MP4Fixture.file(duration: 2, payload: 40_000, moovAtEnd: true)
        let path = folder.path + "/cut.mp4"
        try Data(whole.prefix(20_000)).write(to: URL(fileURLWithPath: path))
        let result = try await CLI.run(["play", path, "--headless", "--no-video", "--cache-dir", folder.path + "/cache"])
        #expect(result.status == 1)
        let error = try #require(FollowCommandTests.events(result.text, "error").first?["message"] as? String, "\(result.text)")
        #expect(error.hasPrefix("the file is cut short: it ends at byte 20000, inside its 'mdat' box of "), "\(error)")
        #expect(!error.contains("playlist"), "\(error)")
    }

    @Test func theTextReportEndsWithASummary() async throws {
        let origin = try await MediaOriginServer()
        let folder = ScratchDirectory()
        defer { folder.cleanup() }
        let path = try playlist(in: folder, origin: origin)
        let result = try await CLI.run(["play", path, "--no-video", "--speed", "10", "--cache-dir", folder.path + "/cache"])
        #expect(result.status == 1)
        let lines = result.text.split(separator: "\n").map(String.init)
        #expect(lines.contains("done: 1 played, 0 skipped, 1 failed"), "\(lines)")
        let summary = try #require(lines.last)
        #expect(summary.hasPrefix("1 story watched, 1 failed · "), "\(summary)")
        #expect(summary.contains("saved by the cache") && summary.contains("from the origin") && summary.hasSuffix("no stalls"))
        await origin.shutdown()
    }

    /// A run of files read from disk moves nothing through the cache: its summary says so instead of "0 B saved by
    /// the cache, 0 B from the origin".
    @Test func aRunOfLocalFilesSaysItReadFromDisk() async throws {
        let folder = ScratchDirectory()
        defer { folder.cleanup() }
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let path = folder.path + "/clip.mp4"
        try Data(MP4Fixture.file(duration: 1, payload: 8_000)).write(to: URL(fileURLWithPath: path))
        let result = try await CLI.run(["play", path, "--no-video", "--speed", "10", "--sound", "off", "--cache-dir", folder.path + "/cache"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.text.split(separator: "\n").last.map(String.init))
        #expect(summary == "1 story watched · read from disk · no stalls", "\(result.text)")
    }

    @Test(arguments: [SIGINT, SIGTERM]) func aSignalStopsPlayWithTheCodeAShellExpects(signalNumber: Int32) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        // Slowed a hundredfold: the playlist lasts half an hour, so a test process too busy to send the signal for
        // a while (CI on two cores) cannot see the run end by itself first and take its 0 for a lost signal.
        let process = try ChildProcess(
            try CLI.binary().path,
            ["play", HeadlessPlayTests.playlistPath, "--headless", "--no-video", "--speed", "0.01", "--cache-dir", cache.path],
            stdout: .pipe)
        // Once it is playing (its first event is out), stop it: sent from the thread that saw the event.
        _ = try await offCooperativePool {
            let first = process.stdout?.availableData
            process.send(signalNumber)
            return first
        }
        // Bounded: a lost signal fails the test instead of hanging it.
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let ended = !process.isRunning
        if !ended { process.send(SIGKILL) }
        let termination = try await offCooperativePool { process.waitUntilExit() }
        #expect(ended, "play was still running 60 s after the signal")
        #expect(termination == .exited(128 + signalNumber))
    }
}

/// Small things a new user tries first.
@Suite struct FirstStepsTests {
    @Test func versionAndLookingAtACacheThatDoesNotExistYet() async throws {
        let version = try await CLI.run(["--version"])
        #expect(version.status == 0)
        #expect(version.text.hasPrefix("stories-tui "), "\(version.text)")
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let missing = scratch.path + "/not-yet"
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", missing])
        #expect(stats.status == 0, "\(stats.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(json["entries"] as? Int == 0)
        let listed = try await CLI.run(["cache", "ls", "--cache-dir", missing])
        #expect(listed.text.hasPrefix("the cache is empty"))
        #expect(!FileManager.default.fileExists(atPath: missing), "looking created the directory")
    }
}
