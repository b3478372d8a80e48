/// A half-open byte interval `[lowerBound, upperBound)` over a resource.
public typealias ByteRange = Range<Int64>

/// A sorted set of disjoint, non-adjacent half-open byte intervals; inserts merge overlapping and touching ranges.
///
/// Named `ByteRangeSet` rather than `RangeSet` so it never collides with the standard library's generic `RangeSet`.
public struct ByteRangeSet: Sendable, Hashable, Sequence, CustomStringConvertible {
    /// The disjoint ranges in ascending order; no two overlap or touch.
    public private(set) var ranges: [ByteRange]

    /// Creates an empty set.
    public init() { ranges = [] }

    /// Creates a set holding the union of `ranges` (empty ranges are ignored).
    public init<S: Sequence>(_ ranges: S) where S.Element == ByteRange {
        self.ranges = []
        for range in ranges { insert(range) }
    }

    /// True when no byte is in the set.
    public var isEmpty: Bool { ranges.isEmpty }

    /// The number of bytes covered.
    public var total: Int64 { ranges.reduce(0) { $0 + Int64($1.count) } }

    /// The number of disjoint ranges.
    public var count: Int { ranges.count }

    /// Iterates the disjoint ranges in ascending order.
    public func makeIterator() -> IndexingIterator<[ByteRange]> { ranges.makeIterator() }

    /// `[start, endExclusive]` pairs, the shape used in JSON output.
    public var pairs: [[Int64]] { ranges.map { [$0.lowerBound, $0.upperBound] } }

    /// A compact `0-99,200-299` description (inclusive ends, like HTTP).
    public var description: String {
        ranges.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }

    /// Index of the first range whose upper bound is >= `offset` (binary search).
    private func firstIndex(endingAtOrAfter offset: Int64) -> Int {
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < offset { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Adds `range`, merging it with every range it overlaps or touches.
    public mutating func insert(_ range: ByteRange) {
        guard !range.isEmpty else { return }
        let start = firstIndex(endingAtOrAfter: range.lowerBound)
        var end = start
        var lower = range.lowerBound
        var upper = range.upperBound
        while end < ranges.count, ranges[end].lowerBound <= range.upperBound {
            lower = Swift.min(lower, ranges[end].lowerBound)
            upper = Swift.max(upper, ranges[end].upperBound)
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: [lower..<upper])
    }

    /// Adds every range of `other`.
    public mutating func formUnion(_ other: ByteRangeSet) {
        for range in other.ranges { insert(range) }
    }

    /// Removes `range` from the set, splitting ranges that straddle its ends.
    public mutating func remove(_ range: ByteRange) {
        guard !range.isEmpty else { return }
        let start = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        var end = start
        var replacement: [ByteRange] = []
        while end < ranges.count, ranges[end].lowerBound < range.upperBound {
            let existing = ranges[end]
            if existing.lowerBound < range.lowerBound { replacement.append(existing.lowerBound..<range.lowerBound) }
            if existing.upperBound > range.upperBound { replacement.append(range.upperBound..<existing.upperBound) }
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: replacement)
    }

    /// Keeps only the bytes below `limit` (used when a file turns out shorter than the index claims).
    public mutating func clamp(to limit: Int64) {
        remove(Swift.max(0, limit)..<Int64.max)
    }

    /// True when `offset` is covered.
    public func contains(_ offset: Int64) -> Bool {
        let index = firstIndex(endingAtOrAfter: offset + 1)
        return index < ranges.count && ranges[index].contains(offset)
    }

    /// True when every byte of `range` is covered (an empty range is always covered).
    public func contains(_ range: ByteRange) -> Bool {
        guard !range.isEmpty else { return true }
        let index = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        return index < ranges.count && ranges[index].lowerBound <= range.lowerBound
            && ranges[index].upperBound >= range.upperBound
    }

    /// The sub-ranges of `range` that are not covered, ascending.
    public func missing(in range: ByteRange) -> [ByteRange] {
        guard !range.isEmpty else { return [] }
        var result: [ByteRange] = []
        var cursor = range.lowerBound
        var index = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        while index < ranges.count, cursor < range.upperBound {
            let existing = ranges[index]
            if existing.lowerBound >= range.upperBound { break }
            if existing.lowerBound > cursor { result.append(cursor..<existing.lowerBound) }
            cursor = Swift.max(cursor, existing.upperBound)
            index += 1
        }
        if cursor < range.upperBound { result.append(cursor..<range.upperBound) }
        return result
    }

    /// The covered sub-ranges of `range`, ascending.
    public func present(in range: ByteRange) -> [ByteRange] {
        guard !range.isEmpty else { return [] }
        var result: [ByteRange] = []
        var index = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        while index < ranges.count, ranges[index].lowerBound < range.upperBound {
            let lower = Swift.max(ranges[index].lowerBound, range.lowerBound)
            let upper = Swift.min(ranges[index].upperBound, range.upperBound)
            if lower < upper { result.append(lower..<upper) }
            index += 1
        }
        return result
    }

    /// The length of the covered run that starts exactly at `offset` (0 when `offset` is not covered).
    public func contiguousLength(from offset: Int64) -> Int64 {
        let index = firstIndex(endingAtOrAfter: offset + 1)
        guard index < ranges.count, ranges[index].contains(offset) else { return 0 }
        return ranges[index].upperBound - offset
    }
}
