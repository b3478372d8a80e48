import MediaCache
import StoriesUI
import StoryPlayer
import Terminal
import Testing

/// Failures shown as failures, the help overlay, and layouts from the smallest terminal to wide ones.
@Suite struct StoriesLayoutTests {
    private func failedStory(_ reason: String) -> SessionSnapshot {
        var snapshot = sampleSnapshot(current: 1, state: .failed)
        snapshot.status?.error = reason
        snapshot.stories[1].contentLength = nil
        snapshot.stories[1].failed = true
        return snapshot
    }

    @Test(arguments: [false, true]) func aFailedStorySaysWhatFailedInFull(paneOpen: Bool) throws {
        let reason = "origin unreachable: connection refused (127.0.0.1:8181); check that the server is running"
        let grid = StoriesRenderer.render(
            StoriesScreen(snapshot: failedStory(reason), paneOpen: paneOpen), width: 100, height: 30)
        let lines = grid.lines
        #expect(lines[1].contains("could not play"), "\(lines[1])")
        #expect(!lines[1].contains("-:--.-"))
        // The reason is all there, over as many lines as the story area needs (beside the pane: its 51 columns).
        let storyArea = lines.map { String($0.prefix(paneOpen ? 51 : 100)) }
        let text = storyArea.joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(text.contains("Cannot play: " + reason), "\(lines.joined(separator: "\n"))")
        #expect(row(grid, containing: "waiting for the first bytes") == nil)
        #expect(row(grid, containing: "nothing cached") != nil)
        let buffer = try #require(row(grid, containing: "Buffer"))
        #expect(lines[buffer].contains(" stopped"))
        if paneOpen { #expect(row(grid, containing: "FAILED") != nil, "the pane marks it too") }
    }

    @Test func theEndScreenNamesTheStoriesThatCouldNotPlay() {
        var snapshot = sampleSnapshot(current: nil)
        snapshot.finished = true
        snapshot.stories[2].failed = true
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 80, height: 24)
        #expect(row(grid, containing: "All stories watched") == nil)
        #expect(row(grid, containing: "End of the stories") != nil)
        #expect(row(grid, containing: "1 could not play: Game of life") != nil)
    }

    @Test func questionMarkOpensAHelpListingEveryKey() throws {
        #expect(KeyMap.action(for: .character("?"), width: 80) == .toggleHelp)
        for (width, height) in [(60, 16), (100, 30)] {
            let grid = StoriesRenderer.render(StoriesScreen(snapshot: midStory(), helpOpen: true), width: width, height: height)
            let text = grid.lines.joined(separator: "\n")
            for meaning in ["previous / next story", "pause / resume", "seek 1 s back / forward", "story N",
                "replay the story", "cache pane", "left half: previous", "this help", "quit"]
            {
                #expect(text.contains(meaning), "\(width)×\(height) lacks '\(meaning)':\n\(text)")
            }
            #expect(row(grid, containing: "Keys") != nil)
        }
        let closed = StoriesRenderer.render(StoriesScreen(snapshot: midStory()), width: 80, height: 24)
        #expect(row(closed, containing: "previous / next story") == nil)
    }

    @Test(arguments: [false, true]) func theSmallestTerminalKeepsTitleQuitAndHelp(paneOpen: Bool) {
        var snapshot = midStory()
        snapshot.title = "A playlist with a rather long title"
        snapshot.stories[1].title = "Mandelbrot zoom into the seahorse valley"
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: paneOpen), width: 60, height: 16)
        let lines = grid.lines
        #expect(lines[1].contains("2/3 · Mandelbrot"), "the story's title stays: \(lines[1])")
        #expect(lines[1].contains("…"))
        #expect(lines[1].hasSuffix("PARTIAL"))
        #expect(lines[15].contains("q quit") && lines[15].contains("? help"), "\(lines[15])")
        // The separator above the keys row is intact: nothing of the pane or the story runs over it.
        #expect(lines[14].allSatisfy { $0 == "─" }, "\(lines[14])")
        #expect(lines.allSatisfy { $0.count <= 60 })
    }

    @Test func wideTerminalsUseTheirWidth() throws {
        var snapshot = midStory()
        snapshot.stories[2].title = "Header at the end, slowly"
        let wide = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: true), width: 120, height: 30)
        #expect(row(wide, containing: "Header at the end, slowly") != nil, "pane titles are not cut at 120")
        let at100 = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: true), width: 100, height: 30)
        let cached = try #require(row(at100, containing: " Cached   "))
        let cells = at100.lines[cached].filter { "█▓░".contains($0) }.count
        #expect(cells >= 16, "the cached-bytes map beside the pane at 100 columns has \(cells) cells")
        let buffer = try #require(row(at100, containing: "Buffer"))
        #expect(at100.lines[buffer].contains("of 2.5 s ahead"), "the buffer bar's scale is stated")
    }

    /// A 10-minute still buffers minutes ahead: the line says how far, whole, rather than cutting off the scale.
    @Test(arguments: [120, 160]) func aLongBufferIsSaidWholeNotCut(width: Int) throws {
        var snapshot = midStory()
        snapshot.status?.bufferedSeconds = 592.7
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: width, height: 40)
        let line = grid.lines[try #require(row(grid, containing: "Buffer"))]
        #expect(line.hasSuffix("592.7 s ahead"), "\(line)")
        #expect(!line.contains("…"))
    }
}
