import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

/// Drives a private tmux server (its own socket, no config) holding one shell.
struct Tmux {
    let executable: String
    /// The server's socket, inside the test's scratch directory so it goes away with it.
    let socket: String

    static func find() -> String? {
        ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs tmux and waits for it to exit. Output goes to files, not pipes: the tmux server it may start
    /// inherits the client's descriptors, so a pipe would never reach end of file.
    @discardableResult
    func run(_ arguments: [String]) async throws -> CLIResult {
        let all = ["-S", socket, "-f", "/dev/null"] + arguments
        let result = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Self.runBlocking(executable, all) })
            }
        }
        guard result.status == 0 else {
            throw CLIError("tmux \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        }
        return result
    }

    /// Runs tmux to its end with its output in files, and reads them.
    private static func runBlocking(_ executable: String, _ arguments: [String]) throws -> CLIResult {
        let directory = FileManager.default.temporaryDirectory.path
        let outPath = "\(directory)/tmux-out-\(UUID().uuidString)"
        let errPath = "\(directory)/tmux-err-\(UUID().uuidString)"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = nil
        let process = try ChildProcess(
            executable, arguments, environment: environment, stdout: .file(outPath), stderr: .file(errPath))
        process.waitUntilExit()
        return CLIResult(
            status: process.terminationStatus ?? -1, stdout: FileManager.default.contents(atPath: outPath) ?? Data(),
            stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }

    /// The visible screen, one string per row; with `escapes`, colours and attributes as escape sequences.
    func screen(escapes: Bool = false) async throws -> [String] {
        try await run(["capture-pane", "-p"] + (escapes ? ["-e"] : []) + ["-t", "main"]).text
            .components(separatedBy: "\n")
    }

    /// Polls the screen until `predicate` holds, failing with the last screen after `timeout` seconds.
    @discardableResult
    func waitFor(
        _ what: String, timeout: Double = 30, escapes: Bool = false, _ predicate: ([String]) -> Bool
    ) async throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var last: [String] = []
        while ContinuousClock.now < deadline {
            last = try await screen(escapes: escapes)
            if predicate(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CLIError("timed out waiting for \(what); the screen was:\n\(last.joined(separator: "\n"))")
    }

    func keys(_ keys: String...) async throws { try await run(["send-keys", "-t", "main"] + keys) }

    func type(_ text: String) async throws {
        try await run(["send-keys", "-t", "main", "-l", text])
        try await run(["send-keys", "-t", "main", "Enter"])
    }

    func kill() async { _ = try? await run(["kill-session", "-t", "main"]) }
}

/// The terminal's line settings after the program exited, from `stty -a` written to `file`.
func terminalFlags(_ file: URL) throws -> Set<String> {
    let text = try String(contentsOf: file, encoding: .utf8)
    return Set(text.components(separatedBy: CharacterSet(charactersIn: " ;\n\t")).filter { !$0.isEmpty })
}

@Suite(.serialized) struct TerminalUITests {
    struct DemoStory: Decodable { var title: String }
    struct Demo: Decodable { var title: String; var stories: [DemoStory] }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func navigatesTogglesThePaneAndGivesTheTerminalBack() async throws {
        try await inTmux("the terminal UI test") { tmux, scratch in
            let playlist = Self.repository.appendingPathComponent("assets/playlist.json")
            let demo = try JSONDecoder().decode(Demo.self, from: Data(contentsOf: playlist))
            try await drive(tmux, demo: demo, playlist: playlist, scratch: scratch)
        }
    }

    @Test func aCaptionIsOnScreenWhileDueAndGoneAfterV() async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            else { print("skipping the captions screen test: \(PhoneMedia.missing)") }
            return
        }
        defer { media.remove() }
        // A minute-long clip whose one cue lasts from 1 s to its end: due while the test looks.
        try await media.ffmpeg("talk.mp4", ["-f", "lavfi", "-i", "testsrc2=s=160x90:r=5:d=60", "-pix_fmt", "yuv420p"])
        try Data("1\n00:00:01,000 --> 00:01:00,000\nWords on screen\n".utf8)
            .write(to: media.folder.appendingPathComponent("talk.srt"))
        try await inTmux("the captions screen test") { tmux, scratch in
            let binary = try CLI.binary().path
            let file = media.folder.appendingPathComponent("talk.mp4").path
            try await tmux.type(
                "clear; XDG_CONFIG_HOME='\(scratch.path)/config' '\(binary)' '\(file)' --sound off --cache-dir '\(scratch.path)/cache' 2>'\(scratch.path)/err.txt'")
            let shown = try await tmux.waitFor("the caption") { $0.contains { $0.contains("Words on screen") } }
            #expect(shown.contains { $0.contains(" CC ") }, "\(shown.joined(separator: "\n"))")
            try await tmux.keys("v")
            try await tmux.waitFor("the caption gone after v") { screen in
                !screen.contains { $0.contains("Words on screen") } && screen.contains { $0.contains("▶ Playing") }
            }
            try await tmux.keys("q")
            try await tmux.waitFor("the shell prompt") { $0.contains { $0.hasPrefix("E2E>") } }
            let config = try String(contentsOfFile: scratch.path + "/config/stories-tui/config.json", encoding: .utf8)
            #expect(config.contains("\"captions\" : \"off\""), "the choice is kept: \(config)")
        }
    }

    @Test func aFolderOfTwoAuthorsShowsTheTrayMovesBetweenThemAndResumes() async throws {
        guard let media = try PhoneMedia.make() else {
            if PhoneMedia.required { Issue.record("\(PhoneMedia.missing), and STORIES_REQUIRE_E2E=1 requires it") }
            else { print("skipping the folder-of-authors test: \(PhoneMedia.missing)") }
            return
        }
        defer { media.remove() }
        // Minute-long clips: no story ends by itself while the test looks, however busy the machine.
        for author in ["Ana", "Ben"] {
            try FileManager.default.createDirectory(
                at: media.folder.appendingPathComponent("friends/\(author)"), withIntermediateDirectories: true)
        }
        for name in ["friends/Ana/IMG_2.mp4", "friends/Ana/IMG_10.mp4", "friends/Ben/run.mp4"] {
            try await media.ffmpeg(name, ["-f", "lavfi", "-i", "testsrc2=s=160x90:r=5:d=60", "-pix_fmt", "yuv420p"])
        }
        try Data("not a story".utf8).write(to: media.folder.appendingPathComponent("friends/Ana/notes.txt"))
        try await inTmux("the folder-of-authors test") { tmux, scratch in
            let binary = try CLI.binary().path
            let folder = media.folder.appendingPathComponent("friends").path
            func launch() async throws {
                try await tmux.type("clear; '\(binary)' '\(folder)' --cache-dir '\(scratch.path)/cache' 2>'\(scratch.path)/err.txt'")
            }
            // Playing, and its view counted ("plays 1" in its header): a q before that would leave it unseen.
            func playing(_ header: String) -> ([String]) -> Bool {
                { screen in
                    screen.contains { $0.contains(header) && $0.contains("plays 1") }
                        && screen.contains { $0.contains("▶ Playing") }
                }
            }
            try await launch()
            let first = try await tmux.waitFor("Ana's first story", playing(" Ana · 1/2 · IMG_2.mp4"))
            #expect(first.contains { $0.contains("● Ana") && $0.contains("● Ben") }, "\(first.joined(separator: "\n"))")
            // The start-up queries never reach the pane as its title (tmux shows an APC string there).
            let title = try await tmux.run(["display-message", "-p", "-t", "main", "#{pane_title}"]).text
            #expect(!title.contains("Gi="), "the pane's title became \(title)")
            try await tmux.keys("Down")
            try await tmux.waitFor("Ben's story after ↓", playing(" Ben · 1/1 · run.mp4"))
            try await tmux.keys("q")
            try await tmux.waitFor("the shell after q") { $0.last(where: { !$0.isEmpty })?.hasPrefix("E2E>") == true }
            let said = (try? String(contentsOfFile: "\(scratch.path)/err.txt", encoding: .utf8)) ?? ""
            #expect(said.contains("skipped 1 file (1 not media)"), "\(said)")
            // Seen: IMG_2 and Ben's story. The next run starts at Ana's first unseen story; Ben has none left.
            try await launch()
            let resumed = try await tmux.waitFor("Ana's unseen story on the next run", playing(" Ana · 2/2 · IMG_10.mp4"))
            // Ben's ring is empty: everything of his was seen.
            #expect(resumed.contains { $0.contains("Ana") && $0.contains("○ Ben") }, "\(resumed.joined(separator: "\n"))")
            try await tmux.keys("q")
            try await tmux.waitFor("the shell after q") { $0.last(where: { !$0.isEmpty })?.hasPrefix("E2E>") == true }
        }
    }

    @Test func seesThePictureMoveHoldWhenPausedAndShadeWithoutUTF8() async throws {
        try await inTmux("the terminal picture test", environment: "TERM=xterm-256color") { tmux, scratch in
            try await watchPicture(tmux, playlist: Self.repository.appendingPathComponent("assets/playlist.json"),
                scratch: scratch)
        }
    }

    @Test func onATerminalFetchKeepsBinaryOffItAndClearingEverythingAsks() async throws {
        try await inTmux("the terminal safety test") { tmux, scratch in
            let binary = try CLI.binary().path
            let cache = "\(scratch.path)/safety-cache"
            try await tmux.type("clear; '\(binary)' fetch http://127.0.0.1:9/v.mp4 --cache-dir '\(cache)'; echo \"exit=$?\"")
            try await tmux.waitFor("fetch refusing the terminal") { screen in
                screen.contains { $0.contains("not writing binary data to the terminal") }
                    && screen.contains { $0.contains("exit=2") }
            }
            // A cache with something in it: clearing it all asks first, and "n" keeps it.
            let origin = try await MediaOriginServer()
            origin.set(OriginResource(bytes: content(10_000)), at: "/a.bin")
            let fetched = try await CLI.run(
                ["fetch", origin.url("a.bin").absoluteString, "--output", "\(scratch.path)/a.bin", "--cache-dir", cache])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            try await tmux.type("clear; '\(binary)' cache clear --cache-dir '\(cache)'; echo \"exit=$?\"")
            try await tmux.waitFor("the question") { $0.contains { $0.contains("remove all 1 cached resource") } }
            try await tmux.type("n")
            try await tmux.waitFor("nothing removed") { screen in
                screen.contains { $0.contains("nothing removed") } && screen.contains { $0.contains("exit=1") }
            }
            let listed = try await CLI.run(["cache", "ls", "--json", "--cache-dir", cache])
            #expect(listed.text.contains("a.bin"), "declining kept the cache")
            await origin.shutdown()
        }
    }

    @Test func closingTheTerminalEndsTheProgram() async throws {
        try await inTmux("the terminal hang-up test") { tmux, scratch in
            let playlist = Self.repository.appendingPathComponent("assets/playlist.json")
            let cache = "\(scratch.path)/hangup-cache"
            /// Processes whose command line names this test's cache directory.
            func running() -> [String] {
                let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
                return entries.filter { entry in
                    guard Int(entry) != nil, let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
                    else { return false }
                    let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                    return arguments.contains(cache) && arguments.first?.hasSuffix("stories-tui") == true
                }
            }
            try await tmux.type("'\(try CLI.binary().path)' '\(playlist.path)' --cache-dir '\(cache)' --network lan")
            try await tmux.waitFor("the first story") { $0.contains { $0.contains("1/5") } }
            #expect(running().count == 1)
            await tmux.kill()
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, !running().isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            #expect(running().isEmpty, "stories-tui kept running after its terminal closed")
        }
    }

    /// Runs `body` with a private tmux server whose 100×30 window holds a shell (with `environment` set, NO_COLOR
    /// unset, a UTF-8 locale) at its prompt, and a scratch directory. Without tmux it skips with a message, or
    /// fails when STORIES_REQUIRE_E2E=1. The server is killed however `body` ends.
    private func inTmux(
        _ what: String, environment: String = "", _ body: (Tmux, ScratchDirectory) async throws -> Void
    ) async throws {
        guard let executable = Tmux.find() else {
            if ProcessInfo.processInfo.environment["STORIES_REQUIRE_E2E"] == "1" {
                Issue.record("tmux is required (STORIES_REQUIRE_E2E=1) but not installed")
            } else {
                print("skipping \(what): tmux not installed (apt-get install tmux)")
            }
            return
        }
        let scratch = ScratchDirectory()
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
        defer { scratch.cleanup() }
        let tmux = Tmux(executable: executable, socket: scratch.url.appendingPathComponent("tmux.sock").path)
        do {
            try await tmux.run([
                "new-session", "-d", "-s", "main", "-x", "100", "-y", "30",
                "env -u NO_COLOR \(environment) PS1='E2E> ' LANG=C.UTF-8 LC_ALL=C.UTF-8 bash --norc --noprofile",
            ])
            try await tmux.waitFor("the shell prompt") { $0.contains { $0.hasPrefix("E2E>") } }
            try await body(tmux, scratch)
        } catch {
            await tmux.kill()
            throw error
        }
        await tmux.kill()
    }

    private func watchPicture(_ tmux: Tmux, playlist: URL, scratch: ScratchDirectory) async throws {
        let binary = try CLI.binary().path
        // The Mandelbrot zoom moves in every frame.
        try await tmux.type("clear; '\(binary)' '\(playlist.path)' --cache-dir '\(scratch.path)/cache' --from-start --network lan")
        try await tmux.keys("2")
        // Inside tmux pictures are cells (no images): rows of 256-colour cells.
        func isPictureRow(_ line: String) -> Bool { line.components(separatedBy: "8;5;").count > 20 }
        try await tmux.waitFor("the picture of story 2 playing, with its caption") { screen in
            screen.contains { $0.contains("2/5 · Mandelbrot zoom") }
                && screen.contains { $0.contains("Mandelbrot zoom · ▶ Playing") }
        }
        try await tmux.waitFor("the picture's rows", escapes: true) { screen in
            screen.filter(isPictureRow).count >= 15
        }
        // The picture changes while the story plays: colours differ between captures.
        func picture() async throws -> [String] {
            try await tmux.screen(escapes: true).filter(isPictureRow)
        }
        let first = try await picture()
        let deadline = ContinuousClock.now + .seconds(20)
        var moved = false
        while ContinuousClock.now < deadline, !moved {
            moved = try await picture() != first
            if !moved { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(moved, "the picture never changed while playing")
        // Paused, it holds still.
        try await tmux.keys("Space")
        try await tmux.waitFor("paused") { $0.contains { $0.contains("Paused") } }
        // The frame due at the paused playhead may still be on its way on a busy machine: wait for it, then the
        // picture must not change again.
        var still = try await picture()
        let settleBy = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < settleBy {
            try await Task.sleep(for: .milliseconds(150))
            let next = try await picture()
            if next == still { break }
            still = next
        }
        for _ in 0..<10 {
            try await Task.sleep(for: .milliseconds(50))
            #expect(try await picture() == still, "the picture changed while paused")
        }
        try await tmux.keys("q")
        try await tmux.waitFor("the shell after q") { $0.last(where: { !$0.isEmpty })?.hasPrefix("E2E>") == true }

        // Without UTF-8 the picture is drawn with ASCII characters.
        try await tmux.type("clear; LANG=C LC_ALL=C '\(binary)' '\(playlist.path)' --cache-dir '\(scratch.path)/cache' --from-start")
        let shaded = try await tmux.waitFor("the ASCII picture of story 1") { screen in
            // Without UTF-8 the header's separators are ASCII too.
            screen.contains { $0.contains("1/5 - Colour bars") }
                && screen.filter { line in line.filter { $0 != " " }.count >= 30 }.count >= 10
        }
        #expect(shaded.allSatisfy { $0.allSatisfy(\.isASCII) })
        try await tmux.keys("q")
        try await tmux.waitFor("the shell after q") { $0.last(where: { !$0.isEmpty })?.hasPrefix("E2E>") == true }
    }

    /// Presses `key` until the screen shows what `predicate` looks for (each press waited on for a while).
    private func press(_ tmux: Tmux, _ key: String, until what: String, _ predicate: @escaping ([String]) -> Bool)
        async throws
    {
        for attempt in 1...6 {
            try await tmux.keys(key)
            do {
                try await tmux.waitFor(what, timeout: attempt < 6 ? 8 : 30, predicate)
                return
            } catch where attempt < 6 {
                continue
            }
        }
    }

    private func drive(_ tmux: Tmux, demo: Demo, playlist: URL, scratch: ScratchDirectory) async throws {
        let count = demo.stories.count
        let binary = try CLI.binary().path
        // At a quarter of real speed each 5-second story stays 20 s on screen: a loaded machine, whose looks at the
        // screen can be seconds apart, still sees every step (the test never waits for a story to end).
        func launch(_ marker: String) async throws {
            try await tmux.type("clear; '\(binary)' '\(playlist.path)' --cache-dir '\(scratch.path)/cache' --from-start "
                + "--network lan --speed 0.25; stty -a > '\(scratch.path)/\(marker).txt'; echo \(marker)-$((40+2))")
        }

        // Quit with q.
        try await launch("quit")
        try await tmux.waitFor("the first frame of story 1", timeout: 60) { screen in
            screen.contains { $0.contains("1/\(count) · \(demo.stories[0].title)") }
                && screen.contains { $0.contains("▶ Playing") }
        }
        func shows(_ story: Int) -> ([String]) -> Bool {
            { $0.contains { $0.contains("\(story + 1)/\(count) · \(demo.stories[story].title)") } }
        }
        // A 5-second story may end on a busy machine before the key arrives: paused first, the story on screen
        // stays until → moves on from it.
        try await tmux.keys("Space")
        let pausedScreen = try await tmux.waitFor("a paused story") { $0.contains { $0.contains("Paused") } }
        let showing = (0..<count - 1).first { shows($0)(pausedScreen) } ?? 0
        try await tmux.keys("Right")
        try await tmux.waitFor("story \(showing + 2) after →", shows(showing + 1))
        // A 5-second story may end on a busy machine between the look at the screen and the key, and move on by
        // itself: ← is pressed until story 1 shows (only ← goes back).
        try await press(tmux, "Left", until: "story 1 after ←", shows(0))
        try await tmux.keys("l")
        try await tmux.waitFor("story 2 after l", shows(1))
        // Paused, the story stays on screen however long the steps below take on a busy machine.
        try await tmux.keys("Space")
        let paused = try await tmux.waitFor("a story paused") { $0.contains { $0.contains("Paused") } }
        let caption = paused.first { $0.contains("/\(count) · ") }?.split(separator: "·").first.map(String.init) ?? ""
        try await tmux.keys("c")
        let pane = try await tmux.waitFor("the cache pane") { $0.contains { $0.contains("Hit ratio") } }
        #expect(pane.contains { $0.contains("Plays") && $0.contains("Cached") && $0.contains("State") })
        #expect(pane.contains { $0.contains(demo.stories[0].title) && $0.contains("HIT") || $0.contains("PART") })
        try await tmux.keys("c")
        try await tmux.waitFor("the pane closed") { !$0.contains { $0.contains("Hit ratio") } }
        try await tmux.run(["resize-window", "-t", "main", "-x", "50", "-y", "12"])
        try await tmux.waitFor("the too-small notice") { $0.contains { $0.contains("needs 60×16, this is 50×12") } }
        try await tmux.run(["resize-window", "-t", "main", "-x", "100", "-y", "30"])
        try await tmux.waitFor("the paused story again after growing") {
            !caption.isEmpty && $0.contains { $0.contains(caption) } && $0.contains { $0.contains("Paused") }
        }
        try await tmux.keys("q")
        let after = try await tmux.waitFor("the shell after q") { screen in
            screen.contains { $0.hasPrefix("quit-42") } && screen.last(where: { !$0.isEmpty })?.hasPrefix("E2E>") == true
        }
        #expect(!after.contains { $0.contains("Hit ratio") || $0.contains("▶ Playing") }, "the screen was restored")
        let flags = try terminalFlags(scratch.url.appendingPathComponent("quit.txt"))
        #expect(flags.isSuperset(of: ["icanon", "echo", "isig", "icrnl", "opost"]), "\(flags)")

        // Ctrl-C (SIGINT) restores the terminal too.
        try await launch("interrupt")
        try await tmux.waitFor("the first frame again") { $0.contains { $0.contains("▶ Playing") } }
        try await tmux.keys("C-c")
        let stopped = try await tmux.waitFor("the shell after Ctrl-C") { $0.contains { $0.hasPrefix("interrupt-42") } }
        // The summary line, as after q.
        #expect(stopped.contains { $0.contains("watched") && $0.contains("saved by the cache") },
            "\(stopped.joined(separator: "\n"))")
        let interrupted = try terminalFlags(scratch.url.appendingPathComponent("interrupt.txt"))
        #expect(interrupted.isSuperset(of: ["icanon", "echo", "isig", "icrnl", "opost"]), "\(interrupted)")
    }
}
