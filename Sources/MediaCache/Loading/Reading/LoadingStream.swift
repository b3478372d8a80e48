import Foundation
import NIOCore
import NIOHTTP1

/// The bytes of one `LoadingRequest`, in order. Pull-based: nothing is read ahead of the consumer, so memory stays
/// bounded whatever the resource's size. Dropping the iterator (or cancelling its task) cancels the request.
public struct LoadingStream: AsyncSequence, Sendable {
    /// Each step delivers the next chunk of the requested range.
    public typealias Element = LoadedChunk
    let loader: MediaLoader
    let request: LoadingRequest

    /// Starts reading the request (each iterator is a read of its own).
    public func makeAsyncIterator() -> Iterator { Iterator(loader: loader, request: request) }

    /// Loads chunk by chunk; `report` describes the request once it has finished.
    public final class Iterator: AsyncIteratorProtocol {
        let loader: MediaLoader
        let request: LoadingRequest
        let key: CacheKey
        /// The next offset to deliver: the `currentOffset` of the AVFoundation data request.
        public internal(set) var currentOffset: Int64
        private var started = false
        private var done = false
        var generation: Int64?
        /// The version of the bytes this reader delivers (validators and length), once known.
        var version: ResourceMetadata?
        private var initiallyCached = ByteRangeSet()
        var holding: Int?
        private var retries = 0
        private var replans = 0
        /// Bytes delivered since the last transient failure: enough of them restores the retry budget.
        private var deliveredSinceFailure: Int64 = 0
        /// Since when the origin has been failing this reader (nil while it delivers): past
        /// `LoaderConfiguration.giveUpAfter` the request fails, however many retries remain.
        private var troubleSince: ContinuousClock.Instant?
        /// The failure that started or continued the trouble, for the final error.
        private var lastFailure: OriginError?
        var delivered: Int64 = 0
        private var cacheBytes: Int64 = 0
        var originBytes: Int64 = 0
        private var savedBytes: Int64 = 0
        var passthrough: HTTPClientBodyReader?
        /// Where the running stream-through request ends (nil: at the resource's end).
        var passthroughEnd: Int64?
        /// Set once the request has finished.
        public private(set) var report: RequestReport?
        /// A `file:` URL's open file and its length: read from disk, never through the store.
        private var local: (descriptor: Int32, length: Int64)?

        init(loader: MediaLoader, request: LoadingRequest) {
            self.loader = loader
            self.request = request
            key = request.key
            currentOffset = request.requestedOffset
        }

        deinit {
            if let local { close(local.descriptor) }
            // Dropped after receiving everything it asked for: not an abandonment.
            releaseHeldFetch(completed: reachedEnd)
            if started { loader.store.unpin(key) }
        }

        /// True once every requested byte has been delivered.
        private var reachedEnd: Bool {
            guard let length = request.requestedLength else { return false }
            return currentOffset >= request.requestedOffset + length
        }

        /// The next chunk, or nil at the end of the requested range.
        public func next() async throws -> LoadedChunk? {
            guard !done else { return nil }
            do {
                return try await step()
            } catch {
                finish(failed: true)
                throw error
            }
        }

