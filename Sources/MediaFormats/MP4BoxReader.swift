import Foundation

/// Reads byte ranges of one resource (through a cache loader in the player; from memory in tests and the fuzzer).
public protocol ByteRangeReader: Sendable {
    /// Exactly the bytes of `range`.
    func read(_ range: Range<Int64>) async throws -> [UInt8]
}

/// Where an MP4's parts lie and how long it plays.
public struct MP4Layout: Sendable, Equatable {
    /// Seconds, from `mvhd`.
    public var duration: Double
    /// The `moov` box (the header a player needs before the first frame).
    public var moov: Range<Int64>
    /// The `mdat` box (the payload); in a fragmented MP4, every `moof`/`mdat` pair from the first on.
    public var mdat: Range<Int64>
    /// Index boxes a demuxer reads before the first frame (a fragmented MP4's `sidx`, and its `mfra` at the end).
    public var index: [Range<Int64>]
    /// True when the media lies in `moof`/`mdat` fragments (the `moov` has an `mvex`).
    public var fragmented: Bool
    /// Where the `mdat` box says it ends when the file stops before that (a download cut short); nil when whole.
    public var declaredPayloadEnd: Int64?
    /// True when `moov` comes after `mdat`, so the header sits at the end of the file.
    public var moovAtEnd: Bool { moov.lowerBound > mdat.lowerBound }
    /// True when the file ends inside its payload: only `mdat` of it is there.
    public var truncated: Bool { declaredPayloadEnd != nil }
    /// The share of the payload's declared bytes the file holds (1 when whole).
    public var payloadFraction: Double {
        guard let declaredPayloadEnd, declaredPayloadEnd > mdat.lowerBound else { return 1 }
        return Double(mdat.count) / Double(declaredPayloadEnd - mdat.lowerBound)
    }

    /// A layout from its parts.
    public init(
        duration: Double, moov: Range<Int64>, mdat: Range<Int64>, index: [Range<Int64>] = [], fragmented: Bool = false
    ) {
        self.duration = duration
        self.moov = moov
        self.mdat = mdat
        self.index = index
        self.fragmented = fragmented
    }

    /// The byte ranges the first `seconds` of playback need, in a file of `length` bytes: everything before the
    /// payload (`ftyp`, and `moov` when it comes first), the `moov` box wherever it is, and `seconds` of payload at
    /// the file's average bitrate. Sorted, not overlapping, within the file; nil when the duration is unknown.
    public func rangesForFirst(seconds: Double, length: Int64) -> [Range<Int64>]? {
        guard duration > 0, length > 0 else { return nil }
        let bitrate = Double(mdat.count) / duration
        let wanted = Swift.min(Double(mdat.count), (bitrate * Swift.max(0, seconds)).rounded(.up))
        let payloadBytes = Int64(wanted.isFinite ? wanted : 0)
        var ranges: [Range<Int64>] = []
        if mdat.lowerBound > 0 { ranges.append(0..<mdat.lowerBound) }
        ranges.append(moov)
        ranges.append(contentsOf: index)
        let payloadEnd = Swift.min(mdat.upperBound, mdat.lowerBound + payloadBytes)
        if payloadEnd > mdat.lowerBound { ranges.append(mdat.lowerBound..<payloadEnd) }
        // Join and clamp: `moov` may follow the leading bytes directly or overlap nothing else.
        return MediaLayout.merged(ranges, length: length)
    }
}

/// Why a file could not be read as MP4.
public enum MP4Error: Error, Equatable, Sendable, CustomStringConvertible {
    /// The first box is not an MP4 box: not an MP4 file.
    case notMP4
    /// A box's size is impossible (zero where not allowed, smaller than its header, or past the end).
    case badBoxSize(type: String, offset: Int64, size: UInt64)
    /// Boxes nest deeper than the reader allows.
    case tooDeep(offset: Int64)
    /// A required box is missing.
    case missing(String)
    /// The `moov` box is larger than the reader accepts.
    case headerTooLarge(Int64)
    /// `mvhd` is malformed.
    case badMovieHeader(String)
    /// A fragmented MP4 whose length in time nothing in it tells.
    case fragmentsWithoutDuration

