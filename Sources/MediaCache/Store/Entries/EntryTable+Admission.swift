import Foundation

extension EntryTable {
    // MARK: - Versions and written bytes

    /// Makes `metadata` the version of `key`'s entry: a new entry, the same version with what the origin told
    /// now filled in (a length learned later), or a new generation in place of another version (its file goes to
    /// the trash), so old and new bytes never mix. `replacing` starts a new generation even when the validators
    /// agree.
    func admit(
        _ s: inout StoreState, _ key: CacheKey, metadata: ResourceMetadata, replacing: Bool, at date: Date
    ) throws -> Admission {
        try modify(&s, key) { resource, transaction -> Admission in
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
            try layout.moveToTrash(layout.path(for: current.info), name: key.hex)
            resource = try newResource(key, metadata: merged, date: date, transaction)
            return .cacheable(generation: resource?.info.generation ?? 0, replaced: true)
        }
    }

    /// Leaves `key` out of a read-only store from now on: its cached copy is of another version than the origin's.
    func hide(_ s: inout StoreState, _ key: CacheKey) {
        forget(&s, key)
        s.hidden.insert(key)
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
        let filePath = layout.path(for: key, generation: generation, state: .partial)
        try layout.moveToTrash(filePath, name: key.hex)
        _ = try DataFile(path: filePath, create: true)
        return IndexedResource(info: info, checksums: BlockChecksums())
    }

    /// Notes that `range` of generation `generation` of `key` is in its file now: readable here at once, recorded
    /// at the next commit. Throws `resourceChanged` when the entry was evicted or replaced while the bytes were on
    /// their way (the file they went to then belongs to no entry). Returns the entry as it is now.
    func noteWritten(_ s: inout StoreState, _ key: CacheKey, generation: Int64, range: ByteRange) throws -> StoreEntry {
        guard var updated = s.entry(of: key), updated.info.generation == generation else {
            throw CacheError.resourceChanged(key)
        }
        updated.written.insert(range)
        updated.unrecordedBytes = updated.written.total - updated.info.ranges.total
        updated.info.lastAccess = now()
        s.update(key) { $0.entry = updated }
        s.unrecorded.insert(key)
        view.publish(key, updated)
        changes.signal()
        return updated
    }
}
