import Foundation
import MediaCache
import MediaFormats

/// What an HLS story plays: the segments of one variant (after its initialization section, for fMP4) as one run
/// of bytes, read through the loader like any resource, so they are cached, shared and checked the same way.
struct HLSStory: Sendable {
    /// Seconds, from the media playlist.
    let duration: Double
    /// The initialization section (if any) and the segments, in order, as far as their lengths are known.
    let run: MediaRun
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
        let pieces: [Piece]
        /// Every piece's key, and every encryption key's (a viewing covers them all).
        var keys: [CacheKey] { pieces.map(\.key) + Set(pieces.compactMap { $0.encryption?.keyCacheKey }).sorted() }
    }

    /// One resource of a story's plan.
    struct Piece: Sendable {
        let url: URL
        let key: CacheKey
        let byteRange: Range<Int64>?
        var encryption: SegmentEncryption? = nil
    }

    /// Reads the playlist at `url` (`length` bytes, cached under `key`), and, for a master playlist, the media
    /// playlist of the variant whose first segment is cached whole (played before: it starts without the link,
    /// as the variant switch prefers cached segments later on), else of the variant `throughput` (bits per second,
    /// nil: not measured yet) carries or a higher one whose playlist is cached; refuses what it cannot play (a
    /// live stream) in a sentence. The playlists it reads are part of `scope` when given (a viewing), else of a
    /// viewing or preload of their own.
    static func plan(
        loader: MediaLoader, url: URL, key: CacheKey, length: Int64, partKey: @escaping @Sendable (URL) -> CacheKey,
        throughput: Double? = nil, forPreload: Bool = false, scope: ViewingScope? = nil
    ) async throws -> Plan {
        var media = try await playlist(loader: loader, url: url, key: key, length: length)
        var mediaURL = url
        var chosen: (master: HLSMasterPlaylist, variant: HLSVariant)?
        if case .master(let master) = media {
            // The highest variant the measured link carries with headroom (the lowest before anything was
            // measured), or a higher one already in the cache: it plays without the link.
            let measured = master.variant(forThroughput: throughput)
            let cached = master.byBandwidth.last { loader.cached(partKey($0.url))?.state == .complete }
            // (A preload takes it too: the player will start there, so its first seconds are what to have.)
            let startsCached = await variantCaching(
                segment: 0, of: master, besides: nil, loader: loader, partKey: partKey, scope: scope)
            guard
                let variant = startsCached
                    ?? [measured, cached].compactMap({ $0 }).max(by: { $0.bandwidth < $1.bandwidth })
            else {
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
            if let scope {
                scope.include([variantKey])
                media = try await read()
            } else {
                media = forPreload
                    ? try await loader.preloading(keys: [variantKey], read) : try await loader.viewing(keys: [variantKey], read)
            }
        }
        let chosenPlaylist = try playable(media, url: mediaURL)
        var pieces: [Piece] = []
        if let map = chosenPlaylist.segments.first?.map {
            pieces.append(Piece(url: map.url, key: partKey(map.url), byteRange: map.byteRange))
        }
        pieces += chosenPlaylist.segments.map { piece(of: $0, partKey: partKey) }
        return Plan(playlist: chosenPlaylist, master: chosen?.master, variant: chosen?.variant, pieces: pieces)
    }

    /// The highest variant of `master` (other than `besides`) whose playlist is cached and whose segment
    /// `segment` is cached whole; nil when there is none. Only cached playlists are read (as part of the story's
    /// viewing, `scope`, when there is one), so this costs no request.
    static func variantCaching(
        segment: Int, of master: HLSMasterPlaylist, besides: HLSVariant?, loader: MediaLoader,
        partKey: (URL) -> CacheKey, scope: ViewingScope?
    ) async -> HLSVariant? {
        for variant in master.byBandwidth.reversed() where variant != besides {
            let key = partKey(variant.url)
            guard let info = loader.cached(key), info.state == .complete else { continue }
            scope?.include([key])
            let parsed = try? await playlist(loader: loader, url: variant.url, key: key, length: info.metadata.contentLength)
            guard case .media(let playlist)? = parsed, segment < playlist.segments.count else { continue }
            let candidate = piece(of: playlist.segments[segment], partKey: partKey)
            if holdsWhole(loader.cached(candidate.key), byteRange: candidate.byteRange) { return variant }
        }
        return nil
    }

    /// How much of the story `plan` the cache holds, given `outcome` over the chosen variant's pieces: a segment that
    /// variant lacks counts as cached when another variant holds it whole (the variant switch plays that one), so a
    /// story that plays without the link says HIT whichever variants its segments were cached from.
    static func outcome(
        _ outcome: CacheOutcome, of plan: Plan, loader: MediaLoader, partKey: (URL) -> CacheKey, scope: ViewingScope
    ) async -> CacheOutcome {
        guard outcome == .partial, let master = plan.master else { return outcome }
        let sections = plan.pieces.count - plan.playlist.segments.count
        for (index, piece) in plan.pieces.enumerated() where !holdsWhole(loader.cached(piece.key), byteRange: piece.byteRange) {
            guard index >= sections else { return outcome }
            let other = await variantCaching(
                segment: index - sections, of: master, besides: plan.variant, loader: loader, partKey: partKey,
                scope: scope)
            guard other != nil else { return outcome }
        }
        return .hit
    }

    /// True when `info` (a piece's cache entry) holds all of `byteRange`, or without one, the whole resource.
    static func holdsWhole(_ info: ResourceInfo?, byteRange: Range<Int64>?) -> Bool {
        guard let info, let wanted = byteRange ?? info.metadata.contentLength.map({ 0..<$0 }) else { return false }
        return info.ranges.contains(wanted)
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
        let map = playlist.segments.first?.map
        if playlist.segments.contains(where: { $0.key != nil }) {
            guard map == nil else {
                throw PlayerError("this story is encrypted fMP4 HLS (AES-128 with #EXT-X-MAP), which the player cannot play yet")
            }
            guard !playlist.segments.contains(where: { $0.key != nil && $0.byteRange != nil }) else {
                throw PlayerError("this story encrypts #EXT-X-BYTERANGE parts of segments, which the player cannot play yet")
            }
        }
        guard playlist.segments.allSatisfy({ $0.map == map }) else {
            throw PlayerError("the HLS playlist changes its #EXT-X-MAP between segments, which the player cannot follow")
        }
        return playlist
    }

    /// The plan's piece for `segment`: its resource, range and encryption.
    static func piece(of segment: HLSSegment, partKey: (URL) -> CacheKey) -> Piece {
        Piece(
            url: segment.url, key: partKey(segment.url), byteRange: segment.byteRange,
            encryption: segment.key.map { SegmentEncryption($0, sequence: segment.sequence, cacheKey: partKey) })
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
        let first = plan.pieces.prefix(sections + plan.playlist.segmentCount(covering: seconds))
        var keys: [CacheKey: URL] = [:]
        for piece in first { if let encryption = piece.encryption { keys[encryption.keyCacheKey] = encryption.keyURL } }
        var subtitles: [PreloadTarget] = []
        if let master = plan.master {
            subtitles = await subtitleTargets(master, loader: loader, partKey: source.partKey, seconds: seconds)
        }
        return keys.sorted { $0.key < $1.key }.map { PreloadTarget(url: $0.value, key: $0.key, amount: .full) }
            + first.map { piece in
                PreloadTarget(url: piece.url, key: piece.key, amount: piece.byteRange.map { .ranges([$0]) } ?? .full)
            } + subtitles
    }

    /// The default subtitle rendition's segments covering `seconds` (its playlist read now, through the cache),
    /// so a preloaded story's first words are there with its first frame.
    static func subtitleTargets(
        _ master: HLSMasterPlaylist, loader: MediaLoader, partKey: @escaping @Sendable (URL) -> CacheKey, seconds: Double
    ) async -> [PreloadTarget] {
        guard let rendition = master.subtitles.first(where: \.isDefault) ?? master.subtitles.first else { return [] }
        let key = partKey(rendition.url)
        let read = try? await loader.preloading(keys: [key]) { () async throws -> HLSMediaPlaylist? in
            let info = try await loader.contentInformation(for: rendition.url, key: key)
            let parsed = try await Self.playlist(loader: loader, url: rendition.url, key: key, length: info.contentLength)
            guard case .media(let media) = parsed else { return nil }
            return media
        }
        guard let media = read ?? nil else { return [] }
        return media.segments.prefix(max(1, media.segmentCount(covering: seconds))).map { segment in
            let amount: PreloadAmount = segment.byteRange.map { .ranges([$0]) } ?? .full
            return PreloadTarget(url: segment.url, key: partKey(segment.url), amount: amount)
        }
    }

    /// The run the story starts with: the pieces whose lengths the cache (or an `#EXT-X-BYTERANGE`) gives, up to
    /// the first it does not, and the rest pending (their lengths are learned as playback reaches them, so the
    /// first frame waits for no request but the first segment's); and how much was cached before this play.
    static func start(_ plan: Plan, loader: MediaLoader) -> HLSStory {
        let sections = plan.pieces.count - plan.playlist.segments.count
        let times = plan.playlist.segmentTimes
        var known: [MediaParts.Piece] = []
        var pending: [MediaRun.Pending] = []
        var cachedWhole = 0
        var cachedNothing = 0
        for (index, piece) in plan.pieces.enumerated() {
            let time = index < sections ? nil : times[index - sections]
            let info = loader.cached(piece.key)
            let length = info?.metadata.contentLength
            let wanted = piece.byteRange ?? length.map { 0..<$0 }
            if holdsWhole(info, byteRange: piece.byteRange) {
                cachedWhole += 1
            } else if (info?.ranges.total ?? 0) == 0 {
                cachedNothing += 1
            }
            // An encrypted segment's length is its plaintext's: learned when it is reached (from the cache, if there).
            if pending.isEmpty, piece.encryption == nil, let resourceLength = length ?? piece.byteRange?.upperBound,
                let range = wanted, range.upperBound <= resourceLength
            {
                known.append(MediaParts.Piece(url: piece.url, key: piece.key, range: range, resourceLength: resourceLength, time: time))
            } else {
                pending.append(
                    MediaRun.Pending(
                        url: piece.url, key: piece.key, byteRange: piece.byteRange, time: time, encryption: piece.encryption))
            }
        }
        let cache: CacheOutcome = cachedWhole == plan.pieces.count ? .hit : cachedNothing == plan.pieces.count ? .miss : .partial
        return HLSStory(duration: plan.playlist.duration, run: MediaRun(MediaParts(known), pending: pending), cache: cache)
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