    public var description: String {
        switch self {
        case .notMP4: return "not an MP4 file"
        case .badBoxSize(let type, let offset, let size): return "MP4 box '\(type)' at byte \(offset) has an impossible size \(size)"
        case .tooDeep(let offset): return "MP4 boxes nest too deeply at byte \(offset)"
        case .missing(let box): return "MP4 file has no '\(box)' box"
        case .headerTooLarge(let size): return "MP4 header ('moov') of \(size) bytes is too large"
        case .badMovieHeader(let why): return "MP4 movie header is malformed (\(why))"
        case .fragmentsWithoutDuration: return "fragmented MP4 gives no duration (no mehd, sidx, mfra or readable fragments)"
        }
    }
}

/// Finds `moov`, `mdat` and the `mvhd` duration, reading only box headers and the `moov` box, as a player does.
public enum MP4BoxReader {
    /// Largest `moov` read into memory.
    public static let maxHeaderBytes: Int64 = 16 << 20
    /// Deepest nesting followed.
    public static let maxDepth = 8
    /// Most top-level boxes walked.
    public static let maxTopLevelBoxes = 4096

    /// Walks the top-level boxes of a file of `length` bytes and reads the movie header.
    public static func layout(of reader: some ByteRangeReader, length: Int64) async throws -> MP4Layout {
        var offset: Int64 = 0
        var moov: Range<Int64>?
        var mdat: Range<Int64>?
        var moof: Range<Int64>?
        var sidx: Range<Int64>?
        var declaredPayloadEnd: Int64?
        var count = 0
        // A fragmented MP4's payload starts at its first `moof`: the walk stops there.
        while offset < length, moov == nil || (mdat == nil && moof == nil) {
            count += 1
            guard count <= maxTopLevelBoxes else { throw MP4Error.tooDeep(offset: offset) }
            let headerBytes = try await reader.read(offset..<Swift.min(length, offset + 16))
            if offset == 0 {
                let type = headerBytes.count >= 8 ? String(decoding: headerBytes[4..<8], as: UTF8.self) : ""
                guard ["ftyp", "styp", "moov", "mdat", "free", "skip", "wide"].contains(type) else {
                    throw MP4Error.notMP4
                }
            }
            var header: BoxHeader
            do {
                header = try boxHeader(headerBytes, at: offset, limit: length)
            } catch MP4Error.badBoxSize(let type, _, let size) where type == "mdat" && moov != nil && size >= 16 {
                // The file stops inside its payload, its header already read: a download cut short. What is
                // there plays; the rest is known missing.
                header = BoxHeader(type: type, size: length - offset, headerSize: 8)
                let (end, overflow) = offset.addingReportingOverflow(Int64(clamping: size))
                declaredPayloadEnd = overflow ? Int64.max : end
            }
            let range = offset..<(offset + header.size)
            if header.type == "moov" { moov = range }
            if header.type == "mdat", mdat == nil { mdat = range }
            if header.type == "moof", moof == nil { moof = range }
            if header.type == "sidx", sidx == nil, moof == nil { sidx = range }
            offset = range.upperBound
        }
        guard let moov else { throw MP4Error.missing("moov") }
        guard moov.count <= maxHeaderBytes else { throw MP4Error.headerTooLarge(Int64(moov.count)) }
        let moovBytes = try await reader.read(moov)
        if let moof, mdat.map({ $0.lowerBound > moof.lowerBound }) ?? true,
            try findBox("mvex", in: moovBytes, range: 0..<moovBytes.count, depth: 0) != nil
        {
            return try await fragmentedLayout(
                of: reader, length: length, moov: moov, moovBytes: moovBytes, firstMoof: moof, sidx: sidx)
        }
        guard let mdat else { throw MP4Error.missing("mdat") }
        let duration = try movieDuration(inMoov: moovBytes)
        var layout = MP4Layout(duration: duration, moov: moov, mdat: mdat)
        layout.declaredPayloadEnd = declaredPayloadEnd
        return layout
    }

    struct BoxHeader: Equatable {
        var type: String
        var size: Int64
        var headerSize: Int64
    }

