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
    /// Makes the index agree with the files: rows without files dropped, ranges past a file's end clamped, files
    /// refiled by completeness, orphan files removed. Returns the surviving entries.
    static func reconcile(
        index: CacheIndex, temp: String, media: String, report: inout RecoveryReport, logger: Logger,
        readOnly: Bool = false
    ) throws -> [CacheKey: StoreEntry] {
        var entries: [CacheKey: StoreEntry] = [:]
        var dropped: [CacheKey] = []
        let checksums = index.checksums()
        for var info in try index.loadAll() {
            let tempPath = (temp as NSString).appendingPathComponent(info.key.hex)
            let mediaPath = (media as NSString).appendingPathComponent(info.key.hex)
            var tempSize = DataFile.size(atPath: tempPath)
            var mediaSize = DataFile.size(atPath: mediaPath)
            if tempSize != nil, mediaSize != nil {
                // Both exist only after a crash between writing one and removing the other: keep the one the
                // recorded state names.
                if info.state == .complete {
                    if !readOnly { unlink(tempPath) }
                    tempSize = nil
                } else {
                    if !readOnly { unlink(mediaPath) }
                    mediaSize = nil
                }
                report.orphanFilesRemoved += 1
            }
            guard let size = tempSize ?? mediaSize else {
                dropped.append(info.key)
                report.rowsWithoutFileDropped += 1
                continue
            }
            var changed = false
            var ranges = info.ranges
            ranges.clamp(to: size)
            if let length = info.metadata.contentLength { ranges.clamp(to: length) }
            if ranges != info.ranges {
                logger.warning("cache entry \(info.key): index claimed \(info.ranges), file holds \(ranges)")
                info.ranges = ranges
                report.rangesClamped += 1
                changed = true
            }
            let complete = info.isComplete
            if readOnly {
                // Nothing can be moved: keep what is where it belongs, leave out what is not.
                guard complete == (mediaSize != nil) else { continue }
                info.state = complete ? .complete : .partial
                entries[info.key] = StoreEntry(info: info, checksums: checksums[info.key])
                continue
            }
            if complete, mediaSize == nil {
                try DataFile.rename(from: tempPath, to: mediaPath)
                report.filesMoved += 1
            } else if !complete, tempSize == nil {
                try DataFile.rename(from: mediaPath, to: tempPath)
                report.filesMoved += 1
            }
            let state: ResourceState = complete ? .complete : .partial
            if state != info.state {
                info.state = state
                changed = true
            }
            if changed { try index.save(info) }
            entries[info.key] = StoreEntry(info: info, checksums: checksums[info.key])
        }
        guard !readOnly else { return entries }
        try index.delete(dropped)
        for folder in [temp, media] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                if let key = CacheKey(hex: name), entries[key] != nil { continue }
                try? FileManager.default.removeItem(atPath: (folder as NSString).appendingPathComponent(name))
                report.orphanFilesRemoved += 1
            }
        }
        return entries
    }
}
