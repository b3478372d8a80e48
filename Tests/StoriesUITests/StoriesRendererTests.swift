import MediaCache
import StoriesUI
import StoryPlayer
import Terminal
import Testing

/// A three-story session to render.
func sampleSnapshot(current: Int? = 0, state: PlaybackState = .loading) -> SessionSnapshot {
    var status = PlaybackStatus()
    status.state = state
    return SessionSnapshot(
        title: "Demo", stories: [
            StoryRow(id: "a", title: "Intro", plays: 1, maxViews: 3),
            StoryRow(id: "b", title: "Mandelbrot zoom", contentLength: 1000),
            StoryRow(id: "c", title: "Game of life", contentLength: 2000),
        ], current: current, status: current == nil ? nil : status,
        totals: SessionTotals(cacheBytes: 300, originBytes: 100, diskUsed: 4000, diskLimit: 300_000_000))
}

func midStory() -> SessionSnapshot {
    var snapshot = sampleSnapshot(current: 1, state: .playing)
    snapshot.status?.position = 2.5
    snapshot.status?.duration = 5
    snapshot.status?.bufferedSeconds = 1.25
    snapshot.status?.cache = .partial
    snapshot.status?.startupMs = 412
    snapshot.status?.stalls = 1
    snapshot.status?.stallSeconds = 0.4
    snapshot.stories[1].cachedBytes = 500
    snapshot.cachedRanges = ByteRangeSet([0..<500])
    return snapshot
}

func row(_ grid: CellGrid, containing needle: String) -> Int? {
    grid.lines.firstIndex { $0.contains(needle) }
}

