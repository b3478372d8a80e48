import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `CacheStore.init` repaired so the index and the files agree again.
public struct RecoveryReport: Sendable, Equatable, CustomStringConvertible {
    /// Where an unreadable index was moved before a new one was created.
    public var indexMovedAside: String?
    /// Files left in `trash/` by an earlier run, now unlinked.
    public var trashFilesRemoved = 0
    /// Index rows whose data file was missing, dropped.
    public var rowsWithoutFileDropped = 0
    /// Resources whose recorded ranges reached past the end of their file, clamped.
    public var rangesClamped = 0
    /// Data files no index row accounts for, removed.
    public var orphanFilesRemoved = 0
    /// Files moved between `temp/` and `media/` to match their completeness.
    public var filesMoved = 0

    /// An empty report.
    public init() {}

    /// True when anything at all needed fixing (emptying the trash does not count).
    public var repairedAnything: Bool {
        indexMovedAside != nil || rowsWithoutFileDropped > 0 || rangesClamped > 0 || orphanFilesRemoved > 0
            || filesMoved > 0
    }

    /// What was repaired, in a line.
    public var description: String {
        var parts: [String] = []
        if let aside = indexMovedAside { parts.append("unreadable index moved to \(aside)") }
        if rowsWithoutFileDropped > 0 { parts.append("\(rowsWithoutFileDropped) entries without data dropped") }
        if rangesClamped > 0 { parts.append("\(rangesClamped) entries trimmed to their data") }
        if orphanFilesRemoved > 0 { parts.append("\(orphanFilesRemoved) stray data files removed") }
        if filesMoved > 0 { parts.append("\(filesMoved) files refiled") }
        return parts.isEmpty ? "nothing to repair" : parts.joined(separator: ", ")
    }
}

extension CacheStore {
    /// How often a sweep for stray files runs even without a crash.
    static let sweepInterval: TimeInterval = 86_400

    /// The file the last process to close the directory leaves behind, and the first to open it removes.
    static let cleanMarker = "closed-cleanly"

    /// Joins the processes using the directory: each holds a shared lock on `lock` for as long as it has the store
    /// open. One that finds no other (an exclusive lock succeeds) empties `trash/` and, when the last process to
    /// use the directory did not close it (a crash), when the index was rebuilt, or once a day, sweeps data files
    /// no entry accounts for.
    func openShared(lockFD: Int32, sole: Bool, crashed: Bool) throws {
        if sole {
            var report = recovery
            report.trashFilesRemoved = Self.emptyDirectory(trashDirectory)
            let lastSweep = index.meta("lastSweep").map { Date(timeIntervalSince1970: TimeInterval($0)) }
            if crashed || report.indexMovedAside != nil || lastSweep.map({ now().timeIntervalSince($0) >= Self.sweepInterval }) ?? true {
                try sweep(into: &report)
                try index.setMeta("lastSweep", Int64(now().timeIntervalSince1970))
            }
            state.withLockedValue { $0.recovery = report }
        }
        // Waits only while another process finishes the steps above (a sweep after a crash); a holder that does
        // not let go within a minute only costs this process its part in telling a crash from a clean close.
        let deadline = ContinuousClock.now + .seconds(60)
        while flock(lockFD, LOCK_SH | LOCK_NB) != 0, errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline {
            usleep(10_000)
        }
    }

    /// Leaves the directory: the last process out records that it closed cleanly.
    func closeShared() {
        locks.withDescriptor { fd in
            if fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 {
                let marker = directory.appendingPathComponent(Self.cleanMarker).path
                let created = SystemCalls.openFile(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
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
        for folder in [tempDirectory, mediaDirectory] {
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
                    if current, path(for: key, generation: generation, state: state)
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
        var checked = state.withLockedValue { $0.recovery }
        for key in recorded.keys where !accounted.contains(key) {
            _ = try locked { s in
                s.recovery = checked
                defer { checked = s.recovery }
                return try checkFileLocked(&s, key)
            }
        }
        report.rowsWithoutFileDropped = checked.rowsWithoutFileDropped
        report.rangesClamped = checked.rangesClamped
        report.filesMoved = checked.filesMoved
    }
}
