import Foundation
import MediaCache

/// The bytes a story plays as one run over one or more cached resources: a whole MP4, or an HLS variant's
/// initialization section and segments one after another (as a demuxer reads them). Offsets in the run are what
/// the player and the decoder work with; each maps to a resource, its key and an offset in it.
struct MediaParts: Sendable {
    /// One resource's share of the run.
    struct Part: Sendable {
        /// Where the bytes are fetched from.
        let url: URL
        /// The key they are cached under.
        let key: CacheKey
        /// Where they lie in their resource (a whole segment, or an `#EXT-X-BYTERANGE`).
        let range: Range<Int64>
        /// Where they start in the run.
        let start: Int64
        /// The resource's length (reads never go past it).
        let resourceLength: Int64
        /// The media seconds an HLS segment covers (nil for an initialization section, and for an MP4).
        let time: Range<Double>?
        /// How an HLS segment is encrypted (its range is then the plaintext's; the resource is longer by the
        /// padding).
        var encryption: SegmentEncryption? = nil
        /// Where they end in the run.
        var end: Int64 { start + Int64(range.count) }
    }

    /// A resource's share of a run, before its place in the run is known.
    struct Piece: Sendable {
        let url: URL
        let key: CacheKey
        let range: Range<Int64>
        let resourceLength: Int64
        let time: Range<Double>?
        var encryption: SegmentEncryption? = nil
    }

    /// How media time maps to run offsets.
    enum Timing: Sendable {
        /// Evenly over `payload` (an MP4's media data, played at its average rate).
        case linear(payload: Range<Int64>, duration: Double)
        /// Segment by segment: each part's `time` (an HLS story; a segment starts with a key frame).
        case segments
    }

    /// In playing order, each starting where the one before ends.
    let parts: [Part]
    /// How media time maps to offsets.
    let timing: Timing

    /// Bytes in the run.
    var length: Int64 { parts.last?.end ?? 0 }

    /// The bytes playing reads: an MP4's media data (its header was read before), or the whole run.
    var played: Range<Int64> {
        switch timing {
        case .linear(let payload, _): return payload
        case .segments: return 0..<length
        }
    }

    /// A run of one whole resource whose media lies evenly over `payload` for `duration` seconds.
    init(url: URL, key: CacheKey, length: Int64, payload: Range<Int64>? = nil, duration: Double = 0) {
        parts = [Part(url: url, key: key, range: 0..<length, start: 0, resourceLength: length, time: nil)]
        timing = .linear(payload: payload ?? 0..<length, duration: duration)
    }

    /// A run of `pieces` one after another, timed segment by segment.
    init(_ pieces: [Piece]) {
        var start: Int64 = 0
        var parts: [Part] = []
        for piece in pieces {
            parts.append(
                Part(url: piece.url, key: piece.key, range: piece.range, start: start,
                    resourceLength: piece.resourceLength, time: piece.time, encryption: piece.encryption))
            start += Int64(piece.range.count)
        }
        self.parts = parts
        timing = .segments
    }

    /// The parts as pieces (to build a longer run from).
    var pieces: [Piece] {
        parts.map {
            Piece(url: $0.url, key: $0.key, range: $0.range, resourceLength: $0.resourceLength, time: $0.time,
                encryption: $0.encryption)
        }
    }

    /// Where the media these parts reach ends, in seconds: the end of the last segment (0 before any), or an MP4's
    /// duration.
    var knownEnd: Double {
        switch timing {
        case .linear(_, let duration): return duration
        case .segments: return parts.last { $0.time != nil }?.time?.upperBound ?? 0
        }
    }

    /// The index of the part holding run offset `offset`; nil past the end.
    func index(containing offset: Int64) -> Int? {
        var low = 0
        var high = parts.count
        while low < high {
            let middle = (low + high) / 2
            if parts[middle].end <= offset { low = middle + 1 } else { high = middle }
        }
        return low < parts.count && offset >= parts[low].start ? low : nil
    }

    /// The index of the segment playing at `seconds` (the last one starting at or before it); nil without segments.
    func segmentIndex(at seconds: Double) -> Int? {
        var low = 0
        var high = parts.count
        // Parts without a time (an initialization section) come first: they count as starting before any time.
        while low < high {
            let middle = (low + high) / 2
            if (parts[middle].time?.lowerBound ?? -.infinity) <= seconds { low = middle + 1 } else { high = middle }
        }
        guard low > 0, parts[low - 1].time != nil else { return parts.firstIndex { $0.time != nil } }
        return low - 1
    }

    /// The run offset the media's time `seconds` lies at.
    func offset(at seconds: Double) -> Int64 {
        switch timing {
        case .linear(let payload, let duration):
            guard duration > 0 else { return payload.lowerBound }
            let bitrate = Double(payload.count) / duration
            return payload.lowerBound + Int64(Swift.max(0, seconds) * bitrate)
        case .segments:
            guard let index = segmentIndex(at: seconds), let time = parts[index].time else { return 0 }
            let part = parts[index]
            guard seconds < time.upperBound else { return index == parts.count - 1 ? part.end : parts[index + 1].start }
            let fraction = time.isEmpty ? 0 : Swift.max(0, seconds - time.lowerBound) / (time.upperBound - time.lowerBound)
            return part.start + Int64(fraction * Double(part.range.count))
        }
    }

    /// The media time at run offset `offset`.
    func seconds(at offset: Int64) -> Double {
        switch timing {
        case .linear(let payload, let duration):
            guard payload.count > 0 else { return 0 }
            return Double(offset - payload.lowerBound) * duration / Double(payload.count)
        case .segments:
            guard let last = parts.last(where: { $0.time != nil }), let end = last.time?.upperBound else { return 0 }
            guard offset < length, let index = index(containing: offset) else { return end }
            let part = parts[index]
            guard let time = part.time else {
                // An initialization section plays at the time of the segment after it.
                return parts[(index + 1)...].first { $0.time != nil }?.time?.lowerBound ?? end
            }
            let fraction = Double(offset - part.start) / Double(Swift.max(1, part.range.count))
            return time.lowerBound + fraction * (time.upperBound - time.lowerBound)
        }
    }

    /// Where reading must start to show the media at `seconds`: the start of the segment holding it (a segment
    /// starts with a key frame, so the decoder can start there), or, for one file, the offset itself.
    func readOffset(at seconds: Double) -> Int64 {
        switch timing {
        case .linear: return offset(at: seconds)
        case .segments: return segmentIndex(at: seconds).map { parts[$0].start } ?? 0
        }
    }

    /// Bytes cached without a gap from run offset `offset` on, across parts.
    func contiguousCached(from offset: Int64, in loader: MediaLoader) -> Int64 {
        guard var index = index(containing: offset) else { return 0 }
        var position = offset
        while index < parts.count {
            let part = parts[index]
            let inResource = part.range.lowerBound + (position - part.start)
            let available = Swift.min(
                loader.cachedRanges(part.key).contiguousLength(from: inResource), part.range.upperBound - inResource)
            position += Swift.max(0, available)
            guard position >= part.end else { break }
            index += 1
        }
        return position - offset
    }

    /// What is cached of the run, in run offsets.
    func cachedRanges(in loader: MediaLoader) -> ByteRangeSet {
        var result = ByteRangeSet()
        for part in parts {
            for present in loader.cachedRanges(part.key).present(in: part.range) {
                let shift = part.start - part.range.lowerBound
                result.insert((present.lowerBound + shift)..<(present.upperBound + shift))
            }
        }
        return result
    }
}
