import Foundation
import Logging
import HTTPSemantics
import NIOCore
import NIOPosix
import NIOHTTP1

/// Runs the loader's planned fetches: claims a fetch's bytes against other processes sharing the directory, asks
/// the origin (with `If-Range`, or proving continuity without a strong validator), and writes what arrives into
/// the store, telling the coordinator how far it got; a resource that cannot be cached streams through instead.
final class FetchRunner: Sendable {
    let store: CacheStore
    let coordinator: FetchCoordinator
    let fetcher: OriginFetcher
    let eventLog: EventLog?
    let logger: Logger
    let traffic: TrafficMeter
    /// Entries are admitted under the names they are recorded as.
    let names: RecordedNames
    /// How long a copy is used without asking, when the origin's answer says nothing.
    let recheckInterval: TimeInterval

    /// A runner writing into `store`, planned by `coordinator`, asking the origin through `fetcher`.
    init(
        store: CacheStore, coordinator: FetchCoordinator, fetcher: OriginFetcher, eventLog: EventLog?, logger: Logger,
        traffic: TrafficMeter, names: RecordedNames, recheckInterval: TimeInterval
    ) {
        self.store = store
        self.coordinator = coordinator
        self.fetcher = fetcher
        self.eventLog = eventLog
        self.logger = logger
        self.traffic = traffic
        self.names = names
        self.recheckInterval = recheckInterval
    }

    /// Starts the task that fetches `start..<target` for a planned fetch.
    func launch(key: CacheKey, url: URL, fetchID: Int, start: Int64, target: Int64?) {
        let task = Task { [self] in
            let outcome: FetchOutcome
            do {
                try await performFetch(key: key, url: url, fetchID: fetchID, start: start)
                outcome = .finished
            } catch is CancellationError {
                outcome = .cancelled
            } catch {
                outcome = .failed(error)
                logger.info("fetch \(url) from \(start) failed: \(error)")
            }
            // (performFetch recorded what it wrote before letting go of its claim.)
            coordinator.finished(key: key, fetchID: fetchID, outcome: outcome)
            eventLog?.emit("fetch_end", ["url": url.absoluteString, "start": start, "outcome": "\(outcome)"])
        }
        coordinator.attach(task, key: key, fetchID: fetchID)
    }

    /// Readers of `key` stream from the origin for the rest of the session; cached bytes are still read from disk.
    /// `handing` is the rest of the fetch's answer, for the reader that relied on it: what is already on its way
    /// is not requested again.
    private func streamThrough(
        key: CacheKey, url: URL, because why: String, handing body: HandedBody? = nil, fetchID: Int
    ) {
        logger.warning("\(OriginURL.redactingCredentials(in: url.absoluteString)) streams through uncached: \(why)")
        if let body { coordinator.handOff(body, key: key, fetchID: fetchID) }
        coordinator.change(key) { $0.streamThrough(because: why) }
    }

    /// Runs blocking disk work (a sync) on NIO's thread pool instead of a thread of Swift's cooperative pool.
    static func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    /// How often a fetch that waits for another process's bytes looks for them.
    static let sharedFetchPoll: Duration = .milliseconds(20)

    /// Locks `start..<end` of `key` against other processes sharing the cache directory. Another process already
    /// fetching the bytes at `start`: waits for them to reach the index (nil: they did; readers read them from
    /// disk) or for that process to let go. A claim may come back shorter than asked (another process fetches
    /// bytes further on).
    private func claimFetch(key: CacheKey, fetchID: Int, start: Int64, end: Int64) async throws -> ByteRange? {
        var waited = false
        while true {
            try Task.checkCancellation()
            if waited, store.availableRanges(for: key).contains(start) { return nil }
            if let claimed = store.locks.lockForFetching(key, start..<Swift.max(end, start + 1)) {
                // Arrived between the plan and the lock: another process fetched them, recorded them and let go
                // (this fetch may never have had to wait for it). A plan never starts at an available byte.
                if store.availableRanges(for: key).contains(start) {
                    store.locks.unlock(key, claimed)
                    return nil
                }
                return claimed
            }
            if !waited {
                eventLog?.emit("fetch_shared", ["key": key.description, "start": start])
                waited = true
            }
            guard case .some = coordinator.target(key: key, fetchID: fetchID) else { return nil }
            try await Task.sleep(for: Self.sharedFetchPoll)
        }
    }

