import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// The budgets' arithmetic alone, on plain numbers: what has to go next and why, and when new bytes are refused.
@Suite struct EvictionPolicyTests {
    private func policy(
        partial: Int64 = 1_000, complete: Int64 = 2_000, maxEntries: Int? = nil, floor: Int64 = 0
    ) -> EvictionPolicy {
        var configuration = CacheConfiguration()
        configuration.partialByteLimit = partial
        configuration.completeByteLimit = complete
        configuration.maxEntries = maxEntries
        configuration.partialMaxAge = 100
        configuration.completeMaxAge = 200
        return EvictionPolicy(configuration: configuration, freeSpaceFloor: floor)
    }

    private func usage(partial: Int64 = 0, partialEntries: Int = 0, complete: Int64 = 0, completeEntries: Int = 0)
        -> CacheUsage
    {
        CacheUsage(
            partialBytes: partial, completeBytes: complete, partialEntries: partialEntries,
            completeEntries: completeEntries)
    }

    @Test func budgetsAreCheckedInOrderAndARuleWithNothingLeftIsPassed() {
        var pass = EvictionPolicy.Pass(policy(maxEntries: 3))
        let over = usage(partial: 1_500, partialEntries: 3, complete: 2_500, completeEntries: 2)
        #expect(pass.next(usage: over, freeSpace: { nil }) == .init(state: .partial, reason: .overBudget))
        pass.nothingLeft()
        #expect(pass.next(usage: over, freeSpace: { nil }) == .init(state: .complete, reason: .overBudget))
        pass.nothingLeft()
        #expect(pass.next(usage: over, freeSpace: { nil }) == .init(state: nil, reason: .tooManyEntries))
        pass.nothingLeft()
        #expect(pass.next(usage: over, freeSpace: { nil }) == nil)
    }

    @Test func withinEveryBudgetNothingGoesAndTheDiskIsNotAsked() {
        var pass = EvictionPolicy.Pass(policy(maxEntries: 10))
        var asked = false
        let within = usage(partial: 1_000, partialEntries: 5, complete: 2_000, completeEntries: 5)
        #expect(pass.next(usage: within, freeSpace: { asked = true; return nil }) == nil)
        #expect(asked == false, "no floor: the free space is never read")
    }

