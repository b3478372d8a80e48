import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// The store under arbitrary orders of writes, commits whose sync fails or succeeds, reopenings and scribbles on
/// disk: what the index records was always synced, and what is read back is always right.
@Suite struct StoreModelTests {
    @Test func recordedRangesAreAlwaysSyncedAndReadsAlwaysRight() throws {
        for seed in UInt64(1)...12 {
            var g = SeededGenerator(seed: seed)
            let dir = TemporaryDirectory()
            defer { dir.cleanup() }
            let key = testKey("m")
            let length: Int64 = 600_000
            let faults = StorageFaults()
            var store = try CacheStore.withFaults(faults, directory: dir.url)
            var generation = try store.generation(for: "m", length: length)
            // Bytes whose sync failed and that were not written again since: they must never be recorded.
            var lost = ByteRangeSet()
            for step in 0..<50 {
                switch Int.random(in: 0..<10, using: &g) {
                case 0..<5:
                    let start = Int64.random(in: 0..<length, using: &g)
                    let range = start..<Swift.min(length, start + Int64.random(in: 1...90_000, using: &g))
                    try store.writePattern("m", generation: generation, range)
                    lost.remove(range)
                case 5..<8:
                    let fails = Int.random(in: 0..<3, using: &g) == 0
                    faults.syncErrno = fails ? EIO : nil
                    let before = store.availableRanges(for: key)
                    do {
                        try store.commit(key: key)
                    } catch {
                        #expect(fails, "seed \(seed) step \(step): \(error)")
                        var dropped = before
                        for range in store.availableRanges(for: key) { dropped.remove(range) }
                        for range in dropped { lost.insert(range) }
                    }
                    faults.syncErrno = nil
                case 8:
                    // A reopening: only recorded (so synced) ranges survive.
                    try store.close()
                    store = try CacheStore.withFaults(faults, directory: dir.url)
                    // As the loader does before each fetch (an entry left with nothing recorded may be gone).
                    generation = try store.generation(for: "m", length: length)
                default:
                    // Read something cached: it is always the right bytes.
                    let available = store.availableRanges(for: key)
                    if let run = available.ranges.randomElement(using: &g) {
                        let bytes = try store.read(key: key, range: run)
                        #expect(bytes == pattern(run), "seed \(seed) step \(step): wrong bytes read back")
                    }
                }
                let recorded = store.table.lockedAsSeen { $0.entry(of: key)?.info.ranges } ?? ByteRangeSet()
                for range in recorded where !lost.present(in: range).isEmpty {
                    Issue.record("seed \(seed) step \(step): \(range) recorded although its sync failed")
                }
                let sums = store.table.lockedAsSeen { $0.entry(of: key)?.checksums.sums.values.map { $0 } } ?? []
                for sum in sums where !recorded.contains(sum.range) {
                    Issue.record("seed \(seed) step \(step): a checksum for unrecorded bytes \(sum.range)")
                }
                // (Recomputing every checksum is slow in a debug build: every tenth step.)
                for sum in sums where step % 10 == 9 && BlockChecksums.crc(pattern(sum.range)) != sum.crc {
                    Issue.record("seed \(seed) step \(step): a wrong checksum for \(sum.range)")
                }
            }
            try store.close()
        }
    }
}
