import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

/// `stories-tui fetch` and `cache …` run as a user would, against an in-process origin.
@Suite struct FetchCommandTests {
    @Test func fetchOutputIsByteIdenticalThroughEveryOriginBehaviour() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let bytes = content(700_000)
        origin.set(OriginResource(bytes: bytes), at: "/v.mp4")
        let url = origin.url("v.mp4").absoluteString
        func fetch(_ extra: [String] = []) async throws -> CLIResult {
            try await CLI.run(["fetch", url, "--cache-dir", cache.path] + extra)
        }
        // Cold, then a range, then the gap-filling whole read, then a replay.
        var result = try await fetch(["--range", "100000-199999"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Data(bytes[100_000...199_999]))
        result = try await fetch(["--range", "500000-"])
        #expect(result.stdout == Data(bytes[500_000...]))
        result = try await fetch(["--range=-1000"])
        #expect(result.stdout == Data(bytes[(bytes.count - 1000)...]))
        result = try await fetch()
        #expect(result.stdout == Data(bytes))
        await origin.resetCounters()
        let output = cache.url.appendingPathComponent("out.mp4").path
        result = try await fetch(["--output", output])
        #expect(result.status == 0)
        #expect(FileManager.default.contents(atPath: output) == Data(bytes))
        #expect(origin.bodyBytesSent == 0)

        // An origin that ignores Range, a dropped connection, a replaced file.
        var faults = OriginFaults()
        faults.ignoreRange = true
        origin.setFaults(faults)
        origin.set(OriginResource(bytes: bytes), at: "/i.mp4")
        result = try await CLI.run(["fetch", origin.url("i.mp4").absoluteString, "--range", "300000-300999", "--cache-dir", cache.path])
        #expect(result.stdout == Data(bytes[300_000...300_999]))
        faults = OriginFaults()
        faults.dropAfterBytes = 120_000
        faults.dropCount = 2
        origin.setFaults(faults)
        origin.set(OriginResource(bytes: bytes), at: "/d.mp4")
        result = try await CLI.run(["fetch", origin.url("d.mp4").absoluteString, "--cache-dir", cache.path])
        #expect(result.stdout == Data(bytes), "\(result.stderr)")
        origin.setFaults(OriginFaults())
        let replaced = content(650_000, seed: 5)
        origin.set(OriginResource(bytes: replaced), at: "/v.mp4")
        result = try await fetch()
        #expect(result.stdout == Data(replaced))
        await origin.shutdown()
    }

