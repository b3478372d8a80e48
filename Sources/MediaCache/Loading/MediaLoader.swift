import Foundation
import Logging
import NIOHTTP1
import NIOConcurrencyHelpers

/// The resource loader: answers byte-range requests from disk at once and streams missing bytes from the origin as
/// they arrive, writing them down; one fetch per missing range however many readers want it.
public final class MediaLoader: Sendable {
    /// The store bytes are written to and read from (readers get views of it: `cached`, `cachedRanges`).
    let store: CacheStore
    /// Tuning.
    public let configuration: LoaderConfiguration
    let coordinator: FetchCoordinator
    let fetcher: OriginFetcher
    let eventLog: EventLog?
    let logger: Logger
    let traffic: TrafficMeter
    let watcher: CacheWatcher
    /// Names entries are recorded under instead of the URL fetched (`record(_:as:)`).
    let names: RecordedNames
    /// Runs the planned fetches.
    let fetches: FetchRunner

    /// Creates a loader over `store`; `eventLog` receives one JSON line per fetch, validation and request.
    public init(
        store: CacheStore, configuration: LoaderConfiguration = LoaderConfiguration(), eventLog: EventLog? = nil,
        logger: Logger = Logger(label: "MediaCache.loader")
    ) {
        self.store = store
        self.configuration = configuration
        self.eventLog = eventLog
        self.logger = logger
        traffic = TrafficMeter(store: store)
        watcher = CacheWatcher(store: store, interval: Self.viewAge)
        let coordinator = FetchCoordinator(blockSize: configuration.blockSize, joinWindow: configuration.joinWindow)
        let fetcher = OriginFetcher(configuration: configuration.client)
        let names = RecordedNames(store: store)
        (self.coordinator, self.fetcher, self.names) = (coordinator, fetcher, names)
        fetches = FetchRunner(
            store: store, coordinator: coordinator, fetcher: fetcher, eventLog: eventLog, logger: logger,
            traffic: traffic, names: names, recheckInterval: configuration.recheckInterval)
    }

    /// Records `key`'s entries under `name` instead of the URL fetched: a file on this machine served over a
    /// simulated link is listed by its own URL (`file:///…`), not by the link's address, which changes every run.
    public func record(_ key: CacheKey, as name: URL) { names.record(key, as: name) }

    /// How the origin last failed a fetch or a check of `key` (a sentence naming the URL), while this loader
    /// remembers it: for a reader that stops waiting to say why, or a caller serving a cached copy offline.
    public func lastOriginFailure(for key: CacheKey) -> String? { coordinator.lastFailure(key) }

    /// Lets fetches finishing their last block complete (up to `drainTimeout` seconds), cancels the rest, closes
    /// connections and commits the store.
    public func shutdown(drainTimeout: Double = 2) async {
        await Self.waitFor(coordinator.unattendedTasks(), atMost: .milliseconds(Int(drainTimeout * 1000)))
        // Cancelled fetches end within moments; wait for them so none writes after the store closes (and the
        // directory lock goes to another process).
        await Self.waitFor(coordinator.cancelAll(), atMost: .seconds(5))
        await fetcher.shutdown()
        try? store.commitAll()
        try? store.flushTraffic()
    }

    /// Waits until every task has ended or `limit` has passed, whichever comes first (the tasks go on).
    static func waitFor(_ tasks: [Task<Void, Never>], atMost limit: Duration) async {
        await BoundedWait.wait(for: tasks, atMost: limit)
    }

    /// A stream of the requested bytes; iterate it to load, stop iterating (or cancel the task) to cancel.
    public func load(_ request: LoadingRequest) -> LoadingStream {
        LoadingStream(loader: self, request: request)
    }

    /// Everything in one array (for small ranges and tests).
    public func data(_ request: LoadingRequest) async throws -> [UInt8] {
        var result: [UInt8] = []
        for try await chunk in load(request) { result.append(contentsOf: chunk.bytes) }
        return result
    }

