import Foundation

extension Preloader {
    /// Preloads `target`: content information (which also validates a cached copy), the planner's ranges when the
    /// amount is in seconds, then every missing byte of the plan in slices, waiting at the gate before each.
    func run(
        _ target: PreloadTarget, gated: Bool, onProgress: @escaping @Sendable (PreloadProgress) -> Void
    ) async throws -> PreloadProgress {
        // A file on this machine is read from disk when it plays: there is nothing to fetch ahead.
        if let file = LocalFile(target.url) {
            let length = try file.information().contentLength ?? 0
            let done = PreloadProgress(phase: .preloaded, neededBytes: length, cachedBytes: length)
            onProgress(done)
            return done
        }
        let store = loader.store
        store.pin(target.key)
        loader.traffic.adjust(target.key, viewing: false, by: 1)
        defer {
            store.unpin(target.key)
            loader.traffic.adjust(target.key, viewing: false, by: -1)
        }
        if gated {
            if isPaused { onProgress(PreloadProgress(phase: .paused)) }
            try await waitForGate(target.key)
        }
        onProgress(PreloadProgress(phase: .preloading))
        let info = try await loader.contentInformation(for: target.url, key: target.key)
        guard let length = info.contentLength else {
            throw PreloadError(description: "the origin did not say how long \(target.url.absoluteString) is")
        }
        var planned: [ByteRange]?
        if case .seconds(let seconds) = target.amount, let planner {
            let loader = loader
            planned = await planner.ranges(forFirst: seconds, length: length) { range in
                var request = LoadingRequest(
                    url: target.url, cacheKey: target.key, requestedOffset: range.lowerBound,
                    requestedLength: Int64(range.count))
                request.isPreload = true
                return try await loader.data(request)
            }
        }
        let needed = PreloadPlan.ranges(
            amount: target.amount, length: length, planned: planned, fallbackBytes: configuration.fallbackBytes)
        @Sendable func progress(_ phase: PreloadPhase) -> PreloadProgress {
            let available = store.availableRanges(for: target.key)
            let cached = needed.reduce(Int64(0)) { sum, range in
                sum + available.present(in: range).reduce(0) { $0 + Int64($1.count) }
            }
            return PreloadProgress(phase: phase, neededBytes: needed.total, cachedBytes: cached)
        }
        while true {
            try Task.checkCancellation()
            if let why = loader.streamThroughReason(target.key) {
                throw PreloadError(description: "\(target.url.absoluteString) cannot be cached: \(why)")
            }
            let available = store.availableRanges(for: target.key)
            guard let gap = needed.lazy.flatMap({ available.missing(in: $0) }).first else { break }
            if gated {
                if isPaused { onProgress(progress(.paused)) }
                try await waitForGate(target.key)
                if shouldStopAfterSlice(target.key) { break }
            }
            onProgress(progress(.preloading))
            let slice = gap.lowerBound..<Swift.min(gap.upperBound, gap.lowerBound + configuration.sliceBytes)
            do {
                try await load(slice, of: target, gated: gated) { onProgress(progress(.preloading)) }
            } catch is CancellationError where !Task.isCancelled {
                continue  // paused mid-slice: wait at the gate, then go on from what arrived
            }
            onProgress(progress(.preloading))
            if gated, shouldStopAfterSlice(target.key) { break }
        }
        let result = progress(needed.missingCount(in: store.availableRanges(for: target.key)) == 0 ? .preloaded : .queued)
        onProgress(result)
        return result
    }

    /// True once the player took this resource over.
    private func shouldStopAfterSlice(_ key: CacheKey) -> Bool {
        state.withLockedValue { $0.job?.target.key == key && $0.job?.adopted == true }
    }

    /// Reads `slice` through the loader (bytes are discarded; the fetch writes them down), as a task `pause()` can
    /// cancel.
    private func load(
        _ slice: ByteRange, of target: PreloadTarget, gated: Bool, onChunk: @escaping @Sendable () -> Void
    ) async throws {
        let loader = self.loader
        let task = Task {
            var request = LoadingRequest(
                url: target.url, cacheKey: target.key, requestedOffset: slice.lowerBound,
                requestedLength: Int64(slice.count))
            // Paused for playback: the link is needed now, not the rest of the block.
            request.finishesBlockWhenAbandoned = false
            request.isPreload = true
            let stream = loader.load(request)
            for try await _ in stream { onChunk() }
        }
        if gated {
            state.withLockedValue { s in
                if s.job?.target.key == target.key { s.job?.slice = task }
            }
        }
        defer {
            if gated { state.withLockedValue { s in if s.job?.target.key == target.key { s.job?.slice = nil } } }
        }
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Suspends while the gate is closed (or until the task is cancelled).
    func waitForGate(_ key: CacheKey) async throws {
        await CancellableWait.suspend(
            in: state,
            park: { s, id, continuation in
                guard !s.gateOpen else { return false }
                s.gateWaiters[id] = continuation
                return true
            },
            unpark: { s, id in CancellableWait.waker(s.gateWaiters.removeValue(forKey: id)) })
        try Task.checkCancellation()
    }
}

extension ByteRangeSet {
    /// Bytes of this set missing from `available`.
    func missingCount(in available: ByteRangeSet) -> Int64 {
        reduce(0) { sum, range in sum + available.missing(in: range).reduce(0) { $0 + Int64($1.count) } }
    }
}

/// A preload that cannot go on, and why.
public struct PreloadError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}
