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

    @Test func anotherVariantTakesOverFromASegmentOnAndTheOffsetsAfterItMove() {
        let switched = segmented.replacing(from: 2, with: [piece("hi/s1.m4s", 5000, 2..<4)])
        #expect(switched.parts.map(\.start) == [0, 100, 1100])
        #expect(switched.length == 6100)
        #expect(switched.parts[2].url.lastPathComponent == "s1.m4s")
        #expect(switched.parts[2].url.path.hasPrefix("/hi/"))
        #expect(switched.offset(at: 3) == 3600)
    }

    @Test func theRunRefusesToReplaceThePartTheDecoderIsReadingOrAnyBeforeIt() {
        let run = MediaRun(segmented)
        #expect(run.partForDecoder(at: 50)?.time == nil)
        #expect(run.partForDecoder(at: 1100)?.time == 2..<4)
        #expect(!run.replace(from: 2, with: [piece("hi/s1.m4s", 5000, 2..<4)]))
        #expect(!run.replace(from: 1, with: [piece("hi/s0.m4s", 2000, 0..<2), piece("hi/s1.m4s", 5000, 2..<4)]))
        #expect(run.parts.length == 4100)
        // The demuxer looked ahead and came back to the start: what lies after where it reads may change.
        #expect(run.partForDecoder(at: 900) != nil)
        #expect(run.replace(from: 2, with: [piece("hi/s1.m4s", 5000, 2..<4)]))
        #expect(run.parts.length == 6100)
        #expect(run.partForDecoder(at: 6100) == nil)
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
