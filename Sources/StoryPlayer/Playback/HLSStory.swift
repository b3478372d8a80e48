import Foundation
import MediaCache
import MediaFormats

/// What an HLS story plays: the segments of one variant (after its initialization section, for fMP4) as one run
/// of bytes, read through the loader like any resource, so they are cached, shared and checked the same way.
struct HLSStory: Sendable {
    /// Seconds, from the media playlist.
    let duration: Double
    /// The initialization section (if any) and the segments, in order.
    let parts: MediaParts
    /// How much of it was cached before this play: over the segments, as for one file.
    let cache: CacheOutcome

    /// The resources a story's playlist names, before their lengths are known.
    struct Plan: Sendable {
        /// The variant's media playlist.
        let playlist: HLSMediaPlaylist
        /// The master playlist and the variant chosen from it (nil for a media playlist named directly).
        var master: HLSMasterPlaylist?
        var variant: HLSVariant?
        /// The initialization section (if any) and the segments, in order, with their keys.
        let pieces: [(url: URL, key: CacheKey, byteRange: Range<Int64>?)]
        /// Every piece's key (a viewing covers them all).
        var keys: [CacheKey] { pieces.map(\.key) }
    }

    /// Reads the playlist at `url` (`length` bytes, cached under `key`), and, for a master playlist, the media
    /// playlist of the variant `throughput` (bits per second, nil: not measured yet) carries, or of a higher one
    /// whose playlist is cached (played before); refuses live and encrypted streams in a sentence.
    static func plan(
        loader: MediaLoader, url: URL, key: CacheKey, length: Int64, partKey: @escaping @Sendable (URL) -> CacheKey,
        throughput: Double? = nil, forPreload: Bool = false
    ) async throws -> Plan {
        var media = try await playlist(loader: loader, url: url, key: key, length: length)
        var mediaURL = url
        var chosen: (master: HLSMasterPlaylist, variant: HLSVariant)?
        if case .master(let master) = media {
            // The highest variant the measured link carries with headroom (the lowest before anything was
            // measured), or a higher one already in the cache: it plays without the link.
            let measured = master.variant(forThroughput: throughput)
            let cached = master.byBandwidth.last { loader.store.info(for: partKey($0.url))?.state == .complete }
            guard let variant = [measured, cached].compactMap({ $0 }).max(by: { $0.bandwidth < $1.bandwidth }) else {
                throw PlayerError("the HLS playlist names no variant")
            }
            mediaURL = variant.url
            chosen = (master, variant)
            let variantKey = partKey(variant.url)
            // Part of the viewing (or the preload): its bytes, fetched now, are not "saved" when read again.
            let read = { () async throws -> HLSPlaylist in
                let info = try await loader.contentInformation(for: variant.url, key: variantKey)
                return try await playlist(loader: loader, url: variant.url, key: variantKey, length: info.contentLength)
            }
            media = forPreload
                ? try await loader.preloading(keys: [variantKey], read) : try await loader.viewing(keys: [variantKey], read)
        }
        let chosenPlaylist = try playable(media, url: mediaURL)
        var pieces: [(url: URL, key: CacheKey, byteRange: Range<Int64>?)] = []
        if let map = chosenPlaylist.segments.first?.map { pieces.append((map.url, partKey(map.url), map.byteRange)) }
        pieces += chosenPlaylist.segments.map { ($0.url, partKey($0.url), $0.byteRange) }
        return Plan(playlist: chosenPlaylist, master: chosen?.master, variant: chosen?.variant, pieces: pieces)
    }

    /// The media playlist `media` (read from `url`) if this player can play it; otherwise why not, in a sentence.
    static func playable(_ media: HLSPlaylist, url mediaURL: URL) throws -> HLSMediaPlaylist {
        guard case .media(let playlist) = media else {
            throw PlayerError("the HLS variant playlist \(mediaURL.lastPathComponent) names variants of its own")
        }
        guard playlist.isComplete else {
            throw PlayerError(
                "this story is a live HLS stream (its playlist has no #EXT-X-ENDLIST); only complete playlists play")
        }
        guard playlist.segments.allSatisfy({ $0.key == nil }) else {
            throw PlayerError("this story is encrypted HLS (AES-128), which the player cannot decrypt yet")
        }
        let map = playlist.segments.first?.map
        guard playlist.segments.allSatisfy({ $0.map == map }) else {
            throw PlayerError("the HLS playlist changes its #EXT-X-MAP between segments, which the player cannot follow")
        }
        return playlist
    }

