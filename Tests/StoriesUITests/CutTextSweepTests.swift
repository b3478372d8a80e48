import MediaCache
import StoriesUI
import StoryPlayer
import Terminal
import Testing

/// Every width from the smallest the screen takes (60 columns) to 200: no word of the screen's own text is cut. A
/// word cut short is a proper beginning of a word the same screen shows whole when there is room (at 400 columns):
/// "Shift+←/" of "Shift+←/→", "Sou…" of "Sound".
@Suite struct CutTextSweepTests {
    static let separators: Set<Character> = [" ", "│", "┃", "─", "━", "═", "║", "╭", "╮", "╰", "╯", "┌", "┐", "└", "┘",
        "├", "┤", "█", "▓", "░", "▒", "·", "▕", "▏", "|", "-", "=", "+"]

    static func words(_ grid: CellGrid) -> [String] {
        grid.lines.flatMap { line in
            line.split(whereSeparator: { separators.contains($0) }).map { word in
                // Punctuation around a word is not part of it ("(m)", "nothing,").
                String(word.drop { "([\"'".contains($0) }).trimmingSuffix(while: { ",;:.)]\"'".contains($0) })
            }.filter { !$0.isEmpty }
        }
    }

    /// The screens to sweep: a story playing with part of it cached, the pane, the help, a failed story, a file read
    /// from disk, no sound and why, a paused story.
    static func screens() -> [(String, StoriesScreen)] {
        var failed = sampleSnapshot(current: 1, state: .failed)
        failed.status?.error = "origin unreachable: connection refused (127.0.0.1:8181); check that the server is running"
        failed.stories[1].contentLength = nil
        failed.stories[1].failed = true
        var local = midStory()
        local.status?.cache = .local
        local.stories[1].isLocal = true
        var paused = midStory()
        paused.status?.state = .paused
        var status = PlaybackStatus()
        status.state = .playing
        status.duration = 5
        status.sound = .off
        let silent = SessionSnapshot(
            title: "Demo", stories: [StoryRow(id: "a", title: "A")], current: 0, status: status,
            sound: .unavailable("no sound server (Connection refused)"))
        var heard = silent
        heard.status?.sound = .playing
        heard.sound = .ready("PulseAudio")
        return [
            ("playing", StoriesScreen(snapshot: midStory())), ("pane", StoriesScreen(snapshot: midStory(), paneOpen: true)),
            ("help", StoriesScreen(snapshot: heard, helpOpen: true)), ("failed", StoriesScreen(snapshot: failed)),
            ("failed, pane", StoriesScreen(snapshot: failed, paneOpen: true)),
            ("local, pane", StoriesScreen(snapshot: local, paneOpen: true)),
            ("no sound, pane", StoriesScreen(snapshot: silent, paneOpen: true)), ("paused", StoriesScreen(snapshot: paused)),
            ("heard, pane", StoriesScreen(snapshot: heard, paneOpen: true)),
        ]
    }

    @Test(arguments: [24, 40]) func noWordIsCutAtAnyWidthFrom60To200(height: Int) {
        for (name, screen) in Self.screens() {
            let whole = Set(Self.words(StoriesRenderer.render(screen, width: 400, height: height)))
            var cut: [String] = []
            for width in 60...200 {
                let grid = StoriesRenderer.render(screen, width: width, height: height)
                for word in Self.words(grid) {
                    let kept = word.hasSuffix("…") ? String(word.dropLast()) : word
                    guard !kept.isEmpty, !whole.contains(kept), !kept.contains(where: \.isNumber) else { continue }
                    if whole.contains(where: { $0.count > kept.count && $0.hasPrefix(kept) }) {
                        cut.append("\(width): \(word)")
                    }
                }
            }
            #expect(cut.isEmpty, "\(name), \(height) rows: \(cut.prefix(12))")
        }
    }
}

extension String {
    fileprivate func trimmingSuffix(while drop: (Character) -> Bool) -> String {
        var text = self
        while let last = text.last, drop(last) { text.removeLast() }
        return text
    }
}
