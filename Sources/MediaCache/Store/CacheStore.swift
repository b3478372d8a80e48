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
    let logger: Logger
    let now: @Sendable () -> Date
    let freeSpace: @Sendable () -> Int64?
    /// Free bytes eviction keeps on the disk: the configured floor, scaled down on a small disk.
    public let freeSpaceFloor: Int64
    let state: StoreLock<StoreState>
    /// Where disk work is made to fail or wait (tests; nil in use).
    let faults: (any StorageFaultInjecting)?
    let trashQueue = DispatchQueue(label: "MediaCache.trash")
    let locks: SharedLocks

    /// The folders of data files being filled, complete and on their way out (worked out once: every open of a
    /// data file names one).
    let tempDirectory: String
    let mediaDirectory: String
    let trashDirectory: String

    /// What was repaired so the index and the files agree: at open (after a crash), and as entries were first used.
    public var recovery: RecoveryReport { state.withLockedValue { $0.recovery } }

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

    /// Below this much free space the disk counts as full and the directory is opened read-only.
    static let fullDiskBytes: Int64 = 64 << 10

    /// `opensReadOnly` opens a writable directory as if it were read-only (commands that only look); `faults`
    /// makes disk work fail or wait where it touches the disk.
    init(
        directory: URL, configuration: CacheConfiguration, logger: Logger = Logger(label: "MediaCache"),
        now: @escaping @Sendable () -> Date = { Date() }, freeSpace: (@Sendable () -> Int64?)? = nil,
        opensReadOnly: Bool, faults: (any StorageFaultInjecting)? = nil
    ) throws {
        self.directory = directory
        self.faults = faults
        tempDirectory = directory.appendingPathComponent("temp").path
        mediaDirectory = directory.appendingPathComponent("media").path
        trashDirectory = directory.appendingPathComponent("trash").path
        self.configuration = configuration
        self.logger = logger
        self.now = now
        let rootPath = directory.path
        self.freeSpace = freeSpace ?? { DataFile.freeSpace(atPath: rootPath) }
        freeSpaceFloor = configuration.freeSpaceFloor(diskBytes: DataFile.diskSize(atPath: rootPath))
        let indexPath = directory.appendingPathComponent("index.sqlite").path
        if opensReadOnly, !FileManager.default.fileExists(atPath: indexPath) {
            throw CacheError.io("there is no cache in \(directory.path) yet")
        }
        if !opensReadOnly, let mode = try CacheDirectory.create(directory), mode & 0o077 != 0 {
            logger.warning(
                "cache directory \(directory.path) is open to other users (mode \(String(mode, radix: 8))); run chmod 700 on it")
        }
        var readOnly = opensReadOnly || access(directory.path, W_OK) != 0
        if readOnly {
            if !opensReadOnly {
                logger.warning("cache directory \(directory.path) is read-only: serving what it holds, caching nothing new")
            }
        } else if let free = self.freeSpace(), free < Self.fullDiskBytes {
            // Not even a block free: nothing could be stored, and evicting to make room would only lose what the
            // cache holds. Served as it is, as a read-only directory would be.
            readOnly = true
            logger.warning(
                "cache directory \(directory.path): the disk is full (free some space or use a different cache directory); serving what the cache holds without changing it")
        } else {
            for sub in ["temp", "media", "trash"] {
                // Our own folders: tightened if something widened them.
                let folder = directory.appendingPathComponent(sub)
                if let mode = try CacheDirectory.create(folder), mode & 0o077 != 0 { chmod(folder.path, 0o700) }
            }
            CacheIndex.createPrivately(indexPath)
        }
        let lockPath = directory.appendingPathComponent("lock").path
        let lockFD = readOnly
            ? SystemCalls.openFile(lockPath, O_RDONLY | O_CLOEXEC, 0)
            : SystemCalls.openFile(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if lockFD < 0, !readOnly {
            throw CacheError.io("cannot open \(lockPath): \(DataFile.errnoText())")
        }
        // The first process in (no other holds the lock) learns from the marker the last one out leaves whether
        // that one closed cleanly; after a crash it checks the index page by page and sweeps the folders.
        let sole = !readOnly && flock(lockFD, LOCK_EX | LOCK_NB) == 0
        let crashed = sole && unlink(directory.appendingPathComponent(Self.cleanMarker).path) != 0
        let sharedLocks = SharedLocks(descriptor: readOnly ? -1 : lockFD)
        do {
            let (index, movedAside, openedReadOnly) = try sharedLocks.whileHoldingSchemaLock {
                try CacheIndex.open(path: indexPath, logger: logger, now: now(), readOnly: readOnly, thorough: crashed)
            }
            readOnly = readOnly || openedReadOnly
            self.index = index
            isReadOnly = readOnly
            var initial = StoreState()
            initial.recovery.indexMovedAside = movedAside
            initial.uncacheable = (try? index.uncacheable()) ?? [:]
            initial.dataVersion = index.dataVersion()
            state = StoreLock(initial)
        } catch {
            if lockFD >= 0 { SystemCalls.closeDescriptor(lockFD) }
            throw error
        }
        guard !readOnly else {
            locks = SharedLocks(descriptor: -1)
            if lockFD >= 0 { SystemCalls.closeDescriptor(lockFD) }
            return
        }
        locks = sharedLocks
        try openShared(lockFD: lockFD, sole: sole, crashed: crashed)
        let report = recovery
        if report.repairedAnything { logger.warning("cache repaired at open: \(report)") }
        _ = try enforceBudgets()
    }

    deinit {
        try? close()
    }

    /// Commits everything, flushes counters and lets go of the directory; the store must not be used after.
    public func close() throws {
        guard !isReadOnly else {
            state.withLockedValue { $0.files.removeAll() }
            return
        }
        let open = state.withLockedValue { s -> Bool in
            defer { s.closed = true }
            return !s.closed
        }
        guard open else { return }
        defer { closeShared() }
        try commitAll()
        try flushTraffic()
        try locked { s in
            try flushAccessTimesLocked(&s)
            s.files.removeAll()
            s.entries.removeAll()
        }
    }

    // MARK: - Looking up

    /// The resource's metadata and its readable ranges, or nil when it is not cached.
    public func info(for key: CacheKey) -> ResourceInfo? {
        info(for: key, noticingChangesWithin: 0)
    }

    /// As `info(for:)`, trusting a look at other processes' changes taken less than `maxAge` nanoseconds ago (a
    /// reader going through cached bytes chunk by chunk: each look is an index query).
    func info(for key: CacheKey, noticingChangesWithin maxAge: UInt64) -> ResourceInfo? {
        locked(noticingChangesWithin: maxAge) { s in
            guard let entry = entryLocked(&s, key) else { return nil }
            var info = entry.info
            info.ranges = entry.written
            if let pending = s.pendingTraffic[key] {
                info.fetchedFromOrigin += pending.origin
                info.servedFromCache += pending.hit
            }
            return info
        }
    }

    /// Every cached resource, most recently accessed first (reads the whole index: for listings).
    public func allResources() -> [ResourceInfo] {
        let recorded = (try? index.loadAll()) ?? []
        return locked { s in
            recorded.map { stored in
                guard let entry = s.entries[stored.key], entry.info.generation == stored.generation else {
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
        locked(noticingChangesWithin: maxAge) { s in entryLocked(&s, key)?.written ?? ByteRangeSet() }
    }

    /// Marks the resource as used now (eviction is least-recently-used).
    public func touch(key: CacheKey) throws {
        try locked { s in
            guard var entry = entryLocked(&s, key) else { return }
            entry.info.lastAccess = now()
            s.entries[key] = entry
            guard !isReadOnly else { return }
            try index.touch([(key, entry.info.lastAccess)])
        }
    }

    // MARK: - Files

    /// The data file of a generation of `key` in `state`: named by key and generation, so a process that still
    /// holds an evicted version can never open the file of a newer one.
    func path(for key: CacheKey, generation: Int64, state: ResourceState) -> String {
        (state == .complete ? mediaDirectory : tempDirectory) + "/" + key.hex + "." + String(generation)
    }

    func path(for entry: StoreEntry) -> String { path(for: entry.info) }

    /// The data file holding the bytes `info` describes (for inspection: the store alone writes it).
    public func path(for info: ResourceInfo) -> String {
        path(for: info.key, generation: info.generation, state: info.state)
    }

    /// The open data file of `key`'s current entry. A file that went away (another process evicted or refiled
    /// it) makes the entry be read again: `notCached` when it is gone.
    func fileLocked(_ s: inout StoreState, _ key: CacheKey) throws -> DataFile {
        if let file = s.files[key] { return file }
        guard var entry = entryLocked(&s, key) else { throw CacheError.notCached(key) }
        if s.files.count >= StoreState.maxOpenFiles, let victim = s.files.keys.first(where: { $0 != key }) {
            try commitLocked(&s, victim)
            s.files.removeValue(forKey: victim)
        }
        var attempt = 0
        while true {
            do {
                let file = try DataFile(path: path(for: entry), readOnly: isReadOnly)
                s.files[key] = file
                return file
            } catch {
                guard attempt == 0, DataFile.size(atPath: path(for: entry)) == nil else { throw error }
                attempt += 1
                // Moved or removed meanwhile: what does the index say now?
                s.entries[key]?.epoch = -1
                guard let current = entryLocked(&s, key, checkingFile: true) else { throw CacheError.notCached(key) }
                entry = current
            }
        }
    }

    /// Blocks until files moved to `trash/` so far have been unlinked.
    public func waitForTrash() { trashQueue.sync {} }

    static func emptyDirectory(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for name in names { try? FileManager.default.removeItem(atPath: (path as NSString).appendingPathComponent(name)) }
        return names.count
    }
}
