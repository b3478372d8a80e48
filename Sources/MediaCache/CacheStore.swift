import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The persistent sparse store: one data file per resource plus a SQLite index of what each file holds.
///
/// Invariant: a range reaches the index only after its bytes were written and synced; `open` reconciles the index
/// with the files, so a crash at any point leaves a cache that never returns a wrong byte.
public final class CacheStore: Sendable {
    /// The cache directory (holds `index.sqlite`, `temp/`, `media/`, `trash/`).
    public let directory: URL
    /// Budgets and limits.
    public let configuration: CacheConfiguration
    /// What opening the store had to repair.
    public let recovery: RecoveryReport
    /// True when the directory cannot be written (a read-only mount): cached bytes are served, nothing is stored,
    /// nothing repaired or evicted.
    public let isReadOnly: Bool

    let index: CacheIndex
    let logger: Logger
    let now: @Sendable () -> Date
    let freeSpace: @Sendable () -> Int64?
    let state: Mutex<StoreState>
    let trashQueue = DispatchQueue(label: "MediaCache.trash")
    private let lockDescriptor: Mutex<Int32>

    var tempDirectory: String { directory.appendingPathComponent("temp").path }
    var mediaDirectory: String { directory.appendingPathComponent("media").path }
    var trashDirectory: String { directory.appendingPathComponent("trash").path }

    /// Opens (creating if needed) the cache at `directory`: takes the directory lock, empties `trash/`, opens or
    /// rebuilds the index, reconciles it with the files, then evicts to the budgets.
    ///
    /// `now` and `freeSpace` are injectable so tests control time and disk pressure.
    public convenience init(
        directory: URL, configuration: CacheConfiguration = CacheConfiguration(),
        logger: Logger = Logger(label: "MediaCache"), now: @escaping @Sendable () -> Date = { Date() },
        freeSpace: (@Sendable () -> Int64?)? = nil
    ) throws {
        try self.init(
            directory: directory, configuration: configuration, logger: logger, now: now, freeSpace: freeSpace,
            readOnlyForTesting: false)
    }

    /// `readOnlyForTesting` opens a writable directory as if it were read-only.
    init(
        directory: URL, configuration: CacheConfiguration, logger: Logger = Logger(label: "MediaCache"),
        now: @escaping @Sendable () -> Date = { Date() }, freeSpace: (@Sendable () -> Int64?)? = nil,
        readOnlyForTesting: Bool
    ) throws {
        self.directory = directory
        self.configuration = configuration
        self.logger = logger
        self.now = now
        let rootPath = directory.path
        self.freeSpace = freeSpace ?? { DataFile.freeSpace(atPath: rootPath) }
        if let mode = try CacheDirectory.create(directory), mode & 0o077 != 0 {
            logger.warning(
                "cache directory \(directory.path) is open to other users (mode \(String(mode, radix: 8))); run chmod 700 on it")
        }
        var readOnly = readOnlyForTesting || access(directory.path, W_OK) != 0
        if readOnly {
            logger.warning("cache directory \(directory.path) is read-only: serving what it holds, caching nothing new")
        } else {
            for sub in ["temp", "media", "trash"] {
                // Our own folders: tightened if something widened them.
                let folder = directory.appendingPathComponent(sub)
                if let mode = try CacheDirectory.create(folder), mode & 0o077 != 0 { chmod(folder.path, 0o700) }
            }
            CacheIndex.createPrivately(directory.appendingPathComponent("index.sqlite").path)
        }
        let lockFD = try Self.lockDirectory(directory, readOnly: readOnly)
        lockDescriptor = Mutex(lockFD)
        do {
            let (index, movedAside, openedReadOnly) = try CacheIndex.open(
                path: directory.appendingPathComponent("index.sqlite").path, logger: logger, now: now(),
                readOnly: readOnly)
            readOnly = readOnly || openedReadOnly
            self.index = index
            var report = RecoveryReport()
            report.indexMovedAside = movedAside
            if !readOnly {
                report.trashFilesRemoved = Self.emptyDirectory(directory.appendingPathComponent("trash").path)
            }
            let entries = try Self.reconcile(
                index: index, temp: directory.appendingPathComponent("temp").path,
                media: directory.appendingPathComponent("media").path, report: &report, logger: logger,
                readOnly: readOnly)
            recovery = report
            isReadOnly = readOnly
            var initial = StoreState(entries: entries)
            initial.uncacheable = (try? index.uncacheable()) ?? [:]
            state = Mutex(initial)
        } catch {
            if lockFD >= 0 { Glibc.close(lockFD) }
            throw error
        }
        if recovery.repairedAnything { logger.warning("cache repaired at open: \(recovery)") }
        if !readOnly { _ = try enforceBudgets() }
    }

