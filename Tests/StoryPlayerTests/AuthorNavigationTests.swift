import Foundation
import Testing

@testable import StoryPlayer

/// Stories by author as plain values: ←/→ across authors, ↑/↓, auto-advance to the next author with unseen
/// stories, and where a run resumes.
@Suite struct AuthorNavigationTests {
    /// Ana: a0 a1 a2 · Ben: b0 b1 · Cleo: c0 c1 (indices 0–6).
    private let stories: [Story] = [("Ana", 3), ("Ben", 2), ("Cleo", 2)].flatMap { author, count in
        (0..<count).map { i in
            let id = "\(author.lowercased().prefix(1))\(i)"
            return Story(id: id, title: id, source: .remote(URL(string: "http://x/\(id).mp4")!), author: author)
        }
    }

    private func navigator(seen: [String] = [], maxViews: [String: Int] = [:]) -> StoryNavigator {
        var list = stories
        for i in list.indices { list[i].maxViews = maxViews[list[i].id] }
        return StoryNavigator(
            stories: list, playCounts: Dictionary(uniqueKeysWithValues: seen.map { ($0, 1) }), showAll: false)
    }

    @Test func authorsAreRunsOfNeighbouringStories() {
        let n = navigator()
        #expect(n.authors.map(\.name) == ["Ana", "Ben", "Cleo"])
        #expect(n.authors.map(\.stories) == [0..<3, 3..<5, 5..<7])
        #expect(n.author(of: 4) == 1)
    }

    @Test func rightAndLeftMoveWithinAnAuthorAndOnToItsNeighbours() {
        var n = navigator()
        n.jump(to: 2)
        #expect(n.next() == 3)  // Ana's last → Ben's first
        #expect(n.previous() == 2)  // Ben's first → Ana's last
        n.jump(to: 6)
        #expect(n.next() == nil)
        #expect(n.isFinished)
    }

    @Test func rightAtAnAuthorsEndEntersTheNextAtItsFirstUnseenStory() {
        var n = navigator(seen: ["b0"])
        n.jump(to: 2)
        #expect(n.next() == 4)
    }

    @Test func upAndDownJumpToTheNeighbouringAuthorsFirstUnseenStory() {
        var n = navigator(seen: ["a0", "c0"])
        n.jump(to: 0)
        #expect(n.nextAuthor() == 3)
        #expect(n.nextAuthor() == 6)
        #expect(n.nextAuthor() == 6)  // the last author: stays
        #expect(n.previousAuthor() == 3)
        #expect(n.previousAuthor() == 1)  // Ana's first unseen
        #expect(n.previousAuthor() == 1)  // the first author: stays
        // An author whose stories were all seen is entered at its first.
        var all = navigator(seen: ["b0", "b1"])
        all.jump(to: 0)
        #expect(all.nextAuthor() == 3)
    }

    @Test func autoAdvanceGoesOnToTheNextAuthorWithUnseenStories() {
        var n = navigator(seen: ["b0", "b1", "c0"])
        n.jump(to: 1)
        #expect(n.advance() == 2)
        #expect(n.advance() == 6)  // Ben seen whole: passed; Cleo from her first unseen
        #expect(n.advance() == nil)
        #expect(n.isFinished)
        // Within an author every story plays, seen or not.
        var m = navigator(seen: ["a1"])
        m.jump(to: 0)
        #expect(m.advance() == 1)
    }

    @Test func aRunResumesAtTheFirstUnseenStoryOfTheFirstAuthorThatHasOne() {
        var n = navigator(seen: ["a0", "a1", "a2", "b0"])
        #expect(n.resume() == 4)
        #expect(n.isSeen(3) && !n.isSeen(4))
        var fromStart = navigator(seen: ["a0", "a1", "a2", "b0"])
        #expect(fromStart.resume(fromStart: true) == 0)
        var everything = navigator(seen: stories.map(\.id))
        #expect(everything.resume() == 0)
    }

    /// A run that starts from the beginning (everything seen, or --from-start) plays every author in turn, each
    /// from its first story: before, it played the first author and ended, no other author having unseen stories.
    @Test func aRunFromTheBeginningPlaysEveryAuthor() {
        var everything = navigator(seen: stories.map(\.id))
        var played = [everything.resume()]
        while let i = everything.advance() { played.append(i) }
        #expect(played == [0, 1, 2, 3, 4, 5, 6])
        var fromStart = navigator(seen: ["a0", "b0"])
        played = [fromStart.resume(fromStart: true)]
        while let i = fromStart.advance() { played.append(i) }
        #expect(played == [0, 1, 2, 3, 4, 5, 6])
        // A run that resumed at the first unseen story still passes authors seen whole.
        var resumed = navigator(seen: ["a0", "b0", "b1"])
        played = [resumed.resume()]
        while let i = resumed.advance() { played.append(i) }
        #expect(played == [1, 2, 5, 6])
    }

    @Test func maxViewsStillHoldsAcrossAuthors() {
        // b0 reached its views: it is neither entered nor counted as unseen.
        var n = navigator(seen: ["a0", "a1", "a2", "b0"], maxViews: ["b0": 1, "b1": 1])
        #expect(n.resume() == 4)
        n.jump(to: 2)
        #expect(n.next() == 4)
        var m = navigator(seen: ["b0", "b1"], maxViews: ["b0": 1, "b1": 1])
        m.jump(to: 2)
        #expect(m.advance() == 5)
    }

    @Test func aPlaylistWithoutAuthorsIsOneGroup() {
        var n = StoryNavigator(
            stories: stories.map { var s = $0; s.author = nil; return s }, playCounts: ["a0": 1], showAll: false)
        #expect(n.authors == [AuthorGroup(name: nil, stories: 0..<7)])
        #expect(n.resume() == 1)
        #expect(n.advance() == 2)
        n.jump(to: 6)
        #expect(n.advance() == nil)
    }
}
