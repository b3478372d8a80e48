import Foundation
import MediaFormats

/// Builds small, valid MP4 files (ftyp, moov with mvhd, mdat) for tests.
public enum MP4Fixture {
    /// A big-endian 32-bit value.
    public static func be32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// A box of `type` around `payload`.
    public static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(8 + payload.count) + Array(type.utf8) + payload
    }

    /// A movie header.
    public static func mvhd(timescale: Int, duration: Int) -> [UInt8] {
        box("mvhd", [0, 0, 0, 0] + be32(0) + be32(0) + be32(timescale) + be32(duration) + [UInt8](repeating: 0, count: 80))
    }

    /// A `duration`-second file with `payload` bytes of media data.
    public static func file(duration: Double, payload: Int, moovAtEnd: Bool = false) -> [UInt8] {
        let ftyp = box("ftyp", Array("isom".utf8) + be32(512) + Array("isomiso2".utf8))
        let trak = box("trak", box("tkhd", [UInt8](repeating: 0, count: 84)))
        let moov = box("moov", mvhd(timescale: 1000, duration: Int(duration * 1000)) + trak)
        let mdat = box("mdat", (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7 ^ $0 >> 9) })
        return moovAtEnd ? ftyp + mdat + moov : ftyp + moov + mdat
    }
}

/// Reads from an in-memory array.
public struct ArrayReader: ByteRangeReader {
    /// The file.
    public let bytes: [UInt8]

    /// A reader of `bytes`.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes of `range`.
    public func read(_ range: Range<Int64>) async throws -> [UInt8] {
        Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)])
    }
}
