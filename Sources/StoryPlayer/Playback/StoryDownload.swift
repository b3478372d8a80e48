import Foundation
import MediaCache
import NIOConcurrencyHelpers

/// A story's download: reads what plays, in order, part after part, at most `readAhead` seconds ahead of the
/// playhead, as AVPlayer does. It owns how far it got and why it stopped; the player reads both.
final class StoryDownload: Sendable {
    private let loader: MediaLoader
    private let clock: PlaybackClock
    /// Where what it measures of the link is added.
    private let throughput: ThroughputEstimate?
    private let storyID: String
    private let onEvent: @Sendable (PlayerEvent) -> Void
    /// How far ahead it may read now, and whether that moves with the clock (the machine's `downloadLimit`).
    private let limit: @Sendable () -> (through: Double, moving: Bool)
    /// Woken when the playhead moved.
    private let progress: Wakeup
    /// Woken when bytes arrived or the download failed (the player's loop).
    private let changed: Wakeup

    /// What the download got to.
    private struct State {
        /// The run offset read through.
        var end: Int64 = 0
        /// Why the download stopped, if it failed.
        var failure: String?
    }

    private let state = NIOLockedValueBox(State())

    /// A download for story `storyID` that reads within `limit`, waits on `progress` and wakes `changed`.
    init(
        loader: MediaLoader, clock: PlaybackClock, throughput: ThroughputEstimate?, storyID: String,
        onEvent: @escaping @Sendable (PlayerEvent) -> Void, limit: @escaping @Sendable () -> (through: Double, moving: Bool),
        progress: Wakeup, changed: Wakeup
    ) {
        self.loader = loader
        self.clock = clock
        self.throughput = throughput
        self.storyID = storyID
        self.onEvent = onEvent
        self.limit = limit
        self.progress = progress
        self.changed = changed
    }

    /// The run offset read through, and why the download failed (nil: it did not).
    var reached: (end: Int64, failure: String?) { state.withLockedValue { ($0.end, $0.failure) } }

    /// Forgets what the last attempt's download left.
    func reset() { state.withLockedValue { $0 = State() } }

    /// Reads what plays from run offset `offset` on in the background (see `pull`).
    func start(_ run: MediaRun, from offset: Int64, switcher: HLSVariantSwitch?, skipsCached: Bool) -> Task<Void, Never> {
        state.withLockedValue { $0.end = offset }
        return Task { [self] in
            await failing { try await pull(run, from: offset, switcher: switcher, skipsCached: skipsCached) }
        }
    }

    /// Reads what plays from the media at `seconds` on in the background, from where its data starts (an HLS
    /// story's segment, whose length and those before it are learned first).
    func start(_ run: MediaRun, at seconds: Double, switcher: HLSVariantSwitch?, skipsCached: Bool) -> Task<Void, Never> {
        Task { [self] in
            await failing {
                try await run.resolve(through: seconds, loader: loader)
                let offset = run.parts.readOffset(at: seconds)
                state.withLockedValue { $0.end = offset }
                try await pull(run, from: offset, switcher: switcher, skipsCached: skipsCached)
            }
        }
    }

    /// Runs `work`, keeping why it failed (not a cancellation).
    private func failing(_ work: () async throws -> Void) async {
        do {
            try await work()
        } catch is CancellationError {
        } catch {
            state.withLockedValue { $0.failure = "\(error)" }
            changed.signal()
        }
    }

    /// Marks the run read through `end` (never back) and says so.
    private func advance(to end: Int64, atLeast: Bool) {
        state.withLockedValue { $0.end = atLeast ? Swift.max($0.end, end) : end }
        changed.signal()
    }

    /// Reads what plays of `run` from offset `offset` on, in order, part after part, staying at most `readAhead`
    /// seconds ahead of the playhead. At each segment boundary of an HLS story, `switcher` may move the rest of the
    /// story to another variant. With `skipsCached` (a decoder reads the bytes itself) what is on disk is passed
    /// over, not read: each byte is read once.
    private func pull(_ run: MediaRun, from offset: Int64, switcher: HLSVariantSwitch?, skipsCached: Bool) async throws {
        var position = offset
        var considered = -1
        while true {
            var parts = run.parts
            // At a segment boundary (the next part's length known or not), the variant may change from there.
            let boundary = position == parts.length ? parts.parts.count
                : parts.index(containing: position).flatMap { parts.parts[$0].start == position ? $0 : nil }
            if let switcher, let boundary, boundary != considered {
                considered = boundary
                if let variant = try await switcher.consider(run: run, at: boundary, throughput: throughput?.bitsPerSecond) {
                    onEvent(
                        .variant(
                            id: storyID,
                            positionMs: Int(((run.upcoming(from: boundary).first?.time?.lowerBound ?? 0) * 1000).rounded()),
                            bandwidth: variant.bandwidth,
                            resolution: variant.resolution.map { "\($0.width)x\($0.height)" }))
                }
                parts = run.parts
            }
            guard position < parts.played.upperBound, let index = parts.index(containing: position) else {
                // The end of what is known: learn the next part's length, or the run is over.
                if try await run.resolveNext(loader: loader) { continue }
                return
            }
            let part = parts.parts[index]
            let end = Swift.min(part.end, parts.played.upperBound)
            var requestEnd = end
            if skipsCached {
                let inResource = part.range.lowerBound + (position - part.start)
                let missing = loader.cachedRanges(part.key).missing(in: inResource..<(inResource + end - position)).first
                let gapStart = missing.map { position + ($0.lowerBound - inResource) } ?? end
                if gapStart > position {
                    // On disk already: counted as downloaded, left to the decoder to read.
                    position = gapStart
                    advance(to: position, atLeast: true)
                    continue
                }
                requestEnd = missing.map { position + Int64($0.count) } ?? end
            }
            let stream = loader.load(
                LoadingRequest(
                    url: part.url, cacheKey: part.key, requestedOffset: part.range.lowerBound + (position - part.start),
                    requestedLength: requestEnd - position))
            let iterator = stream.makeAsyncIterator()
            while true {
                let limit = self.limit()
                let ahead = parts.seconds(at: state.withLockedValue { $0.end }) - limit.through
                if ahead > 0 {
                    // The demuxer reading further than the playhead needs waits for no download, only a length.
                    if run.decoderIsWaiting { _ = try await run.resolveNext(loader: loader) }
                    // Until the limit moves past it with the clock (while the story plays), or the playhead moves.
                    try await progress.wait(until: limit.moving ? clock.now + ahead : nil, on: clock)
                    continue
                }
                // What the link delivers while the player waits on it (bytes from the disk take no waiting).
                let (waitStart, originBefore) = (clock.now, loader.metrics.originBytesReceived)
                guard let chunk = try await iterator.next() else { break }
                throughput?.record(
                    bytes: loader.metrics.originBytesReceived - originBefore, seconds: clock.now - waitStart)
                position = part.start + (chunk.offset - part.range.lowerBound) + Int64(chunk.bytes.count)
                // Bytes arrived: what is buffered changed (a first frame, a stall's end, the preload gate).
                advance(to: position, atLeast: false)
            }
            position = requestEnd
        }
    }
}
