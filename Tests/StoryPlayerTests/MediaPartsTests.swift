import Foundation
import MediaCache
import MediaFormats
import Testing

@testable import StoryPlayer

/// How a run of bytes maps to media time, how it changes variant, and when the player moves to another variant:
/// plain values.
@Suite struct MediaPartsTests {
    private func piece(_ name: String, _ count: Int64, _ time: Range<Double>?) -> MediaParts.Piece {
        let url = URL(string: "http://origin.test/\(name)")!
        return MediaParts.Piece(url: url, key: CacheKey(url: url), range: 0..<count, resourceLength: count, time: time)
    }

    /// An initialization section of 100 bytes, then segments of 1000 bytes (0–2 s) and 3000 bytes (2–4 s).
    private var segmented: MediaParts {
        MediaParts([piece("init.mp4", 100, nil), piece("s0.m4s", 1000, 0..<2), piece("s1.m4s", 3000, 2..<4)])
    }

    @Test func segmentsMapTimeToBytesOneSegmentAtATime() {
        let parts = segmented
        #expect(parts.offset(at: 0) == 100)
        #expect(parts.offset(at: 1) == 600)
        #expect(parts.offset(at: 2) == 1100)
        #expect(parts.offset(at: 3) == 2600)
        #expect(parts.offset(at: 4) == 4100)
        #expect(parts.seconds(at: 0) == 0)
        #expect(parts.seconds(at: 600) == 1)
        #expect(parts.seconds(at: 2600) == 3)
        #expect(parts.seconds(at: 4100) == 4)
        #expect(parts.played == 0..<4100)
    }

    @Test func aSeekLandsOnTheStartOfTheSegmentHoldingTheTarget() {
        let parts = segmented
        #expect(parts.readOffset(at: 3.5) == 1100)
        #expect(parts.readOffset(at: 2) == 1100)
        #expect(parts.readOffset(at: 1.99) == 100)
        #expect(parts.readOffset(at: 0) == 100)
        #expect(parts.segmentIndex(at: 3.9) == 2)
        #expect(parts.segmentIndex(at: -1) == 1)
    }

    @Test func oneFileMapsTimeEvenlyOverItsPayload() {
        let url = URL(string: "http://origin.test/v.mp4")!
        let parts = MediaParts(url: url, key: CacheKey(url: url), length: 1200, payload: 100..<1100, duration: 10)
        #expect(parts.offset(at: 5) == 600)
        #expect(parts.seconds(at: 600) == 5)
        #expect(parts.readOffset(at: 5) == 600)
        #expect(parts.played == 100..<1100)
    }

    private func pending(_ name: String, _ time: Range<Double>) -> MediaRun.Pending {
        let url = URL(string: "http://origin.test/\(name)")!
        return MediaRun.Pending(url: url, key: CacheKey(url: url), byteRange: nil, time: time)
    }

    @Test func anotherVariantTakesOverFromASegmentOnItsLengthsLearnedLater() {
        let run = MediaRun(segmented)
        #expect(run.isComplete)
        #expect(run.replace(from: 2, with: [pending("hi/s1.ts", 2..<4)]))
        #expect(!run.isComplete)
        #expect(run.parts.length == 1100)
        #expect(run.parts.knownEnd == 2)
        #expect(run.upcoming(from: 2).map(\.url.path) == ["/hi/s1.ts"])
        #expect(run.upcoming(from: 1).map(\.url.path) == ["/s0.m4s", "/hi/s1.ts"])
        // Shown at the known segments' 500 bytes a second until its length is learned.
        #expect(run.estimated.length == 2100)
        // The decoder, past what is known, waits for the player (here: told to stop) instead of reading on.
        #expect(run.partForDecoder(at: 1100, stopped: { true }) == nil)
    }

    @Test func theRunRefusesToReplaceThePartTheDecoderIsReadingOrAnyBeforeIt() {
        let run = MediaRun(segmented)
        #expect(run.partForDecoder(at: 50)?.time == nil)
        #expect(run.partForDecoder(at: 1100)?.time == 2..<4)
        #expect(!run.replace(from: 2, with: [pending("hi/s1.ts", 2..<4)]))
        #expect(!run.replace(from: 1, with: [pending("hi/s0.ts", 0..<2), pending("hi/s1.ts", 2..<4)]))
        #expect(run.parts.length == 4100)
        // The demuxer looked ahead and came back to the start: what lies after where it reads may change.
        #expect(run.partForDecoder(at: 900) != nil)
        #expect(run.replace(from: 2, with: [pending("hi/s1.ts", 2..<4)]))
        #expect(run.parts.length == 1100)
        // Past the end of a complete run there is nothing to wait for.
        #expect(MediaRun(segmented).partForDecoder(at: 4100) == nil)
    }

    @Test func theVariantFollowsTheMeasuredLinkUnlessTheNextSegmentIsCached() {
        let lo = HLSVariant(url: URL(string: "http://origin.test/lo.m3u8")!, bandwidth: 200_000)
        let hi = HLSVariant(url: URL(string: "http://origin.test/hi.m3u8")!, bandwidth: 800_000)
        let master = HLSMasterPlaylist(variants: [hi, lo])
        #expect(HLSVariantSwitch.choice(current: lo, among: master, throughput: 2_000_000, nextIsCached: false) == hi)
        #expect(HLSVariantSwitch.choice(current: hi, among: master, throughput: 300_000, nextIsCached: false) == lo)
        #expect(HLSVariantSwitch.choice(current: hi, among: master, throughput: 300_000, nextIsCached: true) == nil)
        #expect(HLSVariantSwitch.choice(current: lo, among: master, throughput: nil, nextIsCached: false) == nil)
        #expect(HLSVariantSwitch.choice(current: lo, among: master, throughput: 250_000, nextIsCached: false) == nil)
    }
}