    /// Length, type and validators, from the cache when known (at once: the check against the origin runs beside
    /// it, and readers of this version fail with `resourceChanged` if it finds a new one), else from the first
    /// block's fetch.
    /// A `file:` URL is answered from the file itself.
    public func contentInformation(for url: URL, key: CacheKey? = nil) async throws -> ContentInformation {
        if let file = LocalFile(url) { return try file.information() }
        let key = key ?? CacheKey(url: url)
        startValidation(key: key, url: url)
        if let info = store.info(for: key), info.metadata.contentLength != nil {
            return ContentInformation(info.metadata)
        }
        // A copy whose length was set aside asks the origin with the byte past its cached start.
        let from = store.info(for: key).map { $0.ranges.contiguousLength(from: 0) } ?? 0
        let iterator = load(LoadingRequest(url: url, cacheKey: key, requestedOffset: from, requestedLength: 1)).makeAsyncIterator()
        do {
            while try await iterator.next() != nil {}
        } catch OriginError.rangeNotSatisfiable(_, let length) where length == 0 {
            return ContentInformation(contentLength: 0, contentType: nil, isByteRangeAccessSupported: true)
        }
        if let info = store.info(for: key) { return ContentInformation(info.metadata) }
        if let metadata = coordinator.planner(key, { $0.metadata }) { return ContentInformation(metadata) }
        return ContentInformation(contentLength: nil, contentType: nil, isByteRangeAccessSupported: true)
    }

    /// What a `HEAD` needs, without downloading a byte: the cached metadata, else the origin's answer to a `HEAD`
    /// of its own (an origin that refuses HEAD is asked as `contentInformation` asks, with a first block).
    public func headInformation(for url: URL, key: CacheKey? = nil) async throws -> ContentInformation {
        let key = key ?? CacheKey(url: url)
        if let info = store.info(for: key), info.metadata.contentLength != nil {
            return try await contentInformation(for: url, key: key)
        }
        traffic.sentRequest()
        let response = try await fetcher.send(url: url, method: .HEAD)
        switch response.status {
        case 200:
            return ContentInformation(
                contentLength: response.declaredLength, contentType: response.contentType,
                isByteRangeAccessSupported: true, etag: response.etag, lastModified: response.lastModified)
        case 405, 501:
            return try await contentInformation(for: url, key: key)
        default:
            throw OriginError.httpStatus(url: url.absoluteString, status: response.status, reason: response.reason)
        }
    }

    /// A read-only descriptor of the data file of `key` (the caller closes it) for sending `range` without copying
    /// it through this process, counted as a request the cache answered; nil unless every byte of `version` is
    /// cached and `range` has passed its checksums.
    public func openCachedFile(url: URL, key: CacheKey, version: ResourceMetadata, serving range: ByteRange) -> Int32? {
        let file = store.openCompleteFile(for: key) { stored in
            stored.isDifferentVersion(from: version) || stored.contentLength != version.contentLength ? nil : range
        }
        guard let file, let descriptor = file.descriptor else { return nil }
        guard file.range == range else {
            SystemCalls.closeDescriptor(descriptor)
            return nil
        }
        recordHit(url: url, key: key, range: range)
        return descriptor
    }

    /// Opens `key`'s data file to answer a request at once, without suspending and without the origin, when
    /// nothing needs waiting for: every byte is cached, the once-per-session check against the origin has ended
    /// (or is turned off), and the bytes `select` picks from what is stored passed their checksums. Counted as
    /// a request the cache answered. Nil otherwise: answer through `load`, which waits for what is missing.
    /// `checking` false also answers nil when bytes to send have not been checked against their checksums in this
    /// process yet (a caller on an event loop must not wait on that disk pass).
    public func openSettledCopy(
        url: URL, key: CacheKey, holding: Int64? = nil, checking: Bool = true,
        sending select: (ContentInformation) -> ByteRange?
    ) -> SettledCopy? {
        guard !configuration.revalidate || coordinator.settledValidation(key, now: store.now()) == .holds else { return nil }
        guard
            let file = store.openCompleteFile(
                for: key, holding: holding, checking: checking, sending: { select(ContentInformation($0)) })
        else { return nil }
        if let range = file.range { recordHit(url: url, key: key, range: range) }
        return SettledCopy(
            descriptor: file.descriptor, version: file.version, information: ContentInformation(file.metadata),
            range: file.range, confirmedAt: coordinator.confirmedAt(key))
    }

    private func recordHit(url: URL, key: CacheKey, range: ByteRange) {
        let count = Int64(range.count)
        record(
            RequestReport(
                key: key, url: url.absoluteString, offset: range.lowerBound, length: count, cacheBytes: count,
                originBytes: 0, savedBytes: traffic.saved([range], for: key)))
    }

