import Foundation
import Testing

@testable import StoryPlayer
@testable import stories_tui

/// What a run says about the files it passed over.
@Suite struct SkippedLinesTests {
    static func sources(_ files: [(String, String)]) -> StorySources {
        var counts: [String: Int] = [:]
        for (_, reason) in files { counts[reason, default: 0] += 1 }
        var sources = StorySources(playlist: Playlist(title: "t", stories: [], file: URL(fileURLWithPath: "/t")), skipped: counts, isJSONOnly: false)
        sources.skippedFiles = files.map { StorySources.SkippedFile(path: $0.0, reason: $0.1) }
        return sources
    }

    @Test func theFirstThreeAreNamedAndVerboseNamesEveryOne() {
        let read = Self.sources([
            ("/home/me/clips/a.txt", "not media"), ("/home/me/clips/b.txt", "not media"),
            ("/home/me/clips/c.mp4", "unreadable"), ("/elsewhere/d.txt", "not media"), ("/home/me/clips/e.txt", "not media"),
        ])
        let lines = PlaySources.skippedLines(read, all: false, directory: "/home/me")
        #expect(lines == [
            "stories-tui: skipped 5 files (4 not media, 1 unreadable)", "  clips/a.txt: not media",
            "  clips/b.txt: not media", "  clips/c.mp4: unreadable", "  and 2 more (--verbose names every one)",
        ])
        let every = PlaySources.skippedLines(read, all: true, directory: "/home/me/")
        #expect(every.count == 6 && every[4] == "  /elsewhere/d.txt: not media" && every[5] == "  clips/e.txt: not media")
        #expect(PlaySources.skippedLines(Self.sources([]), all: true).isEmpty)
    }
}