    /// Fetches from `start` toward the fetch's target (which moves as readers join): claims the bytes, asks the
    /// origin, checks its answer against the cached version and writes each buffer before readers see it.
    private func performFetch(key: CacheKey, url: URL, fetchID: Int, start: Int64) async throws {
        guard case .some(var initialTarget) = coordinator.target(key: key, fetchID: fetchID) else { return }
        let claimEnd = initialTarget ?? store.info(for: key)?.metadata.contentLength ?? Int64.max
        guard let claim = try await claimFetch(key: key, fetchID: fetchID, start: start, end: claimEnd) else { return }
        // The claim grows with the fetch's target; it is let go only once what was written is recorded, so another
        // process never claims bytes that are written here but not yet in the index.
        var claimed = claim
        defer {
            try? store.commit(key: key)
            store.locks.unlock(key, claimed)
        }
        // (A claim ends at the lock slot's limit for an open-ended fetch: that is no target.)
        if claim.upperBound < claimEnd, claim.upperBound < SharedLocks.rangeLimit { initialTarget = claim.upperBound }
        let cached = store.info(for: key).flatMap { $0.ranges.isEmpty ? nil : $0 }
        let validator = cached.flatMap { Self.ifRangeValidator($0.metadata) }
        // Without a strong validator, a resume re-reads the cached bytes just before it and compares them; when
        // none sit right before it, a small separate request checks the nearest cached run first.
        var overlap: ByteRange?
        if let cached, Self.needsContinuityProof(cached.metadata) {
            if start > 0, let previous = cached.ranges.present(in: 0..<start).last, previous.upperBound == start {
                overlap = Swift.max(previous.lowerBound, start - Self.continuityOverlap)..<start
            } else {
                try await proveContinuity(key: key, url: url, cached: cached, fetchID: fetchID)
            }
        }
        let requestStart = overlap?.lowerBound ?? start
        // A request for the resource's last bytes is left open-ended: an origin whose Content-Range totals fall
        // short of its file then shows it (its answer runs past its own total) instead of the copy ending early
        // and being taken for whole. The length may come from an answer whose body never arrived (no bytes
        // cached yet): it is no more trusted for that.
        let knownLength = cached?.metadata.contentLength ?? store.info(for: key)?.metadata.contentLength
        let requestEnd = initialTarget != nil && initialTarget == knownLength ? nil : initialTarget
        eventLog?.emit(
            "fetch_start",
            [
                "url": url.absoluteString,
                "range": ByteRangeRequest.header(from: requestStart, to: requestEnd),
                "ifRange": validator as Any,
            ])
        traffic.sentRequest()
        let response: OriginResponse
        var writeOffset: Int64
        var length: Int64?
        switch try await fetcher.rangedGet(url: url, from: requestStart, to: requestEnd, ifRange: validator) {
        case .partial(let total, let answer):
            (response, length, writeOffset) = (answer, total, requestStart)
        case .whole(let declared, let answer):
            // The whole body from byte 0: the origin ignored Range, or If-Range found a new version.
            (response, length, writeOffset) = (answer, declared, 0)
            coordinator.change(key) { $0.receivesWholeBody(fetchID: fetchID) }
        case .notSatisfiable(let total, let etag, let lastModified):
            if let total, let cached, cached.metadata.contentLength != total,
                Self.sameVersion(cached.metadata, etag: etag, lastModified: lastModified),
                try store.adoptLength(key: key, generation: cached.generation, length: total)
            {
                // Its 206 totals overstated the file; every byte up to the length it gives now is here.
                var whole = cached.metadata
                whole.contentLength = total
                coordinator.change(key) { $0.answered(whole) }
                return
            }
            if let total, let known = cached?.metadata.contentLength, known != total, var changed = cached?.metadata {
                changed.contentLength = total
                _ = try names.prepare(key, changed)
            }
            throw OriginError.rangeNotSatisfiable(url: url.absoluteString, length: total)
        }
        var metadata = ResourceMetadata(
            url: url.absoluteString, contentLength: length, contentType: response.contentType, etag: response.etag,
            lastModified: response.lastModified)
        if let cached, let known = cached.metadata.contentLength, let length, known != length,
            Self.sameVersion(cached.metadata, etag: response.etag, lastModified: response.lastModified)
        {
            // The same version (its validators say so) under another length: nothing changed at the origin, its
            // figures disagree. Neither length can be trusted, so nothing of this answer is used, and the cached
            // copy keeps its bytes but not its length (no new version, no second download): the next answer's
            // figures are checked afresh, so a healed origin is believed again.
            if (try? store.forgetLength(key: key, generation: cached.generation)) == true {
                var unsure = cached.metadata
                unsure.contentLength = nil
                coordinator.change(key) { $0.answered(unsure) }
            }
            let named = response.status == 206 ? "Content-Range \(response.contentRangeHeader ?? "")" : "Content-Length"
            throw OriginError.lengthsDisagree(
                url: url.absoluteString,
                detail: "\(named) gives the file \(length) bytes, an earlier answer for the same version \(known)")
        }
        coordinator.change(key) { $0.answered(metadata) }
        var generation: Int64
        let admission: Admission
        // The answer as it stands, for a reader to go on with when it cannot be cached.
        let untouched = {
            HandedBody(
                offset: writeOffset, pending: [],
                body: OriginBodyStream(response, url: url, configuration: self.fetcher.configuration),
                end: response.status == 200 ? nil : initialTarget, metadata: metadata)
        }
        do {
            admission = try names.prepare(key, metadata)
        } catch let error as CacheError where error.isStorageFailure {
            return streamThrough(
                key: key, url: url, because: "the cache cannot be written (\(error))", handing: untouched(),
                fetchID: fetchID)
        }
        switch admission {
        case .uncacheable(let why):
            return streamThrough(key: key, url: url, because: why, handing: untouched(), fetchID: fetchID)
        case .cacheable(let current, let replaced):
            generation = current
            if replaced {
                eventLog?.emit("replaced", ["url": url.absoluteString, "etag": metadata.etag as Any])
                coordinator.update(key) { $0.versionChanged(to: metadata, keeping: fetchID, newGeneration: current) }
            }
        }
        // What this answer says of how long the copy may be used without asking (the next process reads it).
        let freshUntil = store.recordFreshness(
            key: key, generation: generation, lifetime: response.freshnessLifetime(receivedAt: store.now()))
        let checkedUntil = freshUntil ?? store.now().addingTimeInterval(recheckInterval)
        coordinator.change(key) { $0.originAnswered(freshUntil: checkedUntil, now: store.now()) }
        // Cached bytes of the same generation that this body covers and that must be proved equal to it: the
        // overlap of a resume, or (a whole body for an origin without strong validators) everything cached.
        var unproven = ByteRangeSet()
        if let cached, cached.generation == generation, Self.needsContinuityProof(metadata) {
            if let overlap { unproven.insert(overlap) } else if response.status == 200 { unproven = cached.ranges }
        }

        /// Extends the claim on this fetch's range up to `end`; false when another process claims what follows.
        func extendClaim(through end: Int64) -> Bool {
            guard end > claimed.upperBound, let more = store.locks.lockForFetching(key, claimed.upperBound..<end),
                more.lowerBound == claimed.upperBound
            else { return false }
            claimed = claimed.lowerBound..<more.upperBound
            return true
        }
        var body = OriginBodyStream(response, url: url, configuration: fetcher.configuration)
        while let buffer = try await body.next() {
            traffic.received(Int64(buffer.readableBytes), for: key)
            // (A cancelled fetch still writes what it received: those bytes are paid for.)
            guard case .some(let target) = coordinator.target(key: key, fetchID: fetchID) else { return }
            let count = Int64(buffer.readableBytes)
            var usable = count
            if let length = metadata.contentLength { usable = Swift.min(count, Swift.max(0, length - writeOffset)) }
            if writeOffset + usable > claimed.upperBound, writeOffset >= claimed.lowerBound {
                // The target moved on (a reader joined further ahead): extend the claim, or stop where another
                // process's claim begins.
                _ = extendClaim(through: Swift.max(writeOffset + usable, target ?? metadata.contentLength ?? Int64.max))
                usable = Swift.min(usable, Swift.max(0, claimed.upperBound - writeOffset))
            }
            if !unproven.isEmpty {
                let chunk = writeOffset..<(writeOffset + usable)
                let matches = try buffer.withUnsafeReadableBytes { bytes in
                    try cachedBytesMatch(key: key, generation: generation, in: unproven, chunk: chunk, bytes: bytes)
                }
                unproven.remove(chunk)
                if !matches {
                    generation = try replaceAfterMismatch(
                        key: key, url: url, metadata: metadata, at: chunk, fetchID: fetchID)
                    unproven = ByteRangeSet()
                }
            }
            // Counted before the bytes become readable, so no reader can take them for bytes it did not wait for.
            traffic.downloaded(writeOffset..<(writeOffset + usable), for: key)
            let stored: Bool
            // The rest of the answer from this buffer on, for a reader to go on with when it cannot be stored.
            let rest = {
                HandedBody(
                    offset: writeOffset, pending: Array(buffer.readableBytesView), body: body,
                    end: response.status == 200 ? nil : initialTarget, metadata: metadata)
            }
            do {
                let commitDue: Bool
                (stored, commitDue) = try buffer.withUnsafeReadableBytes { bytes in
                    try store.storeBytes(
                        key: key, generation: generation, offset: writeOffset,
                        bytes: UnsafeRawBufferPointer(rebasing: bytes.prefix(Int(usable))))
                }
                // A commit waits on the disk (fdatasync): on a thread of its own, not one of Swift's few shared ones.
                if commitDue { try await Self.offCooperativePool { [store] in try store.commit(key: key) } }
            } catch let error as CacheError where error.isStorageFailure {
                return streamThrough(
                    key: key, url: url, because: "the cache cannot be written (\(error))", handing: rest(),
                    fetchID: fetchID)
            }
            guard stored else {
                let why = store.lastRefusal ?? "the cache budget is full of data in use"
                if metadata.contentLength == nil {
                    // No length and already past what the budget holds: it can never complete; don't try again.
                    let reason = "it has no declared length and outgrew the cache budget"
                    try? store.giveUp(key: key, reason: reason)
                    return streamThrough(key: key, url: url, because: reason, handing: rest(), fetchID: fetchID)
                }
                return streamThrough(key: key, url: url, because: why, handing: rest(), fetchID: fetchID)
            }
            writeOffset += usable
            if writeOffset > start || response.status == 200 {
                coordinator.change(key) { $0.progressed(fetchID: fetchID, to: writeOffset) }
            }
            try Task.checkCancellation()
            if let target, writeOffset >= target { return }
            if writeOffset >= claimed.upperBound, writeOffset >= claimed.lowerBound {
                // The claim ran out exactly at a buffer's end: extend it toward the target, or stop where another
                // process's claim begins (it fetches what comes next).
                guard extendClaim(through: target ?? metadata.contentLength ?? Int64.max) else { return }
            }
        }
        if metadata.contentLength == nil, response.status == 200 {
            // A chunked body with no declared length: its end is the length.
            metadata.contentLength = writeOffset
            _ = try names.prepare(key, metadata)
            try store.commit(key: key)
            coordinator.change(key) { $0.answered(metadata) }
            return
        }
        let expectedEnd = [metadata.contentLength, coordinator.target(key: key, fetchID: fetchID) ?? nil]
            .compactMap { $0 }.min()
        if let expectedEnd, writeOffset < expectedEnd {
            throw OriginError.connectionLost(
                url: url.absoluteString, reason: "body ended at byte \(writeOffset), expected \(expectedEnd)")
        }
    }
}