        func step() async throws -> LoadedChunk? {
            if let file = LocalFile(request.url) { return try readLocal(file) }
            if !started {
                started = true
                loader.store.pin(key)
                // Cached bytes go out at once; the check against the origin runs beside them. A new version found
                // by it replaces the cached copy, and this reader fails with `resourceChanged` if it had already
                // delivered bytes of the old one (it never mixes the two).
                loader.startValidation(key: key, url: request.url)
                initiallyCached = loader.store.availableRanges(for: key)
                generation = loader.store.info(for: key)?.generation
                version = loader.store.info(for: key)?.metadata
            }
            while true {
                try Task.checkCancellation()
                if passthrough != nil { return try await streamThrough() }
                // Other processes' changes are looked for at most once a millisecond while going through cached
                // bytes (each look is an index query); a fetch looks afresh before it downloads anything.
                let staleness = CacheStore.hitPathStaleness
                let info = loader.store.info(for: key, noticingChangesWithin: staleness)
                if let info {
                    if generation != info.generation {
                        // A new version: fine before any byte went out, an error after.
                        guard delivered == 0 else {
                            throw OriginError.resourceChanged(url: request.url.absoluteString)
                        }
                        generation = info.generation
                        version = info.metadata
                        initiallyCached = ByteRangeSet()
                    }
                }
                if let expected = request.expectedVersion, let version, version.isDifferentVersion(from: expected) {
                    throw OriginError.resourceChanged(url: request.url.absoluteString)
                }
                let length = info?.metadata.contentLength
                if let length, delivered == 0, request.requestedOffset >= length,
                    length > 0 || request.requestedOffset > 0
                {
                    throw OriginError.rangeNotSatisfiable(url: request.url.absoluteString, length: length)
                }
                let end = endOffset(length: length)
                if let end, currentOffset >= end { return finishedChunk() }
                let seen = loader.coordinator.events(key)
                let available = loader.store.availableRanges(for: key, noticingChangesWithin: staleness)
                let run = available.contiguousLength(from: currentOffset)
                if run > 0, let generation {
                    var count = Swift.min(run, Int64(loader.configuration.readChunk))
                    if let end { count = Swift.min(count, end - currentOffset) }
                    let range = currentOffset..<(currentOffset + count)
                    let bytes: [UInt8]
                    do {
                        bytes = try loader.store.read(
                            key: key, range: range, generation: generation, noticingChangesWithin: staleness)
                    } catch CacheError.corruptData(_, let bad) {
                        // Dropped from the cache for failing their checksum: fetch them like any missing bytes.
                        initiallyCached.remove(bad)
                        continue
                    } catch CacheError.notCached, CacheError.rangeNotCached, CacheError.resourceChanged {
                        // Gone since the look above (given up on, evicted or replaced by another reader or
                        // process): look again; a new version or a given-up resource is handled there.
                        continue
                    }
                    return deliver(bytes, at: range)
                }
                if let why = loader.store.givenUpReason(for: key) {
                    // Given up on in an earlier run: no fetch that would only be dropped, stream at once.
                    loader.coordinator.change(key) { $0.streamThrough(because: why) }
                } else if loader.store.isReadOnly {
                    // Nothing can be stored: a fetch's bytes would be dropped and streamed again.
                    loader.coordinator.change(key) { $0.streamThrough(because: "the cache directory is read-only") }
                }
                if loader.coordinator.planner(key, { $0.streamThroughReason != nil }) {
                    return try await streamThrough()
                }
                // The fetch this reader relied on ended since the state above was read (it may have written the
                // bytes, learned the length, or failed): look again before planning another.
                if try await checkHeldFetch() { continue }
                switch loader.coordinator.plan(
                    key: key, offset: currentOffset, end: planEnd(length: length), length: length,
                    available: available, holding: holding, exact: request.readAhead != nil,
                    generation: info?.generation)
                {
                case .wait(let fetchID):
                    holding = fetchID
                case .start(let fetchID, let start, let target):
                    holding = fetchID
                    loader.fetches.launch(key: key, url: request.url, fetchID: fetchID, start: start, target: target)
                }
                try await waitForBytes(after: seen)
            }
        }

        /// Waits for the key's next event; while the origin is failing this reader, no later than the moment the
        /// trouble has lasted `giveUpAfter`, when the request fails in one sentence.
        private func waitForBytes(after seen: UInt64) async throws {
            guard let since = troubleSince else {
                return await loader.coordinator.wait(key: key, after: seen)
            }
            let deadline = since + .milliseconds(Int64(loader.configuration.giveUpAfter * 1000))
            let (coordinator, key) = (loader.coordinator, key)
            let timer = Task {
                try await Task.sleep(until: deadline, clock: .continuous)
                coordinator.change(key) { _ in }  // wakes the readers of the key, this one among them
            }
            defer { timer.cancel() }
            await coordinator.wait(key: key, after: seen)
            if troubleSince != nil, ContinuousClock.now >= deadline { throw gaveUp() }
        }

