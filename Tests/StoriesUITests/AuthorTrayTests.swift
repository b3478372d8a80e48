import MediaCache
import StoriesUI
import StoryPlayer
import Terminal
import Testing

/// Stories by author on screen: the header names the author, the segments are that author's stories, the tray
/// marks the authors with unseen stories.
@Suite struct AuthorTrayTests {
    /// Ana (2 stories, both seen) · Ben (3, the second playing) · Cleo (1, unseen).
    private func snapshot() -> SessionSnapshot {
        var status = PlaybackStatus()
        status.state = .playing
        status.position = 2
        status.duration = 4
        let rows = [
            StoryRow(id: "a0", title: "Beach", plays: 1, author: "Ana"),
            StoryRow(id: "a1", title: "Dinner", plays: 2, author: "Ana"),
            StoryRow(id: "b0", title: "Gym", plays: 1, author: "Ben"),
            StoryRow(id: "b1", title: "Run", author: "Ben"),
            StoryRow(id: "b2", title: "Rest", author: "Ben"),
            StoryRow(id: "c0", title: "Cat", author: "Cleo"),
        ]
        return SessionSnapshot(title: "Friends", stories: rows, current: 3, status: status)
    }

    @Test func theHeaderNamesTheAuthorAndCountsTheirStoriesOnly() {
        let lines = StoriesRenderer.render(StoriesScreen(snapshot: snapshot()), width: 80, height: 24).lines
        #expect(lines[1].hasPrefix(" Ben · 2/3 · Run"), "\(lines[1])")
        // Three segments for Ben's three stories: the first watched, the second half played, the third empty.
        let segments = lines[0].split(separator: " ", omittingEmptySubsequences: true)
        #expect(segments.count == 3, "\(lines[0])")
        #expect(segments[0].allSatisfy { $0 == "━" })
        #expect(segments[1].hasPrefix("━") && segments[1].hasSuffix("─"))
        #expect(segments[2].allSatisfy { $0 == "─" })
    }

    @Test func aFeedItemsAgeFollowsItsTitleWhileThereIsRoom() {
        var posted = snapshot()
        posted.stories[3].age = "3 h ago"
        let wide = StoriesRenderer.render(StoriesScreen(snapshot: posted), width: 80, height: 24).lines
        #expect(wide[1].hasPrefix(" Ben · 2/3 · Run · 3 h ago"), "\(wide[1])")
        posted.stories[3].title = String(repeating: "long title ", count: 8)
        let narrow = StoriesRenderer.render(StoriesScreen(snapshot: posted), width: 60, height: 16).lines
        #expect(!narrow[1].contains("3 h ago"), "\(narrow[1])")
        #expect(narrow[1].contains("long title"), "\(narrow[1])")
    }

    @Test func theTrayMarksAuthorsWithUnseenStories() {
        let lines = StoriesRenderer.render(StoriesScreen(snapshot: snapshot()), width: 80, height: 24).lines
        #expect(lines[2].contains("○ Ana"), "\(lines[2])")
        #expect(lines[2].contains("● Ben"))
        #expect(lines[2].contains("● Cleo"))
        #expect(lines[23].contains("↑/↓ author"))
        let ascii = StoriesRenderer.render(StoriesScreen(snapshot: snapshot(), unicode: false), width: 80, height: 24).lines
        #expect(ascii[2].contains("o Ana") && ascii[2].contains("* Ben"), "\(ascii[2])")
    }

    @Test func aNarrowTrayKeepsTheCurrentAuthorInView() {
        var many = snapshot()
        many.stories = (0..<30).map { StoryRow(id: "s\($0)", title: "t", author: "Author number \($0)") }
        many.current = 25
        let lines = StoriesRenderer.render(StoriesScreen(snapshot: many), width: 60, height: 16).lines
        #expect(lines[2].contains("Author number 25"), "\(lines[2])")
        #expect(lines[2].hasPrefix("─…"))
        #expect(lines[2].count == 60)
    }

    @Test func aPlaylistWithoutAuthorsHasNoTray() {
        let lines = StoriesRenderer.render(StoriesScreen(snapshot: sampleSnapshot()), width: 80, height: 24).lines
        #expect(lines[2].allSatisfy { $0 == "─" })
        #expect(!lines[23].contains("author"))
    }

    @Test func upAndDownMoveBetweenAuthors() {
        #expect(KeyMap.action(for: .up, width: 80) == .command(.previousAuthor))
        #expect(KeyMap.action(for: .down, width: 80) == .command(.nextAuthor))
    }
}
