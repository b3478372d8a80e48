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
            locked { s in
                guard let entry = entryLocked(&s, key),
                    replacing || entry.info.metadata.isDifferentVersion(from: metadata)
                else { return }
                forgetLocked(&s, key)
                s.hidden.insert(key)
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
            try locked { s in
                if let entry = entryLocked(&s, key), replacing || entry.info.metadata.isDifferentVersion(from: metadata) {
                    logger.info("resource \(key) changed at the origin; discarding the cached version")
                    try discardLocked(&s, key)
                }
                // Remembered, so later reads stream through at once instead of asking the origin again first.
                if s.uncacheable[key] != reason {
                    s.uncacheable[key] = reason
                    try index.setUncacheable(key, reason: reason)
                }
            }
            return .uncacheable(reason)
        }
        return try locked { s in
            if let reason = s.uncacheable[key] {
                // Given up on before; a length that now fits the budget earns it another try.
                guard let length = metadata.contentLength, length <= budget else { return .uncacheable(reason) }
                s.uncacheable.removeValue(forKey: key)
                try index.setUncacheable(key, reason: nil)
            }
            if entryLocked(&s, key) == nil { try makeRoomForNewEntryLocked(&s, excluding: key) }
            let date = now()
            return try modifyLocked(&s, key) { resource, transaction -> Admission in
                guard var current = resource else {
                    resource = try newResource(key, metadata: metadata, date: date, transaction)
                    return .cacheable(generation: resource?.info.generation ?? 0, replaced: false)
                }
                var merged = metadata
                if !replacing, !current.info.metadata.isDifferentVersion(from: metadata) {
                    // Same version: fill in what the origin told us now (e.g. a length learned later).
                    merged.contentLength = metadata.contentLength ?? current.info.metadata.contentLength
                    merged.etag = metadata.etag ?? current.info.metadata.etag
                    merged.lastModified = metadata.lastModified ?? current.info.metadata.lastModified
                    merged.contentType = metadata.contentType ?? current.info.metadata.contentType
                    let beyondLength = merged.contentLength.map { length in
                        current.info.ranges.ranges.last.map { $0.upperBound > length } ?? false
                    } ?? false
                    if !beyondLength {
                        current.info.metadata = merged
                        current.info.lastAccess = Swift.max(current.info.lastAccess, date)
                        resource = current
                        return .cacheable(generation: current.info.generation, replaced: false)
                    }
                    // Bytes beyond the now-known length cannot belong to this version.
                } else {
                    logger.info("resource \(key) changed at the origin; discarding the cached version")
                }
                try moveToTrash(path(for: key, generation: current.info.generation, state: current.info.state), name: key.hex)
                resource = try newResource(key, metadata: merged, date: date, transaction)
                return .cacheable(generation: resource?.info.generation ?? 0, replaced: true)
            }
        }
    }

    /// A new, empty entry with a generation of its own, and its data file (inside the index transaction that
    /// records it, so another process never sees the entry without its file).
    private func newResource(
        _ key: CacheKey, metadata: ResourceMetadata, date: Date, _ transaction: IndexTransaction
    ) throws -> IndexedResource {
        let generation = try transaction.newGeneration()
        let info = ResourceInfo(
            key: key, metadata: metadata, ranges: ByteRangeSet(), state: .partial, createdAt: date,
            lastAccess: date, generation: generation, servedFromCache: 0, fetchedFromOrigin: 0)
        let filePath = path(for: key, generation: generation, state: .partial)
        try moveToTrash(filePath, name: key.hex)
        _ = try DataFile(path: filePath, create: true)
        return IndexedResource(info: info, checksums: BlockChecksums())
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
    /// the disk costs nothing (the fetches' own thread pool). The bytes go to the file outside the store's lock:
    /// they are not readable (nor counted as written) until they are there, and budgets count them meanwhile.
    func storeBytes(
        key: CacheKey, generation: Int64, offset: Int64, bytes: UnsafeRawBufferPointer
    ) throws -> (stored: Bool, commitDue: Bool) {
        guard bytes.count > 0 else { return (true, false) }
        let range = offset..<(offset + Int64(bytes.count))
        let reserved = try locked { s -> (file: DataFile, newBytes: Int64)?? in
            guard let entry = entryLocked(&s, key), entry.info.generation == generation else {
                throw CacheError.resourceChanged(key)
            }
            if let length = entry.info.metadata.contentLength, range.upperBound > length || offset < 0 {
                throw CacheError.outOfBounds(key, range, length: length)
            }
            let newBytes = Int64(bytes.count) - entry.written.present(in: range).reduce(0) { $0 + Int64($1.count) }
            guard newBytes > 0 else { return .some(nil) }
            guard try makeRoomLocked(&s, forNewBytes: newBytes, of: key) else { return nil }
            let file: DataFile
            do {
                file = try fileLocked(&s, key)
            } catch CacheError.notCached {
                throw CacheError.resourceChanged(key)  // evicted by another process meanwhile
            }
            if let code = faults?.writeErrno { throw CacheError.io("cannot write \(file.path): \(String(cString: strerror(code)))") }
            guard s.entries[key]?.info.generation == generation else { throw CacheError.resourceChanged(key) }
            s.writing += newBytes
            return (file, newBytes)
        }
        guard let reserved else { return (false, false) }
        guard let (file, newBytes) = reserved else { return (true, false) }
        faults?.beforeDiskWork()
        do {
            try file.write(bytes, at: offset)
        } catch {
            locked { s in s.writing -= newBytes }
            throw error
        }
        let due = try locked { s -> Bool in
            s.writing -= newBytes
            // Evicted or replaced while the bytes were on their way to the file (which then belongs to no entry).
            guard var updated = s.entries[key], updated.info.generation == generation else {
                throw CacheError.resourceChanged(key)
            }
            updated.written.insert(range)
            updated.unrecordedBytes = updated.written.total - updated.info.ranges.total
            updated.info.lastAccess = now()
            s.entries[key] = updated
            s.unrecorded.insert(key)
            let complete = updated.info.metadata.contentLength.map { updated.written.contains(0..<$0) } ?? false
            return complete || updated.unrecordedBytes >= configuration.commitInterval
                || now().timeIntervalSince(updated.lastRecorded) >= configuration.commitLatency
        }
        return (true, due)
    }

    /// Gives up caching `key`: its bytes are dropped and later requests stream through, in this run and the next
    /// ones, until the origin declares a length that fits the budget.
    public func giveUp(key: CacheKey, reason: String) throws {
        guard !isReadOnly else { return }
        try locked { s in
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
        let pending = locked {
            s -> (file: DataFile?, ranges: ByteRangeSet, recorded: ByteRangeSet, generation: Int64, fault: Int32?)? in
            guard let entry = s.entries[key], entry.unrecordedBytes > 0 else { return nil }
            return (s.files[key], entry.written, entry.info.ranges, entry.info.generation, faults?.syncErrno)
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
        // The checksums of the blocks these bytes touch, worked out here rather than under the lock.
        let sums = failure == nil
            ? pending.file.map { Self.checksums(of: pending.ranges, beyond: pending.recorded, in: $0) } ?? [:] : [:]
        try locked { s in
            try recordLocked(
                &s, key, durable: pending.ranges, generation: pending.generation, syncFailed: failure != nil,
                checksums: sums)
        }
        if let failure { throw failure }
        try enforceBudgetsIfDue()
    }

    /// Commits every resource with unrecorded bytes.
    public func commitAll() throws {
        try locked { s in
            for key in Array(s.unrecorded) { try commitLocked(&s, key) }
        }
    }

    /// Syncs and records under the lock (shutdown, and closing one of too many open files).
    func commitLocked(_ s: inout StoreState, _ key: CacheKey) throws {
        guard let entry = s.entries[key], entry.unrecordedBytes > 0 else { return }
        var syncFailed = false
        if let file = s.files[key] {
            do { try file.sync() } catch { syncFailed = true }
        }
        try recordLocked(&s, key, durable: entry.written, generation: entry.info.generation, syncFailed: syncFailed)
    }

    /// Records `durable` (ranges whose bytes were synced) for the entry, if it is still that generation: the
    /// ranges this process added go into the index on top of whatever other processes recorded meanwhile.
    func recordLocked(
        _ s: inout StoreState, _ key: CacheKey, durable: ByteRangeSet, generation: Int64, syncFailed: Bool,
        checksums: [Int64: BlockChecksums.Sum] = [:]
    ) throws {
        guard var entry = s.entries[key], entry.info.generation == generation else { return }
        if syncFailed {
            logger.error(
                "cache entry \(key): syncing its data failed; \(entry.unrecordedBytes) unrecorded bytes will be fetched again")
            entry.written = entry.info.ranges
            entry.unrecordedBytes = 0
            s.entries[key] = entry
            s.unrecorded.remove(key)
            return
        }
        var fresh = durable
        for range in entry.info.ranges { fresh.remove(range) }
        guard !fresh.isEmpty else { return }
        let file = s.files[key]
        let date = now()
        let checked = try modifyLocked(&s, key) { resource, _ -> Set<Int64> in
            // Evicted or replaced meanwhile (here or by another process): these bytes belong to no entry.
            guard var current = resource, current.info.generation == generation else { return [] }
            let previous = current.info.ranges
            current.info.ranges.formUnion(fresh)
            current.info.lastAccess = Swift.max(current.info.lastAccess, entry.info.lastAccess)
            let blocks = updateChecksums(&current, previous: previous, file: file, computed: checksums)
            try completeIfWhole(&current, key: key)
            resource = current
            return blocks
        }
        guard var updated = s.entries[key], updated.info.generation == generation else { return }
        updated.lastRecorded = date
        updated.verified.formUnion(checked)
        s.entries[key] = updated
    }

    /// A partial resource whose recorded bytes now make it whole moves into `media/` and is complete.
    func completeIfWhole(_ resource: inout IndexedResource, key: CacheKey) throws {
        guard resource.info.state == .partial, resource.info.isComplete else { return }
        let generation = resource.info.generation
        try DataFile.rename(
            from: path(for: key, generation: generation, state: .partial),
            to: path(for: key, generation: generation, state: .complete))
        resource.info.state = .complete
    }
}
