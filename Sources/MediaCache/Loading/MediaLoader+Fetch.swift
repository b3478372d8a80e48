import Foundation
import NIOCore
import NIOHTTP1

extension MediaLoader {
    /// Starts the task that fetches `start..<target` for a planned fetch.
    func launchFetch(key: CacheKey, url: URL, fetchID: Int, start: Int64, target: Int64?) {
        let task = Task { [self] in
            let outcome: FetchOutcome
            do {
                try await performFetch(key: key, url: url, fetchID: fetchID, start: start)
                outcome = .finished
            } catch is CancellationError {
                outcome = .cancelled
            } catch {
                outcome = .failed(error)
                if case OriginError.unreachable = error { coordinator.with(key) { $0.offline = true } }
                logger.info("fetch \(url) from \(start) failed: \(error)")
            }
            try? store.commit(key: key)
            coordinator.finished(key: key, fetchID: fetchID, outcome: outcome)
            eventLog?.emit("fetch_end", ["url": url.absoluteString, "start": start, "outcome": "\(outcome)"])
        }
        coordinator.attach(task, key: key, fetchID: fetchID)
    }

    /// Readers of `key` stream from the origin for the rest of the session; cached bytes are still read from disk.
    private func streamThrough(key: CacheKey, url: URL, because why: String) {
        logger.warning("\(OriginURL.redactingCredentials(in: url.absoluteString)) streams through uncached: \(why)")
        coordinator.signal(key) {
            $0.passthrough = true
            $0.passthroughReason = why
        }
    }

    /// The validator to send as `If-Range`: a strong ETag, else Last-Modified (weak ETags are not allowed there).
    static func ifRangeValidator(_ metadata: ResourceMetadata) -> String? {
        if let etag = metadata.etag, !etag.hasPrefix("W/") { return etag }
        return metadata.lastModified
    }

    private func performFetch(key: CacheKey, url: URL, fetchID: Int, start: Int64) async throws {
        guard case .some(let initialTarget) = coordinator.target(key: key, fetchID: fetchID) else { return }
        let cached = store.info(for: key)
        let validator = cached.flatMap { $0.ranges.isEmpty ? nil : Self.ifRangeValidator($0.metadata) }
        let rangeHeader = "bytes=\(start)-" + (initialTarget.map { String($0 - 1) } ?? "")
        eventLog?.emit(
            "fetch_start", ["url": url.absoluteString, "range": rangeHeader, "ifRange": validator as Any])
        transfer.withLock { $0.requests += 1 }
        let response = try await fetcher.send(url: url, method: .GET, range: rangeHeader, ifRange: validator)
        var metadata = ResourceMetadata(
            url: url.absoluteString, contentLength: nil, contentType: response.contentType, etag: response.etag,
            lastModified: response.lastModified)
        var writeOffset: Int64
        switch response.status {
        case 206:
            guard let contentRange = response.contentRangeHeader.flatMap(ContentRange.init),
                let range = contentRange.range, range.lowerBound == start,
                initialTarget.map({ range.upperBound < $0 }) ?? true
            else { throw OriginError.badContentRange(url: url.absoluteString, header: response.contentRangeHeader) }
            metadata.contentLength = contentRange.completeLength
            writeOffset = start
        case 200:
            // The whole body from byte 0: the origin ignored Range, or If-Range found a new version.
            metadata.contentLength = response.declaredLength
            writeOffset = 0
            if start > 0 { coordinator.restartedFromZero(key: key, fetchID: fetchID) }
        case 416:
            let length = response.contentRangeHeader.flatMap(ContentRange.init)?.completeLength
            if let length, let known = cached?.metadata.contentLength, known != length {
                metadata.contentLength = length
                _ = try store.prepare(key: key, metadata: metadata)
            }
            throw OriginError.rangeNotSatisfiable(url: url.absoluteString, length: length)
        default:
            throw OriginError.httpStatus(url: url.absoluteString, status: response.status, reason: response.reason)
        }
        coordinator.with(key) { $0.metadata = metadata }
        let generation: Int64
        let admission: Admission
        do {
            admission = try store.prepare(key: key, metadata: metadata)
        } catch let error as CacheError where error.isStorageFailure {
            return streamThrough(key: key, url: url, because: "the cache cannot be written (\(error))")
        }
        switch admission {
        case .uncacheable(let why):
            return streamThrough(key: key, url: url, because: why)
        case .cacheable(let current, let replaced):
            generation = current
            if replaced {
                eventLog?.emit("replaced", ["url": url.absoluteString, "etag": metadata.etag as Any])
            }
        }
        coordinator.signal(key) { $0.offline = false }

        var body = OriginBodyStream(response, url: url, configuration: fetcher.configuration)
        while let buffer = try await body.next() {
            transfer.withLock { $0.bytes += Int64(buffer.readableBytes) }
            try Task.checkCancellation()
            guard case .some(let target) = coordinator.target(key: key, fetchID: fetchID) else { return }
            let count = Int64(buffer.readableBytes)
            var usable = count
            if let length = metadata.contentLength { usable = Swift.min(count, Swift.max(0, length - writeOffset)) }
            let stored: Bool
            do {
                stored = try buffer.withUnsafeReadableBytes { bytes in
                    try store.write(
                        key: key, generation: generation, offset: writeOffset,
                        bytes: UnsafeRawBufferPointer(rebasing: bytes.prefix(Int(usable))))
                }
            } catch let error as CacheError where error.isStorageFailure {
                store.recordTraffic(key: key, origin: count, cacheHit: 0)
                return streamThrough(key: key, url: url, because: "the cache cannot be written (\(error))")
            }
            store.recordTraffic(key: key, origin: count, cacheHit: 0)
            guard stored else {
                let why = store.lastRefusal ?? "the cache budget is full of data in use"
                if metadata.contentLength == nil {
                    // No length and already past what the budget holds: it can never complete; don't try again.
                    let reason = "it has no declared length and outgrew the cache budget"
                    try? store.giveUp(key: key, reason: reason)
                    return streamThrough(key: key, url: url, because: reason)
                }
                return streamThrough(key: key, url: url, because: why)
            }
            writeOffset += usable
            coordinator.progressed(key: key, fetchID: fetchID, to: writeOffset)
            if let target, writeOffset >= target { return }
        }
        if metadata.contentLength == nil, response.status == 200 {
            // A chunked body with no declared length: its end is the length.
            metadata.contentLength = writeOffset
            _ = try store.prepare(key: key, metadata: metadata)
            try store.commit(key: key)
            coordinator.signal(key) { $0.metadata = metadata }
            return
        }
        let expectedEnd = [metadata.contentLength, coordinator.target(key: key, fetchID: fetchID) ?? nil]
            .compactMap { $0 }.min()
        if let expectedEnd, writeOffset < expectedEnd {
            throw OriginError.connectionLost(
                url: url.absoluteString, reason: "body ended at byte \(writeOffset), expected \(expectedEnd)")
        }
    }

