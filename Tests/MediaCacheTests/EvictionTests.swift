import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// The free-space floor scales with the disk: the smaller of the configured floor and 5 % of the disk.
@Suite struct FreeSpaceFloorTests {
    @Test func theFloorIsTheSmallerOfTheConfiguredOneAndAShareOfTheDisk() {
        let configuration = CacheConfiguration()
        #expect(configuration.freeSpaceFloor(diskBytes: 40 << 20) == 2 << 20)
        #expect(configuration.freeSpaceFloor(diskBytes: 500_000_000_000) == 50_000_000)
        #expect(configuration.freeSpaceFloor(diskBytes: nil) == 50_000_000)
        var chosen = configuration
        chosen.minimumFreeDiskShare = nil
        #expect(chosen.freeSpaceFloor(diskBytes: 40 << 20) == 50_000_000)
        var off = configuration
        off.minimumFreeDiskBytes = 0
        #expect(off.freeSpaceFloor(diskBytes: 40 << 20) == 0)
    }
}

@Suite struct EvictionTests {
    /// Writes `names` completely, one clock second apart, so their access order is the list order.
    private func fill(_ store: CacheStore, _ clock: ManualClock, _ names: [String], length: Int64) throws {
        for name in names {
            clock.advance(by: 1)
            let generation = try store.generation(for: name, length: length)
            try store.writePattern(name, generation: generation, 0..<length)
        }
    }

    private func keys(_ evicted: [(CacheKey, EvictionReason)]) -> [CacheKey] { evicted.map(\.0) }

