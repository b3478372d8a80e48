import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheStore {
    // MARK: - Writing

    /// Registers (or re-validates) a resource before its bytes are written.
    ///
    /// When `metadata` describes a different version than the one cached (ETag, Last-Modified or length changed),
    /// the old version is discarded whole and a new generation starts, so old and new bytes never mix.
    /// `replacing` forces that even when the validators agree: the caller found the cached bytes differ from the
    /// origin's (a resource without validators whose content changed).
    public func prepare(key: CacheKey, metadata: ResourceMetadata, replacing: Bool = false) throws -> Admission {
        if isReadOnly {
            // Nothing new can be stored; a cached copy of another version must not be served either.
            table.locked { s in
                guard let entry = table.entry(&s, key),
                    replacing || entry.info.metadata.isDifferentVersion(from: metadata)
                else { return }
                table.hide(&s, key)
            }
            return .uncacheable("the cache directory is read-only")
        }
        var metadata = metadata
        // Credentials in a URL are never written down (the key still tells such URLs apart).
        if let url = URL(string: metadata.url) { metadata.url = OriginURL.withoutCredentials(url).absoluteString }
        // Anything the whole budget holds is cached (others are evicted to make room for it).
        let budget = configuration.totalByteLimit
        if let length = metadata.contentLength, length > budget {
            let reason = "\(length) bytes is more than the cache budget (\(budget) bytes)"
            // The version check comes first: a cached copy of another version goes, whether or not the new one fits.
            try table.locked { s in
                if let entry = table.entry(&s, key), replacing || entry.info.metadata.isDifferentVersion(from: metadata) {
                    logger.info("resource \(key) changed at the origin; discarding the cached version")
                    try table.discard(&s, key)
                }
                // Remembered, so later reads stream through at once instead of asking the origin again first.
                try table.giveUp(&s, key, reason: reason)
            }
            return .uncacheable(reason)
        }
        return try table.locked { s in
            if let reason = table.givenUpReason(s, key) {
                // Given up on before; a length that now fits the budget earns it another try.
                guard let length = metadata.contentLength, length <= budget else { return .uncacheable(reason) }
                try table.takeBack(&s, key)
            }
            if table.entry(&s, key) == nil { try evictor.makeRoomForNewEntry(&s, excluding: key) }
            return try table.admit(&s, key, metadata: metadata, replacing: replacing, at: now())
        }
    }

    /// Writes `bytes` at `offset` of the resource's data file; the range becomes readable at once and is recorded
    /// in the index at the next commit (every `commitInterval` bytes or `commitLatency` seconds, at completion, or
    /// on `commit`).
    ///
    /// Returns false when the bytes were not stored because the budget is full of pinned data; the caller streams
    /// them through uncached. Throws `resourceChanged` when `generation` is no longer current.
    @discardableResult
    public func write(key: CacheKey, generation: Int64, offset: Int64, bytes: UnsafeRawBufferPointer) throws -> Bool {
        let (stored, commitDue) = try storeBytes(key: key, generation: generation, offset: offset, bytes: bytes)
        if commitDue { try commit(key: key) }
        return stored
    }

    /// As `write`, leaving a commit that came due to the caller (`commitDue`), which can run it where blocking on
    /// the disk costs nothing (the fetches' own thread pool).
    func storeBytes(
        key: CacheKey, generation: Int64, offset: Int64, bytes: UnsafeRawBufferPointer
    ) throws -> (stored: Bool, commitDue: Bool) {
        try writer.storeBytes(key: key, generation: generation, offset: offset, bytes: bytes)
    }

    /// Gives up caching `key`: its bytes are dropped and later requests stream through, in this run and the next
    /// ones, until the origin declares a length that fits the budget.
    public func giveUp(key: CacheKey, reason: String) throws {
        guard !isReadOnly else { return }
        try table.locked { s in
            try table.discard(&s, key)
            try table.giveUp(&s, key, reason: reason)
        }
    }

    /// Why `key` was given up on (see `giveUp`), or nil.
    public func givenUpReason(for key: CacheKey) -> String? {
        table.lockedAsSeen { table.givenUpReason($0, key) }
    }

    /// Why the most recent write that returned false was not stored.
    public var lastRefusal: String? { table.lockedAsSeen { $0.eviction.refusal } }

    /// Convenience for writing an array of bytes.
    @discardableResult
    public func write(key: CacheKey, generation: Int64, offset: Int64, bytes: [UInt8]) throws -> Bool {
        try bytes.withUnsafeBytes { try write(key: key, generation: generation, offset: offset, bytes: $0) }
    }

    /// Makes written bytes durable, then records them in the index; moves a now-complete file into `media/`.
    ///
    /// The sync runs outside the store's lock, so readers and writers of other resources never wait for the disk.
    /// Bytes whose sync fails are forgotten (treated as missing, fetched again), never recorded by a later commit.
    public func commit(key: CacheKey) throws { try writer.commit(key: key) }

    /// Commits every resource with unrecorded bytes.
    public func commitAll() throws { try writer.commitAll() }
}
