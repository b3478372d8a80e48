import Foundation
import NIOCore

/// Telling versions apart: the validators an answer is compared by, and, for a resource without a strong one, the
/// cached bytes compared with the origin's before a resume goes on from them.
extension FetchRunner {
    /// True when nothing but the bytes themselves can tell versions of `metadata` apart with certainty: no strong
    /// ETag (a weak one may stay across byte changes, and Last-Modified has a one-second resolution).
    static func needsContinuityProof(_ metadata: ResourceMetadata) -> Bool {
        guard let etag = metadata.etag else { return true }
        return etag.hasPrefix("W/")
    }

    /// Bytes of cached data re-requested before a resume when the origin gives no strong validator: they must
    /// match, or the cached copy belongs to another version and is discarded.
    static let continuityOverlap: Int64 = 4096

    /// The validator to send as `If-Range`: a strong ETag, else Last-Modified (weak ETags are not allowed there).
    static func ifRangeValidator(_ metadata: ResourceMetadata) -> String? {
        if let etag = metadata.etag, !etag.hasPrefix("W/") { return etag }
        return metadata.lastModified
    }

    /// True when an answer's validators name the cached version: the same strong ETag, or (without ETags) the same
    /// Last-Modified date.
    static func sameVersion(_ cached: ResourceMetadata, etag: String?, lastModified: String?) -> Bool {
        if let etag, let known = cached.etag { return etag == known && !etag.hasPrefix("W/") }
        if cached.etag == nil, etag == nil, let lastModified, let known = cached.lastModified { return lastModified == known }
        return false
    }

    /// True when every cached byte of `unproven` inside `chunk` equals the origin's `bytes` for that chunk.
    func cachedBytesMatch(
        key: CacheKey, generation: Int64, in unproven: ByteRangeSet, chunk: ByteRange, bytes: UnsafeRawBufferPointer
    ) throws -> Bool {
        for range in unproven.present(in: chunk) {
            guard let cachedBytes = try? store.read(key: key, range: range, generation: generation) else {
                continue  // gone meanwhile (evicted or replaced): nothing left to compare with
            }
            let from = Int(range.lowerBound - chunk.lowerBound)
            if !cachedBytes.elementsEqual(bytes[from..<(from + cachedBytes.count)]) { return false }
        }
        return true
    }

    /// The cached copy of a resource without strong validators differs from what the origin sends now: discard
    /// it and start a new generation (readers of the old one fail with `resourceChanged`).
    func replaceAfterMismatch(
        key: CacheKey, url: URL, metadata: ResourceMetadata, at chunk: ByteRange, fetchID: Int
    ) throws -> Int64 {
        logger.warning(
            "\(OriginURL.redactingCredentials(in: url.absoluteString)): cached bytes differ from the origin's near byte \(chunk.lowerBound) (no validator told of the change); discarding the cached copy")
        eventLog?.emit("replaced", ["url": url.absoluteString, "reason": "content differs"])
        guard case .cacheable(let generation, _) = try names.prepare(key, metadata, replacing: true)
        else { throw OriginError.resourceChanged(url: url.absoluteString) }
        coordinator.update(key) { $0.versionChanged(to: metadata, keeping: fetchID, newGeneration: generation) }
        return generation
    }

    /// For a fetch that starts away from cached bytes of a resource without strong validators: re-reads up to
    /// `continuityOverlap` bytes of the nearest cached run and discards the cached copy when they differ.
    func proveContinuity(key: CacheKey, url: URL, cached: ResourceInfo, fetchID: Int) async throws {
        guard let run = cached.ranges.ranges.last else { return }
        let probe = Swift.max(run.lowerBound, run.upperBound - Self.continuityOverlap)..<run.upperBound
        traffic.sentRequest()
        // Anything but a 206 (an origin ignoring Range, 416) the main request meets too and handles there: a
        // whole body is compared with every cached byte as it is written.
        guard case .partial(let total, let response) = try await fetcher.rangedGet(
            url: url, from: probe.lowerBound, to: probe.upperBound, ifRange: nil)
        else { return }
        let metadata = ResourceMetadata(
            url: url.absoluteString, contentLength: total, contentType: response.contentType, etag: response.etag,
            lastModified: response.lastModified)
        var offset = probe.lowerBound
        if metadata.isDifferentVersion(from: cached.metadata) { return }  // the main request replaces it anyway
        var body = OriginBodyStream(response, url: url, configuration: fetcher.configuration)
        var unproven = ByteRangeSet([probe])
        while !unproven.isEmpty, let buffer = try await body.next() {
            traffic.received(Int64(buffer.readableBytes), for: key)
            let chunk = offset..<(offset + Int64(buffer.readableBytes))
            let matches = try buffer.withUnsafeReadableBytes { bytes in
                try cachedBytesMatch(key: key, generation: cached.generation, in: unproven, chunk: chunk, bytes: bytes)
            }
            guard matches else {
                _ = try replaceAfterMismatch(key: key, url: url, metadata: metadata, at: chunk, fetchID: fetchID)
                return
            }
            unproven.remove(chunk)
            offset = chunk.upperBound
        }
    }
}
