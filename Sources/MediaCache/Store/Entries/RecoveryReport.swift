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
