import Foundation

/// Where a WebM/Matroska file's parts lie and how long it plays.
public struct MatroskaLayout: Sendable, Equatable {
    /// Seconds, from the Segment Info's Duration; nil when the file does not say (a live recording).
    public var duration: Double?
    /// Everything before the first Cluster (EBML header, SeekHead, Info, Tracks): what a demuxer reads first.
    public var header: Range<Int64>
    /// The Cues (the seek index), wherever they are.
    public var cues: Range<Int64>?
    /// The Clusters: from the first to the Cues after them, or to the Segment's end.
    public var payload: Range<Int64>

    /// A layout from its parts.
    public init(duration: Double?, header: Range<Int64>, cues: Range<Int64>?, payload: Range<Int64>) {
        self.duration = duration
        self.header = header
        self.cues = cues
        self.payload = payload
    }
}

/// Why a file could not be read as WebM/Matroska.
public enum MatroskaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not start with an EBML header.
    case notMatroska
    /// An element's ID or size is malformed or runs past its parent.
    case badElement(offset: Int64)
    /// A required element is missing.
    case missing(String)
    /// The header before the first Cluster is larger than the reader accepts.
    case headerTooLarge(Int64)

    public var description: String {
        switch self {
        case .notMatroska: return "not a WebM/Matroska file"
        case .badElement(let offset): return "WebM element at byte \(offset) is malformed"
        case .missing(let name): return "WebM file has no \(name)"
        case .headerTooLarge(let size): return "WebM header of \(size) bytes is too large"
        }
    }
}

/// Reads a WebM/Matroska file's top-level layout and Segment Info, reading element headers, the header before the
/// first Cluster and nothing of the Clusters, as a demuxer does.
public enum MatroskaReader {
    static let ebml: UInt32 = 0x1A45_DFA3
    static let segment: UInt32 = 0x1853_8067
    static let seekHeadID: UInt32 = 0x114D_9B74
    static let infoID: UInt32 = 0x1549_A966
    static let cluster: UInt32 = 0x1F43_B675
    static let cuesID: UInt32 = 0x1C53_BB6B
    /// Most top-level elements walked before the first Cluster.
    static let maxElements = 1024

    /// True when `prefix` (the file's first bytes) starts with an EBML header.
    public static func isMatroska(_ prefix: [UInt8]) -> Bool {
        prefix.count >= 4 && prefix[0] == 0x1A && prefix[1] == 0x45 && prefix[2] == 0xDF && prefix[3] == 0xA3
    }

    /// An element's ID, its size (nil: unknown, to the parent's end) and where its data starts.
    struct Element: Equatable {
        var id: UInt32
        var size: Int64?
        var dataStart: Int64
    }

    /// Parses the element header at `bytes[at...]` (`bytes` starting at file offset `base`).
    static func element(_ bytes: [UInt8], at index: Int, base: Int64) throws -> Element {
        let offset = base + Int64(index)
        guard index < bytes.count else { throw MatroskaError.badElement(offset: offset) }
        let idLength = bytes[index].leadingZeroBitCount + 1
        guard idLength <= 4, index + idLength < bytes.count else { throw MatroskaError.badElement(offset: offset) }
        var id: UInt32 = 0
        for i in 0..<idLength { id = id << 8 | UInt32(bytes[index + i]) }
        let sizeAt = index + idLength
        let sizeLength = bytes[sizeAt].leadingZeroBitCount + 1
        guard sizeLength <= 8, sizeAt + sizeLength <= bytes.count else { throw MatroskaError.badElement(offset: offset) }
        var size = UInt64(bytes[sizeAt]) & (0xFF >> UInt64(sizeLength))
        var allOnes = size == (0xFF >> UInt64(sizeLength))
        for i in 1..<sizeLength {
            size = size << 8 | UInt64(bytes[sizeAt + i])
            allOnes = allOnes && bytes[sizeAt + i] == 0xFF
        }
        guard allOnes || size <= UInt64(Int64.max / 2) else { throw MatroskaError.badElement(offset: offset) }
        return Element(id: id, size: allOnes ? nil : Int64(size), dataStart: offset + Int64(idLength + sizeLength))
    }