    /// What preloading an HLS story fetches: its playlists (read now, through the cache) and, whole, the pieces
    /// its first `seconds` play from (the initialization section and the first segments).
    static func preloadTargets(
        loader: MediaLoader, source: ResolvedSource, seconds: Double, throughput: Double?
    ) async throws -> [PreloadTarget] {
        let plan = try await loader.preloading(keys: [source.key]) { () async throws -> Plan? in
            let info = try await loader.contentInformation(for: source.url, key: source.key)
            guard let length = info.contentLength else { return nil }
            return try await Self.plan(
                loader: loader, url: source.url, key: source.key, length: length, partKey: source.partKey,
                throughput: throughput, forPreload: true)
        }
        guard let plan else { return [] }
        // The initialization section, if any, and the segments covering `seconds`.
        let sections = plan.pieces.count - plan.playlist.segments.count
        return plan.pieces.prefix(sections + plan.playlist.segmentCount(covering: seconds)).map { piece in
            PreloadTarget(url: piece.url, key: piece.key, amount: piece.byteRange.map { .ranges([$0]) } ?? .full)
        }
    }

    /// Finds each piece's length (fetching the first bytes of those not cached: run it inside the viewing) and
    /// how much was cached before.
    static func measure(_ plan: Plan, loader: MediaLoader) async throws -> HLSStory {
        let before = plan.pieces.map { loader.store.availableRanges(for: $0.key) }
        let sections = plan.pieces.count - plan.playlist.segments.count
        let times = segmentTimes(plan.playlist)
        let timed = plan.pieces.enumerated().map { index, piece in
            (piece.url, piece.key, piece.byteRange, index < sections ? nil : times[index - sections])
        }
        let pieces = try await measured(timed, loader: loader)
        let parts = MediaParts(pieces)
        let total = parts.length
        let cached = zip(parts.parts, before).reduce(Int64(0)) { sum, pair in
            sum + pair.1.present(in: pair.0.range).reduce(Int64(0)) { $0 + Int64($1.count) }
        }
        let cache: CacheOutcome = cached >= total ? .hit : cached == 0 ? .miss : .partial
        return HLSStory(duration: plan.playlist.duration, parts: parts, cache: cache)
    }

    /// The media seconds each segment of `playlist` covers.
    static func segmentTimes(_ playlist: HLSMediaPlaylist) -> [Range<Double>] {
        var start = 0.0
        return playlist.segments.map { segment in
            defer { start += segment.duration }
            return start..<(start + Swift.max(0, segment.duration))
        }
    }

    /// `pieces` with their lengths found (fetching the first bytes of those not cached, in parallel).
    static func measured(
        _ pieces: [(url: URL, key: CacheKey, byteRange: Range<Int64>?, time: Range<Double>?)], loader: MediaLoader
    ) async throws -> [MediaParts.Piece] {
        let lengths = try await withThrowingTaskGroup(of: (Int, Int64).self) { group in
            for (index, piece) in pieces.enumerated() {
                group.addTask {
                    if let range = piece.byteRange { return (index, range.upperBound) }
                    let info = try await loader.contentInformation(for: piece.url, key: piece.key)
                    guard let length = info.contentLength else {
                        throw PlayerError("the origin did not say how long HLS segment \(piece.url.lastPathComponent) is")
                    }
                    return (index, length)
                }
            }
            var lengths = [Int64](repeating: 0, count: pieces.count)
            for try await (index, length) in group { lengths[index] = length }
            return lengths
        }
        return try pieces.enumerated().map { index, piece in
            let range = piece.byteRange ?? 0..<lengths[index]
            guard range.upperBound <= lengths[index] else {
                throw PlayerError("an #EXT-X-BYTERANGE of \(piece.url.lastPathComponent) goes past its end")
            }
            return MediaParts.Piece(url: piece.url, key: piece.key, range: range, resourceLength: lengths[index], time: piece.time)
        }
    }

    /// Reads and parses the playlist at `url`.
    static func playlist(loader: MediaLoader, url: URL, key: CacheKey, length: Int64?) async throws -> HLSPlaylist {
        guard let length, length > 0 else { throw PlayerError("the HLS playlist \(url.lastPathComponent) is empty") }
        guard length <= Int64(HLSPlaylistParser.maxBytes) else {
            throw PlayerError("the HLS playlist \(url.lastPathComponent) is larger than \(HLSPlaylistParser.maxBytes >> 20) MiB")
        }
        let bytes = try await loader.data(
            LoadingRequest(url: url, cacheKey: key, requestedOffset: 0, requestedLength: length))
        do {
            return try HLSPlaylistParser.parse(bytes, url: url)
        } catch {
            throw PlayerError("the HLS playlist \(url.lastPathComponent): \(error)")
        }
    }
}