    @Test func oneEntryLargerThanItsBudgetStaysWhileBothBudgetsHoldIt() {
        var pass = EvictionPolicy.Pass(policy())
        #expect(pass.next(usage: usage(partial: 2_500, partialEntries: 1), freeSpace: { nil }) == nil)
        var second = EvictionPolicy.Pass(policy())
        // Beside a complete entry both budgets together no longer hold it: it goes.
        #expect(
            second.next(usage: usage(partial: 2_500, partialEntries: 1, complete: 600, completeEntries: 1), freeSpace: { nil })
                == .init(state: .partial, reason: .overBudget))
    }

    @Test func theDiskRuleCountsWhatWasFreedButNotYetUnlinked() {
        var pass = EvictionPolicy.Pass(policy(floor: 1_000))
        let within = usage(partial: 10, partialEntries: 1, complete: 10, completeEntries: 1)
        #expect(pass.next(usage: within, freeSpace: { 400 }) == .init(state: nil, reason: .lowDiskSpace))
        pass.took(bytes: 300)
        #expect(pass.freed == 300)
        #expect(pass.next(usage: within, freeSpace: { 400 }) == .init(state: nil, reason: .lowDiskSpace))
        pass.took(bytes: 300)
        #expect(pass.next(usage: within, freeSpace: { 400 }) == nil, "400 free and 600 on their way out")
    }

    @Test func newBytesFitOrTakePartialEntriesFirst() {
        var room = EvictionPolicy.Room(policy(), newBytes: 100, pinned: false)
        #expect(room.next(usage: usage(partial: 900, partialEntries: 2)) == .fits)
        var full = EvictionPolicy.Room(policy(), newBytes: 200, pinned: false)
        #expect(full.next(usage: usage(partial: 900, partialEntries: 2)) == .evict(.init(state: .partial, reason: .overBudget)))
        full.took()
        #expect(full.next(usage: usage(partial: 700, partialEntries: 1)) == .fits)
    }

    @Test func partialDataInUseRefusesNewBytesUnlessTheResourceIsPinned() {
        var room = EvictionPolicy.Room(policy(), newBytes: 200, pinned: false)
        let inUse = usage(partial: 900, partialEntries: 2)
        _ = room.next(usage: inUse)
        #expect(room.nothingLeft() == nil)
        #expect(room.next(usage: inUse) == .refuse("the partial-data budget (1000 bytes) is full of data in use"))
        var pinned = EvictionPolicy.Room(policy(), newBytes: 200, pinned: true)
        _ = pinned.next(usage: inUse)
        _ = pinned.nothingLeft()
        #expect(pinned.next(usage: inUse) == .fits, "the total budget holds 1,100 bytes")
    }

    @Test func aResourceOutgrowingThePartialBudgetTakesCompleteEntriesUntilTheTotalHolds() {
        var room = EvictionPolicy.Room(policy(), newBytes: 500, pinned: false)
        let alone = usage(partial: 900, partialEntries: 1, complete: 1_900, completeEntries: 2)
        _ = room.next(usage: alone)
        #expect(room.nothingLeft() == nil)
        #expect(room.next(usage: alone) == .evict(.init(state: .complete, reason: .overBudget)))
        room.took()
        // After a complete entry went, partial entries are looked for again.
        let after = usage(partial: 900, partialEntries: 1, complete: 1_000, completeEntries: 1)
        #expect(room.next(usage: after) == .evict(.init(state: .partial, reason: .overBudget)))
        #expect(room.nothingLeft() == nil)
        #expect(room.next(usage: after) == .fits, "2,400 of 3,000 bytes")
        var stuck = EvictionPolicy.Room(policy(), newBytes: 500, pinned: false)
        _ = stuck.next(usage: alone)
        _ = stuck.nothingLeft()
        _ = stuck.next(usage: alone)
        #expect(stuck.nothingLeft() == "the cache budget (3000 bytes) is full of data in use")
    }

    @Test func expiryCutoffsAreEachStatesMaxAgeBack() {
        let now = Date(timeIntervalSince1970: 1_000)
        let cutoffs = policy().expiryCutoffs(at: now)
        #expect(cutoffs.map(\.state) == [.partial, .complete])
        #expect(cutoffs.map(\.cutoff) == [Date(timeIntervalSince1970: 900), Date(timeIntervalSince1970: 800)])
    }

    /// A cache as a list of entries, oldest first, evicted the way the store does: the least recently used
    /// unpinned entry of the demanded state.
    private struct ModelEntry {
        var state: ResourceState
        var bytes: Int64
        var pinned: Bool
    }

    private func usage(of entries: [ModelEntry]) -> CacheUsage {
        var result = CacheUsage()
        for entry in entries {
            if entry.state == .partial {
                result.partialBytes += entry.bytes
                result.partialEntries += 1
            } else {
                result.completeBytes += entry.bytes
                result.completeEntries += 1
            }
        }
        return result
    }

    @Test(arguments: 0..<300) func aPassOnAnyCacheEndsWithinItsBudgetsOrWithOnlyPinnedDataLeft(seed: Int) {
        var g = SeededGenerator(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        var entries = (0..<Int.random(in: 0...12, using: &g)).map { _ in
            ModelEntry(
                state: Bool.random(using: &g) ? .partial : .complete, bytes: Int64.random(in: 1...900, using: &g),
                pinned: Int.random(in: 0..<5, using: &g) == 0)
        }
        let rules = policy(maxEntries: Bool.random(using: &g) ? Int.random(in: 1...8, using: &g) : nil)
        var pass = EvictionPolicy.Pass(rules)
        var steps = 0
        while let demand = pass.next(usage: usage(of: entries), freeSpace: { nil }) {
            steps += 1
            #expect(steps <= 30, "seed \(seed): the pass does not end")
            if steps > 30 { return }
            // Every demand answers a budget that does not hold right now.
            let now = usage(of: entries)
            switch demand.reason {
            case .overBudget where demand.state == .partial: #expect(now.partialBytes > rules.partialByteLimit)
            case .overBudget: #expect(now.completeBytes > rules.completeByteLimit)
            case .tooManyEntries: #expect(now.entries > (rules.maxEntries ?? .max))
            default: Issue.record("seed \(seed): unexpected \(demand)")
            }
            guard let victim = entries.firstIndex(where: { !$0.pinned && (demand.state == nil || $0.state == demand.state) })
            else {
                pass.nothingLeft()
                continue
            }
            pass.took(bytes: entries.remove(at: victim).bytes)
        }
        let end = usage(of: entries)
        let unpinned = { (state: ResourceState) in entries.contains { !$0.pinned && $0.state == state } }
        #expect(
            end.partialBytes <= rules.partialByteLimit || !unpinned(.partial) || rules.holdsOneOversizedEntry(end, .partial),
            "seed \(seed): partial \(end.partialBytes)")
        #expect(
            end.completeBytes <= rules.completeByteLimit || !unpinned(.complete)
                || rules.holdsOneOversizedEntry(end, .complete), "seed \(seed): complete \(end.completeBytes)")
        #expect(
            end.entries <= (rules.maxEntries ?? .max) || !entries.contains { !$0.pinned }, "seed \(seed): \(end.entries) entries")
    }
}
