import Foundation
import MediaCache
import NIOConcurrencyHelpers

/// Player tuning, in seconds of media.
public struct PlayerConfiguration: Sendable, Equatable {
    /// Buffered media needed for the first frame and to resume after a stall.
    public var startThreshold: Double = 0.5
    /// Media read ahead of the playhead.
    public var readAhead: Double = 2
    /// How often the playhead moves.
    public var tick: Double = 0.05

    /// The defaults.
    public init() {}
}

/// Where a player is.
public enum PlaybackState: String, Sendable {
    case loading, playing, stalled, paused, finished, failed
}

/// Everything a display needs about the current playback.
public struct PlaybackStatus: Sendable, Equatable {
    /// The state.
    public var state: PlaybackState = .loading
    /// Seconds played.
    public var position: Double = 0
    /// Seconds in all, once known.
    public var duration: Double?
    /// Seconds buffered ahead of the playhead.
    public var bufferedSeconds: Double = 0
    /// Time to first frame, once shown.
    public var startupMs: Int?
    /// Stalls so far.
    public var stalls = 0
    /// Seconds spent stalled.
    public var stallSeconds: Double = 0
    /// Cache state when the story started.
    public var cache: CacheState?
    /// Total bytes of the video, once known.
    public var contentLength: Int64?
    /// Why playback failed.
    public var error: String?

    /// A player's status before it starts.
    public init() {}

    /// True when everything from the playhead to the end is buffered.
    public var isBufferedToEnd: Bool {
        duration.map { position + bufferedSeconds >= $0 - 1e-6 } ?? false
    }
}

/// A player that consumes bytes the way AVPlayer's resource loader asks for them: content information, then the
/// MP4 header, then the payload at its real rate (payload bytes / duration), reading ahead and stalling when the
/// data does not keep up. Time comes from the injected clock.
public final class PlayerStub: Sendable {
    let loader: MediaLoader
    let url: URL
    /// The cache key the video lives under.
    public let key: CacheKey
    let clock: PlaybackClock
    let configuration: PlayerConfiguration
    let fallbackDuration: Double?
    let onEvent: @Sendable (PlayerEvent) -> Void
    let storyID: String
    private let shared = NIOLockedValueBox((status: PlaybackStatus(), paused: false, downloadedEnd: Int64(0), failure: String?.none))

    /// A player for `url`; `fallbackDuration` is used for media that is not MP4.
    public init(
        loader: MediaLoader, url: URL, cacheKey: CacheKey? = nil, storyID: String, clock: PlaybackClock,
        configuration: PlayerConfiguration = PlayerConfiguration(), fallbackDuration: Double? = nil,
        onEvent: @escaping @Sendable (PlayerEvent) -> Void = { _ in }
    ) {
        self.loader = loader
        self.url = url
        key = cacheKey ?? CacheKey(url: url)
        self.storyID = storyID
        self.clock = clock
        self.configuration = configuration
        self.fallbackDuration = fallbackDuration
        self.onEvent = onEvent
    }

    /// The current status.
    public var status: PlaybackStatus { shared.withLockedValue { $0.status } }

    /// Pauses or resumes (a paused player neither moves nor counts stall time).
    public func setPaused(_ paused: Bool) { shared.withLockedValue { $0.paused = paused } }

    private func update(_ change: (inout PlaybackStatus) -> Void) { shared.withLockedValue { change(&$0.status) } }

    /// Plays to the end (or until the task is cancelled) and returns the final status. When the origin turns out
    /// to hold a new version while a cached copy plays (the check runs beside playback), the story starts over on
    /// the new version: never a picture mixing the two.
    @discardableResult
    public func run() async -> PlaybackStatus {
        let start = clock.now
        var restarts = 0
        while true {
            var generation: Int64?
            do {
                try await attempt(start: start, generation: &generation)
            } catch is CancellationError {
            } catch {
                if versionChanged(since: generation), restarts < Self.maxRestarts {
                    restarts += 1
                    shared.withLockedValue { s in
                        s.status = PlaybackStatus()
                        s.downloadedEnd = 0
                        s.failure = nil
                    }
                    continue
                }
                let message = "\(error)"
                update {
                    $0.state = .failed
                    $0.error = message
                }
                onEvent(.failed(id: storyID, message: message))
            }
            return status
        }
    }

    /// How often one run starts over because the origin's version changed under it.
    static let maxRestarts = 2

    /// True when the cached copy this attempt started with was replaced by another version.
    private func versionChanged(since generation: Int64?) -> Bool {
        guard let generation, let current = loader.store.info(for: key)?.generation else { return false }
        return current != generation
    }

    private func attempt(start: Double, generation: inout Int64?) async throws {
        let initiallyCached = loader.store.availableRanges(for: key)
        let info = try await loader.contentInformation(for: url, key: key)
        generation = loader.store.info(for: key)?.generation
        guard let length = info.contentLength, length > 0 else {
            throw PlayerError("the origin did not say how long the video is")
        }
        var cache: CacheState =
            initiallyCached.contains(0..<length) ? .hit : (initiallyCached.isEmpty ? .miss : .partial)
        if loader.isOffline(key) { cache = .offline }
        update {
            $0.contentLength = length
            $0.cache = cache
        }
        let (duration, payload) = try await readHeader(length: length)
        update { $0.duration = duration }
        try await play(payload: payload, duration: duration, start: start, cache: cache, generation: generation)
    }

