import Foundation
import MediaTestSupport
import MediaFormats
import Testing

@Suite struct MP4BoxReaderTests {
    @Test(arguments: [false, true]) func findsMoovMdatAndDuration(moovAtEnd: Bool) async throws {
        let file = MP4Fixture.file(duration: 7.5, payload: 50_000, moovAtEnd: moovAtEnd)
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: file), length: Int64(file.count))
        #expect(layout.duration == 7.5)
        #expect(layout.moovAtEnd == moovAtEnd)
        #expect(layout.mdat.count == 50_008)
        #expect(Array(file[Int(layout.moov.lowerBound + 4)..<Int(layout.moov.lowerBound + 8)]) == Array("moov".utf8))
    }

    @Test func readsTheBundledClips() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("assets/videos")
        for name in ["bars", "mandel", "life", "tail-moov"] {
            let data = try #require(FileManager.default.contents(atPath: root.appendingPathComponent("\(name).mp4").path))
            let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: [UInt8](data)), length: Int64(data.count))
            #expect(abs(layout.duration - 5) < 0.05, "\(name)")
            #expect(layout.moovAtEnd == (name == "tail-moov"), "\(name)")
        }
    }

    @Test func sixtyFourBitAndToTheEndSizesAreUnderstood() async throws {
        let moov = MP4Fixture.box("moov", MP4Fixture.mvhd(timescale: 600, duration: 1200))
        // mdat with a 64-bit size, then a final box whose size 0 means "to the end".
        let payload = [UInt8](repeating: 9, count: 1000)
        let mdat64 = MP4Fixture.be32(1) + Array("mdat".utf8) + [0, 0, 0, 0] + MP4Fixture.be32(16 + payload.count) + payload
        let trailer = MP4Fixture.be32(0) + Array("free".utf8) + [1, 2, 3]
        let file = MP4Fixture.box("ftyp", Array("isom".utf8)) + moov + mdat64 + trailer
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: file), length: Int64(file.count))
        #expect(layout.duration == 2)
        #expect(layout.mdat.count == 1016)
    }

    static let hostile: [(String, [UInt8], MP4Error)] = {
        let ftyp = MP4Fixture.box("ftyp", Array("isom".utf8))
        let good = MP4Fixture.file(duration: 1, payload: 100)
        let moovAt = Int(good[3])  // the fixture's ftyp is shorter than 256 bytes
        var pastEnd = good
        pastEnd.replaceSubrange(moovAt..<moovAt + 4, with: MP4Fixture.be32(1 << 30))
        var tooSmall = good
        tooSmall.replaceSubrange(moovAt..<moovAt + 4, with: MP4Fixture.be32(4))
        let huge64 = ftyp + MP4Fixture.be32(1) + Array("mdat".utf8) + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        // A 64-bit size that fits Int64 but overflows when added to the box's offset (found by the fuzzer).
        let overflow64 = ftyp + MP4Fixture.be32(1) + Array("mdat".utf8) + [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        var nested = MP4Fixture.box("mvhd", [1, 2, 3])
        for _ in 0..<40 { nested = MP4Fixture.box("trak", nested) }
        let deep = ftyp + MP4Fixture.box("moov", nested) + MP4Fixture.box("mdat", [1])
        let noMvhd = ftyp + MP4Fixture.box("moov", MP4Fixture.box("trak", [])) + MP4Fixture.box("mdat", [1])
        let zeroScale = ftyp + MP4Fixture.box("moov", MP4Fixture.mvhd(timescale: 0, duration: 5)) + MP4Fixture.box("mdat", [1])
        return [
            ("text file", Array("hello, this is not a video file".utf8), .notMP4),
            ("size past the end", pastEnd, .badBoxSize(type: "moov", offset: Int64(moovAt), size: 1 << 30)),
            ("size below header", tooSmall, .badBoxSize(type: "moov", offset: Int64(moovAt), size: 4)),
            ("absurd 64-bit size", huge64, .badBoxSize(type: "mdat", offset: Int64(ftyp.count), size: UInt64.max)),
            ("64-bit size overflowing the offset", overflow64,
             .badBoxSize(type: "mdat", offset: Int64(ftyp.count), size: UInt64(Int64.max))),
            ("truncated header", Array(ftyp.prefix(6)), .notMP4),
            ("truncated box", ftyp + MP4Fixture.be32(100) + Array("moov".utf8), .badBoxSize(type: "moov", offset: 12, size: 100)),
            ("absurd nesting", deep, .tooDeep(offset: Int64(8 * 9 + 8))),
            ("no moov", ftyp + MP4Fixture.box("mdat", [1, 2]), .missing("moov")),
            ("no mvhd", noMvhd, .missing("mvhd")),
            ("zero timescale", zeroScale, .badMovieHeader("timescale is 0")),
        ]
    }()

    @Test(arguments: hostile) func hostileFilesGiveErrorsNotCrashes(name: String, bytes: [UInt8], expected: MP4Error) async {
        do {
            _ = try await MP4BoxReader.layout(of: ArrayReader(bytes: bytes), length: Int64(bytes.count))
            Issue.record("\(name): accepted")
        } catch let error as MP4Error {
            if case .tooDeep = expected, case .tooDeep = error { return }
            #expect(error == expected, "\(name)")
        } catch {
            Issue.record("\(name): unexpected \(error)")
        }
    }
}

/// What the first seconds of an MP4 need, as byte ranges.
@Suite struct MP4PlanningTests {
    @Test(arguments: [false, true]) func theFirstSecondsNeedTheHeaderAndThatMuchPayload(moovAtEnd: Bool) async throws {
        let file = MP4Fixture.file(duration: 10, payload: 100_000, moovAtEnd: moovAtEnd)
        let length = Int64(file.count)
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: file), length: length)
        let ranges = try #require(layout.rangesForFirst(seconds: 3, length: length))
        let payloadStart = layout.mdat.lowerBound
        // 3 of 10 seconds at the average bitrate: 30 % of the payload box.
        let payload = payloadStart..<(payloadStart + Int64((Double(layout.mdat.count) * 0.3).rounded(.up)))
        let covered = { (range: Range<Int64>) in ranges.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound } }
        #expect(covered(0..<payloadStart), "ftyp (and moov when first)")
        #expect(covered(layout.moov), "moov wherever it is")
        #expect(covered(payload))
        #expect(!covered(payload.upperBound..<(payload.upperBound + 1)), "no more payload than that")
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "sorted, apart: \(ranges)")
        #expect(ranges.count == (moovAtEnd ? 2 : 1))
    }

    @Test func rangesStayInsideTheFileAndAnUnknownDurationPlansNothing() {
        let layout = MP4Layout(duration: 2, moov: 32..<132, mdat: 132..<10_132)
        #expect(layout.rangesForFirst(seconds: 60, length: 5_000) == [0..<5_000], "a file shorter than its boxes say")
        #expect(layout.rangesForFirst(seconds: 0, length: 10_132) == [0..<132])
        #expect(MP4Layout(duration: 0, moov: 32..<132, mdat: 132..<10_132).rangesForFirst(seconds: 3, length: 10_132) == nil)
    }
}