    deinit {
        try? close()
    }

    /// Commits everything, flushes counters and releases the directory lock; the store must not be used after.
    public func close() throws {
        defer {
            lockDescriptor.withLock { fd in
                if fd >= 0 { Glibc.close(fd) }
                fd = -1
            }
        }
        guard !isReadOnly else {
            state.withLock { $0.files.removeAll() }
            return
        }
        try commitAll()
        try flushTraffic()
        try state.withLock { s in
            try flushAccessTimesLocked(&s)
            s.files.removeAll()
        }
    }

    private static func lockDirectory(_ directory: URL, readOnly: Bool) throws(CacheError) -> Int32 {
        let path = directory.appendingPathComponent("lock").path
        // A read-only directory has no writer to keep out: lock when the file is there, go on when it is not.
        let fd = readOnly ? open(path, O_RDONLY | O_CLOEXEC) : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0, readOnly { return -1 }
        guard fd >= 0 else { throw .io("cannot open \(path): \(DataFile.errnoText())") }
        // A holder that is going away (a process exiting, or a child between fork and exec still holding a copy
        // of the descriptor) lets go within moments: wait up to two seconds before calling the directory busy.
        let deadline = ContinuousClock.now + .seconds(2)
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        while !locked, errno == EWOULDBLOCK, ContinuousClock.now < deadline {
            usleep(20_000)
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        guard locked else {
            Glibc.close(fd)
            throw .inUse(
                "cache directory \(directory.path) is in use by another stories-tui process "
                    + "(wait for it to finish or pass a different --cache-dir)")
        }
        return fd
    }

    // MARK: - Looking up

    /// The resource's metadata and its readable ranges, or nil when it is not cached.
    public func info(for key: CacheKey) -> ResourceInfo? {
        state.withLock { s in
            guard let entry = s.entries[key] else { return nil }
            var info = entry.info
            info.ranges = entry.written
            return info
        }
    }

    /// Every cached resource, most recently accessed first.
    public func allResources() -> [ResourceInfo] {
        state.withLock { s in
            s.entries.values.map { entry in
                var info = entry.info
                info.ranges = entry.written
                return info
            }
        }.sorted { ($0.lastAccess, $0.key) > ($1.lastAccess, $1.key) }
    }

    /// An open read-only descriptor of a completely cached resource's data file (the caller closes it), for
    /// zero-copy sending; nil unless every byte is cached. Eviction renames the file, so an open descriptor stays
    /// valid while it is read.
    public func openCompleteFile(for key: CacheKey) -> (descriptor: Int32, length: Int64)? {
        state.withLock { s in
            guard var entry = s.entries[key], entry.info.state == .complete,
                let length = entry.info.metadata.contentLength
            else { return nil }
            let fd = open(path(for: entry), O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            entry.info.lastAccess = now()
            s.entries[key] = entry
            s.accessed.insert(key)
            return (fd, length)
        }
    }

    /// The ranges of `key` that can be read now (empty when not cached).
    public func availableRanges(for key: CacheKey) -> ByteRangeSet {
        state.withLock { s in s.entries[key]?.written ?? ByteRangeSet() }
    }

    // MARK: - Writing

    /// Registers (or re-validates) a resource before its bytes are written.
    ///
    /// When `metadata` describes a different version than the one cached (ETag, Last-Modified or length changed),
    /// the old version is discarded whole and a new generation starts, so old and new bytes never mix.
    public func prepare(key: CacheKey, metadata: ResourceMetadata) throws -> Admission {
        if isReadOnly {
            // Nothing new can be stored; a cached copy of another version must not be served either.
            state.withLock { s in
                guard let entry = s.entries[key], entry.info.metadata.isDifferentVersion(from: metadata) else { return }
                s.entries.removeValue(forKey: key)
                s.files.removeValue(forKey: key)
                if entry.info.state == .complete { s.completeBytes -= entry.written.total } else {
                    s.partialBytes -= entry.written.total
                }
            }
            return .uncacheable("the cache directory is read-only")
        }
        var metadata = metadata
        // Credentials in a URL are never written down (the key still tells such URLs apart).
        if let url = URL(string: metadata.url) { metadata.url = OriginURL.withoutCredentials(url).absoluteString }
        if let length = metadata.contentLength,
            length > min(configuration.partialByteLimit, configuration.completeByteLimit)
        {
            return .uncacheable(
                "\(length) bytes is more than the cache budget (\(min(configuration.partialByteLimit, configuration.completeByteLimit)) bytes)"
            )
        }
        return try state.withLock { s in
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
                if entry.info.metadata.isDifferentVersion(from: metadata) {
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

    private func insertLocked(
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
        let (stored, needsCommit) = try state.withLock { s -> (Bool, Bool) in
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
        try state.withLock { s in
            try discardLocked(&s, key)
            s.uncacheable[key] = reason
            try index.setUncacheable(key, reason: reason)
        }
    }

    /// Why `key` was given up on (see `giveUp`), or nil.
    public func givenUpReason(for key: CacheKey) -> String? {
        state.withLock { $0.uncacheable[key] }
    }

    /// Why the most recent write that returned false was not stored.
    public var lastRefusal: String? { state.withLock { $0.refusal } }

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
        let pending = state.withLock {
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
        try state.withLock { s in
            try recordLocked(&s, key, durable: pending.ranges, generation: pending.generation, syncFailed: failure != nil)
        }
        if let failure { throw failure }
        try enforceBudgetsIfDue()
    }

    /// Commits every resource with unrecorded bytes and flushes traffic counters.
    public func commitAll() throws {
        try state.withLock { s in
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
    private func recordLocked(
        _ s: inout StoreState, _ key: CacheKey, durable: ByteRangeSet, generation: Int64, syncFailed: Bool
    ) throws {
        guard var entry = s.entries[key], entry.info.generation == generation else { return }
        if syncFailed {
            let lost = entry.written.total - entry.info.ranges.total
            logger.error("cache entry \(key): syncing its data failed; \(lost) unrecorded bytes will be fetched again")
            if entry.info.state == .complete { s.completeBytes -= lost } else { s.partialBytes -= lost }
            entry.written = entry.info.ranges
            entry.unrecordedBytes = 0
            s.entries[key] = entry
            return
        }
        let completing = entry.info.state == .partial && entry.info.metadata.contentLength.map { durable.contains(0..<$0) } == true
        // Nothing new to record: no index write at all (closing a store with many entries stays cheap).
        guard durable != entry.info.ranges || completing else { return }
        entry.info.ranges = durable
        entry.unrecordedBytes = entry.written.total - durable.total
        entry.lastRecorded = now()
        if completing {
            let from = (tempDirectory as NSString).appendingPathComponent(key.hex)
            let to = (mediaDirectory as NSString).appendingPathComponent(key.hex)
            s.files.removeValue(forKey: key)
            try DataFile.rename(from: from, to: to)
            entry.info.state = .complete
            s.partialBytes -= entry.written.total
            s.completeBytes += entry.written.total
        }
        s.entries[key] = entry
        try index.save(entry.info)
    }

    // MARK: - Reading

    /// Reads `range` of a resource; every byte must be available. Pass `generation` to fail with `resourceChanged`
    /// instead of reading a newer version than the one the reader started with.
    public func read(key: CacheKey, range: ByteRange, generation: Int64? = nil) throws -> [UInt8] {
        try state.withLock { s in
            guard var entry = s.entries[key] else { throw CacheError.notCached(key) }
            if let generation, generation != entry.info.generation { throw CacheError.resourceChanged(key) }
            guard entry.written.contains(range) else { throw CacheError.rangeNotCached(key, range) }
            let file = try fileLocked(&s, key)
            let bytes = try file.read(count: range.count, at: range.lowerBound)
            entry.info.lastAccess = now()
            s.entries[key] = entry
            s.accessed.insert(key)
            return bytes
        }
    }

    /// Marks the resource as used now (eviction is least-recently-used).
    public func touch(key: CacheKey) throws {
        try state.withLock { s in
            guard var entry = s.entries[key] else { return }
            entry.info.lastAccess = now()
            s.entries[key] = entry
            try index.touch([(key, entry.info.lastAccess)])
        }
    }

    // MARK: - Files

    func path(for entry: StoreEntry) -> String {
        let folder = entry.info.state == .complete ? mediaDirectory : tempDirectory
        return (folder as NSString).appendingPathComponent(entry.info.key.hex)
    }

    func fileLocked(_ s: inout StoreState, _ key: CacheKey) throws -> DataFile {
        if let file = s.files[key] { return file }
        guard let entry = s.entries[key] else { throw CacheError.notCached(key) }
        if s.files.count >= StoreState.maxOpenFiles, let victim = s.files.keys.first(where: { $0 != key }) {
            try commitLocked(&s, victim)
            s.files.removeValue(forKey: victim)
        }
        let filePath = path(for: entry)
        var info = stat()
        if !isReadOnly, lstat(filePath, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            // Something that is not a data file took its place: what the index says it held is gone.
            logger.warning("cache entry \(key): \(filePath) is not a regular file; moving it away and starting over")
            try moveToTrash(filePath, name: key.hex)
            var reset = entry
            let lost = reset.written.total
            if reset.info.state == .complete { s.completeBytes -= lost } else { s.partialBytes -= lost }
            reset.info.state = .partial
            reset.info.ranges = ByteRangeSet()
            reset.written = ByteRangeSet()
            reset.unrecordedBytes = 0
            s.entries[key] = reset
            try index.save(reset.info)
            let file = try DataFile(path: path(for: reset))
            s.files[key] = file
            return file
        }
        let file = try DataFile(path: filePath, readOnly: isReadOnly)
        s.files[key] = file
        return file
    }

    /// Blocks until files moved to `trash/` so far have been unlinked.
    public func waitForTrash() { trashQueue.sync {} }

    static func emptyDirectory(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for name in names { try? FileManager.default.removeItem(atPath: (path as NSString).appendingPathComponent(name)) }
        return names.count
    }
}

/// Disk failures injected by tests (a full disk without filling one).
struct StorageFaults {
    /// Every data write fails with this errno.
    var writeErrno: Int32?
    /// Every data sync fails with this errno.
    var syncErrno: Int32?
}

/// Whether a resource may be cached.
public enum Admission: Sendable, Equatable {
    /// Write with this generation; `replaced` is true when an older version was discarded.
    case cacheable(generation: Int64, replaced: Bool)
    /// Too large for the budget: stream it through without caching.
    case uncacheable(String)
}

/// One resource's in-memory state: recorded info plus the ranges written since (readable, not yet recorded).
struct StoreEntry {
    /// What the index may record: `info.ranges` holds only durable ranges.
    var info: ResourceInfo
    var written: ByteRangeSet
    var unrecordedBytes: Int64 = 0
    /// When ranges were last recorded (unrecorded bytes older than `commitLatency` are committed).
    var lastRecorded: Date

    init(info: ResourceInfo) {
        lastRecorded = info.lastAccess
        self.info = info
        written = info.ranges
    }
}

/// Everything the store's lock protects.
struct StoreState {
    static let maxOpenFiles = 32
    var entries: [CacheKey: StoreEntry]
    var files: [CacheKey: DataFile] = [:]
    var pins: [CacheKey: Int] = [:]
    var partialBytes: Int64 = 0
    var completeBytes: Int64 = 0
    var bytesSinceSpaceCheck: Int64 = 0
    var lastExpiryCheck: Date = .distantPast
    var pendingTraffic: [CacheKey?: (origin: Int64, hit: Int64)] = [:]
    /// Entries whose access time changed in memory since it was last written to the index.
    var accessed: Set<CacheKey> = []
    /// Failures the tests inject.
    var faults = StorageFaults()
    /// Why the last write was not stored.
    var refusal: String?
    /// Resources given up on: they stream through without another attempt to cache them.
    var uncacheable: [CacheKey: String] = [:]

    init(entries: [CacheKey: StoreEntry]) {
        self.entries = entries
        for entry in entries.values {
            if entry.info.state == .complete { completeBytes += entry.written.total } else {
                partialBytes += entry.written.total
            }
        }
    }
}
