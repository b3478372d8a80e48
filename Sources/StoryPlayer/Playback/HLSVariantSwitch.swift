import Foundation
import MediaCache
import MediaFormats
import NIOConcurrencyHelpers

/// Moves an HLS story to another variant at a segment boundary, as the measured link calls for: up when it carries
/// a higher variant with headroom, down when it no longer carries the current one. The rest of the story then
/// plays from the new variant's segments (read through the loader and cached like the others); the picture changes
/// size there, and the time line stays the one the story started with.
final class HLSVariantSwitch: Sendable {
    private let master: HLSMasterPlaylist
    private let loader: MediaLoader
    private let partKey: @Sendable (URL) -> CacheKey
    private let scope: ViewingScope
    private let state: NIOLockedValueBox<(current: HLSVariant, stopped: Bool)>

    /// Switches among the variants of `master`, starting on `current`; what it reads joins `scope`'s viewing.
    init(
        master: HLSMasterPlaylist, current: HLSVariant, loader: MediaLoader, partKey: @escaping @Sendable (URL) -> CacheKey,
        scope: ViewingScope
    ) {
        self.master = master
        self.loader = loader
        self.partKey = partKey
        self.scope = scope
        state = NIOLockedValueBox((current, false))
    }

    /// The variant to play the next segment from: the one the link carries with headroom (`throughput` bits per
    /// second, nil: nothing measured, so no reason to move), unless the current variant's next segment is cached
    /// already (it plays without the link). Nil: stay.
    static func choice(
        current: HLSVariant, among master: HLSMasterPlaylist, throughput: Double?, nextIsCached: Bool
    ) -> HLSVariant? {
        guard !nextIsCached, let throughput, let fitting = master.variant(forThroughput: throughput) else { return nil }
        return fitting == current ? nil : fitting
    }

    /// At the boundary before part `index` of `run` (a segment that is not the first, its length known or not):
    /// switches the rest of the story to the variant `choice` names (lengths learned as playback reaches them,
    /// so switching costs the new variant's playlist only), and returns it; nil when it stays. A variant that
    /// cannot take over (segments not aligned with the current one's, an initialization section, a playlist that
    /// fails) ends switching for this story; the decoder having read into the segment already postpones it.
    func consider(run: MediaRun, at index: Int, throughput: Double?) async throws -> HLSVariant? {
        let (current, stopped) = state.withLockedValue { ($0.current, $0.stopped) }
        guard !stopped else { return nil }
        let upcoming = run.upcoming(from: 0)
        // TS segments only (every part a segment): fMP4 would need the new variant's initialization section in
        // the middle of the stream. Never before the first segment: the story's start chose that variant.
        guard index > 0, index < upcoming.count, upcoming.allSatisfy({ $0.time != nil }) else { return nil }
        let next = upcoming[index]
        let nextIsCached = HLSStory.holdsWhole(loader.cached(next.key), byteRange: next.byteRange)
        // Another variant that has this segment cached plays it without the link (a story played before, partly
        // on one variant and partly on another, plays the same way again); otherwise the link decides.
        let cachedElsewhere = nextIsCached
            ? nil
            : await HLSStory.variantCaching(
                segment: index, of: master, besides: current, loader: loader, partKey: partKey, scope: scope)
        guard
            let target = cachedElsewhere
                ?? Self.choice(current: current, among: master, throughput: throughput, nextIsCached: nextIsCached)
        else { return nil }
        do {
            guard let parts = try await parts(of: target, from: index, replacing: Array(upcoming[index...])) else {
                state.withLockedValue { $0.stopped = true }
                return nil
            }
            guard run.replace(from: index, with: parts) else { return nil }
            state.withLockedValue { $0.current = target }
            return target
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            state.withLockedValue { $0.stopped = true }
            return nil
        }
    }

    /// The segments of `variant` from `ordinal` on, on the time line of `replaced` (the current variant's from
    /// there); nil when its playlist does not line up with the current one segment for segment.
    private func parts(
        of variant: HLSVariant, from ordinal: Int, replacing replaced: [MediaRun.Pending]
    ) async throws -> [MediaRun.Pending]? {
        let key = partKey(variant.url)
        scope.include([key])
        let info = try await loader.contentInformation(for: variant.url, key: key)
        let playlist = try HLSStory.playable(
            try await HLSStory.playlist(loader: loader, url: variant.url, key: key, length: info.contentLength),
            url: variant.url)
        let times = playlist.segmentTimes
        guard times.count == ordinal + replaced.count, playlist.segments.allSatisfy({ $0.map == nil }) else {
            return nil
        }
        // Segment boundaries must agree (to a fraction of a frame's worth of rounding) for the picture to go on.
        for (time, old) in zip(times[ordinal...], replaced) {
            guard let oldTime = old.time, abs(time.lowerBound - oldTime.lowerBound) <= Self.alignment else { return nil }
        }
        let segments = playlist.segments[ordinal...]
        scope.include(segments.map { partKey($0.url) })
        let pieces = segments.map { HLSStory.piece(of: $0, partKey: partKey) }
        scope.include(pieces.compactMap { $0.encryption?.keyCacheKey })
        return zip(pieces, replaced).map { piece, old in
            MediaRun.Pending(
                url: piece.url, key: piece.key, byteRange: piece.byteRange, time: old.time, encryption: piece.encryption)
        }
    }

    /// How far apart two variants' segment starts may be and still count as the same boundary, in seconds.
    static let alignment = 0.1
}
