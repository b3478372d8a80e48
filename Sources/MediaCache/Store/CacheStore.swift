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
    let state: NIOLockedValueBox<StoreState>
    let trashQueue = DispatchQueue(label: "MediaCache.trash")
    private let lockDescriptor: NIOLockedValueBox<Int32>

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
        lockDescriptor = NIOLockedValueBox(lockFD)
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
            state = NIOLockedValueBox(initial)
        } catch {
            if lockFD >= 0 { SystemCalls.closeDescriptor(lockFD) }
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
            lockDescriptor.withLockedValue { fd in
                if fd >= 0 { SystemCalls.closeDescriptor(fd) }
                fd = -1
            }
        }
        guard !isReadOnly else {
            state.withLockedValue { $0.files.removeAll() }
            return
        }
        try commitAll()
        try flushTraffic()
        try state.withLockedValue { s in
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
            SystemCalls.closeDescriptor(fd)
            throw .inUse(directory.path)
        }
        return fd
    }

    // MARK: - Looking up

    /// The resource's metadata and its readable ranges, or nil when it is not cached.
    public func info(for key: CacheKey) -> ResourceInfo? {
        state.withLockedValue { s in
            guard let entry = s.entries[key] else { return nil }
            var info = entry.info
            info.ranges = entry.written
            return info
        }
    }

    /// Every cached resource, most recently accessed first.
    public func allResources() -> [ResourceInfo] {
        state.withLockedValue { s in
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
        state.withLockedValue { s in
            guard var entry = s.entries[key], entry.info.state == .complete,
                let length = entry.info.metadata.contentLength
            else { return nil }
            // Every block is checked once per process before bytes leave without passing through this process
            // (a megabyte at a time, so a large file is never read into memory at once).
            var window: Int64 = 0
            while window < length {
                let next = Swift.min(length, window + (1 << 20))
                do { try verifyLocked(&s, key, window..<next) } catch { return nil }
                window = next
            }
            guard let checked = s.entries[key], checked.written.contains(0..<length) else { return nil }
            entry = checked
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
        state.withLockedValue { s in s.entries[key]?.written ?? ByteRangeSet() }
    }

    // MARK: - Reading

    /// Reads `range` of a resource; every byte must be available. Pass `generation` to fail with `resourceChanged`
    /// instead of reading a newer version than the one the reader started with. Bytes that fail their checksum
    /// are dropped from the cache and `corruptData` is thrown (fetch them again).
    public func read(key: CacheKey, range: ByteRange, generation: Int64? = nil) throws -> [UInt8] {
        try state.withLockedValue { s in
            guard var entry = s.entries[key] else { throw CacheError.notCached(key) }
            if let generation, generation != entry.info.generation { throw CacheError.resourceChanged(key) }
            guard entry.written.contains(range) else { throw CacheError.rangeNotCached(key, range) }
            let checked = try verifyLocked(&s, key, range)
            entry = s.entries[key] ?? entry
            let bytes: [UInt8]
            if let (span, read) = checked {
                // The check read `range` already, within a span rounded out to whole blocks.
                let from = Int(range.lowerBound - span.lowerBound)
                bytes = span == range ? read : Array(read[from..<(from + range.count)])
            } else {
                bytes = try fileLocked(&s, key).read(count: range.count, at: range.lowerBound)
            }
            entry.info.lastAccess = now()
            s.entries[key] = entry
            s.accessed.insert(key)
            return bytes
        }
    }

    /// Marks the resource as used now (eviction is least-recently-used).
    public func touch(key: CacheKey) throws {
        try state.withLockedValue { s in
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
            s.subtract(lost, from: reset.info.state)
            reset.info.state = .partial
            reset.info.ranges = ByteRangeSet()
            reset.written = ByteRangeSet()
            reset.unrecordedBytes = 0
            reset.checksums = BlockChecksums()
            reset.verified = []
            s.entries[key] = reset
            try index.save(reset.info, checksums: reset.checksums)
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
