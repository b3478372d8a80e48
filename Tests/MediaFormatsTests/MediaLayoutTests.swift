import Foundation
import MediaFormats
import MediaTestSupport
import Testing

/// Telling kinds of media apart, and reading WebM and fragmented MP4 layouts from small hand-made files.
@Suite struct MediaLayoutTests {
    @Test func kindsAreToldFromTheFirstBytes() {
        #expect(MediaKind.of([0xFF, 0xD8, 0xFF, 0xE0]) == .image("jpeg"))
        #expect(MediaKind.of([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == .image("png"))
        #expect(MediaKind.of(Array("RIFF".utf8) + [1, 2, 3, 4] + Array("WEBPVP8 ".utf8)) == .image("webp"))
        #expect(MediaKind.of([0x1A, 0x45, 0xDF, 0xA3, 0x9F]) == .matroska)
        #expect(MediaKind.of([0, 0, 0, 24] + Array("ftypisom".utf8)) == .mp4)
        #expect(MediaKind.of([0, 0, 0, 24] + Array("ftypheic".utf8)) == .heif)
        #expect(MediaKind.of([0, 0, 0, 24] + Array("ftypavif".utf8)) == .heif)
        #expect(MediaKind.of([0x47, 0x40, 0x00, 0x10]) == .other)
        #expect(MediaKind.of([]) == .other)
    }

