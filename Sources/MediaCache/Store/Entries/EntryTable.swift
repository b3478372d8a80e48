import Foundation
import Logging

/// This process's view of the shared index: the entries it uses (what the index recorded plus the bytes written
/// here and not recorded yet), their open data files, and the lock that guards them. Every change to an entry goes
/// through here, as one index transaction whose result the view then takes; another process's change is noticed by
/// the index's data version and makes every entry be read again before its next use.
final class EntryTable: Sendable {
    let index: CacheIndex
    let layout: CacheLayout
    let reconciler: Reconciler
    let verifier: BlockVerifier
    let logger: Logger
    let now: @Sendable () -> Date
    /// True when nothing may be recorded or repaired.
    let isReadOnly: Bool
    private let state: StoreLock<StoreState>
    /// Counts every change to an entry this process makes or notices, for readers that wait instead of looking.
    let changes = ChangeSignal()
    /// The entries as readers see them without the lock.
    let view = EntryView()

    init(
        index: CacheIndex, layout: CacheLayout, verifiesChecksums: Bool, logger: Logger,
        now: @escaping @Sendable () -> Date, isReadOnly: Bool, indexMovedAside: String?
    ) {
        self.index = index
        self.layout = layout
        reconciler = Reconciler(layout: layout, index: index, logger: logger, now: now)
        verifier = BlockVerifier(layout: layout, verifiesChecksums: verifiesChecksums)
        self.logger = logger
        self.now = now
        self.isReadOnly = isReadOnly
        var initial = StoreState()
        initial.recovery.indexMovedAside = indexMovedAside
        for (key, reason) in (try? index.uncacheable()) ?? [:] { initial.update(key) { $0.givenUp = reason } }
        initial.dataVersion = index.dataVersion()
        state = StoreLock(initial)
    }

    // MARK: - The lock

    /// Runs `body` under the lock, having first noticed other processes' changes (once per call: the helpers it
    /// calls trust that look).
    func locked<T>(_ body: (inout StoreState) throws -> T) rethrows -> T {
        try state.withLockedValue { s in
            refresh(&s)
            return try body(&s)
        }
    }

    /// As `locked`, but trusting a look at other processes' changes taken less than `maxAge` nanoseconds ago. For
    /// the proxy's hit path, where the look (an index query) costs more than the rest of the answer: another
    /// process's change shows there up to `maxAge` later (a version replaced or evicted meanwhile was complete and
    /// checked, and its open file stays readable).
    func locked<T>(noticingChangesWithin maxAge: UInt64, _ body: (inout StoreState) throws -> T) rethrows -> T {
        try state.withLockedValue { s in
            if DispatchTime.now().uptimeNanoseconds &- s.dataVersionCheckedAt >= maxAge { refresh(&s) }
            return try body(&s)
        }
    }

    /// As `locked(noticingChangesWithin:_:)`, but nil instead of waiting while another thread holds the lock for
    /// longer than a moment (a commit recording ranges in the index): for callers that must not wait on that.
    func lockedIfAvailable<T>(noticingChangesWithin maxAge: UInt64, _ body: (inout StoreState) throws -> T) rethrows -> T? {
        try state.withLockedValueIfAvailable { s in
            if DispatchTime.now().uptimeNanoseconds &- s.dataVersionCheckedAt >= maxAge { refresh(&s) }
            return try body(&s)
        }
    }

    /// Runs `body` under the lock without looking at other processes' changes: for what this process alone keeps
    /// (pins, counts, what it last wrote down), which another process's change does not touch.
    func lockedAsSeen<T>(_ body: (inout StoreState) throws -> T) rethrows -> T {
        try state.withLockedValue(body)
    }

    /// Notices another process's changes: when the index's data version moved, every cached entry is read again
    /// before its next use.
    private func refresh(_ s: inout StoreState) {
        let checkedAt = DispatchTime.now().uptimeNanoseconds
        s.dataVersionCheckedAt = checkedAt
        let version = index.dataVersion()
        let changed = version != s.dataVersion
        view.looked(at: checkedAt, changed: changed)
        if changed {
            s.dataVersion = version
            s.epoch += 1
            changes.signal()
        }
    }

    // MARK: - Entries

    /// `key`'s entry as the index records it now, with the bytes this process wrote and has not recorded yet;
    /// nil when it is not cached. The first time this process uses an entry, its file is checked against it.
    func entry(_ s: inout StoreState, _ key: CacheKey, checkingFile: Bool = false) -> StoreEntry? {
        if let cached = s.entry(of: key), cached.epoch == s.epoch, !checkingFile { return cached }
        if s.hidden.contains(key) { return nil }
        let firstUse = s.entry(of: key) == nil || checkingFile
        var resource: IndexedResource?
        do {
            resource = try index.resource(key)
            if firstUse, let found = resource, checkingFile || !layout.fileMatches(found.info) {
                // Nothing can be repaired in a read-only store: leave out what its file does not hold.
                resource = isReadOnly ? nil : try reconciler.checkFile(key, report: &s.recovery)
            }
        } catch {
            logger.error("cache entry \(key): \(error)")
            return s.entry(of: key)
        }
        guard let resource else {
            forget(&s, key)
            return nil
        }
        let entry = take(&s, resource)
        trim(&s, keeping: key)
        return entry
    }

