import Foundation
import MediaOrigin
import MediaTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import MediaCache

/// The preloader on its own: what it fetches for each amount, and planning that a caller plugs in for the formats
/// it knows (the cache knows none). The preloader with a player on a shared link is tested in StoryPlayerTests.
@Suite struct PreloaderTests {
    @Test func planFollowsTheAmount() {
        let length: Int64 = 1_000
        func plan(_ amount: PreloadAmount, planned: [ByteRange]? = nil) -> [ByteRange] {
            PreloadPlan.ranges(amount: amount, length: length, planned: planned, fallbackBytes: 300).ranges
        }
        #expect(plan(.full) == [0..<1_000])
        #expect(plan(.bytes(200)) == [0..<200])
        #expect(plan(.bytes(5_000)) == [0..<1_000])
        #expect(plan(.ranges([900..<2_000, 10..<20, 15..<30, 50..<50])) == [10..<30, 900..<1_000])
        #expect(plan(.seconds(3)) == [0..<300], "no planner: the fallback bytes")
        #expect(plan(.seconds(3), planned: [0..<40, 700..<800]) == [0..<40, 700..<800])
        #expect(PreloadPlan.ranges(amount: .full, length: 0, planned: nil, fallbackBytes: 300).isEmpty)
    }

    /// A made-up format: its first 8 bytes say (big-endian) where the bytes of the first second start; the first
    /// seconds need the 8-byte header and `seconds` × 1000 bytes from there.
    struct OffsetHeaderPlanning: PreloadPlanning {
        let calls = NIOLockedValueBox(0)
        func ranges(
            forFirst seconds: Double, length: Int64, read: @escaping @Sendable (ByteRange) async throws -> [UInt8]
        ) async -> [ByteRange]? {
            calls.withLockedValue { $0 += 1 }
            guard let header = try? await read(0..<8), header.count == 8 else { return nil }
            let start = header.reduce(Int64(0)) { $0 << 8 | Int64($1) }
            guard start >= 8, start < length else { return nil }
            return [0..<8, start..<(start + Int64(seconds * 1_000))]
        }
    }

    @Test func aPlannerDecidesWhatTheFirstSecondsNeedAndItsReadsAreCached() async throws {
        let h = try await CacheHarness()
        var file = content(600_000)
        let start: Int64 = 400_000
        for i in 0..<8 { file[i] = UInt8(truncatingIfNeeded: start >> (8 * (7 - i))) }
        h.origin.set(OriginResource(bytes: file, etag: "\"p\""), at: "/clip.bin")
        let planning = OffsetHeaderPlanning()
        let preloader = Preloader(loader: h.loader, planner: planning)
        let result = try await preloader.preload(PreloadTarget(url: h.url("clip.bin"), amount: .seconds(2)))
        #expect(result.phase == .preloaded)
        #expect(planning.calls.withLockedValue { $0 } == 1)
        let cached = h.store.availableRanges(for: CacheKey(url: h.url("clip.bin")))
        #expect(cached.contains(0..<8), "the header the planner read")
        #expect(cached.contains(start..<(start + 2_000)), "the two seconds it planned")
        #expect(!cached.contains(8..<start), "nothing in between")
        // What it cached is the origin's bytes.
        let header = try await h.loader.data(LoadingRequest(url: h.url("clip.bin"), requestedOffset: 0, requestedLength: 8))
        #expect(header == Array(file[0..<8]))
        await h.close()
    }

    @Test func withoutAPlannerSecondsFetchTheFallbackAndRangesFetchExactlyThose() async throws {
        let h = try await CacheHarness()
        let file = content(900_000)
        h.origin.set(OriginResource(bytes: file, etag: "\"f\""), at: "/a.bin")
        h.origin.set(OriginResource(bytes: file, etag: "\"f\""), at: "/b.bin")
        var configuration = PreloadConfiguration()
        configuration.fallbackBytes = 200 << 10
        let preloader = Preloader(loader: h.loader, configuration: configuration)
        _ = try await preloader.preload(PreloadTarget(url: h.url("a.bin"), amount: .seconds(3)))
        let a = h.store.availableRanges(for: CacheKey(url: h.url("a.bin")))
        #expect(a.contains(0..<(200 << 10)))
        #expect(a.total < 400 << 10, "the fallback, rounded to whole blocks: \(a)")
        let wanted: [ByteRange] = [(512 << 10)..<(576 << 10), (768 << 10)..<(832 << 10)]
        _ = try await preloader.preload(PreloadTarget(url: h.url("b.bin"), amount: .ranges(wanted)))
        let b = h.store.availableRanges(for: CacheKey(url: h.url("b.bin")))
        #expect(wanted.allSatisfy { b.contains($0) })
        // Besides them only the first block, whose answer told the length.
        #expect(b.total == Int64(wanted.count + 1) * (64 << 10), "\(b)")
        await h.close()
    }
}