    /// Runs `body` as one viewing of `key` (a player showing a story): bytes downloaded during it, or by a preload
    /// before it, are not counted as saved when it reads them again; once it ends, they are (see `LoaderMetrics`).
    public func viewing<T: Sendable>(key: CacheKey, _ body: () async throws -> T) async rethrows -> T {
        try await viewing(keys: [key], body)
    }

    /// Runs `body` as one viewing of every key in `keys` (a story made of several resources, e.g. HLS segments).
    public func viewing<T: Sendable>(keys: [CacheKey], _ body: () async throws -> T) async rethrows -> T {
        try await counting(keys, viewing: true, body)
    }

    /// Runs `body` as a preload of every key in `keys` (reading what a preload needs, e.g. an HLS story's
    /// playlists): what it downloads is, for the viewing that follows, downloaded for it, not saved.
    public func preloading<T: Sendable>(keys: [CacheKey], _ body: () async throws -> T) async rethrows -> T {
        try await counting(keys, viewing: false, body)
    }

    /// Runs `body` as one viewing of every key in `keys` and of every key it adds to the scope it is given (a
    /// story that learns of more resources as it plays, e.g. another HLS variant's segments).
    public func viewing<T: Sendable>(
        keys: [CacheKey], growing body: (ViewingScope) async throws -> T
    ) async rethrows -> T {
        let scope = ViewingScope(traffic: traffic)
        scope.include(keys)
        defer { scope.end() }
        return try await body(scope)
    }

    private func counting<T: Sendable>(
        _ keys: [CacheKey], viewing: Bool, _ body: () async throws -> T
    ) async rethrows -> T {
        let unique = Set(keys)
        for key in unique { traffic.adjust(key, viewing: viewing, by: 1) }
        defer { for key in unique { traffic.adjust(key, viewing: viewing, by: -1) } }
        return try await body()
    }

    /// Requests sent, bytes received and request outcomes in this session.
    public var metrics: LoaderMetrics { traffic.metrics }

    /// Why `key` streams through uncached in this session (too large for the budget, or the budget is full of
    /// data in use), or nil when it is cached as it loads.
    public func streamThroughReason(_ key: CacheKey) -> String? {
        coordinator.planner(key) { $0.streamThroughReason }
    }

    /// True when the origin of `key` answered a range request with the whole body (it ignores `Range`): bytes
    /// past what is wanted then have to be downloaded from the start.
    public func originIgnoresRanges(_ key: CacheKey) -> Bool { coordinator.planner(key) { $0.originIgnoresRange } }

    /// True when the last attempt to reach the origin for `key` failed (cached bytes are served regardless).
    public func isOffline(_ key: CacheKey) -> Bool { coordinator.planner(key) { $0.offline } }

    func record(_ report: RequestReport) {
        traffic.answered(report)
        eventLog?.emit(
            "request",
            [
                "url": report.url, "offset": report.offset, "length": report.length as Any,
                "outcome": report.outcome.rawValue, "cacheBytes": report.cacheBytes, "originBytes": report.originBytes,
            ])
    }
}

/// One finished request, as metrics and the event log see it.
public struct RequestReport: Sendable, Equatable {
    /// The resource key.
    public var key: CacheKey
    /// The origin URL.
    public var url: String
    /// Requested offset.
    public var offset: Int64
    /// Bytes delivered.
    public var length: Int64
    /// Delivered bytes that were cached before the request.
    public var cacheBytes: Int64
    /// Delivered bytes that came from the origin.
    public var originBytes: Int64
    /// Of `cacheBytes`, those the cache saved a download of (see `LoaderMetrics.cacheBytes`).
    public var savedBytes: Int64 = 0
    /// The request was a preload.
    public var isPreload = false

    /// HIT, PARTIAL or MISS.
    public var outcome: CacheOutcome {
        if originBytes == 0 { return .hit }
        return cacheBytes == 0 ? .miss : .partial
    }
}

extension ContentInformation {
    init(_ metadata: ResourceMetadata) {
        self.init(
            contentLength: metadata.contentLength, contentType: metadata.contentType, isByteRangeAccessSupported: true,
            etag: metadata.etag, lastModified: metadata.lastModified)
    }
}
