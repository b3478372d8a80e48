import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

@testable import MediaCache

/// An origin that ignores `Range` answers every range with the whole body from byte 0: that body is the resource,
/// cached as it streams and handed on, never thrown away at the end of the range asked for.
@Suite struct RangeIgnoredTests {
    /// A player reads range after range: the origin sends the file once, not once per range (it sent 2x).
    @Test func aPlayerReadingRangeAfterRangeCostsTheFileOnce() async throws {
        let h = try await LoaderHarness()
        let bytes = content(600_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/r.mp4")
        var faults = OriginFaults()
        faults.ignoreRange = true
        h.origin.setFaults(faults)
        var read: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let length = Swift.min(65_536, bytes.count - offset)
            read += try await h.read("r.mp4", Int64(offset), Int64(length))
            offset += length
        }
        #expect(read == bytes)
        #expect(h.origin.bodyBytesSent <= Int64(bytes.count), "the origin sent \(h.origin.bodyBytesSent)")
        #expect(h.store.info(for: CacheKey(url: h.url("r.mp4")))?.isComplete == true)
        // And the replay costs nothing.
        await h.origin.resetCounters()
        #expect(try await h.read("r.mp4") == bytes)
        #expect(h.origin.bodyBytesSent == 0)
        await h.close()
    }

    /// A ranged first request answered whole: the range is handed on and the rest kept as it arrives.
    @Test func aRangeAnsweredWholeKeepsTheWholeBody() async throws {
        let h = try await LoaderHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/w.mp4")
        var faults = OriginFaults()
        faults.ignoreRange = true
        h.origin.setFaults(faults)
        #expect(try await h.read("w.mp4", 0, 1_000) == Array(bytes[0..<1_000]))
        #expect(try await h.read("w.mp4", 1_000, 299_000) == Array(bytes[1_000...]))
        #expect(h.origin.bodyBytesSent <= Int64(bytes.count), "the origin sent \(h.origin.bodyBytesSent)")
        await h.close()
    }
}
