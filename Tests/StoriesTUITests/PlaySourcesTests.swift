import Foundation
import MediaTestSupport
import Testing

/// `stories-tui [play] SOURCE...` from the outside: a folder of authors played headless, seen state across runs
/// and its clearing, sources that do not exist, and the shell completions the install step writes.
@Suite struct PlaySourcesTests {
    /// friends/Ana/{1,2}.mp4, friends/Ben/1.mp4 and a text file, each clip one second.
    private func friends(in scratch: ScratchDirectory) throws -> URL {
        let folder = scratch.url.appendingPathComponent("friends")
        for (path, seconds) in [("Ana/2.mp4", 1.0), ("Ana/10.mp4", 1.0), ("Ben/1.mp4", 1.0)] {
            let file = folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(MP4Fixture.file(duration: seconds, payload: 8_000)).write(to: file)
        }
        try Data("shopping list".utf8).write(to: folder.appendingPathComponent("Ana/notes.txt"))
        return folder
    }

    private func starts(_ output: String) throws -> [String] {
        try output.split(separator: "\n").compactMap { line in
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard json["event"] as? String == "story_start" else { return nil }
            let title = (json["title"] as? String) ?? "?"
            return "\(json["author"] as? String ?? "-") \(title)\((json["seen"] as? Bool) == true ? " seen" : "")"
        }
    }