    /// An EBML element: ID bytes, a one-to-eight byte size, data.
    static func element(_ id: [UInt8], _ data: [UInt8], unknownSize: Bool = false) -> [UInt8] {
        if unknownSize { return id + [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + data }
        let size = data.count
        // An eight-byte size (0x01 marks the length), as muxers that reserve room for it write.
        return id + [0x01, 0, 0, 0, UInt8(size >> 24 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            + data
    }

    /// A WebM of `clusters` Clusters of 1,000 bytes, with `duration` ms in its Info (none when nil).
    static func webm(duration: Double?, clusters: Int = 4) -> [UInt8] {
        let header = element([0x1A, 0x45, 0xDF, 0xA3], element([0x42, 0x82], Array("webm".utf8)))
        var info = element([0x2A, 0xD7, 0xB1], [0x0F, 0x42, 0x40])  // 1,000,000 ns
        if let duration {
            let bits = duration.bitPattern
            info += element([0x44, 0x89], (0..<8).map { UInt8(bits >> (56 - 8 * UInt64($0)) & 0xFF) })
        }
        var body = element([0x15, 0x49, 0xA9, 0x66], info) + element([0x16, 0x54, 0xAE, 0x6B], [0xAE, 0x80])
        for _ in 0..<clusters { body += element([0x1F, 0x43, 0xB6, 0x75], [UInt8](repeating: 0xA3, count: 1_000)) }
        return header + element([0x18, 0x53, 0x80, 0x67], body)
    }

    @Test func aWebMsDurationHeaderAndPayloadAreRead() async throws {
        let file = Self.webm(duration: 4_000)
        let layout = try await MatroskaReader.layout(of: ArrayReader(bytes: file), length: Int64(file.count))
        #expect(layout.duration == 4)
        #expect(layout.payload.upperBound == Int64(file.count))
        #expect(layout.payload.count == 4 * 1_012)  // each Cluster: 4 bytes of ID, 8 of size, 1,000 of data
        #expect(layout.header == 0..<layout.payload.lowerBound)
        // A second of four: the header and the first Cluster, whole.
        let ranges = await MediaLayout.matroska(layout).rangesForFirst(
            seconds: 1, length: Int64(file.count), reader: ArrayReader(bytes: file))
        #expect(ranges == [0..<(layout.payload.lowerBound + 1_012)])
    }

    @Test func aWebMWithoutDurationSaysSoAndBadOnesAreRefused() async throws {
        let live = Self.webm(duration: nil)
        let layout = try await MatroskaReader.layout(of: ArrayReader(bytes: live), length: Int64(live.count))
        #expect(layout.duration == nil)
        var truncated = Self.webm(duration: 1_000)
        truncated.removeLast(3_500)
        await #expect(throws: MatroskaError.self) {
            _ = try await MatroskaReader.layout(of: ArrayReader(bytes: [0x1A, 0x45, 0xDF, 0xA3, 0x80]), length: 5)
        }
        await #expect(throws: MatroskaError.notMatroska) {
            _ = try await MatroskaReader.layout(of: ArrayReader(bytes: Array("not a webm".utf8)), length: 10)
        }
        // Cut inside its Clusters: the header is whole, so the layout reads; the payload ends at the file's end.
        let cut = try await MatroskaReader.layout(of: ArrayReader(bytes: truncated), length: Int64(truncated.count))
        #expect(cut.payload.upperBound == Int64(truncated.count))
    }

    /// A fragmented MP4: ftyp, moov (mvhd with no duration, one trak with timescale 1000, mvex with `extra`),
    /// then `fragments` moof/mdat pairs of one second each.
    static func fragmented(mvex extra: [UInt8] = [], fragments: Int = 3) -> [UInt8] {
        let be32 = MP4Fixture.be32
        let tkhd = MP4Fixture.box("tkhd", [0, 0, 0, 3] + be32(0) + be32(0) + be32(1) + [UInt8](repeating: 0, count: 68))
        let mdhd = MP4Fixture.box("mdhd", [0, 0, 0, 0] + be32(0) + be32(0) + be32(1000) + be32(0) + [0, 0, 0, 0])
        let trak = MP4Fixture.box("trak", tkhd + MP4Fixture.box("mdia", mdhd))
        let trex = MP4Fixture.box("trex", [0, 0, 0, 0] + be32(1) + be32(1) + be32(40) + be32(0) + be32(0))
        let moov = MP4Fixture.box("moov", MP4Fixture.mvhd(timescale: 1000, duration: 0) + trak + MP4Fixture.box("mvex", trex + extra))
        var file = MP4Fixture.box("ftyp", Array("iso5".utf8) + be32(0)) + moov
        for index in 0..<fragments {
            // 25 samples of the default 40 ms: one second from tfdt.
            let tfhd = MP4Fixture.box("tfhd", [0, 0, 0, 0] + be32(1))
            let tfdt = MP4Fixture.box("tfdt", [0, 0, 0, 0] + be32(index * 1000))
            let trun = MP4Fixture.box("trun", [0, 0, 0, 0] + be32(25))
            file += MP4Fixture.box("moof", MP4Fixture.box("mfhd", [0, 0, 0, 0] + be32(index + 1)) + MP4Fixture.box("traf", tfhd + tfdt + trun))
            file += MP4Fixture.box("mdat", [UInt8](repeating: UInt8(index), count: 2_000))
        }
        return file
    }

    @Test func aFragmentedMP4sDurationComesFromMehdOrItsFragments() async throws {
        let walked = Self.fragmented()
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: walked), length: Int64(walked.count))
        #expect(layout.fragmented)
        #expect(layout.duration == 3, "three fragments of a second, found by walking them")
        #expect(layout.mdat.upperBound == Int64(walked.count))
        let mehd = MP4Fixture.box("mehd", [0, 0, 0, 0] + MP4Fixture.be32(7_500))
        let declared = Self.fragmented(mvex: mehd)
        #expect(try await MP4BoxReader.layout(of: ArrayReader(bytes: declared), length: Int64(declared.count)).duration == 7.5)
        // A second of three: the header, then the first fragment whole.
        let ranges = await MediaLayout.mp4(layout).rangesForFirst(
            seconds: 1, length: Int64(walked.count), reader: ArrayReader(bytes: walked))
        let fragment = Int64(walked.count) - layout.mdat.lowerBound
        #expect(ranges == [0..<(layout.mdat.lowerBound + fragment / 3)])
    }
}