    /// A version change met mid-transfer (a fresh cached prefix of the old version, the rest answered by the new
    /// one) starts a fetch into a file over on the new version; on stdout, where bytes already left, it fails.
    @Test func aVersionChangeMidTransferStartsAFileOverAndFailsOnlyOnStdout() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let old = content(500_000, seed: 21)
        let new = content(500_000, seed: 22)
        func resource(_ bytes: [UInt8]) -> OriginResource {
            var resource = OriginResource(bytes: bytes)
            resource.cacheControl = "max-age=3600"  // fresh: nothing asks the origin before reading
            return resource
        }
        for name in ["file.mp4", "stdout.mp4"] {
            origin.set(resource(old), at: "/" + name)
            let prefix = try await CLI.run(
                ["fetch", origin.url(name).absoluteString, "--range", "0-199999", "--cache-dir", cache.path])
            #expect(prefix.stdout == Data(old[0..<200_000]), "\(prefix.stderr)")
            origin.set(resource(new), at: "/" + name)
        }
        let output = cache.url.appendingPathComponent("out.mp4").path
        let file = try await CLI.run(
            ["fetch", origin.url("file.mp4").absoluteString, "--output", output, "--cache-dir", cache.path])
        #expect(file.status == 0, "\(file.stderr)")
        #expect(FileManager.default.contents(atPath: output) == Data(new))
        #expect(file.stderr.contains("starting over on the new version"), "\(file.stderr)")
        let piped = try await CLI.run(["fetch", origin.url("stdout.mp4").absoluteString, "--cache-dir", cache.path])
        #expect(piped.status == 1)
        #expect(piped.stderr.contains("changed at the origin"), "\(piped.stderr)")
        #expect(piped.stdout.count < new.count)
        await origin.shutdown()
    }

    @Test func cacheCommandsReportWhatFetchStored() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        origin.set(OriginResource(bytes: content(300_000), etag: "\"s1\""), at: "/s.mp4")
        let url = origin.url("s.mp4").absoluteString
        _ = try await CLI.run(["fetch", url, "--range", "0-99999", "--cache-dir", cache.path])
        _ = try await CLI.run(["fetch", url, "--range", "0-99999", "--cache-dir", cache.path])
        let ls = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache.path])
        let entries = try #require(try JSONSerialization.jsonObject(with: ls.stdout) as? [[String: Any]])
        #expect(entries.count == 1)
        #expect(entries.first?["url"] as? String == url)
        #expect(entries.first?["contentLength"] as? Int == 300_000)
        #expect(entries.first?["complete"] as? Bool == false)
        // The request's 100 kB, plus as much of the rest of its 128 KiB block as arrived before the command exited.
        let ranges = try #require(entries.first?["ranges"] as? [[Int]])
        let stored = ranges.first?.last ?? 0
        #expect(ranges.count == 1 && ranges.first?.first == 0)
        #expect(stored >= 100_000 && stored <= 131_072)
        #expect(entries.first?["cachedBytes"] as? Int == stored)
        #expect(entries.first?["etag"] as? String == "\"s1\"")
        #expect(entries.first?["playCount"] as? Int == 0)
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache.path])
        let object = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(object["entries"] as? Int == 1)
        #expect(object["storedBytes"] as? Int == stored)
        #expect((object["originBytes"] as? Int ?? 0) >= stored)
        #expect((object["originBytes"] as? Int ?? .max) <= 131_072)
        #expect(object["cacheHitBytes"] as? Int == 100_000)
        let clear = try await CLI.run(["cache", "clear", url, "--cache-dir", cache.path])
        #expect(clear.status == 0)
        let after = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache.path])
        #expect(after.text.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        await origin.shutdown()
    }

    @Test(arguments: [
        (["fetch", "ftp://example.com/a.mp4"], "unsupported scheme 'ftp'"),
        (["fetch", "not a url"], "is not a URL"),
        (["fetch", "http://127.0.0.1:9/a.mp4", "--range", "9-5"], "ends before it starts"),
        (["fetch", "http://127.0.0.1:9/a.mp4", "--range", "abc"], "is not a byte range"),
        (["fetch", "http://127.0.0.1:9/a.mp4", "--range=-0"], "asks for no bytes"),
        (["fetch", "http://127.0.0.1:9/a.mp4", "--range", "-5"], "Missing value for '--range"),
        (["fetch", "http://127.0.0.1:9/a.mp4", "--bogus"], "Unknown option '--bogus'"),
        (["cache", "clear", "nope"], "is not a URL"),
    ])
    func badInputGetsOneLineAndExitCode2(arguments: [String], message: String) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run(arguments + ["--cache-dir", cache.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func originFailuresExitNonZeroWithTheCause() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run(["fetch", origin.url("missing.mp4").absoluteString, "--cache-dir", cache.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("origin answered 404 Not Found"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        await origin.shutdown()
    }
}

/// `stories-tui play --headless` on the bundled demo.
@Suite struct HeadlessPlayTests {
    static var playlistPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("assets/playlist.json").path
    }

    private func events(_ result: CLIResult) throws -> [[String: Any]] {
        try result.text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    @Test(arguments: [false, true]) func theBundledPlaylistPlaysHeadlessThenFromTheCache(preload: Bool) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        // Text only: this is about caching, and decoding at 25× would only load the machine the other tests share.
        let arguments = ["play", Self.playlistPath, "--headless", "--speed", "25", "--network", "lan", "--no-video",
            "--cache-dir", cache.path]
            + (preload ? [] : ["--no-preload"])
        let first = try await CLI.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        let firstEvents = try events(first)
        let kinds = firstEvents.compactMap { $0["event"] as? String }
        // The sound line (no sound at 25x) comes first, then the stories.
        #expect(kinds.first == "sound")
        #expect(kinds.dropFirst().first == "story_start")
        #expect(kinds.last == "playlist_end")
        // Four MP4 stories and one HLS story.
        #expect(kinds.filter { $0 == "first_frame" }.count == 5)
        #expect(kinds.filter { $0 == "story_end" }.count == 5)
        let frames = firstEvents.filter { $0["event"] as? String == "first_frame" }
        #expect(frames.allSatisfy { ($0["startupMs"] as? Int) != nil })
        #expect(frames.first?["cache"] as? String == "MISS")
        if preload {
            // Later stories may have been preloaded (partly) while the one before played.
            #expect(frames.allSatisfy { ["MISS", "PARTIAL"].contains($0["cache"] as? String) })
        } else {
            #expect(frames.allSatisfy { $0["cache"] as? String == "MISS" }, "without preloading nothing is fetched ahead")
        }
        // A first run with an empty cache saves nothing, preloads or not: what was preloaded was downloaded.
        let firstEnd = try #require(firstEvents.last)
        #expect(firstEnd["savedBytes"] as? Int == 0, "\(firstEnd)")
        #expect((firstEnd["originBytes"] as? Int ?? 0) > 0)
        // Second run: everything from the cache; the first story (maxViews 3) is still shown.
        let second = try await CLI.run(arguments)
        let secondEnd = try #require(try events(second).last)
        #expect((secondEnd["savedBytes"] as? Int ?? 0) > 0)
        #expect(secondEnd["originBytes"] as? Int == 0, "first run:\n\(first.text)\nsecond run:\n\(second.text)")
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache.path])
        let totals = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(totals["cacheHitBytes"] as? Int == secondEnd["savedBytes"] as? Int, "one definition everywhere")
        let secondFrames = try events(second).filter { $0["event"] as? String == "first_frame" }
        #expect(secondFrames.count == 5)
        // (The HLS story too, when its segments are cached from more than one variant: it plays without the link.)
        #expect(secondFrames.allSatisfy { $0["cache"] as? String == "HIT" }, "\(secondFrames)")
        let ends = try events(second).filter { $0["event"] as? String == "story_end" }
        #expect(ends.first?["playCount"] as? Int == 2)
        // The listing shows the counts the player keeps (each story played twice, on its own resource: the HLS
        // story's variant playlists and segments are listed beside it, uncounted), and clearing forgets them.
        let listed = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache.path])
        let rows = try #require(try JSONSerialization.jsonObject(with: listed.stdout) as? [[String: Any]])
        let parts = rows.compactMap { $0["url"] as? String }.filter { $0.contains("/videos/hls/v") }
        #expect(rows.count - parts.count == 5)
        // Which variant each second came from depends on the link the run measured (a story may start on one and
        // move to another at a segment boundary, and a preload may have fetched the other's first seconds), but
        // every segment of the story is there with its variant's playlist, each resource once.
        let names = parts.compactMap { $0.split(separator: "/").last.map(String.init) }
        #expect(Set(names.filter { $0.hasPrefix("seg") }) == Set((0..<5).map { "seg\($0).ts" }), "\(parts)")
        let variants = Set(parts.compactMap { $0.split(separator: "/").dropLast().last.map(String.init) })
        #expect(parts.filter { $0.hasSuffix("/index.m3u8") }.count == variants.count, "\(parts)")
        let counted = rows.filter { ($0["playCount"] as? Int ?? 0) > 0 }
        #expect(counted.count == 5 && counted.allSatisfy { $0["playCount"] as? Int == 2 }, "\(rows.map { $0["playCount"] ?? "none" })")
        #expect(try await CLI.run(["cache", "clear", "--cache-dir", cache.path]).status == 0)
        let third = try await CLI.run(arguments)
        let thirdEnds = try events(third).filter { $0["event"] as? String == "story_end" }
        #expect(thirdEnds.first?["playCount"] as? Int == 1)
    }

    @Test func storyEndCountsFramesAndNoVideoTurnsThePictureOff() async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let arguments = ["play", Self.playlistPath, "--headless", "--speed", "10", "--network", "lan", "--all"]
        let withPicture = try await CLI.run(arguments + ["--cache-dir", cache.path])
        #expect(withPicture.status == 0, "\(withPicture.stderr)")
        let ends = try events(withPicture).filter { $0["event"] as? String == "story_end" }
        #expect(ends.count == 5)
        #expect(ends.allSatisfy { ($0["framesShown"] as? Int ?? 0) >= 1 && ($0["framesDropped"] as? Int) != nil }, "\(ends)")
        let textOnly = try await CLI.run(arguments + ["--no-video", "--cache-dir", cache.path])
        #expect(textOnly.status == 0, "\(textOnly.stderr)")
        let textEnds = try events(textOnly).filter { $0["event"] as? String == "story_end" }
        #expect(textEnds.count == 5)
        #expect(textEnds.allSatisfy { $0["framesShown"] as? Int == 0 && $0["framesDropped"] as? Int == 0 }, "\(textEnds)")
    }

    @Test(arguments: [
        (["play", "/nonexistent.json"], "/nonexistent.json: no such file"),
        (["play", playlistPath, "--network", "5g"], "--network: unknown profile '5g' (use 3g, 4g, wifi, lan)"),
        (["play", playlistPath, "--speed", "0"], "--speed: must be a number above 0"),
    ])
    func badPlayInputExits2(arguments: [String], message: String) async throws {
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run(arguments + ["--headless", "--cache-dir", cache.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }
}

/// `stories-tui serve` as a user runs it: first line, proxying, and a clean stop on SIGINT.
@Suite struct ServeCommandTests {
    @Test func aBusyPortIsSaidPlainlyWithWhatToDo() async throws {
        let other = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let result = try await CLI.run(["serve", "--port", "\(other.port)", "--cache-dir", cache.path])
        #expect(result.status == 1)
        #expect(result.stderr == "stories-tui: serve: port \(other.port) on 127.0.0.1 is in use by another program "
            + "(choose another with --port, or --port 0 for any free port)\n", "\(result.stderr)")
        await other.shutdown()
    }

    @Test func keepsItsTokenLogsEveryRequestAndStaysQuietWhenClientsLeave() async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        origin.set(OriginResource(bytes: content(2_000_000), etag: "\"t\""), at: "/t.mp4")
        let logPath = cache.path + "-access.log"
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = origin.url("t.mp4").absoluteString.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""

        let (first, base) = try await ServeProcess.start(["--cache-dir", cache.path, "--access-log", logPath])
        let ranged = try await CLI.runTool(
            "/usr/bin/env", ["curl", "-s", "--max-time", "60", "-o", "/dev/null", "-H", "Range: bytes=0-99999", base + "media?url=" + encoded])
        #expect(ranged.status == 0)
        // A client that leaves mid-body (a player seeking away) is routine, not a warning.
        _ = try await CLI.runTool("/usr/bin/env", ["sh", "-c", "curl -s --max-time 60 '\(base)media?url=\(encoded)' | head -c 1000 >/dev/null"])
        try await ServeProcess.stop(first)
        let stderr = String(decoding: first.stderr?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        #expect(!stderr.contains("warning") && !stderr.contains("failed mid-body"), "\(stderr)")
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2, "\(lines)")
        let fields = lines.first { $0.contains("bytes=0-99999") }?.split(separator: " ").map(String.init) ?? []
        #expect(fields.count == 8, "\(fields)")
        #expect(Array(fields.dropFirst().prefix(4)) == ["GET", "206", "bytes=0-99999", "100000"], "\(fields)")
        // The answer to the player's first question fetched the first block: the rest came from the origin.
        #expect(["MISS", "PARTIAL"].contains(fields[5]), "\(fields)")
        #expect(fields.last == origin.url("t.mp4").absoluteString)

        // The token is kept (readable by its owner only) and used again: saved URLs still work.
        let tokenFile = cache.path + "/proxy-token"
        let mode = try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let (second, again) = try await ServeProcess.start(["--cache-dir", cache.path])
        #expect(again.split(separator: "/").last == base.split(separator: "/").last, "\(again) vs \(base)")
        try await ServeProcess.stop(second)
        let chosen = "my-own-token-0123456789"
        let (third, mine) = try await ServeProcess.start(["--cache-dir", cache.path, "--token", chosen])
        #expect(mine.hasSuffix("/\(chosen)/"))
        try await ServeProcess.stop(third)
        let bad = try await CLI.run(["serve", "--token", "short", "--cache-dir", cache.path])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--token: the token must be 16 to 128 letters"), "\(bad.stderr)")
        await origin.shutdown()
    }

    @Test(arguments: [SIGINT, SIGTERM]) func servesThenStopsCleanlyKeepingTheCache(signalNumber: Int32) async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        let bytes = content(200_000)
        origin.set(OriginResource(bytes: bytes, etag: "\"sv\""), at: "/s.mp4")
        let (process, base) = try await ServeProcess.start(["--cache-dir", cache.path])
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = origin.url("s.mp4").absoluteString.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let curl = try await CLI.runTool("/usr/bin/env", ["curl", "-s", "--max-time", "60", "-H", "Range: bytes=0-99999", base + "media?url=" + encoded])
        #expect(curl.stdout == Data(bytes[0..<100_000]))
        process.send(signalNumber)
        try await ServeProcess.waitForExit(process)
        #expect(
            process.waitUntilExit() == .exited(128 + signalNumber),
            "a clean stop with the exit code a shell expects after that signal, not a death by it")
        let ls = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache.path])
        let entries = try #require(try JSONSerialization.jsonObject(with: ls.stdout) as? [[String: Any]])
        // Everything the client received was on disk and stays recorded (the rest of the block may or may not
        // have arrived before the signal).
        let ranges = try #require(entries.first?["ranges"] as? [[Int]])
        #expect(ranges.count == 1)
        #expect(ranges.first?.first == 0)
        #expect((ranges.first?.last ?? 0) >= 100_000 && (ranges.first?.last ?? 0) <= 131_072)
        await origin.shutdown()
    }
}