        private func gaveUp() -> OriginError {
            OriginError.gaveUp(
                url: request.url.absoluteString, seconds: loader.configuration.giveUpAfter,
                last: lastFailure.map { "\($0)" } ?? "no bytes")
        }

        /// How long a failure had already been unproductive when it was reported: a read timeout comes after that
        /// long without a byte, a throughput failure after a window of too few.
        private func unproductiveTime(before failure: OriginError) -> Duration {
            let client = loader.configuration.client
            switch failure {
            case .timeout: return .milliseconds(Int64(client.readTimeout * 1000))
            case .tooSlow: return .milliseconds(Int64(client.minimumThroughputWindow * 1000))
            default: return .zero
            }
        }

        /// Looks at how the fetch this reader relied on ended: transient failures are retried after a backoff
        /// (resuming from the first missing byte) within the request's retry budget, others are thrown. True when
        /// it had ended.
        private func checkHeldFetch() async throws -> Bool {
            guard let held = holding, let outcome = loader.coordinator.outcome(key: key, fetchID: held) else {
                return false
            }
            // A lead-in hands its reader over to the fetch it led into (whose unit was kept for it).
            holding = loader.coordinator.takeHandover(key: key, from: held)
            switch outcome {
            case .failed(let error):
                guard let origin = error as? OriginError, origin.isTransient else { throw error }
                if deliveredSinceFailure >= loader.configuration.retryBudgetRestoredAfter { retries = 0 }
                deliveredSinceFailure = 0
                let now = ContinuousClock.now
                let since = troubleSince ?? now - unproductiveTime(before: origin)
                (troubleSince, lastFailure) = (since, origin)
                if now - since >= .milliseconds(Int64(loader.configuration.giveUpAfter * 1000)) { throw gaveUp() }
                guard retries < loader.configuration.maxRetries else {
                    if retries == 0 { throw origin }
                    throw OriginError.retriesExhausted(
                        url: request.url.absoluteString, attempts: retries + 1, last: "\(origin)")
                }
                retries += 1
                let delay = RetryBackoff.delay(
                    attempt: retries, base: loader.configuration.retryBackoff, cap: loader.configuration.retryBackoffCap)
                loader.logger.warning(
                    "\(origin); retrying from byte \(currentOffset) in \(RetryBackoff.describe(delay)) (attempt \(retries + 1) of \(loader.configuration.maxRetries + 1))")
                if delay > 0 { try await Task.sleep(for: .milliseconds(Int64(delay * 1000))) }
                return true
            case .finished, .cancelled:
                // It ended without our byte (a shortened fetch, or a cancelled one we shared): plan again, but
                // not forever.
                replans += 1
                if replans > loader.configuration.maxRetries + 8 {
                    throw OriginError.connectionLost(
                        url: request.url.absoluteString, reason: "no progress at byte \(currentOffset)")
                }
                return true
            }
        }

        /// True when the next byte is neither cached nor on its way (reading it would start an origin request):
        /// a proxy holds such a read until its client has taken what it was sent.
        public var nextReadStartsOriginRequest: Bool {
            // Asked before every chunk a proxy sends: one look at the store, trusting a recent look at other
            // processes' changes, as the read itself does.
            guard !done, passthrough == nil else { return false }
            if let end = endOffset(length: version?.contentLength), currentOffset >= end { return false }
            let available = loader.store.availableRanges(for: key, noticingChangesWithin: CacheStore.hitPathStaleness)
            return !available.contains(currentOffset) && !loader.coordinator.planner(key) { $0.isFetching(currentOffset) }
        }

        /// Where a new fetch for this reader ends: the wanted end, or (with `readAhead`) no further past the
        /// reader's offset than the read-ahead, or twice what the reader has taken from the origin so far (bytes
        /// it read from the cache say nothing of how far past them a replaying client will read).
        private func planEnd(length: Int64?) -> Int64? {
            let end = endOffset(length: length)
            guard let readAhead = request.readAhead else { return end }
            let ahead = currentOffset + Swift.max(readAhead, 2 * originBytes)
            return Swift.min(end ?? ahead, ahead)
        }

