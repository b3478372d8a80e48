import Foundation

extension LoadingStream.Iterator {
    /// Streams straight from the origin for resources the cache cannot hold, each byte once: a run of the
    /// origin's bytes stops where cached bytes begin (they are read from disk, then streaming goes on after
    /// them) — unless the origin ignores Range, when every new request would cost the body from byte 0 again.
    func streamThrough() async throws -> LoadedChunk? {
        if passthrough == nil {
            // The fetch this reader relies on is still running: it hands its answer over (or ends) in a moment.
            if let holding {
                let seen = loader.coordinator.events(key)
                if loader.coordinator.outcome(key: key, fetchID: holding) == nil,
                    loader.coordinator.handedBody(key: key, fetchID: holding) == nil
                {
                    await loader.coordinator.wait(key: key, after: seen)
                    try Task.checkCancellation()
                    return try await step()
                }
            }
            // The answer the fetch relied on could not be cached: go on with it rather than ask again (after
            // the cached bytes before it).
            if let holding, let ahead = loader.coordinator.handedBody(key: key, fetchID: holding)?.offset,
                ahead > currentOffset, loader.store.availableRanges(for: key).contains(currentOffset)
            {
                return try await step()
            }
            let handed = holding.flatMap { loader.coordinator.takeHandedBody(key: key, fetchID: $0) }
            if let holding { loader.coordinator.release(key: key, fetchID: holding, finishingBlock: false) }
            holding = nil
            if let handed, let adopted = adopt(handed) { return try await streamThrough(adopted) }
            let (length, ignoresRange) = loader.coordinator.planner(key) {
                ($0.metadata?.contentLength, $0.originIgnoresRange)
            }
            let end = endOffset(length: length)
            if let end, currentOffset >= end { return finishedChunk() }
            var runEnd = end
            if !ignoresRange, generation != nil {
                let ahead = loader.store.availableRanges(for: key).present(in: currentOffset..<(end ?? Int64.max))
                if let cached = ahead.first {
                    // Cached right here (written since the caller looked): read it from disk first.
                    if cached.lowerBound == currentOffset { return try await step() }
                    runEnd = cached.lowerBound
                }
            }
            passthroughEnd = runEnd
            passthrough = try await HTTPClientBodyReader.open(
                fetcher: loader.fetcher, traffic: loader.traffic, key: key, url: request.url, offset: currentOffset,
                end: runEnd, continuing: delivered > 0 ? version : request.expectedVersion)
        }
        return try await streamThrough(nil)
    }

    /// A handed body this reader can go on with: it reaches the reader's offset, before any cached bytes,
    /// and is of the version the reader delivers.
    func adopt(_ handed: HandedBody) -> (reader: HTTPClientBodyReader, end: Int64?)? {
        guard handed.offset <= currentOffset, handed.end.map({ currentOffset < $0 }) ?? true else { return nil }
        if let expected = delivered > 0 ? version : request.expectedVersion,
            handed.metadata.isDifferentVersion(from: expected)
        {
            return nil
        }
        let end = endOffset(length: handed.metadata.contentLength)
        var runEnd = [end, handed.end].compactMap { $0 }.min()
        if let cached = loader.store.availableRanges(for: key).present(in: currentOffset..<(runEnd ?? Int64.max)).first {
            guard cached.lowerBound > currentOffset else { return nil }
            runEnd = cached.lowerBound
        }
        let reader = HTTPClientBodyReader.adopting(
            handed, at: currentOffset, traffic: loader.traffic, key: key, url: request.url)
        return (reader, runEnd)
    }

    /// Reads on from the running stream-through request (or `adopted`, a handed body, started now).
    func streamThrough(_ adopted: (reader: HTTPClientBodyReader, end: Int64?)?) async throws -> LoadedChunk? {
        if let adopted {
            passthrough = adopted.reader
            passthroughEnd = adopted.end
        }
        let left = passthroughEnd.map { $0 - currentOffset }
        guard let reader = passthrough, let bytes = try await reader.next(upTo: left ?? remaining()) else {
            let end = endOffset(length: loader.coordinator.planner(key, { $0.metadata?.contentLength }))
            if let runEnd = passthroughEnd ?? end, currentOffset < runEnd {
                throw OriginError.connectionLost(
                    url: request.url.absoluteString, reason: "body ended at byte \(currentOffset)")
            }
            passthrough = nil
            passthroughEnd = nil
            // The run ended where cached bytes begin: read them, then stream on after them.
            if let end, currentOffset < end { return try await step() }
            return finishedChunk()
        }
        let range = currentOffset..<(currentOffset + Int64(bytes.count))
        originBytes += Int64(bytes.count)
        delivered += Int64(bytes.count)
        currentOffset = range.upperBound
        if let runEnd = passthroughEnd, currentOffset >= runEnd {
            passthrough = nil
            passthroughEnd = nil
        }
        return LoadedChunk(offset: range.lowerBound, bytes: bytes, source: .origin)
    }

    func remaining() -> Int64? {
        endOffset(length: loader.coordinator.planner(key) { $0.metadata?.contentLength }).map { $0 - currentOffset }
    }
}
