import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The persistent sparse store: one data file per resource plus a SQLite index of what each file holds.
///
/// Invariant: a range reaches the index only after its bytes were written and synced; a process reading an entry
/// for the first time checks its file against the index, so a crash at any point leaves a cache that never returns
/// a wrong byte.
///
/// Several processes may open one directory at once: each change is a read-modify-write transaction of the index
/// (a process adds its ranges to what the others recorded), every generation is unique for the directory's life
/// and names its data file (a process holding an evicted version writes only to that version's file), and the
/// shared `lock` file's range locks keep two processes from fetching the same bytes and eviction from taking what
/// another process plays.
public final class CacheStore: Sendable {
    /// The cache directory (holds `index.sqlite`, `temp/`, `media/`, `trash/`).
    public let directory: URL
    /// Budgets and limits.
    public let configuration: CacheConfiguration
    /// True when nothing is stored, repaired or evicted: a read-only directory (a read-only mount), or a store
    /// opened `readOnly` to inspect a cache other processes use. Cached bytes are still served.
    public let isReadOnly: Bool

    let index: CacheIndex
    /// Where each file lives in the directory.
    let layout: CacheLayout
    /// This process's view of the index: the entries in use, their files, and the lock over them.
    let table: EntryTable
    /// Carries out the budgets.
    let evictor: Evictor
    /// The read path and the write path.
    let reader: StoreReader
    let writer: StoreWriter
    let logger: Logger
    let now: @Sendable () -> Date
    let freeSpace: @Sendable () -> Int64?
    /// Free bytes eviction keeps on the disk: the configured floor, scaled down on a small disk.
    public let freeSpaceFloor: Int64
    /// Where disk work is made to fail or wait (tests; nil in use).
    let faults: (any StorageFaultInjecting)?
    let locks: SharedLocks

    /// What was repaired so the index and the files agree: at open (after a crash), and as entries were first used.
    public var recovery: RecoveryReport { table.lockedAsSeen { $0.recovery } }

    /// Opens (creating if needed) the cache at `directory`; other processes may have it open too. The first
    /// process to open it after a crash (or once a day) sweeps files no entry accounts for; entries themselves are
    /// read, and checked against their files, when first used, so opening costs the same at any size.
    ///
    /// `readOnly` opens without changing anything (for commands that only look). `now` and `freeSpace` are
    /// injectable so tests control time and disk pressure.
    public convenience init(
        directory: URL, configuration: CacheConfiguration = CacheConfiguration(),
        logger: Logger = Logger(label: "MediaCache"), now: @escaping @Sendable () -> Date = { Date() },
        freeSpace: (@Sendable () -> Int64?)? = nil, readOnly: Bool = false
    ) throws {
        try self.init(
            directory: directory, configuration: configuration, logger: logger, now: now, freeSpace: freeSpace,
            opensReadOnly: readOnly)
    }

    /// `opensReadOnly` opens a writable directory as if it were read-only (commands that only look); `faults`
    /// makes disk work fail or wait where it touches the disk.
    init(
        directory: URL, configuration: CacheConfiguration, logger: Logger = Logger(label: "MediaCache"),
        now: @escaping @Sendable () -> Date = { Date() }, freeSpace: (@Sendable () -> Int64?)? = nil,
        opensReadOnly: Bool, faults: (any StorageFaultInjecting)? = nil
    ) throws {
        self.directory = directory
        self.faults = faults
        let layout = CacheLayout(directory: directory)
        self.layout = layout
        self.configuration = configuration
        self.logger = logger
        self.now = now
        let rootPath = directory.path
        self.freeSpace = freeSpace ?? { DataFile.freeSpace(atPath: rootPath) }
        freeSpaceFloor = configuration.freeSpaceFloor(diskBytes: DataFile.diskSize(atPath: rootPath))
        let opened = try CacheDirectory.open(
            layout, opensReadOnly: opensReadOnly, freeSpace: self.freeSpace, logger: logger, now: now)
        index = opened.index
        isReadOnly = opened.readOnly
        let table = EntryTable(
            index: index, layout: layout, verifiesChecksums: configuration.verifiesChecksums, logger: logger,
            now: now, isReadOnly: opened.readOnly, indexMovedAside: opened.movedAside)
        self.table = table
        let policy = EvictionPolicy(configuration: configuration, freeSpaceFloor: freeSpaceFloor)
        locks = opened.locks
        let evictor = Evictor(table: table, policy: policy, locks: opened.locks, freeSpace: self.freeSpace, logger: logger)
        self.evictor = evictor
        reader = StoreReader(table: table, layout: layout, faults: faults, now: now)
        writer = StoreWriter(table: table, evictor: evictor, configuration: configuration, faults: faults, now: now)
        guard !opened.readOnly else { return }
        var report = recovery
        try table.reconciler.join(lockFD: opened.lockFD, sole: opened.sole, crashed: opened.crashed, report: &report)
        table.lockedAsSeen { table.noteRecovery(&$0, report) }
        if report.repairedAnything { logger.warning("cache repaired at open: \(report)") }
        _ = try enforceBudgets()
    }

