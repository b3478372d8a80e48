import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheStore {
    // MARK: - The shared index, seen from this process

    /// Runs `body` under the store's lock, having first noticed other processes' changes (once per call: the
    /// helpers it calls trust that look).
    func locked<T>(_ body: (inout StoreState) throws -> T) rethrows -> T {
        try state.withLockedValue { s in
            refreshLocked(&s)
            return try body(&s)
        }
    }

    /// As `locked`, but trusting a look at other processes' changes taken less than `maxAge` nanoseconds ago. For
    /// the proxy's hit path, where the look (an index query) costs more than the rest of the answer: another
    /// process's change shows there up to `maxAge` later (a version replaced or evicted meanwhile was complete and
    /// checked, and its open file stays readable).
    func locked<T>(noticingChangesWithin maxAge: UInt64, _ body: (inout StoreState) throws -> T) rethrows -> T {
        try state.withLockedValue { s in
            if DispatchTime.now().uptimeNanoseconds &- s.dataVersionCheckedAt >= maxAge { refreshLocked(&s) }
            return try body(&s)
        }
    }

    /// As `locked(noticingChangesWithin:_:)`, but nil instead of waiting while another thread holds the lock for
    /// longer than a moment (a commit recording ranges in the index): for callers that must not wait on that.
    func lockedIfAvailable<T>(noticingChangesWithin maxAge: UInt64, _ body: (inout StoreState) throws -> T) rethrows -> T? {
        try state.withLockedValueIfAvailable { s in
            if DispatchTime.now().uptimeNanoseconds &- s.dataVersionCheckedAt >= maxAge { refreshLocked(&s) }
            return try body(&s)
        }
    }

    /// Notices another process's changes: when the index's data version moved, every cached entry is read again
    /// before its next use.
    func refreshLocked(_ s: inout StoreState) {
        s.dataVersionCheckedAt = DispatchTime.now().uptimeNanoseconds
        let version = index.dataVersion()
        if version != s.dataVersion {
            s.dataVersion = version
            s.epoch += 1
        }
    }

    /// `key`'s entry as the index records it now, with the bytes this process wrote and has not recorded yet;
    /// nil when it is not cached. The first time this process uses an entry, its file is checked against it.
    func entryLocked(_ s: inout StoreState, _ key: CacheKey, checkingFile: Bool = false) -> StoreEntry? {
        if let cached = s.entries[key], cached.epoch == s.epoch, !checkingFile { return cached }
        if s.hidden.contains(key) { return nil }
        let firstUse = s.entries[key] == nil || checkingFile
        var resource: IndexedResource?
        do {
            resource = try index.resource(key)
            if firstUse, let found = resource, checkingFile || !Self.fileMatches(found.info, path: path(for: found.info)) {
                // Nothing can be repaired in a read-only store: leave out what its file does not hold.
                resource = isReadOnly ? nil : try checkFileLocked(&s, key)
            }
        } catch {
            logger.error("cache entry \(key): \(error)")
            return s.entries[key]
        }
        guard let resource else {
            forgetLocked(&s, key)
            return nil
        }
        let entry = s.entries[key].map { $0.refreshed(from: resource, epoch: s.epoch) } ?? StoreEntry(resource, epoch: s.epoch)
        if s.entries[key]?.info.generation != entry.info.generation { s.files.removeValue(forKey: key) }
        s.entries[key] = entry
        if entry.unrecordedBytes > 0 { s.unrecorded.insert(key) } else { s.unrecorded.remove(key) }
        trimCacheLocked(&s, keeping: key)
        return entry
    }

    /// True when a read-only store may serve `info` from the file at `path` (there, in the right folder, long
    /// enough for every recorded range).
    static func fileMatches(_ info: ResourceInfo, path: String) -> Bool {
        guard let size = DataFile.size(atPath: path) else { return false }
        return (info.ranges.ranges.last?.upperBound ?? 0) <= size && info.isComplete == (info.state == .complete)
    }

    /// Drops `key` from this process's memory (not from the index).
    func forgetLocked(_ s: inout StoreState, _ key: CacheKey) {
        s.entries.removeValue(forKey: key)
        s.files.removeValue(forKey: key)
        s.unrecorded.remove(key)
        s.accessed.remove(key)
    }

    /// Keeps the entry cache bounded: entries not in use (unpinned, nothing unrecorded, no open file) go first.
    private func trimCacheLocked(_ s: inout StoreState, keeping key: CacheKey) {
        guard s.entries.count > StoreState.maxCachedEntries else { return }
        let idle = s.entries.keys.filter {
            $0 != key && s.pins[$0] == nil && !s.unrecorded.contains($0) && s.files[$0] == nil && !s.accessed.contains($0)
        }
        for victim in idle.prefix(s.entries.count - StoreState.maxCachedEntries / 2) { s.entries.removeValue(forKey: victim) }
    }

    /// Recorded usage (read again after another process's change or this one's), plus unrecorded bytes.
    func usageLocked(_ s: inout StoreState) -> CacheUsage {
        if s.usageEpoch != s.epoch {
            do {
                s.usage = try index.usage()
                s.usageEpoch = s.epoch
            } catch {
                logger.error("\(error)")
            }
        }
        var usage = s.usage
        usage.partialBytes += s.unrecordedBytes + s.writing
        return usage
    }

    /// Runs `body` on `key`'s indexed resource in one index transaction (see `CacheIndex.modify`), then brings
    /// this process's view of the entry up to date with the result.
    @discardableResult
    func modifyLocked<T>(
        _ s: inout StoreState, _ key: CacheKey, _ body: (inout IndexedResource?, IndexTransaction) throws -> T
    ) throws -> T {
        let (result, after) = try index.modify(key) { resource, transaction in
            (try body(&resource, transaction), resource)
        }
        s.usageEpoch = -1
        guard let after else {
            forgetLocked(&s, key)
            return result
        }
        let entry = s.entries[key].map { $0.refreshed(from: after, epoch: s.epoch) } ?? StoreEntry(after, epoch: s.epoch)
        if s.entries[key]?.info.generation != entry.info.generation || s.entries[key]?.info.state != entry.info.state {
            s.files.removeValue(forKey: key)
        }
        s.entries[key] = entry
        if entry.unrecordedBytes > 0 { s.unrecorded.insert(key) } else { s.unrecorded.remove(key) }
        return result
    }

    // MARK: - Checking an entry against its file

    /// Reads `key`'s entry in a write transaction and makes it agree with its file: no file drops the entry,
    /// ranges past the file's end are clamped, a file in the wrong folder (or under the name an older version
    /// of the cache gave it) is moved where its completeness says. Run the first time a process uses an entry.
    func checkFileLocked(_ s: inout StoreState, _ key: CacheKey) throws -> IndexedResource? {
        var report = s.recovery
        defer { s.recovery = report }
        return try index.modify(key) { resource, _ -> IndexedResource? in
            guard var current = resource else { return nil }
            let info = current.info
            let expected = path(for: key, generation: info.generation, state: info.state)
            var size = DataFile.size(atPath: expected)
            var status = stat()
            if size == nil, lstat(expected, &status) == 0 {
                // Something that is not a data file took its place: what the index says it held is gone.
                logger.warning("cache entry \(key): \(expected) is not a regular file; moving it away")
                try moveToTrash(expected, name: key.hex)
            }
            if size == nil {
                let other = path(
                    for: key, generation: info.generation, state: info.state == .complete ? .partial : .complete)
                let legacy = [tempDirectory, mediaDirectory].map { ($0 as NSString).appendingPathComponent(key.hex) }
                if let found = ([other] + legacy).first(where: { DataFile.size(atPath: $0) != nil }) {
                    try DataFile.rename(from: found, to: expected)
                    if found == other { report.filesMoved += 1 }
                    size = DataFile.size(atPath: expected)
                }
            }
            guard let size else {
                logger.warning("cache entry \(key): its data file is gone; dropping the entry")
                report.rowsWithoutFileDropped += 1
                resource = nil
                return nil
            }
            var ranges = info.ranges
            ranges.clamp(to: size)
            if let length = info.metadata.contentLength { ranges.clamp(to: length) }
            if ranges != info.ranges {
                logger.warning("cache entry \(key): index claimed \(info.ranges), file holds \(ranges)")
                current.info.ranges = ranges
                current.info.state = .partial
                current.checksums.keepOnly(coveredBy: ranges)
                report.rangesClamped += 1
            }
            let state: ResourceState = current.info.isComplete ? .complete : .partial
            if state != info.state || current.info.state != state {
                current.info.state = state
                try DataFile.rename(from: expected, to: path(for: key, generation: info.generation, state: state))
                report.filesMoved += 1
            }
            resource = current
            return current
        }
    }
}