@Suite struct StoriesRendererTests {
    @Test func firstStoryLoading() throws {
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: sampleSnapshot()), width: 80, height: 24)
        let lines = grid.lines
        #expect(!lines[0].contains("━"), "nothing watched or played yet: every segment is empty")
        #expect(lines[0].contains("─"))
        #expect(lines[1].hasPrefix(" Demo · 1/3 · Intro"))
        #expect(lines[1].contains("0:00.0 / -:--.-"))
        #expect(lines[1].contains("plays 1/3"))
        #expect(lines[1].hasSuffix("plays 1/3    …"), "no cache state before the content information")
        #expect(row(grid, containing: "Loading…") != nil)
        let buffer = try #require(row(grid, containing: "Buffer"))
        #expect(lines[buffer].hasSuffix("waiting"))
        #expect(lines[buffer + 1].contains("waiting for the first bytes…"))
        #expect(lines[buffer + 2].contains("Startup  …"))
        #expect(lines[23].contains("←/h prev") && lines[23].contains("space pause") && lines[23].contains("q quit"))
    }

    @Test func midStoryWithPartialCache() throws {
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: midStory()), width: 80, height: 24)
        let lines = grid.lines
        // 3 segments of 25 columns: the first watched, the second half full, the third empty.
        #expect(lines[0] == " " + String(repeating: "━", count: 26) + " " + String(repeating: "━", count: 12)
            + String(repeating: "─", count: 13) + " " + String(repeating: "─", count: 25))
        #expect(lines[1].hasPrefix(" Demo · 2/3 · Mandelbrot zoom"))
        #expect(lines[1].contains("0:02.5 / 0:05.0   plays 0    PARTIAL"))
        #expect(grid.style(of: "PARTIAL", row: 1) == CellStyle(color: .yellow, bold: true, reverse: true))
        #expect(row(grid, containing: "▶ Playing") != nil)
        let cached = try #require(row(grid, containing: "Cached"))
        let map = lines[cached].dropFirst(10).prefix(47)
        #expect(map.prefix(23).allSatisfy { $0 == "█" } && map.suffix(23).allSatisfy { $0 == "░" })
        #expect(lines[cached].hasSuffix(" 50% of 1.0 kB"))
        #expect(lines[cached - 1].contains("1.2 s of 2.5 s ahead"))
        #expect(lines[cached + 1].contains("412 ms") && lines[cached + 1].contains("Stalls 1 (0.4 s)"))
    }

    @Test func cachePaneBesideTheStoryOnWideTerminals() throws {
        var snapshot = midStory()
        snapshot.stories[0].cachedBytes = 100
        snapshot.stories[0].contentLength = 100
        snapshot.stories[2].preload = PreloadProgress(phase: .preloading, neededBytes: 1000, cachedBytes: 400)
        snapshot.stories[2].cachedBytes = 400
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: true), width: 100, height: 24)
        let lines = grid.lines
        let header = try #require(row(grid, containing: "Story"))
        #expect(lines[header].contains("Plays") && lines[header].contains("Cached") && lines[header].contains("State"))
        #expect(lines[header + 1].contains("1  Intro") && lines[header + 1].contains("1/3")
            && lines[header + 1].contains("100% HIT"))
        #expect(lines[header + 2].contains("▶  Mandelbrot zoom") && lines[header + 2].contains("50% PART"))
        #expect(lines[header + 3].contains("3  Game of life") && lines[header + 3].contains("20% PRELOADING 40%"))
        #expect(lines.contains { $0.contains("Hit ratio") && $0.contains("75% saved/(saved+origin)") })
        #expect(lines.contains { $0.contains("Bytes saved") && $0.contains("300 B") })
        #expect(lines.contains { $0.contains("Origin bytes") && $0.contains("100 B") })
        #expect(lines.contains { $0.contains("Disk") && $0.contains("4.0 kB / 300.0 MB") })
        #expect(lines.contains { $0.contains("Network") && $0.contains("0 B/s") })
        #expect(row(grid, containing: "▶ Playing") != nil, "the story stays visible beside the pane")
        #expect(lines[23].contains("c hide cache"))

        let narrow = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: true), width: 70, height: 24)
        #expect(row(narrow, containing: "Hit ratio") != nil)
        #expect(row(narrow, containing: "▶ Playing") == nil, "on narrow terminals the pane covers the story")
    }

    @Test func paused() throws {
        var snapshot = midStory()
        snapshot.status?.state = .paused
        snapshot.paused = true
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 80, height: 24)
        #expect(row(grid, containing: "‖ Paused · space resumes") != nil)
        #expect(grid.lines[23].contains("space resume"))
        #expect(row(grid, containing: "Playing") == nil)
    }

    @Test(arguments: [(40, 10), (59, 30), (120, 15)]) func tooSmallTerminalSaysWhatItNeeds(width: Int, height: Int) {
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: midStory()), width: width, height: height)
        #expect(grid.width == width && grid.height == height)
        #expect(row(grid, containing: "Terminal too small") != nil)
        #expect(row(grid, containing: "needs 60×16, this is \(width)×\(height)") != nil)
        #expect(row(grid, containing: "Mandelbrot") == nil)
    }

    @Test func asciiFallbackUsesNoOtherCharacters() throws {
        var snapshot = midStory()
        snapshot.stories[2].preload = PreloadProgress(phase: .preloaded)
        for paneOpen in [false, true] {
            let grid = StoriesRenderer.render(
                StoriesScreen(snapshot: snapshot, paneOpen: paneOpen, unicode: false), width: 100, height: 24)
            for line in grid.lines {
                #expect(line.unicodeScalars.allSatisfy { $0.isASCII }, "\(line)")
            }
            let lines = grid.lines
            #expect(lines[0].hasPrefix(" " + String(repeating: "=", count: 32) + " "))
            #expect(lines[1].contains("Demo - 2/3 - Mandelbrot zoom"))
            #expect(lines[23].contains("<-/h prev") && lines[23].contains("->/l next"))
            #expect(row(grid, containing: "> Playing") != nil)
            if paneOpen {
                #expect(row(grid, containing: "PRELOADED") != nil)
            } else {
                let cached = try #require(row(grid, containing: "Cached"))
                #expect(lines[cached].contains("#####") && lines[cached].contains("....."))
            }
        }
        let small = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, unicode: false), width: 30, height: 8)
        #expect(row(small, containing: "needs 60x16, this is 30x8") != nil)
    }

    @Test func withoutColourTheIndicatorStillSaysItInText() throws {
        for (cache, word, color) in [(CacheOutcome.hit, "HIT", CellColor.green), (.miss, "MISS", .red), (.offline, "OFFLINE", .magenta)] {
            var snapshot = midStory()
            snapshot.status?.cache = cache
            let plain = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, color: false), width: 80, height: 24)
            let style = try #require(plain.style(of: " \(word) ", row: 1))
            #expect(style.color == nil && style.reverse && style.bold)
            let colored = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 80, height: 24)
            #expect(colored.style(of: " \(word) ", row: 1)?.color == color)
            #expect(plain.lines == colored.lines, "colour never changes the text")
        }
    }

    @Test func afterTheLastStory() throws {
        var snapshot = sampleSnapshot(current: nil)
        snapshot.finished = true
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 80, height: 24)
        #expect(grid.lines[0].allSatisfy { $0 == " " || $0 == "━" }, "every segment full")
        #expect(row(grid, containing: "All stories watched") != nil)
        #expect(row(grid, containing: "←/h back · r start over · q quit") != nil)
        for i in snapshot.stories.indices { snapshot.stories[i].eligible = false }
        let none = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 80, height: 24)
        #expect(row(none, containing: "Every story reached its view limit") != nil)
        #expect(row(none, containing: "--all") != nil)
    }

    @Test func resizingReflowsToTheNewWidth() {
        let wide = StoriesRenderer.render(StoriesScreen(snapshot: midStory()), width: 120, height: 30)
        #expect(wide.lines[1].hasSuffix("PARTIAL") && wide.lines[1].count == 118,
            "the indicator (' PARTIAL ', reversed) ends one column from the edge")
        #expect(wide.lines[2].count == 120)
        #expect(wide.lines[29].contains("q quit"))
    }
}

