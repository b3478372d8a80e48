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
            state.withLockedValue { s in
                guard let entry = s.entries[key], replacing || entry.info.metadata.isDifferentVersion(from: metadata) else { return }
                s.entries.removeValue(forKey: key)
                s.files.removeValue(forKey: key)
                s.subtract(entry.written.total, from: entry.info.state)
            }
            return .uncacheable("the cache directory is read-only")
        }
        var metadata = metadata
        // Credentials in a URL are never written down (the key still tells such URLs apart).
        if let url = URL(string: metadata.url) { metadata.url = OriginURL.withoutCredentials(url).absoluteString }
        let budget = min(configuration.partialByteLimit, configuration.completeByteLimit)
        if let length = metadata.contentLength, length > budget {
            // The version check comes first: a cached copy of another version goes, whether or not the new one fits.
            try state.withLockedValue { s in
                if let entry = s.entries[key], replacing || entry.info.metadata.isDifferentVersion(from: metadata) {
                    logger.info("resource \(key) changed at the origin; discarding the cached version")
                    try discardLocked(&s, key)
                }
            }
            return .uncacheable("\(length) bytes is more than the cache budget (\(budget) bytes)")
        }
        return try state.withLockedValue { s in
            if let reason = s.uncacheable[key] {
                // Given up on before; a length that now fits the budget earns it another try.
                guard let length = metadata.contentLength,
                    length <= min(configuration.partialByteLimit, configuration.completeByteLimit)
                else { return .uncacheable(reason) }
                s.uncacheable.removeValue(forKey: key)
                try index.setUncacheable(key, reason: nil)
            }
            let date = now()
            if var entry = s.entries[key] {
                if replacing || entry.info.metadata.isDifferentVersion(from: metadata) {
                    logger.info("resource \(key) changed at the origin; discarding the cached version")
                    try discardLocked(&s, key)
                    let generation = entry.info.generation + 1
                    try insertLocked(&s, key: key, metadata: metadata, generation: generation, date: date)
                    return .cacheable(generation: generation, replaced: true)
                }
                // Same version: fill in what the origin told us now (e.g. a length learned later).
                var merged = metadata
                merged.contentLength = metadata.contentLength ?? entry.info.metadata.contentLength
                merged.etag = metadata.etag ?? entry.info.metadata.etag
                merged.lastModified = metadata.lastModified ?? entry.info.metadata.lastModified
                merged.contentType = metadata.contentType ?? entry.info.metadata.contentType
                if let length = merged.contentLength, entry.written.ranges.last.map({ $0.upperBound > length }) == true
                {
                    // Bytes beyond the now-known length cannot belong to this version.
                    try discardLocked(&s, key)
                    let generation = entry.info.generation + 1
                    try insertLocked(&s, key: key, metadata: merged, generation: generation, date: date)
                    return .cacheable(generation: generation, replaced: true)
                }
                entry.info.metadata = merged
                entry.info.lastAccess = date
                s.entries[key] = entry
                try index.save(entry.info)
                return .cacheable(generation: entry.info.generation, replaced: false)
            }
            try makeRoomForNewEntryLocked(&s, excluding: key)
            try insertLocked(&s, key: key, metadata: metadata, generation: 0, date: date)
            return .cacheable(generation: 0, replaced: false)
        }
    }

    func insertLocked(
        _ s: inout StoreState, key: CacheKey, metadata: ResourceMetadata, generation: Int64, date: Date
    ) throws {
        let info = ResourceInfo(
            key: key, metadata: metadata, ranges: ByteRangeSet(), state: .partial, createdAt: date,
            lastAccess: date, generation: generation, servedFromCache: 0, fetchedFromOrigin: 0)
        s.entries[key] = StoreEntry(info: info)
        try index.save(info)
    }

    /// Writes `bytes` at `offset` of the resource's data file; the range becomes readable at once and is recorded
    /// in the index at the next commit (every `commitInterval` bytes or `commitLatency` seconds, at completion, or
    /// on `commit`).
    ///
    /// Returns false when the bytes were not stored because the budget is full of pinned data; the caller streams
    /// them through uncached. Throws `resourceChanged` when `generation` is no longer current.
    @discardableResult
    public func write(key: CacheKey, generation: Int64, offset: Int64, bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard bytes.count > 0 else { return true }
        let range = offset..<(offset + Int64(bytes.count))
        let (stored, needsCommit) = try state.withLockedValue { s -> (Bool, Bool) in
            guard let entry = s.entries[key], entry.info.generation == generation else {
                throw CacheError.resourceChanged(key)
            }
            if let length = entry.info.metadata.contentLength, range.upperBound > length || offset < 0 {
                throw CacheError.outOfBounds(key, range, length: length)
            }
            let newBytes = Int64(bytes.count) - entry.written.present(in: range).reduce(0) { $0 + Int64($1.count) }
            guard newBytes > 0 else { return (true, false) }
            guard try makeRoomLocked(&s, forNewBytes: newBytes, of: key) else { return (false, false) }
            let file = try fileLocked(&s, key)
            if let code = s.faults.writeErrno { throw CacheError.io("cannot write \(file.path): \(String(cString: strerror(code)))") }
            try file.write(bytes, at: offset)
            guard var updated = s.entries[key] else { throw CacheError.resourceChanged(key) }
            updated.written.insert(range)
            updated.unrecordedBytes += newBytes
            updated.info.lastAccess = now()
            s.partialBytes += newBytes
            s.entries[key] = updated
            let complete = updated.info.metadata.contentLength.map { updated.written.contains(0..<$0) } ?? false
            let due = updated.unrecordedBytes >= configuration.commitInterval
                || now().timeIntervalSince(updated.lastRecorded) >= configuration.commitLatency
            return (true, complete || due)
        }
        if needsCommit { try commit(key: key) }
        return stored
    }

    /// Gives up caching `key`: its bytes are dropped and later requests stream through, in this run and the next
    /// ones, until the origin declares a length that fits the budget.
    public func giveUp(key: CacheKey, reason: String) throws {
        guard !isReadOnly else { return }
        try state.withLockedValue { s in
            try discardLocked(&s, key)
            s.uncacheable[key] = reason
            try index.setUncacheable(key, reason: reason)
        }
    }

    /// Why `key` was given up on (see `giveUp`), or nil.
    public func givenUpReason(for key: CacheKey) -> String? {
        state.withLockedValue { $0.uncacheable[key] }
    }

    /// Why the most recent write that returned false was not stored.
    public var lastRefusal: String? { state.withLockedValue { $0.refusal } }

    /// Convenience for writing an array of bytes.
    @discardableResult
    public func write(key: CacheKey, generation: Int64, offset: Int64, bytes: [UInt8]) throws -> Bool {
        try bytes.withUnsafeBytes { try write(key: key, generation: generation, offset: offset, bytes: $0) }
    }

    /// Makes written bytes durable, then records them in the index; moves a now-complete file into `media/`.
    ///
    /// The sync runs outside the store's lock, so readers and writers of other resources never wait for the disk.
    /// Bytes whose sync fails are forgotten (treated as missing, fetched again), never recorded by a later commit.
    public func commit(key: CacheKey) throws {
        let pending = state.withLockedValue {
            s -> (file: DataFile?, ranges: ByteRangeSet, generation: Int64, fault: Int32?)? in
            guard let entry = s.entries[key], entry.unrecordedBytes > 0 || entry.info.ranges != entry.written else {
                return nil
            }
            return (s.files[key], entry.written, entry.info.generation, s.faults.syncErrno)
        }
        guard let pending else { return }
        var failure: CacheError?
        do {
            if let code = pending.fault, let file = pending.file {
                throw CacheError.io("cannot sync \(file.path): \(String(cString: strerror(code)))")
            }
            try pending.file?.sync()
        } catch let error as CacheError {
            failure = error
        } catch {
            failure = .io("\(error)")
        }
        try state.withLockedValue { s in
            try recordLocked(&s, key, durable: pending.ranges, generation: pending.generation, syncFailed: failure != nil)
        }
        if let failure { throw failure }
        try enforceBudgetsIfDue()
    }

    /// Commits every resource with unrecorded bytes and flushes traffic counters.
    public func commitAll() throws {
        try state.withLockedValue { s in
            for key in Array(s.entries.keys) { try commitLocked(&s, key) }
        }
    }

    /// Syncs and records under the lock (shutdown, and closing one of too many open files).
    func commitLocked(_ s: inout StoreState, _ key: CacheKey) throws {
        guard let entry = s.entries[key] else { return }
        var syncFailed = false
        if entry.unrecordedBytes > 0 || entry.info.ranges != entry.written, let file = s.files[key] {
            do { try file.sync() } catch { syncFailed = true }
        }
        try recordLocked(&s, key, durable: entry.written, generation: entry.info.generation, syncFailed: syncFailed)
    }

    /// Records `durable` (ranges whose bytes were synced) for the entry, if it is still that generation.
    func recordLocked(
        _ s: inout StoreState, _ key: CacheKey, durable: ByteRangeSet, generation: Int64, syncFailed: Bool
    ) throws {
        guard var entry = s.entries[key], entry.info.generation == generation else { return }
        if syncFailed {
            let lost = entry.written.total - entry.info.ranges.total
            logger.error("cache entry \(key): syncing its data failed; \(lost) unrecorded bytes will be fetched again")
            s.subtract(lost, from: entry.info.state)
            entry.written = entry.info.ranges
            entry.unrecordedBytes = 0
            s.entries[key] = entry
            return
        }
        let completing = entry.info.state == .partial && entry.info.metadata.contentLength.map { durable.contains(0..<$0) } == true
        // Nothing new to record: no index write at all (closing a store with many entries stays cheap).
        guard durable != entry.info.ranges || completing else { return }
        updateChecksumsLocked(&s, &entry, durable: durable)
        entry.info.ranges = durable
        entry.unrecordedBytes = entry.written.total - durable.total
        entry.lastRecorded = now()
        if completing { try refileLocked(&s, &entry, as: .complete) }
        s.entries[key] = entry
        try index.save(entry.info, checksums: entry.checksums)
    }

    /// Moves an entry's data file between `temp/` and `media/` as it becomes `state`, moving its bytes between the
    /// partial and complete totals (the caller stores the entry).
    func refileLocked(_ s: inout StoreState, _ entry: inout StoreEntry, as state: ResourceState) throws {
        guard entry.info.state != state else { return }
        let from = path(for: entry)
        entry.info.state = state
        s.files.removeValue(forKey: entry.info.key)
        try DataFile.rename(from: from, to: path(for: entry))
        s.subtract(entry.written.total, from: state == .complete ? .partial : .complete)
        if state == .complete { s.completeBytes += entry.written.total } else { s.partialBytes += entry.written.total }
    }
}
