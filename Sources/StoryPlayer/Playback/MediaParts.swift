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
        /// Where they end in the run.
        var end: Int64 { start + Int64(range.count) }
    }

    /// In playing order, each starting where the one before ends.
    let parts: [Part]

    /// Bytes in the run.
    var length: Int64 { parts.last?.end ?? 0 }

    /// A run of one whole resource.
    init(url: URL, key: CacheKey, length: Int64) {
        parts = [Part(url: url, key: key, range: 0..<length, start: 0, resourceLength: length)]
    }

    /// A run of `pieces` one after another.
    init(_ pieces: [(url: URL, key: CacheKey, range: Range<Int64>, resourceLength: Int64)]) {
        var start: Int64 = 0
        var parts: [Part] = []
        for piece in pieces {
            parts.append(Part(url: piece.url, key: piece.key, range: piece.range, start: start, resourceLength: piece.resourceLength))
            start += Int64(piece.range.count)
        }
        self.parts = parts
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

    /// Bytes cached without a gap from run offset `offset` on, across parts.
    func contiguousCached(from offset: Int64, in store: CacheStore) -> Int64 {
        guard var index = index(containing: offset) else { return 0 }
        var position = offset
        while index < parts.count {
            let part = parts[index]
            let inResource = part.range.lowerBound + (position - part.start)
            let available = Swift.min(
                store.availableRanges(for: part.key).contiguousLength(from: inResource), part.range.upperBound - inResource)
            position += Swift.max(0, available)
            guard position >= part.end else { break }
            index += 1
        }
        return position - offset
    }

    /// What is cached of the run, in run offsets.
    func cachedRanges(in store: CacheStore) -> ByteRangeSet {
        var result = ByteRangeSet()
        for part in parts {
            for present in store.availableRanges(for: part.key).present(in: part.range) {
                let shift = part.start - part.range.lowerBound
                result.insert((present.lowerBound + shift)..<(present.upperBound + shift))
            }
        }
        return result
    }
}