    /// Checks the cached copy of `key` against the origin once per session (HEAD), replacing it if it changed.
    /// Concurrent callers share one check; an unreachable origin leaves the cached copy in service.
    func validate(key: CacheKey, url: URL) async {
        guard configuration.revalidate else { return }
        let info = store.info(for: key)
        // The check is created inside the same critical section that records it, so two readers arriving
        // together can never start two, and no cancelled loser can mark the check done (or the origin offline)
        // while the real one is still in flight.
        let task = coordinator.with(key) { c -> Task<Void, Never>? in
            switch c.validation {
            case .done: return nil
            case .running(let task): return task
            case .notStarted:
                guard let info, !info.ranges.isEmpty else {
                    c.validation = .done
                    return nil
                }
                let task = Task { [self] in
                    await runValidation(key: key, url: url, cached: info.metadata)
                    coordinator.signal(key) { $0.validation = .done }
                }
                c.validation = .running(task)
                return task
            }
        }
        if let task { await task.value }
        coordinator.pruneIdleKeys(keeping: key)
    }

    private func runValidation(key: CacheKey, url: URL, cached: ResourceMetadata) async {
        do {
            transfer.withLock { $0.requests += 1 }
            let response = try await fetcher.send(url: url, method: .HEAD)
            var outcome = "unchanged"
            switch response.status {
            case 200:
                let current = ResourceMetadata(
                    url: url.absoluteString, contentLength: response.contentLength, contentType: response.contentType,
                    etag: response.etag, lastModified: response.lastModified)
                if current.isDifferentVersion(from: cached) {
                    outcome = "changed"
                    _ = try store.prepare(key: key, metadata: current)
                }
            case 404, 410:
                outcome = "gone"
                try store.remove(key: key)
            default:
                outcome = "unchecked (HEAD answered \(response.status))"
            }
            coordinator.with(key) { $0.offline = false }
            eventLog?.emit("validate", ["url": url.absoluteString, "result": outcome])
        } catch is CancellationError {
            return
        } catch {
            coordinator.with(key) { $0.offline = true }
            eventLog?.emit("validate", ["url": url.absoluteString, "result": "offline", "error": "\(error)"])
        }
    }
}
