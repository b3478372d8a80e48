/// Which story is current: previous/next, auto-advance, and skipping stories that reached `maxViews` (unless all
/// are shown). A value type with no I/O; callers persist play counts.
public struct StoryNavigator: Sendable, Equatable {
    /// The stories, in playlist order.
    public let stories: [Story]
    /// Plays so far by story id (across runs).
    public private(set) var playCounts: [String: Int]
    /// Show stories even when they reached `maxViews`.
    public let showAll: Bool
    /// The current story, nil before `start` or after the last.
    public private(set) var index: Int?
    /// True once navigation ran past the last story.
    public private(set) var isFinished = false

    /// A navigator before the first story.
    public init(stories: [Story], playCounts: [String: Int], showAll: Bool) {
        self.stories = stories
        self.playCounts = playCounts
        self.showAll = showAll
    }

    /// True when story `i` may be shown.
    public func isEligible(_ i: Int) -> Bool {
        guard stories.indices.contains(i) else { return false }
        guard !showAll, let maxViews = stories[i].maxViews else { return true }
        return (playCounts[stories[i].id] ?? 0) < maxViews
    }

    /// Plays of story `i`.
    public func plays(_ i: Int) -> Int { playCounts[stories[i].id] ?? 0 }

    /// Moves to the first eligible story; nil (and finished) when there is none.
    @discardableResult
    public mutating func start() -> Int? {
        index = nil
        isFinished = false
        return advance(from: -1)
    }

    /// Moves to the next eligible story (auto-advance and →); nil (and finished) after the last.
    @discardableResult
    public mutating func next() -> Int? { advance(from: index ?? -1) }

    /// Moves to the previous eligible story (←); stays put at the first.
    @discardableResult
    public mutating func previous() -> Int? {
        guard let current = index else { return nil }
        var i = current - 1
        while i >= 0 {
            if isEligible(i) {
                index = i
                return i
            }
            i -= 1
        }
        return current
    }

    /// Counts one more play of the current story and returns the new count.
    @discardableResult
    public mutating func recordPlay() -> Int {
        guard let index else { return 0 }
        let id = stories[index].id
        playCounts[id, default: 0] += 1
        return playCounts[id] ?? 0
    }

    /// Counts one more play of story `i` (a player's first frame may arrive after navigation moved on).
    @discardableResult
    public mutating func recordPlay(of i: Int) -> Int {
        guard stories.indices.contains(i) else { return 0 }
        playCounts[stories[i].id, default: 0] += 1
        return playCounts[stories[i].id] ?? 0
    }

    /// Makes story `i` current (replay, or ← after the end), whether or not it is eligible.
    public mutating func jump(to i: Int) {
        guard stories.indices.contains(i) else { return }
        index = i
        isFinished = false
    }

    /// The last eligible story, if any.
    public var lastEligible: Int? { stories.indices.last { isEligible($0) } }

    /// Stories skipped between `from` (exclusive) and the next eligible one.
    public func skipped(after from: Int, before to: Int?) -> [Int] {
        let end = to ?? stories.count
        guard from + 1 < end else { return [] }
        return (from + 1..<end).filter { !isEligible($0) }
    }

    private mutating func advance(from: Int) -> Int? {
        var i = from + 1
        while i < stories.count {
            if isEligible(i) {
                index = i
                return i
            }
            i += 1
        }
        index = nil
        isFinished = true
        return nil
    }
}