    /// Parses the header of the box at `offset` from `bytes` (at least 8, 16 for 64-bit sizes) in a space of
    /// `limit` bytes.
    static func boxHeader(_ bytes: [UInt8], at offset: Int64, limit: Int64) throws -> BoxHeader {
        guard bytes.count >= 8 else { throw MP4Error.badBoxSize(type: "?", offset: offset, size: UInt64(bytes.count)) }
        let size32 = UInt64(bigEndian32(bytes, 0))
        let type = String(decoding: bytes[4..<8].map { $0 >= 0x20 && $0 < 0x7f ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
        var size = size32
        var headerSize: Int64 = 8
        if size32 == 1 {
            guard bytes.count >= 16 else { throw MP4Error.badBoxSize(type: type, offset: offset, size: 1) }
            size = UInt64(bigEndian32(bytes, 8)) << 32 | UInt64(bigEndian32(bytes, 12))
            headerSize = 16
        } else if size32 == 0 {
            size = UInt64(limit - offset)  // extends to the end
        }
        guard size >= UInt64(headerSize), size <= UInt64(Int64.max), offset <= limit, Int64(size) <= limit - offset else {
            throw MP4Error.badBoxSize(type: type, offset: offset, size: size)
        }
        return BoxHeader(type: type, size: Int64(size), headerSize: headerSize)
    }

    /// The duration in seconds from the `mvhd` inside a `moov` box's bytes (header included).
    static func movieDuration(inMoov moov: [UInt8]) throws -> Double {
        guard let mvhd = try findBox("mvhd", in: moov, range: 0..<moov.count, depth: 0) else {
            throw MP4Error.missing("mvhd")
        }
        let body = moov[mvhd]
        let start = body.startIndex
        guard body.count >= 4 else { throw MP4Error.badMovieHeader("too short") }
        let version = body[start]
        let timescale: UInt64
        let duration: UInt64
        if version == 1 {
            guard body.count >= 4 + 16 + 4 + 8 else { throw MP4Error.badMovieHeader("too short for version 1") }
            timescale = UInt64(bigEndian32(moov, start + 20))
            duration = UInt64(bigEndian32(moov, start + 24)) << 32 | UInt64(bigEndian32(moov, start + 28))
        } else {
            guard body.count >= 4 + 8 + 4 + 4 else { throw MP4Error.badMovieHeader("too short") }
            timescale = UInt64(bigEndian32(moov, start + 12))
            duration = UInt64(bigEndian32(moov, start + 16))
        }
        guard timescale > 0 else { throw MP4Error.badMovieHeader("timescale is 0") }
        guard duration > 0, duration != UInt64(UInt32.max), duration != UInt64.max else {
            throw MP4Error.badMovieHeader("duration unknown")
        }
        return Double(duration) / Double(timescale)
    }

    /// The body range of the first box of `type`, searching `moov`'s children (and their containers) depth-first.
    static func findBox(_ type: String, in bytes: [UInt8], range: Range<Int>, depth: Int) throws -> Range<Int>? {
        guard depth <= maxDepth else { throw MP4Error.tooDeep(offset: Int64(range.lowerBound)) }
        var offset = range.lowerBound
        if depth == 0 {
            // Skip the moov box's own header.
            let header = try boxHeader(Array(bytes[offset..<Swift.min(range.upperBound, offset + 16)]),
                at: Int64(offset), limit: Int64(range.upperBound))
            offset += Int(header.headerSize)
        }
        let containers: Set<String> = ["trak", "mdia", "minf", "stbl", "edts", "udta", "mvex", "moov"]
        while offset + 8 <= range.upperBound {
            let header = try boxHeader(Array(bytes[offset..<Swift.min(range.upperBound, offset + 16)]),
                at: Int64(offset), limit: Int64(range.upperBound))
            let body = (offset + Int(header.headerSize))..<(offset + Int(header.size))
            if header.type == type { return body }
            if containers.contains(header.type), let found = try findBox(type, in: bytes, range: body, depth: depth + 1) {
                return found
            }
            offset += Int(header.size)
        }
        return nil
    }

    static func bigEndian32(_ bytes: [UInt8], _ index: Int) -> UInt32 {
        UInt32(bytes[index]) << 24 | UInt32(bytes[index + 1]) << 16 | UInt32(bytes[index + 2]) << 8
            | UInt32(bytes[index + 3])
    }
}