        func endOffset(length: Int64?) -> Int64? {
            let wanted = request.requestedLength.map { request.requestedOffset + $0 }
            switch (wanted, length) {
            case (let w?, let l?): return Swift.min(w, l)
            case (let w?, nil): return w
            case (nil, let l?): return l
            case (nil, nil): return nil
            }
        }

        private func deliver(_ bytes: [UInt8], at range: ByteRange) -> LoadedChunk {
            let cachedParts = initiallyCached.present(in: range)
            let fromCache = cachedParts.reduce(Int64(0)) { $0 + Int64($1.count) }
            cacheBytes += fromCache
            originBytes += Int64(bytes.count) - fromCache
            if !request.isPreload { savedBytes += loader.traffic.saved(cachedParts, for: key) }
            delivered += Int64(bytes.count)
            currentOffset = range.upperBound
            deliveredSinceFailure += Int64(bytes.count)
            // A retry that delivers a throughput window's worth (or a block) has ended the trouble.
            let client = loader.configuration.client
            let healthy = Swift.max(
                loader.configuration.blockSize,
                Int64(Double(client.minimumBytesPerSecond) * client.minimumThroughputWindow))
            if troubleSince != nil, deliveredSinceFailure >= healthy { troubleSince = nil }
            replans = 0
            return LoadedChunk(
                offset: range.lowerBound, bytes: bytes, source: fromCache == Int64(bytes.count) ? .cache : .origin)
        }

        /// The next chunk of a file on this machine, straight from disk.
        private func readLocal(_ file: LocalFile) throws -> LoadedChunk? {
            try Task.checkCancellation()
            if local == nil { local = try file.open() }
            guard let (descriptor, length) = local else { return nil }
            if delivered == 0, request.requestedOffset >= length, length > 0 || request.requestedOffset > 0 {
                throw OriginError.rangeNotSatisfiable(url: request.url.absoluteString, length: length)
            }
            let end = endOffset(length: length) ?? length
            guard currentOffset < end else { return finishedChunk() }
            let count = Int(Swift.min(Int64(loader.configuration.readChunk), end - currentOffset))
            let bytes = try LocalFile.read(descriptor, at: currentOffset, count: count, path: file.path)
            // The file shrank under the reader: what is left of the range is not there.
            guard !bytes.isEmpty else { throw LocalFileError(path: file.path, reason: "ended early (it changed while it played)") }
            let offset = currentOffset
            currentOffset += Int64(bytes.count)
            delivered += Int64(bytes.count)
            return LoadedChunk(offset: offset, bytes: bytes, source: .local)
        }

        func finishedChunk() -> LoadedChunk? {
            finish(completed: true)
            return nil
        }

        /// Lets go of the fetch this reader relied on: a reader that got everything lets it finish its block; an
        /// abandoned one lets it finish the block in flight or stops it, as the request asks.
        private func releaseHeldFetch(completed: Bool) {
            guard let holding else { return }
            if completed {
                loader.coordinator.releaseFinished(key: key, fetchID: holding, readerEnd: currentOffset)
            } else {
                loader.coordinator.release(
                    key: key, fetchID: holding, finishingBlock: request.finishesBlockWhenAbandoned)
            }
        }

        private func finish(completed: Bool = false, failed: Bool = false) {
            guard !done else { return }
            done = true
            releaseHeldFetch(completed: completed)
            holding = nil
            if started { loader.store.unpin(key) }
            started = false
            let report = RequestReport(
                key: key, url: request.url.absoluteString, offset: request.requestedOffset, length: delivered,
                cacheBytes: cacheBytes, originBytes: originBytes, savedBytes: savedBytes, isPreload: request.isPreload)
            self.report = report
            // A request that failed before any byte went out has no outcome to count; a file's is not the cache's.
            if (!failed || delivered > 0) && local == nil { loader.record(report) }
        }
    }
}