    @Test func aFolderPlaysByAuthorAndTheNextRunKnowsWhatWasSeen() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let folder = try friends(in: scratch)
        let cache = scratch.url.appendingPathComponent("cache").path
        let play = ["play", folder.path, "--headless", "--no-video", "--speed", "10", "--cache-dir", cache]
        let first = try await CLI.run(play)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try starts(first.text) == ["Ana 2.mp4", "Ana 10.mp4", "Ben 1.mp4"])
        #expect(first.stderr.contains("skipped 1 file (1 not media)"), "\(first.stderr)")
        #expect(first.stderr.contains("friends/Ana/notes.txt: not media"), "the file is named: \(first.stderr)")
        // One line says where sound goes, or why there is none.
        let sound = first.text.split(separator: "\n").filter { $0.contains("\"event\":\"sound\"") }
        #expect(sound.count == 1 && (sound[0].contains("\"output\"") || sound[0].contains("\"reason\"")), "\(first.text)")
        let off = try await CLI.run(play + ["--sound", "off", "--from-start"])
        #expect(off.text.contains("{\"event\":\"sound\",\"monotonic\"") && off.text.contains("\"reason\":\"turned off (--sound off)\""), "\(off.text)")
        // Read from disk as they play: nothing is copied into the cache.
        #expect(first.text.contains("\"cache\":\"LOCAL\"") && !first.text.contains("\"cache\":\"MISS\""), "\(first.text)")
        let stats = try await CLI.run(["cache", "stats", "--json", "--cache-dir", cache])
        let figures = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(figures["entries"] as? Int == 0, "\(stats.text)")
        // Everything was seen: the next run starts over and plays every author (before, it ended after Ana, no
        // author having unseen stories).
        let second = try await CLI.run(play)
        #expect(try starts(second.text) == ["Ana 2.mp4 seen", "Ana 10.mp4 seen", "Ben 1.mp4 seen"])
        // Forgetting what was seen keeps the cache: the next run plays everything again (over the simulated
        // network, through the cache, which the run before filled).
        _ = try await CLI.run(play + ["--network", "lan", "--from-start"])
        let cleared = try await CLI.run(["cache", "clear", "--seen", "--cache-dir", cache])
        #expect(cleared.status == 0, "\(cleared.stderr)")
        #expect(cleared.text.contains("forgot 3 stories seen"), "\(cleared.text)")
        let third = try await CLI.run(play + ["--network", "lan"])
        #expect(try starts(third.text) == ["Ana 2.mp4", "Ana 10.mp4", "Ben 1.mp4"])
        #expect(third.text.contains("\"cache\":\"HIT\"") && !third.text.contains("\"cache\":\"MISS\""), "\(third.text)")
    }

    /// Files named one by one are the person's choice and order: a run starts at the first named even when some
    /// were seen (before, it opened at the first unseen one, 3/3).
    @Test func filesNamedOneByOneStartAtTheFirstNamed() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let folder = try friends(in: scratch)
        let cache = scratch.url.appendingPathComponent("cache").path
        let (a, b, c) = (folder.path + "/Ana/2.mp4", folder.path + "/Ana/10.mp4", folder.path + "/Ben/1.mp4")
        let common = ["--headless", "--no-video", "--speed", "10", "--sound", "off", "--cache-dir", cache]
        let first = try await CLI.run(["play", a, b] + common)
        #expect(first.status == 0, "\(first.stderr)")
        let second = try await CLI.run(["play", a, b, c] + common)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try starts(second.text) == ["- 2.mp4 seen", "- 10.mp4 seen", "- 1.mp4"], "\(second.text)")
    }

    /// A JSON playlist's local files are read from disk as named files are (before, they went through a
    /// simulated 4G link by default: a 4-second clip waited seconds for its first frame); the playlist's
    /// `"network"` asks for the link, and a name it does not know is refused in one sentence. Files served over it
    /// are listed and cleared by their paths (before: under `http://127.0.0.1:<port of that run>/…`, and a path
    /// given to `cache clear` was "not a URL").
    @Test func aJSONPlaylistsFilesAreReadFromDiskUnlessItAsksForALink() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let folder = try friends(in: scratch)
        let cache = scratch.url.appendingPathComponent("cache").path
        let stories = #""stories": [{"id": "a", "url": "Ana/2.mp4"}, {"id": "b", "url": "Ben/1.mp4"}]"#
        let plain = folder.appendingPathComponent("plain.json")
        try Data("{\(stories)}".utf8).write(to: plain)
        let common = ["--headless", "--no-video", "--speed", "10", "--sound", "off", "--cache-dir", cache]
        let fromDisk = try await CLI.run(["play", plain.path] + common)
        #expect(fromDisk.status == 0, "\(fromDisk.stderr)")
        #expect(fromDisk.text.contains("\"cache\":\"LOCAL\"") && !fromDisk.text.contains("\"cache\":\"MISS\""), "\(fromDisk.text)")
        let linked = folder.appendingPathComponent("linked.json")
        try Data("{\"network\": \"lan\", \(stories)}".utf8).write(to: linked)
        let served = try await CLI.run(["play", linked.path] + common)
        #expect(served.status == 0, "\(served.stderr)")
        #expect(served.text.contains("\"cache\":\"MISS\"") && !served.text.contains("\"cache\":\"LOCAL\""), "\(served.text)")
        // Listed and cleared by path, not by the port the link had in that run.
        let listed = try await CLI.run(["cache", "ls", "--cache-dir", cache])
        let ana = folder.appendingPathComponent("Ana/2.mp4").standardizedFileURL.path
        #expect(listed.text.contains(ana + "\n") && !listed.text.contains("127.0.0.1"), "\(listed.text)")
        let cleared = try await CLI.run(["cache", "clear", ana, "--cache-dir", cache])
        #expect(cleared.status == 0 && cleared.text.contains("removed \(ana)"), "\(cleared.text)\(cleared.stderr)")
        let again = try await CLI.run(["cache", "ls", "--cache-dir", cache])
        #expect(!again.text.contains(ana) && again.text.contains("Ben/1.mp4"), "\(again.text)")
        let unknown = folder.appendingPathComponent("unknown.json")
        try Data("{\"network\": \"5g\", \(stories)}".utf8).write(to: unknown)
        let refused = try await CLI.run(["play", unknown.path] + common)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("\(unknown.path): network: unknown simulated link '5g' (use 3g, 4g, wifi, lan)"), "\(refused.stderr)")
    }

    @Test func aSourceThatDoesNotExistFailsInOneSentence() async throws {
        let scratch = ScratchDirectory()
        defer { scratch.cleanup() }
        let result = try await CLI.run(["/nowhere/clip.mp4", "--headless", "--cache-dir", scratch.path])
        #expect(result.status == 2)
        #expect(result.stderr == "stories-tui: /nowhere/clip.mp4: no such file or folder\n", "\(result.stderr)")
        // With no source and nobody followed: how to follow someone or open what one has.
        let none = try await CLI.run(
            ["play", "--headless", "--cache-dir", scratch.path], environment: ["XDG_CONFIG_HOME": scratch.path])
        #expect(none.status == 2)
        #expect(none.stderr.hasPrefix("stories-tui: nothing to play: you follow no one yet."), "\(none.stderr)")
        #expect(none.stderr.contains("stories-tui follow add") && none.stderr.contains("a folder, files, URLs"))
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsComeFromTheProgram(shell: String) async throws {
        let result = try await CLI.run(["--generate-completion-script", shell])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.contains("stories-tui") && result.text.contains("from-start"))
    }
}