    /// The layout of a file of `length` bytes.
    public static func layout(of reader: some ByteRangeReader, length: Int64) async throws -> MatroskaLayout {
        let first = try await reader.read(0..<Swift.min(length, 64))
        guard isMatroska(first) else { throw MatroskaError.notMatroska }
        let header = try element(first, at: 0, base: 0)
        guard let headerSize = header.size else { throw MatroskaError.badElement(offset: 0) }
        var offset = header.dataStart + headerSize
        // The Segment (after the EBML header, perhaps after Void elements).
        var segmentStart: Int64?
        var segmentEnd = length
        var count = 0
        while offset < length, segmentStart == nil {
            count += 1
            guard count <= maxElements else { throw MatroskaError.missing("Segment") }
            let next = try element(try await reader.read(offset..<Swift.min(length, offset + 12)), at: 0, base: offset)
            if next.id == segment {
                segmentStart = next.dataStart
                if let size = next.size { segmentEnd = Swift.min(length, next.dataStart + size) }
            } else {
                guard let size = next.size else { throw MatroskaError.missing("Segment") }
                offset = next.dataStart + size
            }
        }
        guard let segmentStart else { throw MatroskaError.missing("Segment") }
        var info: Range<Int64>?
        var seek: Range<Int64>?
        var cues: Range<Int64>?
        var firstCluster: Int64?
        offset = segmentStart
        count = 0
        while offset < segmentEnd, firstCluster == nil {
            count += 1
            guard count <= maxElements else { throw MatroskaError.missing("Cluster") }
            let next = try element(try await reader.read(offset..<Swift.min(segmentEnd, offset + 12)), at: 0, base: offset)
            if next.id == cluster {
                firstCluster = offset
                break
            }
            guard let size = next.size, next.dataStart + size <= segmentEnd else {
                throw MatroskaError.badElement(offset: offset)
            }
            let range = next.dataStart..<(next.dataStart + size)
            if next.id == infoID { info = range }
            if next.id == seekHeadID, seek == nil { seek = range }
            if next.id == cuesID { cues = offset..<range.upperBound }
            offset = range.upperBound
        }
        guard let firstCluster else { throw MatroskaError.missing("Cluster") }
        guard firstCluster <= maxHeaderBytes else { throw MatroskaError.headerTooLarge(firstCluster) }
        guard let info else { throw MatroskaError.missing("Segment Info") }
        let duration = segmentDuration(try await reader.read(info))
        if cues == nil, let seek, let position = cuesPosition(try await reader.read(seek)) {
            let at = segmentStart + position
            if at > firstCluster, at < segmentEnd {
                let cue = try element(try await reader.read(at..<Swift.min(segmentEnd, at + 12)), at: 0, base: at)
                if cue.id == cuesID, let size = cue.size, cue.dataStart + size <= segmentEnd {
                    cues = at..<(cue.dataStart + size)
                }
            }
        }
        let payloadEnd = cues.map { $0.lowerBound > firstCluster ? $0.lowerBound : segmentEnd } ?? segmentEnd
        return MatroskaLayout(
            duration: duration, header: 0..<firstCluster, cues: cues, payload: firstCluster..<payloadEnd)
    }

    /// Largest header read into memory.
    public static let maxHeaderBytes: Int64 = 16 << 20

    /// The Info element's Duration (in TimestampScale units, default 1 ms) in seconds; nil when absent.
    static func segmentDuration(_ info: [UInt8]) -> Double? {
        var scale: UInt64 = 1_000_000
        var duration: Double?
        forEachChild(of: info) { id, data in
            switch id {
            case 0x2AD7B1: scale = unsigned(data)
            case 0x4489:
                if data.count == 4 {
                    duration = Double(Float(bitPattern: UInt32(truncatingIfNeeded: unsigned(data))))
                } else if data.count == 8 {
                    duration = Double(bitPattern: unsigned(data))
                }
            default: break
            }
        }
        guard let duration, duration.isFinite, duration > 0, scale > 0 else { return nil }
        let seconds = duration * Double(scale) / 1e9
        return seconds.isFinite && seconds > 0 ? seconds : nil
    }

    /// Where the SeekHead says the Cues are, relative to the Segment's data.
    static func cuesPosition(_ seekHead: [UInt8]) -> Int64? {
        var found: Int64?
        forEachChild(of: seekHead) { id, seek in
            guard id == 0x4DBB else { return }
            var target: UInt64?
            var position: UInt64?
            forEachChild(of: Array(seek)) { field, data in
                if field == 0x53AB { target = unsigned(data) }
                if field == 0x53AC { position = unsigned(data) }
            }
            if target == UInt64(cuesID), let position, position < UInt64(Int64.max / 2) { found = Int64(position) }
        }
        return found
    }

    /// Calls `body` with each child element's ID and data in `bytes` (a master element's data), stopping at the
    /// first malformed one.
    static func forEachChild(of bytes: [UInt8], _ body: (UInt32, ArraySlice<UInt8>) -> Void) {
        var index = 0
        while index < bytes.count {
            guard let next = try? element(bytes, at: index, base: 0), let size = next.size,
                Int64(bytes.count) - next.dataStart >= size
            else { return }
            let start = Int(next.dataStart)
            body(next.id, bytes[start..<(start + Int(size))])
            index = start + Int(size)
        }
    }

    /// A big-endian unsigned integer of up to 8 bytes.
    static func unsigned(_ data: ArraySlice<UInt8>) -> UInt64 {
        data.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The end of the Cluster holding `offset`, walking Clusters from `start` (what a preload rounds up to).
    public static func clusterEnd(containing offset: Int64, from start: Int64, in reader: some ByteRangeReader, length: Int64)
        async throws -> Int64
    {
        var at = start
        var count = 0
        while at < length, count < 100_000 {
            count += 1
            let next = try element(try await reader.read(at..<Swift.min(length, at + 12)), at: 0, base: at)
            guard let size = next.size else { return length }
            at = next.dataStart + size
            if at > offset { return Swift.min(at, length) }
        }
        return Swift.min(at, length)
    }
}