    /// Makes `resource` (as the index records it now) this process's entry for its key, keeping the bytes
    /// written here and not recorded yet (when it is the same generation).
    @discardableResult
    private func take(_ s: inout StoreState, _ resource: IndexedResource) -> StoreEntry {
        let key = resource.info.key
        let previous = s.entry(of: key)
        let entry = previous.map { $0.refreshed(from: resource, epoch: s.epoch) } ?? StoreEntry(resource, epoch: s.epoch)
        s.update(key) { held in
            if previous?.info.generation != entry.info.generation || previous?.info.state != entry.info.state {
                held.file = nil
            }
            held.entry = entry
        }
        view.publish(key, entry)
        if entry.unrecordedBytes > 0 { s.unrecorded.insert(key) } else { s.unrecorded.remove(key) }
        return entry
    }

    /// Drops `key` from this process's memory (not from the index).
    func forget(_ s: inout StoreState, _ key: CacheKey) {
        s.update(key) { held in
            held.entry = nil
            held.file = nil
        }
        s.unrecorded.remove(key)
        s.accessed.remove(key)
        view.publish(key, nil)
        changes.signal()
    }

    /// Keeps the entry cache bounded: entries not in use (unpinned, nothing unrecorded, no open file) go first.
    private func trim(_ s: inout StoreState, keeping key: CacheKey) {
        guard s.resources.count > StoreState.maxCachedEntries else { return }
        let idle = s.resources.filter { other, held in
            other != key && held.entry != nil && held.pins == 0 && held.file == nil && !s.unrecorded.contains(other)
                && !s.accessed.contains(other)
        }.keys
        for victim in idle.prefix(s.resources.count - StoreState.maxCachedEntries / 2) {
            s.update(victim) { $0.entry = nil }
            view.withdraw(victim)
        }
    }

    /// Recorded usage (read again after another process's change or this one's), plus unrecorded bytes.
    func usage(_ s: inout StoreState) -> CacheUsage {
        if s.usageEpoch != s.epoch {
            do {
                s.usage = try index.usage()
                s.usageEpoch = s.epoch
            } catch {
                logger.error("\(error)")
            }
        }
        var usage = s.usage
        usage.partialBytes += s.unrecordedBytes + s.writing.bytes
        return usage
    }

    /// Runs `body` on `key`'s indexed resource in one index transaction (see `CacheIndex.modify`), then brings
    /// this process's view of the entry up to date with the result.
    @discardableResult
    func modify<T>(
        _ s: inout StoreState, _ key: CacheKey, _ body: (inout IndexedResource?, IndexTransaction) throws -> T
    ) throws -> T {
        let (result, after) = try index.modify(key) { resource, transaction in
            (try body(&resource, transaction), resource)
        }
        s.usageEpoch = -1
        if let after { take(&s, after) } else { forget(&s, key) }
        changes.signal()
        return result
    }

    // MARK: - Files

    /// The open data file of `key`'s current entry. A file that went away (another process evicted or refiled
    /// it) makes the entry be read again: `notCached` when it is gone.
    func file(_ s: inout StoreState, _ key: CacheKey) throws -> DataFile {
        if let file = s.resources[key]?.file { return file }
        guard var entry = entry(&s, key) else { throw CacheError.notCached(key) }
        if s.openFileCount >= StoreState.maxOpenFiles,
            let victim = s.resources.first(where: { $0.key != key && $0.value.file != nil })?.key
        {
            try commit(&s, victim)
            s.update(victim) { $0.file = nil }
        }
        var attempt = 0
        while true {
            do {
                let file = try DataFile(path: layout.path(for: entry.info), readOnly: isReadOnly)
                s.update(key) { $0.file = file }
                return file
            } catch {
                guard attempt == 0, DataFile.size(atPath: layout.path(for: entry.info)) == nil else { throw error }
                attempt += 1
                // Moved or removed meanwhile: what does the index say now?
                s.resources[key]?.entry?.epoch = -1
                view.withdraw(key)
                guard let current = self.entry(&s, key, checkingFile: true) else { throw CacheError.notCached(key) }
                entry = current
            }
        }
    }

    /// Notes that `key` was read at `date`: its access time changes in memory, written to the index later (see
    /// `flushAccessTimes`).
    func noteAccess(_ s: inout StoreState, _ key: CacheKey, at date: Date) {
        // (In place: a copy of the entry here would make each read copy its ranges.)
        s.resources[key]?.entry?.info.lastAccess = date
        s.accessed.insert(key)
    }

    /// Marks `key` as used at `date` in memory and (unless read-only) in the index at once.
    func touch(_ s: inout StoreState, _ key: CacheKey, at date: Date) throws {
        guard var entry = entry(&s, key) else { return }
        entry.info.lastAccess = date
        s.update(key) { $0.entry = entry }
        view.publish(key, entry)
        guard !isReadOnly else { return }
        try index.touch([(key, date)])
    }

    /// Writes access times that changed in memory (reads, zero-copy sends) to the index in one transaction, so
    /// least-recently-used decisions see them.
    func flushAccessTimes(_ s: inout StoreState) throws {
        guard !s.accessed.isEmpty, !isReadOnly else { return }
        let times = s.accessed.compactMap { key in s.entry(of: key).map { (key, $0.info.lastAccess) } }
        s.accessed.removeAll()
        try index.touch(times)
    }
}
