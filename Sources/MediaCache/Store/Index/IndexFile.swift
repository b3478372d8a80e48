import Foundation
import GRDB
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The integrity check found damage.
struct IndexCorruption: Error, CustomStringConvertible {
    let detail: String
    var description: String { "integrity check failed: \(detail)" }
}

/// The index's file: created private, opened (read-only where nothing may change), and, when SQLite or the
/// integrity check finds it corrupt, moved aside for a fresh one; its errors said as sentences.
enum IndexFile {
    /// Creates an empty index file readable by its owner only (SQLite gives its -wal and -shm files the same mode);
    /// an existing one is narrowed to 0600.
    static func createPrivately(_ path: String) {
        let fd = SystemCalls.openFile(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { SystemCalls.closeDescriptor(fd) }
        for suffix in ["", "-wal", "-shm"] {
            var info = stat()
            if lstat(path + suffix, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 {
                chmod(path + suffix, 0o600)
            }
        }
    }

    /// How long a corrupt index moved aside is kept (for a post-mortem) before a later open removes it.
    static let corruptCopyLifetime: TimeInterval = 7 * 86_400

    /// Opens the index at `path`. A corrupt file (SQLite says so, or the integrity check fails) is moved aside and
    /// a fresh index created; any other failure — a full disk, a read-only or unreadable file — is an error that
    /// changes nothing on disk. Returns the index and the path a corrupt file was moved to, if any.
    static func open(
        path: String, logger: Logger, now: Date = Date(), readOnly: Bool = false, thorough: Bool = true
    ) throws(CacheError)
        -> (CacheIndex, movedAside: String?, readOnly: Bool)
    {
        if readOnly {
            // Nothing may change: no repair, no clean-up; a missing or damaged index is an error.
            do {
                return (try openReadOnly(path: path), nil, true)
            } catch {
                throw .index("cannot read \(path) in a read-only cache directory: \(describe(error, path: path))")
            }
        }
        removeOldCorruptCopies(of: path, now: now)
        do {
            return (try CacheIndex(path: path, readOnly: false, thorough: thorough), nil, false)
        } catch where isCorruption(error) {
            let aside = path + ".corrupt-\(Int(now.timeIntervalSince1970))"
            logger.warning("cache index \(path) is corrupt (\(error)); moved it to \(aside) and starting a new one")
            try? FileManager.default.removeItem(atPath: aside)
            do {
                try DataFile.rename(from: path, to: aside)
            } catch {
                throw .index("cannot move the corrupt index \(path) aside: \(error)")
            }
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            do {
                return (try CacheIndex(path: path, readOnly: false), aside, false)
            } catch {
                throw .index("cannot create a new index at \(path): \(describe(error, path: path))")
            }
        } catch {
            // Out of reach for writing (a full disk, a read-only file): read what it holds if that is possible.
            if isOutOfReach(error), let index = try? openReadOnly(path: path) {
                logger.warning("cache index \(path): \(describe(error, path: path)); serving what the cache holds without changing it")
                return (index, nil, true)
            }
            throw .index("cannot open \(path): \(describe(error, path: path)); nothing was changed")
        }
    }

    /// Opens the index without writing anything: SQLite's read-only mode, else (when it would need to create its
    /// shared-memory file on a full or read-only disk) as an immutable file, which is only safe when no
    /// write-ahead log holds changes the main file lacks.
    static func openReadOnly(path: String) throws -> CacheIndex {
        do {
            return try CacheIndex(path: path, readOnly: true)
        } catch {
            guard FileManager.default.fileExists(atPath: path), (DataFile.size(atPath: path + "-wal") ?? 0) == 0,
                let escaped = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
            else { throw error }
            return try CacheIndex(path: "file:\(escaped)?immutable=1", readOnly: true)
        }
    }

    /// True when `error` is about reaching the file (space, permissions, I/O), not about its content.
    static func isOutOfReach(_ error: any Error) -> Bool {
        guard let database = error as? DatabaseError else { return false }
        return [.SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM]
            .contains(database.resultCode)
    }

    /// True when `error` says the file's content is damaged, as opposed to the file being out of reach.
    static func isCorruption(_ error: any Error) -> Bool {
        if error is IndexCorruption { return true }
        guard let database = error as? DatabaseError else { return false }
        return database.resultCode == .SQLITE_CORRUPT || database.resultCode == .SQLITE_NOTADB
    }

    /// A failure to open, in words that say what to do.
    static func describe(_ error: any Error, path: String? = nil) -> String {
        guard let database = error as? DatabaseError else { return "\(error)" }
        if database.resultCode == .SQLITE_IOERR, let path,
            DataFile.freeSpace(atPath: (path as NSString).deletingLastPathComponent) == 0
        {
            return "the disk is full (free some space or use a different cache directory)"
        }
        switch database.resultCode {
        case .SQLITE_FULL: return "the disk is full (free some space or use a different cache directory)"
        case .SQLITE_READONLY: return "it is read-only (make it writable or use a different cache directory)"
        case .SQLITE_PERM, .SQLITE_AUTH:
            return "permission denied (check the directory's owner and mode, or use a different cache directory)"
        case .SQLITE_CANTOPEN:
            return "it cannot be opened (check that the directory exists and is writable, or use a different cache directory)"
        case .SQLITE_IOERR:
            return "the disk reported an I/O error (\(database.message ?? "no detail"); is it full or failing?)"
        case .SQLITE_BUSY, .SQLITE_LOCKED: return "another process holds it locked (try again)"
        default: return database.message ?? "\(database)"
        }
    }

    /// Removes `PATH.corrupt-TIME` copies older than `corruptCopyLifetime`.
    static func removeOldCorruptCopies(of path: String, now: Date) {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let prefix = url.lastPathComponent + ".corrupt-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            guard let time = Double(name.dropFirst(prefix.count)),
                now.timeIntervalSince1970 - time > corruptCopyLifetime
            else { continue }
            try? FileManager.default.removeItem(atPath: (folder as NSString).appendingPathComponent(name))
        }
    }
}