    private func readHeader(length: Int64) async throws -> (Double, Range<Int64>) {
        do {
            let layout = try await MP4BoxReader.layout(
                of: LoaderRangeReader(loader: loader, url: url, key: key), length: length)
            return (layout.duration, layout.mdat)
        } catch let error as MP4Error {
            guard let fallbackDuration else {
                throw PlayerError("\(error) and the playlist gives no duration for it")
            }
            return (fallbackDuration, 0..<length)
        }
    }

    private func play(
        payload: Range<Int64>, duration: Double, start: Double, cache: CacheState, generation: Int64?
    ) async throws {
        let bitrate = Double(payload.count) / duration
        shared.withLockedValue { $0.downloadedEnd = payload.lowerBound }
        let download = Task { [self] in
            do {
                try await pull(payload: payload, bitrate: bitrate)
            } catch is CancellationError {
            } catch {
                shared.withLockedValue { $0.failure = "\(error)" }
            }
        }
        defer { download.cancel() }
        var last = clock.now
        var stallStart: Double?
        while true {
            try Task.checkCancellation()
            let now = clock.now
            let elapsed = now - last
            last = now
            let (paused, failure) = shared.withLockedValue { ($0.paused, $0.failure) }
            if versionChanged(since: generation) { throw PlayerError("the video changed at the origin") }
            var status = self.status
            // The check against the origin runs beside playback: show when it could not reach the origin.
            if loader.isOffline(key) { status.cache = .offline }
            let playheadByte = payload.lowerBound + Int64(status.position * bitrate)
            let buffered = bufferedSeconds(from: playheadByte, payload: payload, bitrate: bitrate)
            let bufferedToEnd = status.position + buffered >= duration - 1e-6
            switch status.state {
            case .loading:
                if buffered >= configuration.startThreshold || bufferedToEnd {
                    status.state = paused ? .paused : .playing
                    status.startupMs = Int(((now - start) * 1000).rounded())
                    onEvent(
                        .firstFrame(
                            id: storyID, startupMs: status.startupMs ?? 0, cache: status.cache ?? cache, duration: duration))
                }
            case .playing, .paused:
                if paused {
                    status.state = .paused
                    break
                }
                status.state = .playing
                let advance = Swift.min(elapsed, buffered)
                status.position = Swift.min(duration, status.position + advance)
                if status.position >= duration - 1e-6 {
                    status.state = .finished
                } else if advance < elapsed || buffered - advance <= 0 {
                    status.state = .stalled
                    status.stalls += 1
                    stallStart = now
                    onEvent(.stall(id: storyID, positionMs: Int(status.position * 1000)))
                }
            case .stalled:
                if !paused { status.stallSeconds += elapsed }
                if buffered >= configuration.startThreshold || bufferedToEnd {
                    status.state = .playing
                    onEvent(.stallEnd(id: storyID, durationMs: Int(((now - (stallStart ?? now)) * 1000).rounded())))
                }
            case .finished, .failed:
                break
            }
            if let failure, buffered <= 0, status.state != .finished {
                throw PlayerError(failure)
            }
            let after = bufferedSeconds(
                from: payload.lowerBound + Int64(status.position * bitrate), payload: payload, bitrate: bitrate)
            status.bufferedSeconds = after
            let final = status
            update { $0 = final }
            if final.state == .finished { return }
            try await clock.sleep(until: now + configuration.tick)
        }
    }

    /// Seconds of payload available from `byte` on (contiguous), from disk or from a stream-through download.
    private func bufferedSeconds(from byte: Int64, payload: Range<Int64>, bitrate: Double) -> Double {
        let onDisk = loader.store.availableRanges(for: key).contiguousLength(from: byte)
        let streamed = shared.withLockedValue { $0.downloadedEnd } - byte
        let bytes = Swift.min(Swift.max(onDisk, streamed, 0), payload.upperBound - byte)
        return Double(bytes) / bitrate
    }

    /// Reads the payload in order, staying at most `readAhead` seconds ahead of the playhead, as AVPlayer does.
    private func pull(payload: Range<Int64>, bitrate: Double) async throws {
        let stream = loader.load(
            LoadingRequest(url: url, cacheKey: key, requestedOffset: payload.lowerBound,
                requestedLength: Int64(payload.count)))
        let iterator = stream.makeAsyncIterator()
        while true {
            let ahead = shared.withLockedValue { s in
                Double(s.downloadedEnd - payload.lowerBound - Int64(s.status.position * bitrate)) / bitrate
            }
            if ahead > configuration.readAhead {
                try await clock.sleep(until: clock.now + configuration.tick)
                continue
            }
            guard let chunk = try await iterator.next() else { return }
            shared.withLockedValue { $0.downloadedEnd = chunk.offset + Int64(chunk.bytes.count) }
        }
    }
}

/// A playback failure with its cause.
struct PlayerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
