import Foundation

/// What a story's file holds, told from its first bytes.
public enum MediaKind: Sendable, Equatable {
    /// ISO base media (MP4, MOV, M4V), plain or fragmented.
    case mp4
    /// WebM or Matroska.
    case matroska
    /// A photo (`jpeg`, `png`, `webp`).
    case image(String)
    /// A HEIF/HEIC or AVIF photo.
    case heif
    /// Anything else: left to the decoder to recognise.
    case other

    /// Bytes of the file's start that tell its kind.
    public static let sniffLength: Int64 = 16

    /// The kind of a file starting with `prefix`.
    public static func of(_ prefix: [UInt8]) -> MediaKind {
        func ascii(_ range: Range<Int>) -> String? {
            prefix.count >= range.upperBound ? String(decoding: prefix[range], as: UTF8.self) : nil
        }
        if prefix.starts(with: [0xFF, 0xD8, 0xFF]) { return .image("jpeg") }
        if prefix.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .image("png") }
        if ascii(0..<4) == "RIFF", ascii(8..<12) == "WEBP" { return .image("webp") }
        if MatroskaReader.isMatroska(prefix) { return .matroska }
        if ascii(4..<8) == "ftyp" {
            let brand = ascii(8..<12) ?? ""
            if ["heic", "heix", "heim", "heis", "hevc", "mif1", "msf1", "avif", "avis"].contains(brand) { return .heif }
            return .mp4
        }
        if let type = ascii(4..<8), ["moov", "mdat", "free", "skip", "wide", "styp"].contains(type) { return .mp4 }
        return .other
    }
}

/// Where a story file's parts lie: its header, its payload, and how long it plays when the container says.
public enum MediaLayout: Sendable, Equatable {
    /// An MP4 (plain or fragmented).
    case mp4(MP4Layout)
    /// A WebM/Matroska file.
    case matroska(MatroskaLayout)
    /// A photo: one picture, all of it needed before it shows.
    case image(String)

    /// Seconds, when the container tells (never for a photo).
    public var duration: Double? {
        switch self {
        case .mp4(let layout): return layout.duration
        case .matroska(let layout): return layout.duration
        case .image: return nil
        }
    }

    /// The bytes playback reads at the media's rate (the payload), in a file of `length` bytes.
    public func payload(length: Int64) -> Range<Int64> {
        switch self {
        case .mp4(let layout): return layout.mdat
        case .matroska(let layout): return layout.payload
        case .image: return 0..<length
        }
    }

    /// Reads the layout of a file of `length` bytes; nil when it is of a kind with no layout to read (left to the
    /// decoder). Throws when the file claims a known kind and is malformed, or is a HEIF photo.
    public static func read(from reader: some ByteRangeReader, length: Int64) async throws -> MediaLayout? {
        let prefix = try await reader.read(0..<Swift.min(length, MediaKind.sniffLength))
        switch MediaKind.of(prefix) {
        case .mp4: return .mp4(try await MP4BoxReader.layout(of: reader, length: length))
        case .matroska: return .matroska(try await MatroskaReader.layout(of: reader, length: length))
        case .image(let kind): return .image(kind)
        case .heif: throw MediaLayoutError.heif
        case .other: return nil
        }
    }

    /// The byte ranges the first `seconds` of playback need: the header and index, then `seconds` of payload at
    /// the average bitrate (`duration`: the container's, or one learned elsewhere), rounded up to the end of the
    /// fragment or Cluster it ends in. A photo needs all of it. Sorted, merged, within the file.
    public func rangesForFirst(
        seconds: Double, duration: Double? = nil, length: Int64, reader: some ByteRangeReader
    ) async -> [Range<Int64>]? {
        switch self {
        case .image: return length > 0 ? [0..<length] : nil
        case .mp4(var layout):
            if let duration, layout.duration <= 0 { layout.duration = duration }
            guard var ranges = layout.rangesForFirst(seconds: seconds, length: length) else { return nil }
            if layout.fragmented, let last = ranges.last, last.upperBound > layout.mdat.lowerBound,
                last.upperBound < layout.mdat.upperBound,
                let end = try? await MP4BoxReader.fragmentEnd(
                    containing: last.upperBound - 1, from: layout.mdat.lowerBound, in: reader, length: layout.mdat.upperBound)
            {
                ranges[ranges.count - 1] = last.lowerBound..<Swift.max(last.upperBound, end)
            }
            return ranges
        case .matroska(let layout):
            guard let total = layout.duration ?? duration, total > 0, length > 0 else { return nil }
            let bitrate = Double(layout.payload.count) / total
            let wanted = Swift.min(Double(layout.payload.count), (bitrate * Swift.max(0, seconds)).rounded(.up))
            var payloadEnd = layout.payload.lowerBound + Int64(wanted.isFinite ? wanted : 0)
            if payloadEnd > layout.payload.lowerBound, payloadEnd < layout.payload.upperBound,
                let end = try? await MatroskaReader.clusterEnd(
                    containing: payloadEnd - 1, from: layout.payload.lowerBound, in: reader, length: layout.payload.upperBound)
            {
                payloadEnd = Swift.max(payloadEnd, end)
            }
            var ranges = [layout.header.lowerBound..<payloadEnd]
            if let cues = layout.cues { ranges.append(cues) }
            return Self.merged(ranges, length: length)
        }
    }

    /// `ranges` clamped to `0..<length`, sorted, touching ones joined.
    static func merged(_ ranges: [Range<Int64>], length: Int64) -> [Range<Int64>] {
        var merged: [Range<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let clamped = Swift.min(range.lowerBound, length)..<Swift.min(range.upperBound, length)
            guard !clamped.isEmpty else { continue }
            if let last = merged.last, clamped.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<Swift.max(last.upperBound, clamped.upperBound)
            } else {
                merged.append(clamped)
            }
        }
        return merged
    }
}

/// A file of a kind this player refuses, with what to do.
public enum MediaLayoutError: Error, Equatable, Sendable, CustomStringConvertible {
    /// HEIF/HEIC/AVIF photos: FFmpeg 5.1 has no demuxer for them.
    case heif

    public var description: String {
        switch self {
        case .heif: return "HEIC/HEIF/AVIF photos cannot be decoded by this FFmpeg (convert the photo to JPEG, PNG or WebP)"
        }
    }
}
