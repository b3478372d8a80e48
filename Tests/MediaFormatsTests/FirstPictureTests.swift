import Foundation
import MediaFormats
import MediaTestSupport
import Testing

/// Where a file's first picture lies, read from its header alone; damaged headers give nothing, never a crash.
@Suite struct FirstPictureReadingTests {
    static func bundled(_ name: String) async throws -> (file: [UInt8], moov: [UInt8]) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("assets/videos")
        let data = try #require(FileManager.default.contents(atPath: root.appendingPathComponent(name).path))
        let file = [UInt8](data)
        let layout = try await MP4BoxReader.layout(of: ArrayReader(bytes: file), length: Int64(file.count))
        return (file, Array(file[Int(layout.moov.lowerBound)..<Int(layout.moov.upperBound)]))
    }

    @Test(arguments: ["bars.mp4", "tail-moov.mp4"]) func anMP4sFirstSampleAndConfigurationAreFound(name: String) async throws {
        let (file, moov) = try await Self.bundled(name)
        let picture = try #require(FirstPicture.mp4(moov: moov))
        #expect(picture.codec == .h264)
        #expect(picture.width > 0 && picture.height > 0)
        // An avcC record (version 1), and a sample inside the file that starts with a NAL unit's length.
        #expect(picture.configuration.first == 1)
        #expect(picture.sample.upperBound <= Int64(file.count) && picture.sample.count > 4)
        let lengthPrefix = file[Int(picture.sample.lowerBound)..<Int(picture.sample.lowerBound + 4)]
            .reduce(0) { $0 << 8 | Int($1) }
        #expect(lengthPrefix > 0 && lengthPrefix < picture.sample.count)
    }

    @Test func aFirstSampleThatIsNoSyncSampleIsNotTaken() async throws {
        var (_, moov) = try await Self.bundled("bars.mp4")
        // The first sync sample made the second: the first picture needs another to decode.
        let stss = try #require(moov.indices.dropLast(16).first { Array(moov[$0..<($0 + 4)]) == Array("stss".utf8) })
        #expect(FirstPicture.mp4(moov: moov) != nil)
        moov[stss + 4 + 8 + 3] = 2
        #expect(FirstPicture.mp4(moov: moov) == nil)
    }

    @Test func aHeaderCutAnywhereOrDamagedGivesNothingOrAPictureInsideIt() async throws {
        let (_, moov) = try await Self.bundled("bars.mp4")
        for cut in stride(from: 0, to: moov.count, by: 7) {
            if let picture = FirstPicture.mp4(moov: Array(moov[0..<cut])) {
                #expect(!picture.sample.isEmpty && picture.sample.lowerBound >= 0)
            }
        }
        var damaged = moov
        for index in stride(from: 8, to: damaged.count, by: 13) { damaged[index] ^= 0xFF }
        _ = FirstPicture.mp4(moov: damaged)
    }

    @Test func aPhotoIsItsWholeFile() {
        #expect(FirstPicture.photo("jpeg", length: 1000)?.sample == 0..<1000)
        #expect(FirstPicture.photo("png", length: 1000)?.codec == .png)
        #expect(FirstPicture.photo("gif", length: 1000) == nil)
        #expect(FirstPicture.photo("jpeg", length: FirstPicture.photoLimit + 1) == nil)
    }
}
