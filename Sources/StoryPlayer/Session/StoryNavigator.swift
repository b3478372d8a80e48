/// Which story is current: previous/next within an author and on to its neighbours, the next or previous author,
/// auto-advance to the next author with unseen stories, resuming at the first unseen story, and skipping stories
/// that reached `maxViews` (unless all are shown). A story is seen once it was played (its first frame shown). A
/// value type with no I/O; callers persist play counts.
public struct StoryNavigator: Sendable, Equatable {
    /// The stories, in playlist order.
    public let stories: [Story]
    /// The authors, each a run of neighbouring stories (one group when the playlist does not name authors).
    public let authors: [AuthorGroup]
    /// Plays so far by story id (across runs).
    public private(set) var playCounts: [String: Int]
    /// Show stories even when they reached `maxViews`.
    public let showAll: Bool
    /// The current story, nil before `start` or after the last.
    public private(set) var index: Int?
    /// True once navigation ran past the last story.
    public private(set) var isFinished = false
    /// True when the run started from the beginning (everything seen, or asked to): auto-advance then enters
    /// every author in turn, not only those with unseen stories.
    public private(set) var isReplaying = false

    /// A navigator before the first story.
    public init(stories: [Story], playCounts: [String: Int], showAll: Bool) {
        self.stories = stories
        self.playCounts = playCounts
        self.showAll = showAll
        authors = AuthorGroup.groups(of: stories)
    }

    /// True when story `i` was played before (in this run or an earlier one).
    public func isSeen(_ i: Int) -> Bool { stories.indices.contains(i) && plays(i) > 0 }

    /// The index in `authors` of story `i`'s author.
    public func author(of i: Int) -> Int {
        authors.firstIndex { $0.stories.contains(i) } ?? 0
    }

    /// True when author `a` has a story that may be shown and was not seen.
    public func hasUnseen(author a: Int) -> Bool { firstUnseen(author: a) != nil }

    /// Author `a`'s first eligible unseen story.
    func firstUnseen(author a: Int) -> Int? {
        guard authors.indices.contains(a) else { return nil }
        return authors[a].stories.first { isEligible($0) && !isSeen($0) }
    }

    /// Where author `a` is entered: its first unseen story, else its first eligible one.
    func entry(author a: Int) -> Int? {
        guard authors.indices.contains(a) else { return nil }
        return firstUnseen(author: a) ?? authors[a].stories.first { isEligible($0) }
    }

    /// Moves to where a run starts: the first unseen story of the first author that has one, or (everything
    /// seen, or `fromStart`) the first eligible story; nil (and finished) when none is eligible.
    @discardableResult
    public mutating func resume(fromStart: Bool = false) -> Int? {
        guard !fromStart, let a = authors.indices.first(where: { hasUnseen(author: $0) }), let i = firstUnseen(author: a)
        else {
            isReplaying = true
            return start()
        }
        isReplaying = false
        index = i
        isFinished = false
        return i
    }

    /// Auto-advance: the next eligible story of the author; after its last, the first unseen story of the next
    /// author that has one; nil (and finished) when no later author does. A run that started from the beginning
    /// (`isReplaying`) enters every later author at its first story instead.
    @discardableResult
    public mutating func advance() -> Int? {
        guard let current = index else { return next() }
        if let i = laterInAuthor(current) { return land(i) }
        let a = author(of: current)
        if isReplaying {
            let later = authors.indices.filter { $0 > a }.compactMap { b in authors[b].stories.first(where: isEligible) }
            return land(later.first)
        }
        return land(authors.indices.first { $0 > a && hasUnseen(author: $0) }.flatMap(firstUnseen(author:)))
    }

    /// The next author's first unseen story (↓), or its first when all were seen; stays put at the last author.
    @discardableResult
    public mutating func nextAuthor() -> Int? {
        guard let current = index else { return next() }
        let a = author(of: current)
        return land(authors.indices.first { $0 > a && entry(author: $0) != nil }.flatMap(entry(author:)) ?? current)
    }

    /// The previous author's first unseen story (↑), or its first when all were seen; stays put at the first.
    @discardableResult
    public mutating func previousAuthor() -> Int? {
        guard let current = index else { return nil }
        let a = author(of: current)
        return land(authors.indices.last { $0 < a && entry(author: $0) != nil }.flatMap(entry(author:)) ?? current)
    }

    /// The current author's next eligible story after `current`.
    private func laterInAuthor(_ current: Int) -> Int? {
        authors[author(of: current)].stories.first { $0 > current && isEligible($0) }
    }

    /// Makes story `i` current; nil: navigation ran past the last story.
    private mutating func land(_ i: Int?) -> Int? {
        guard let i else { return finishAll() }
        index = i
        return i
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

    /// Moves to the next eligible story (→): the author's next, or at its end where the next author is entered
    /// (its first unseen story); nil (and finished) after the last.
    @discardableResult
    public mutating func next() -> Int? {
        guard let current = index else { return advance(from: -1) }
        if let i = laterInAuthor(current) { return land(i) }
        let a = author(of: current)
        return land(authors.indices.first { $0 > a && entry(author: $0) != nil }.flatMap(entry(author:)))
    }

    /// Moves to the previous eligible story (←), on to the previous author's last at an author's first; stays
    /// put at the first.
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

    private mutating func finishAll() -> Int? {
        index = nil
        isFinished = true
        return nil
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
