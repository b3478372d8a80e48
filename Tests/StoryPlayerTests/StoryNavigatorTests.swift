import Foundation
import Testing

@testable import StoryPlayer

@Suite struct StoryNavigatorTests {
    private func stories(_ maxViews: [Int?]) -> [Story] {
        maxViews.enumerated().map { index, max in
            Story(id: "s\(index)", title: "Story \(index)", source: .remote(URL(string: "http://x/\(index).mp4")!),
                maxViews: max)
        }
    }

    @Test func autoAdvanceRunsThroughThenFinishes() {
        var navigator = StoryNavigator(stories: stories([nil, nil, nil]), playCounts: [:], showAll: false)
        #expect(navigator.start() == 0)
        #expect(navigator.next() == 1)
        #expect(navigator.next() == 2)
        #expect(navigator.next() == nil)
        #expect(navigator.isFinished)
    }

    @Test func storiesAtMaxViewsAreSkippedUnlessAllAreShown() {
        let list = stories([1, 2, nil, 1])
        var navigator = StoryNavigator(stories: list, playCounts: ["s0": 1, "s1": 1, "s3": 1], showAll: false)
        #expect(navigator.start() == 1)
        #expect(navigator.skipped(after: -1, before: 1) == [0])
        #expect(navigator.recordPlay() == 2)
        #expect(!navigator.isEligible(1))
        #expect(navigator.next() == 2)
        #expect(navigator.next() == nil)
        #expect(navigator.skipped(after: 2, before: nil) == [3])
        var everything = StoryNavigator(stories: list, playCounts: ["s0": 5], showAll: true)
        #expect(everything.start() == 0)
    }

    @Test func previousStopsAtTheFirstEligibleStory() {
        var navigator = StoryNavigator(stories: stories([1, nil, nil]), playCounts: ["s0": 1], showAll: false)
        #expect(navigator.start() == 1)
        #expect(navigator.previous() == 1)
        #expect(navigator.next() == 2)
        #expect(navigator.previous() == 1)
    }
}