    deinit {
        try? close()
    }

    /// Commits everything, flushes counters and lets go of the directory; the store must not be used after.
    public func close() throws {
        guard !isReadOnly else { return table.lockedAsSeen { table.closeFiles(&$0) } }
        guard table.lockedAsSeen({ table.markClosed(&$0) }) else { return }
        defer { table.reconciler.leave(locks) }
        try commitAll()
        try flushTraffic()
        try table.locked { s in try table.close(&s) }
    }

    // MARK: - Looking up

    /// The resource's metadata and its readable ranges, or nil when it is not cached.
    public func info(for key: CacheKey) -> ResourceInfo? {
        info(for: key, noticingChangesWithin: 0)
    }

    /// As `info(for:)`, trusting a look at other processes' changes taken less than `maxAge` nanoseconds ago (a
    /// reader going through cached bytes chunk by chunk: each look is an index query). Read from the entries'
    /// view without the store's lock when it can answer (this process's traffic not yet recorded left out).
    func info(for key: CacheKey, noticingChangesWithin maxAge: UInt64) -> ResourceInfo? {
        guard maxAge > 0 else { return info(underLockFor: key, noticingChangesWithin: 0) }
        switch table.view.look(key, within: maxAge) {
        case .cached(let info): return info
        case .notCached: return nil
        case .unknown: return info(underLockFor: key, noticingChangesWithin: maxAge)
        }
    }

    /// `key`'s info taken under the store's lock (and published to the view).
    func info(underLockFor key: CacheKey, noticingChangesWithin maxAge: UInt64) -> ResourceInfo? {
        table.locked(noticingChangesWithin: maxAge) { s in
            let found = table.entry(&s, key)
            table.view.publish(key, found)
            guard let entry = found else { return nil }
            var info = entry.info
            info.ranges = entry.written
            if let pending = s.traffic.pending[key] {
                info.fetchedFromOrigin += pending.origin
                info.servedFromCache += pending.hit
            }
            return info
        }
    }

    /// Every cached resource, most recently accessed first (reads the whole index: for listings).
    public func allResources() -> [ResourceInfo] {
        let recorded = (try? index.loadAll()) ?? []
        return table.locked { s in
            recorded.map { stored in
                guard let entry = s.entry(of: stored.key), entry.info.generation == stored.generation else {
                    return stored
                }
                var info = stored
                info.ranges = entry.written
                info.ranges.formUnion(stored.ranges)
                info.lastAccess = Swift.max(entry.info.lastAccess, stored.lastAccess)
                return info
            }
        }.sorted { ($0.lastAccess, $0.key) > ($1.lastAccess, $1.key) }
    }

    /// How long the proxy's hit path and a reader's chunk-by-chunk looks trust the last look at other processes'
    /// changes: 1 ms (a change shows up to that much later, as if it had happened then).
    static let hitPathStaleness: UInt64 = 1_000_000

    /// The ranges of `key` that can be read now (empty when not cached), including ranges other processes
    /// recorded since this one last looked.
    public func availableRanges(for key: CacheKey) -> ByteRangeSet {
        availableRanges(for: key, noticingChangesWithin: 0)
    }

    /// As `availableRanges(for:)`, trusting a look at other processes' changes taken less than `maxAge` ago.
    func availableRanges(for key: CacheKey, noticingChangesWithin maxAge: UInt64) -> ByteRangeSet {
        guard maxAge > 0 else {
            return table.locked(noticingChangesWithin: 0) { s in table.entry(&s, key)?.written ?? ByteRangeSet() }
        }
        return info(for: key, noticingChangesWithin: maxAge)?.ranges ?? ByteRangeSet()
    }

    /// Marks the resource as used now (eviction is least-recently-used).
    public func touch(key: CacheKey) throws {
        try table.locked { s in try table.touch(&s, key, at: now()) }
    }

    // MARK: - Files

    /// The data file holding the bytes `info` describes (for inspection: the store alone writes it).
    public func path(for info: ResourceInfo) -> String { layout.path(for: info) }

    /// Blocks until files moved to `trash/` so far have been unlinked.
    public func waitForTrash() { layout.waitForTrash() }
}

extension CacheStore {
    /// Counts every change to the cache this process makes, and every change of another process's it notices.
    public var changes: ChangeSignal { table.changes }

    /// Looks at the index's data version now unless looked at less than `maxAge` nanoseconds ago: another
    /// process's change then shows on `changes`.
    func noticeOtherProcesses(within maxAge: UInt64) {
        table.locked(noticingChangesWithin: maxAge) { _ in }
    }
}