    @Test func completeBudgetEvictsLeastRecentlyAccessedFirst() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(
            directory: dir.url, configuration: testConfiguration { $0.completeByteLimit = 4_000 }, now: clock.closure)
        try fill(store, clock, ["a", "b", "c", "d"], length: 1_000)
        clock.advance(by: 1)
        try store.touch(key: testKey("a"))  // a is now the most recent
        try fill(store, clock, ["e"], length: 1_000)
        // Over budget by one entry: b (oldest access) goes, a survives thanks to the touch.
        #expect(store.info(for: testKey("b")) == nil)
        #expect(Set(store.allResources().map(\.key)) == Set(["a", "c", "d", "e"].map(testKey)))
        try fill(store, clock, ["f", "g"], length: 1_000)
        #expect(Set(store.allResources().map(\.key)) == Set(["a", "e", "f", "g"].map(testKey)))
        #expect(try store.stats().completeBytes == 4_000)
    }

    @Test func pinnedEntriesAreNeverEvicted() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(
            directory: dir.url, configuration: testConfiguration { $0.completeByteLimit = 2_000 }, now: clock.closure)
        try fill(store, clock, ["a", "b"], length: 1_000)
        store.pin(testKey("a"))
        try fill(store, clock, ["c"], length: 1_000)
        #expect(Set(store.allResources().map(\.key)) == Set(["a", "c"].map(testKey)))
        store.unpin(testKey("a"))
        try fill(store, clock, ["d"], length: 1_000)
        #expect(Set(store.allResources().map(\.key)) == Set(["c", "d"].map(testKey)))
    }

    @Test func partialBudgetStreamsThroughWhenOnlyPinnedDataRemains() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(
            directory: dir.url, configuration: testConfiguration { $0.partialByteLimit = 1_000 }, now: clock.closure)
        let a = try store.generation(for: "a", length: 900)
        #expect(try store.writePattern("a", generation: a, 0..<600))
        clock.advance(by: 1)
        let b = try store.generation(for: "b", length: 900)
        // b needs room: a (unpinned, older) is evicted.
        #expect(try store.writePattern("b", generation: b, 0..<600))
        #expect(store.info(for: testKey("a")) == nil)
        store.pin(testKey("b"))
        let c = try store.generation(for: "c", length: 900)
        // Only pinned data could make room: the write is not stored, and nothing is corrupted.
        #expect(try !store.writePattern("c", generation: c, 0..<600))
        #expect(store.availableRanges(for: testKey("c")).isEmpty)
        #expect(try store.read(key: testKey("b"), range: 0..<600) == pattern(0..<600))
        #expect(try store.stats().partialBytes == 600)
    }

    @Test func onlyResourcesLargerThanTheWholeBudgetAreUncacheable() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration {
            $0.partialByteLimit = 1_000
            $0.completeByteLimit = 5_000
        })
        let admission = try store.prepare(key: testKey("big"), metadata: testMetadata("big", length: 6_001))
        guard case .uncacheable = admission else {
            Issue.record("expected uncacheable, got \(admission)")
            return
        }
        #expect(store.info(for: testKey("big")) == nil)
        // Remembered: readers stream it through without asking the origin for a probe first.
        #expect(store.givenUpReason(for: testKey("big"))?.contains("more than the cache budget") == true)
    }

    /// A video larger than the partial budget (or the complete one) but within both together is cached whole,
    /// completely cached videos making way for it.
    @Test func aResourceLargerThanOneBudgetIsCachedWithinTheTotal() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(
            directory: dir.url,
            configuration: testConfiguration {
                $0.partialByteLimit = 1_000
                $0.completeByteLimit = 3_000
            }, now: clock.closure)
        try fill(store, clock, ["a", "b", "c"], length: 1_000)
        clock.advance(by: 1)
        let big = try store.generation(for: "big", length: 3_500)
        store.pin(testKey("big"))
        for start in stride(from: Int64(0), to: 3_500, by: 500) {
            #expect(try store.writePattern("big", generation: big, start..<(start + 500)))
        }
        store.unpin(testKey("big"))
        #expect(store.info(for: testKey("big"))?.isComplete == true)
        #expect(try store.read(key: testKey("big"), range: 0..<3_500) == pattern(0..<3_500))
        // Everything else went, oldest first, to keep the total within 4,000 bytes.
        #expect(store.allResources().map(\.key) == [testKey("big")])
        try store.enforceBudgets()
        #expect(store.info(for: testKey("big"))?.isComplete == true)
        // The next video needs room: the oversized one is the least recently used and goes.
        try fill(store, clock, ["d"], length: 1_000)
        #expect(store.allResources().map(\.key) == [testKey("d")])
    }

    @Test func entryLimitEvictsOldestAcrossStates() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration { $0.maxEntries = 3 }, now: clock.closure)
        try fill(store, clock, ["a", "b", "c"], length: 100)
        clock.advance(by: 1)
        _ = try store.generation(for: "partial", length: 100)
        #expect(Set(store.allResources().map(\.key)) == Set(["b", "c", "partial"].map(testKey)))
        try fill(store, clock, ["d"], length: 100)
        #expect(Set(store.allResources().map(\.key)) == Set(["c", "partial", "d"].map(testKey)))
    }

    @Test func expiredEntriesGoByStateSpecificAge() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        do {
            let store = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: clock.closure)
            try fill(store, clock, ["complete"], length: 100)
            let p = try store.generation(for: "partial", length: 100)
            try store.writePattern("partial", generation: p, 0..<50)
            try store.close()
        }
        // 1.5 days later: the partial entry (1 day) expired at open, the complete one (2 days) did not.
        clock.advance(by: 36 * 3600)
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: clock.closure)
        #expect(store.allResources().map(\.key) == [testKey("complete")])
        clock.advance(by: 13 * 3600)
        let evicted = try store.enforceBudgets()
        #expect(keys(evicted) == [testKey("complete")])
        #expect(evicted.first?.1 == .expired)
    }

    @Test func lowDiskSpaceEvictsUntilTheMinimumIsFree() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let free = FreeSpace(10_000_000)
        let store = try CacheStore(
            directory: dir.url, configuration: testConfiguration { $0.minimumFreeDiskBytes = 5_000_000 },
            now: clock.closure, freeSpace: free.closure)
        try fill(store, clock, ["a", "b", "c"], length: 100)
        free.set(1_000_000)
        store.pin(testKey("c"))
        let evicted = try store.enforceBudgets()
        // Everything unpinned goes, oldest first; the pinned entry stays even though space is still low.
        #expect(keys(evicted) == [testKey("a"), testKey("b")])
        #expect(evicted.allSatisfy { $0.1 == .lowDiskSpace })
        #expect(store.allResources().map(\.key) == [testKey("c")])
    }

    /// Writes under budget never look for eviction victims, however many entries the cache holds; an index on
    /// last access answers the queries that do run. Checked by counting queries, not by timing.
    @Test func writesUnderBudgetDoNotQueryTheIndexForVictims() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let clock = ManualClock()
        let store = try CacheStore(directory: dir.url, configuration: testConfiguration(), now: clock.closure)
        try fill(store, clock, (0..<300).map { "n\($0)" }, length: 10)
        let before = store.index.victimQueries.withLockedValue { $0 }
        for name in (300..<400).map({ "n\($0)" }) {
            let generation = try store.generation(for: name, length: 10)
            try store.writePattern(name, generation: generation, 0..<10)
        }
        #expect(store.index.victimQueries.withLockedValue { $0 } == before)
        #expect(store.allResources().count == 400)
    }
}
