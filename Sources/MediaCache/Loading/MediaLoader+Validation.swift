import Foundation
import NIOHTTP1

extension MediaLoader {
    /// Checks the cached copy of `key` against the origin once per session (HEAD), replacing it if it changed,
    /// and waits for the answer. Concurrent callers share one check; an unreachable origin leaves the cached copy
    /// in service. Readers do not wait for this: they serve cached bytes at once while the check runs beside them
    /// (see `startValidation`); callers that want the current version before the first byte (a one-shot
    /// download) await it.
    /// `waitingAtMost` bounds the wait (the check goes on beside whatever the caller does next); nil waits for the
    /// answer however long the origin takes.
    public func validate(url: URL, key: CacheKey? = nil, waitingAtMost limit: Duration? = nil) async {
        let key = key ?? CacheKey(url: url)
        if let task = startValidation(key: key, url: url) {
            if let limit { await Self.waitFor([task], atMost: limit) } else { await task.value }
        }
        coordinator.pruneIdleKeys(keeping: key)
    }

    /// Returns once the check of `key`'s cached copy running now (if one is) has its answer; starts none. A
    /// player plays a cached copy at once and looks again when the check says whether it is still the origin's.
    public func checkFinished(key: CacheKey) async { await coordinator.runningValidation(key)?.value }

    /// Starts the once-per-session check of `key`'s cached copy unless it ran or is running; returns the running
    /// check (nil when there is nothing to check or it is done).
    @discardableResult
    func startValidation(key: CacheKey, url: URL) -> Task<Void, Never>? {
        guard configuration.revalidate else { return nil }
        // Settled already: no look at the store and its index (the proxy asks this on every request it answers
        // through the loader).
        switch coordinator.settledValidation(key, now: store.now()) {
        case .running(let task): return task
        case .holds: return nil
        case nil: break
        }
        let info = store.info(for: key)
        let cached = info?.metadata ?? ResourceMetadata(url: url.absoluteString)
        let needed = info.map { !$0.ranges.isEmpty } ?? false
        // A copy the origin said stays fresh for a while is served without asking it (no request at all).
        let (freshUntil, confirmed) = needed ? store.freshness(for: key) : (nil, nil)
        return coordinator.startValidation(
            key: key, needed: needed, freshUntil: freshUntil, confirmedAt: confirmed, now: store.now()
        ) {
            Task { [self] in
                let (result, freshUntil) = await runValidation(
                    key: key, url: url, cached: cached, generation: info?.generation)
                // An answer without freshness holds for the recheck interval (a long-running process asks again).
                let checkedUntil = freshUntil ?? store.now().addingTimeInterval(configuration.recheckInterval)
                coordinator.validated(key: key, result, freshUntil: checkedUntil, now: store.now())
            }
        }
    }

    /// The conditions that make the origin answer `304 Not Modified` while `cached` is still its version.
    static func conditions(for cached: ResourceMetadata) -> [(String, String)] {
        var conditions: [(String, String)] = []
        if let etag = cached.etag { conditions.append(("If-None-Match", etag)) }
        if let modified = cached.lastModified { conditions.append(("If-Modified-Since", modified)) }
        return conditions
    }

    /// Asks the origin (a conditional HEAD) whether `cached` is still its version; also returns until when the
    /// answer holds. A `304` says so at once; a `200` is compared with the cached copy (length and validators).
    /// `generation` is the cached copy's.
    private func runValidation(
        key: CacheKey, url: URL, cached: ResourceMetadata, generation cachedGeneration: Int64?
    ) async -> (ValidationResult, Date?) {
        do {
            traffic.sentRequest()
            let response = try await fetcher.send(url: url, method: .HEAD, conditions: Self.conditions(for: cached))
            var result = ValidationResult.unchanged
            var outcome = "unchanged"
            var freshUntil: Date?
            switch response.status {
            case 304:
                if let generation = store.info(for: key)?.generation {
                    freshUntil = store.recordFreshness(
                        key: key, generation: generation,
                        lifetime: response.freshnessLifetime(receivedAt: store.now(), lastModified: cached.lastModified))
                }
            case 200:
                let current = ResourceMetadata(
                    url: url.absoluteString, contentLength: response.contentLength, contentType: response.contentType,
                    etag: response.etag, lastModified: response.lastModified)
                if current.isDifferentVersion(from: cached),
                    FetchRunner.sameVersion(cached, etag: current.etag, lastModified: current.lastModified)
                {
                    // Its validators name the cached version, its length another: the origin's figures disagree
                    // (a Content-Range total that lies). Nothing changed; the fetches find out which length holds.
                    outcome = "unchanged (the origin's lengths disagree)"
                    logger.warning(
                        "\(OriginURL.redactingCredentials(in: url.absoluteString)): HEAD gives \(current.contentLength.map(String.init) ?? "no length"), an earlier answer for the same version \(cached.contentLength.map(String.init) ?? "none"); the cached copy is kept")
                } else if current.isDifferentVersion(from: cached) {
                    outcome = "changed"
                    result = .changed(current)
                    let admission = try names.prepare(key, current)
                    if case .cacheable(let generation, replaced: false) = admission, let cachedGeneration,
                        generation > cachedGeneration
                    {
                        // A fetch met the new version during the check and replaced the copy: the plan knows, and
                        // that fetch (writing the new version) is not to be stopped as one of the old.
                        outcome = "changed (a fetch found it first)"
                        result = .unchanged
                    }
                }
                if let generation = store.info(for: key)?.generation {
                    freshUntil = store.recordFreshness(
                        key: key, generation: generation, lifetime: response.freshnessLifetime(receivedAt: store.now()))
                }
            case 404, 410:
                outcome = "gone"
                result = .gone
                try store.remove(key: key)
            default:
                outcome = "unchecked (HEAD answered \(response.status))"
            }
            eventLog?.emit("validate", ["url": url.absoluteString, "result": outcome])
            return (result, freshUntil)
        } catch is CancellationError {
            return (.cancelled, nil)
        } catch {
            eventLog?.emit("validate", ["url": url.absoluteString, "result": "offline", "error": "\(error)"])
            coordinator.noteFailure(key, "\(error)")
            return (.offline, nil)
        }
    }
}