@Suite struct KeyMapTests {
    @Test func keys() {
        let cases: [(TerminalInput, UIAction?)] = [
            (.left, .command(.previous)), (.right, .command(.next)), (.character("h"), .command(.previous)),
            (.character("l"), .command(.next)), (.character(" "), .command(.togglePause)),
            (.character("r"), .command(.replay)), (.character("c"), .togglePane), (.character("q"), .quit),
            (.escape, .quit), (.character("\u{3}"), .quit), (.resize, .relayout), (.character("x"), nil),
            (.up, .command(.previousAuthor)), (.down, .command(.nextAuthor)),
        ]
        for (input, action) in cases { #expect(KeyMap.action(for: input, width: 100) == action, "\(input)") }
    }

    @Test func clicksOnTheLeftHalfGoBackAndOnTheRightHalfGoOn() {
        #expect(KeyMap.action(for: .click(x: 0, y: 10), width: 100) == .command(.previous))
        #expect(KeyMap.action(for: .click(x: 49, y: 3), width: 100) == .command(.previous))
        #expect(KeyMap.action(for: .click(x: 50, y: 3), width: 100) == .command(.next))
        #expect(KeyMap.action(for: .click(x: 99, y: 29), width: 100) == .command(.next))
    }
}

/// The sound's state where a viewer looks for it: the header, the keys, the help and the cache pane.
struct SoundDisplayTests {
    @Test(arguments: [120, 160])
    func aLongSoundReasonIsShortenedAtAWordNeverCutMidWord(width: Int) throws {
        let reason = "no sound server or device: PulseAudio said connection refused, and ALSA cannot open its default device (no such file or directory)"
        let snapshot = Self.snapshot(sound: .off, availability: .unavailable(reason))
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: true), width: width, height: 30)
        let line = try #require(grid.lines.first { $0.contains("Sound ") && $0.contains("off: no sound") })
        let shown = String(line[line.range(of: "off: ")!.lowerBound...]).trimmingCharacters(in: .whitespaces)
        let full = "off: " + reason
        #expect(shown.hasSuffix("…"), "\(shown)")
        let kept = String(shown.dropLast())
        #expect(full.hasPrefix(kept), "\(kept)")
        // The word before the ellipsis is whole: the full text goes on with a space there.
        #expect(full.dropFirst(kept.count).first.map { " ,;:(-".contains($0) } == true, "cut mid-word: \(shown)")
        #expect(line.count <= width)
    }

    static func snapshot(sound: StorySound, muted: Bool = false, availability: SoundAvailability? = .ready("PulseAudio"))
        -> SessionSnapshot
    {
        var status = PlaybackStatus()
        status.state = .playing
        status.duration = 5
        status.sound = sound
        return SessionSnapshot(
            title: "Demo", stories: [StoryRow(id: "a", title: "A")], current: 0, status: status, muted: muted,
            sound: availability)
    }

    @Test func theHeaderSaysWhetherTheStoryIsHeard() {
        let cases: [(StorySound, String)] = [(.playing, "♪ sound"), (.muted, "muted"), (.silent, "no sound"), (.off, "no sound")]
        for (sound, word) in cases {
            let grid = StoriesRenderer.render(StoriesScreen(snapshot: Self.snapshot(sound: sound)), width: 100, height: 24)
            #expect(grid.lines[1].contains(word), "\(sound): \(grid.lines[1])")
        }
        let ascii = StoriesRenderer.render(
            StoriesScreen(snapshot: Self.snapshot(sound: .playing), unicode: false), width: 100, height: 24)
        #expect(ascii.lines[1].contains("sound") && !ascii.lines[1].contains("♪"))
    }

    @Test func mIsListedAndThePaneSaysWhereSoundGoesOrWhyNot() {
        let muted = StoriesRenderer.render(
            StoriesScreen(snapshot: Self.snapshot(sound: .muted, muted: true), paneOpen: true), width: 140, height: 30)
        #expect(muted.lines[29].contains("m unmute"), "\(muted.lines[29])")
        #expect(muted.lines.contains { $0.contains("Sound") && $0.contains("PulseAudio, muted (m)") })
        let none = StoriesRenderer.render(
            StoriesScreen(
                snapshot: Self.snapshot(sound: .off, availability: .unavailable("no sound server (Connection refused)")),
                paneOpen: true), width: 140, height: 30)
        #expect(none.lines.contains { $0.contains("off: no sound server (Connection refused)") })
        let help = StoriesRenderer.render(
            StoriesScreen(snapshot: Self.snapshot(sound: .playing), helpOpen: true), width: 100, height: 24)
        #expect(help.lines.contains { $0.contains("mute / unmute the sound") })
        // The seek keys whole: both arrows (the help once cut them to "Shift+←/").
        #expect(help.lines.contains { $0.contains("Shift+←/→") && $0.contains("seek 1 s back / forward") },
            "\(help.lines.joined(separator: "\n"))")
    }

    @Test func aFileReadFromDiskSaysLocalInTheHeaderAndThePane() throws {
        var snapshot = midStory()
        snapshot.status?.cache = .local
        snapshot.stories[1].isLocal = true
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot, paneOpen: true), width: 120, height: 30)
        #expect(grid.lines[1].hasSuffix(" LOCAL"), "\(grid.lines[1])")
        let line = try #require(grid.lines.first { $0.contains("Mandelbrot zoom ") && $0.contains("│") })
        #expect(line.hasSuffix("local"), "\(line)")
        // The story area's lines say what is true of a file read from disk: no buffer bar waiting on a link, no
        // map of a cache it never enters.
        let text = grid.lines.joined(separator: "\n")
        #expect(grid.lines.contains { $0.contains("Source") && $0.contains("a file on this machine, read from disk") }, "\(text)")
        #expect(grid.lines.contains { $0.contains("Cached") && $0.contains("nothing (a local file is not copied)") }, "\(text)")
        #expect(!grid.lines.contains { $0.contains("Buffer ") || $0.contains("ahead") }, "\(text)")
    }
}
