import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes the index and the data files agree: one entry against its file (the first time a process uses it), and
/// the whole directory at open after a crash (files no entry accounts for, entries without a file). Also joins and
/// leaves the processes sharing the directory, which is how a crash is told from a clean close.
struct Reconciler: Sendable {
    let layout: CacheLayout
    let index: CacheIndex
    let logger: Logger
    let now: @Sendable () -> Date

    /// How often a sweep for stray files runs even without a crash.
    static let sweepInterval: TimeInterval = 86_400

    /// The file the last process to close the directory leaves behind, and the first to open it removes.
    static let cleanMarker = "closed-cleanly"

    // MARK: - One entry

    /// Reads `key`'s entry in a write transaction and makes it agree with its file: no file drops the entry,
    /// ranges past the file's end are clamped, a file in the wrong folder (or under the name an older version
    /// of the cache gave it) is moved where its completeness says. Run the first time a process uses an entry.
    func checkFile(_ key: CacheKey, report: inout RecoveryReport) throws -> IndexedResource? {
        try index.modify(key) { resource, _ -> IndexedResource? in
            guard var current = resource else { return nil }
            let info = current.info
            let expected = layout.path(for: info)
            var size = DataFile.size(atPath: expected)
            var status = stat()
            if size == nil, lstat(expected, &status) == 0 {
                // Something that is not a data file took its place: what the index says it held is gone.
                logger.warning("cache entry \(key): \(expected) is not a regular file; moving it away")
                try layout.moveToTrash(expected, name: key.hex)
            }
            if size == nil {
                let other = layout.path(
                    for: key, generation: info.generation, state: info.state == .complete ? .partial : .complete)
                if let found = ([other] + layout.legacyPaths(for: key)).first(where: { DataFile.size(atPath: $0) != nil }) {
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
                try DataFile.rename(from: expected, to: layout.path(for: key, generation: info.generation, state: state))
                report.filesMoved += 1
            }
            resource = current
            return current
        }
    }

    // MARK: - The directory

    /// Joins the processes using the directory: each holds a shared lock on `lock` for as long as it has the store
    /// open. One that finds no other (`sole`: an exclusive lock succeeded) empties `trash/` and, when the last
    /// process to use the directory did not close it (a crash), when the index was rebuilt, or once a day, sweeps
    /// data files no entry accounts for.
    func join(lockFD: Int32, sole: Bool, crashed: Bool, report: inout RecoveryReport) throws {
        if sole {
            report.trashFilesRemoved = CacheLayout.emptyDirectory(layout.trashDirectory)
            let lastSweep = index.meta("lastSweep").map { Date(timeIntervalSince1970: TimeInterval($0)) }
            if crashed || report.indexMovedAside != nil
                || lastSweep.map({ now().timeIntervalSince($0) >= Self.sweepInterval }) ?? true
            {
                try sweep(into: &report)
                try index.setMeta("lastSweep", Int64(now().timeIntervalSince1970))
            }
        }
        // Waits only while another process finishes the steps above (a sweep after a crash); a holder that does
        // not let go within a minute only costs this process its part in telling a crash from a clean close.
        let deadline = ContinuousClock.now + .seconds(60)
        while flock(lockFD, LOCK_SH | LOCK_NB) != 0, errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline {
            usleep(10_000)
        }
    }

    /// Leaves the directory: the last process out records that it closed cleanly.
    func leave(_ locks: SharedLocks) {
        locks.withDescriptor { fd in
            if fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 {
                let created = SystemCalls.openFile(layout.file(Self.cleanMarker), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
                if created >= 0 { SystemCalls.closeDescriptor(created) }
            }
        }
        locks.close()
    }

    /// Removes data files no entry accounts for (left by a crash) and entries whose file is missing. The folders
    /// are listed before the index is read: a file created after the listing belongs to an entry the sweep does
    /// not judge, and every entry whose file the listing lacks is checked again in a transaction of its own.
    func sweep(into report: inout RecoveryReport) throws {
        var listed: [String: [String]] = [:]
        for folder in [layout.tempDirectory, layout.mediaDirectory] {
            listed[folder] = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        }
        let recorded = try index.keysGenerationsAndStates()
        var accounted = Set<CacheKey>()
        for (folder, names) in listed {
            for name in names {
                let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
                if let key = CacheKey(hex: parts[0]), let (generation, state) = recorded[key] {
                    let legacy = parts.count == 1
                    let current = parts.count == 2 && Int64(parts[1]) == generation
                    if current, layout.path(for: key, generation: generation, state: state)
                        == (folder as NSString).appendingPathComponent(name)
                    {
                        accounted.insert(key)
                        continue
                    }
                    if legacy || current {
                        continue  // in the wrong folder or under the old name: the entry's check below moves it
                    }
                }
                try? FileManager.default.removeItem(atPath: (folder as NSString).appendingPathComponent(name))
                report.orphanFilesRemoved += 1
            }
        }
        for key in recorded.keys where !accounted.contains(key) {
            _ = try checkFile(key, report: &report)
        }
    }
}
