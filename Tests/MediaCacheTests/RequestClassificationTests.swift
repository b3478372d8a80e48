import Foundation
import HTTPSemantics
import MediaCache
import Testing

@Suite struct ByteRangeRequestTests {
    @Test func parsesEveryForm() {
        #expect(ByteRangeRequest(header: nil, length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=0-9", length: 100) == .partial(0...9))
        #expect(ByteRangeRequest(header: "bytes=90-", length: 100) == .partial(90...99))
        #expect(ByteRangeRequest(header: "bytes=-5", length: 100) == .partial(95...99))
        #expect(ByteRangeRequest(header: "bytes=-500", length: 100) == .partial(0...99))
        #expect(ByteRangeRequest(header: "bytes=50-5000", length: 100) == .partial(50...99))
        #expect(ByteRangeRequest(header: "bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=-0", length: 100) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=9-5", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=0-1,5-6", length: 100) == .multiple([0...1, 5...6]))
        // Parts come in the order asked (RFC 9110 §15.3.7.2); merged ones take the place of the first.
        #expect(ByteRangeRequest(header: "bytes=50-59, 0-9 ,-5", length: 100) == .multiple([50...59, 0...9, 95...99]))
        #expect(ByteRangeRequest(header: "bytes=90-95,0-4,20-29,3-8", length: 100) == .multiple([90...95, 0...8, 20...29]))
        #expect(ByteRangeRequest(header: "bytes=40-49,0-4,20-29,5-19", length: 100) == .multiple([40...49, 0...29]))
        // Overlapping or touching parts merge; unsatisfiable ones drop out; a malformed one spoils the header.
        #expect(ByteRangeRequest(header: "bytes=0-5,3-9", length: 100) == .partial(0...9))
        #expect(ByteRangeRequest(header: "bytes=0-4,5-9", length: 100) == .partial(0...9))
        #expect(ByteRangeRequest(header: "bytes=0-4,200-300", length: 100) == .partial(0...4))
        #expect(ByteRangeRequest(header: "bytes=200-300,400-", length: 100) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=0-4,x-9", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=0-1,", length: 100) == .whole)
        let many = "bytes=" + (0..<40).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        #expect(ByteRangeRequest(header: many, length: 100) == .whole, "more parts than answered as parts")
        #expect(ByteRangeRequest(header: "items=0-1", length: 100) == .whole)
        #expect(ByteRangeRequest(header: " Bytes= 5 -\t9 ", length: 100) == .partial(5...9))
        #expect(ByteRangeRequest(header: "bytes=-", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=1-2-3", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=\u{1D}0-1", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes\u{1D}0-1", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=1234567890123456789-", length: 100) == .whole)
        #expect(ByteRangeRequest(header: "bytes=٣-5", length: 100) == .whole)
    }
}

/// The one classification of how much the cache answered.
@Suite struct CacheOutcomeTests {
    @Test func classifiesWhatIsCachedOfALength() {
        #expect(CacheOutcome(cached: ByteRangeSet([0..<100]), length: 100) == .hit)
        #expect(CacheOutcome(cached: ByteRangeSet([0..<100]), length: 101) == .partial)
        #expect(CacheOutcome(cached: ByteRangeSet([50..<60]), length: 100) == .partial)
        #expect(CacheOutcome(cached: ByteRangeSet(), length: 100) == .miss)
        #expect(CacheOutcome.offline.rawValue == "OFFLINE")
    }
}
