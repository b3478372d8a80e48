import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheDirectory {
    /// A cache directory opened by this process: its index, whether it may be changed, and its place among the
    /// processes sharing it.
    struct Opened {
        let index: CacheIndex
        /// Where an unreadable index was moved before a new one was created.
        let movedAside: String?
        /// True when nothing may be stored, repaired or evicted.
        let readOnly: Bool
        /// The shared `lock` file (-1 when read-only).
        let lockFD: Int32
        let locks: SharedLocks
        /// No other process had the directory open.
        let sole: Bool
        /// The last process to use the directory did not close it.
        let crashed: Bool
    }

    /// Below this much free space the disk counts as full and the directory is opened read-only.
    static let fullDiskBytes: Int64 = 64 << 10

    /// Opens (creating if needed) the cache directory `layout` describes: decides whether it can be changed (a
    /// read-only mount, a full disk, or `opensReadOnly`), makes its folders private, opens its index under the
    /// schema lock, and learns whether it is the first process in and whether the last one out crashed.
    static func open(
        _ layout: CacheLayout, opensReadOnly: Bool, freeSpace: () -> Int64?, logger: Logger, now: () -> Date
    ) throws -> Opened {
        let directory = layout.directory
        let indexPath = layout.file("index.sqlite")
        if opensReadOnly, !FileManager.default.fileExists(atPath: indexPath) {
            throw CacheError.io("there is no cache in \(directory.path) yet")
        }
        if !opensReadOnly, let mode = try create(directory), mode & 0o077 != 0 {
            logger.warning(
                "cache directory \(directory.path) is open to other users (mode \(String(mode, radix: 8))); run chmod 700 on it")
        }
        var readOnly = opensReadOnly || access(directory.path, W_OK) != 0
        if readOnly {
            if !opensReadOnly {
                logger.warning("cache directory \(directory.path) is read-only: serving what it holds, caching nothing new")
            }
        } else if let free = freeSpace(), free < fullDiskBytes {
            // Not even a block free: nothing could be stored, and evicting to make room would only lose what the
            // cache holds. Served as it is, as a read-only directory would be.
            readOnly = true
            logger.warning(
                "cache directory \(directory.path): the disk is full (free some space or use a different cache directory); serving what the cache holds without changing it")
        } else {
            for folder in [layout.tempDirectory, layout.mediaDirectory, layout.trashDirectory] {
                // Our own folders: tightened if something widened them.
                if let mode = try create(URL(fileURLWithPath: folder)), mode & 0o077 != 0 { chmod(folder, 0o700) }
            }
            IndexFile.createPrivately(indexPath)
        }
        let lockPath = layout.file("lock")
        let lockFD = readOnly
            ? SystemCalls.openFile(lockPath, O_RDONLY | O_CLOEXEC, 0)
            : SystemCalls.openFile(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if lockFD < 0, !readOnly {
            throw CacheError.io("cannot open \(lockPath): \(DataFile.errnoText())")
        }
        // The first process in (no other holds the lock) learns from the marker the last one out leaves whether
        // that one closed cleanly; after a crash it checks the index page by page and sweeps the folders.
        let sole = !readOnly && flock(lockFD, LOCK_EX | LOCK_NB) == 0
        let crashed = sole && unlink(layout.file(Reconciler.cleanMarker)) != 0
        let locks = SharedLocks(descriptor: readOnly ? -1 : lockFD)
        let opened: (CacheIndex, movedAside: String?, readOnly: Bool)
        do {
            opened = try locks.whileHoldingSchemaLock {
                try IndexFile.open(path: indexPath, logger: logger, now: now(), readOnly: readOnly, thorough: crashed)
            }
        } catch {
            if lockFD >= 0 { SystemCalls.closeDescriptor(lockFD) }
            throw error
        }
        guard !readOnly, !opened.readOnly else {
            // Not one of the processes changing the directory: holds no lock in it.
            if lockFD >= 0 { SystemCalls.closeDescriptor(lockFD) }
            return Opened(
                index: opened.0, movedAside: opened.movedAside, readOnly: true, lockFD: -1,
                locks: SharedLocks(descriptor: -1), sole: false, crashed: false)
        }
        return Opened(
            index: opened.0, movedAside: opened.movedAside, readOnly: false, lockFD: lockFD, locks: locks,
            sole: sole, crashed: crashed)
    }
}
