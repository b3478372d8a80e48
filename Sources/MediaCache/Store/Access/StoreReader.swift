import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's read path: bytes of a range (checked against their block sums the first time this process reads
/// them) and complete files opened for zero-copy sending. The disk is read outside the entry table's lock.
struct StoreReader: Sendable {
    let table: EntryTable
    let layout: CacheLayout
    let faults: (any StorageFaultInjecting)?
    let now: @Sendable () -> Date

    /// Reads `range` of `key` (of `generation`, when given), trusting a look at other processes' changes taken less
    /// than `maxAge` nanoseconds ago. See `CacheStore.read(key:range:generation:)`.
    func read(key: CacheKey, range: ByteRange, generation: Int64?, noticingChangesWithin maxAge: UInt64) throws
        -> [UInt8]
    {
        let (file, pending) = try table.locked(noticingChangesWithin: maxAge) {
            s -> (DataFile, BlockVerifier.PendingCheck?) in
            if let reason = faults?.takeGiveUpBeforeNextRead() {
                try table.discard(&s, key)
                try table.giveUp(&s, key, reason: reason, recording: false)
            }
            do {
                guard let entry = table.entry(&s, key) else { throw CacheError.notCached(key) }
                if let generation, generation != entry.info.generation { throw CacheError.resourceChanged(key) }
                guard entry.written.contains(range) else { throw CacheError.rangeNotCached(key, range) }
            }
            let file = try table.file(&s, key)
            // The entry is changed in place from here on (a copy held meanwhile would make each change copy it).
            table.noteAccess(&s, key, at: now())
            return (file, s.entry(of: key).flatMap { table.verifier.pendingCheck($0, range) })
        }
        faults?.beforeDiskWork()
        // The disk is read (and checked) outside the lock: the file stays open while it is held here, and the
        // bytes of a range once cached never change in it.
        guard let pending else { return try file.read(count: range.count, at: range.lowerBound) }
        let read = try check(pending, in: file)
        let from = Int(range.lowerBound - pending.span.lowerBound)
        return pending.span == range ? read : Array(read[from..<(from + range.count)])
    }

    /// A completely cached resource's data file opened for sending, with the picked bytes checked (see
    /// `CacheStore.openCompleteFile`).
    func openCompleteFile(
        for key: CacheKey, holding: Int64? = nil, checking: Bool = true, sending select: (ResourceMetadata) -> ByteRange?
    ) -> CompleteFile? {
        typealias Found = (generation: Int64, metadata: ResourceMetadata, range: ByteRange?, file: DataFile?, checks: [BlockVerifier.PendingCheck])
        func lookUp(_ s: inout StoreState) -> Found? {
            guard let entry = table.entry(&s, key), entry.info.state == .complete,
                let length = entry.info.metadata.contentLength
            else { return nil }
            let metadata = entry.info.metadata
            let range = select(metadata)
            var checks: [BlockVerifier.PendingCheck] = []
            if let range {
                guard range.lowerBound >= 0, range.upperBound <= length else { return nil }
                // Each block is checked once per process before its bytes leave without passing through this
                // process (a megabyte at a time, so a large range is never read into memory at once).
                var window = range.lowerBound
                while window < range.upperBound {
                    let next = Swift.min(range.upperBound, window + (1 << 20))
                    if let current = s.entry(of: key),
                        let pending = table.verifier.pendingCheck(current, window..<next)
                    {
                        checks.append(pending)
                    }
                    window = next
                }
            }
            guard checks.isEmpty || checking else { return nil }
            table.noteAccess(&s, key, at: now())
            let file = checks.isEmpty ? nil : try? table.file(&s, key)
            return (entry.info.generation, metadata, range, file, checks)
        }
        // A caller that must not wait on the disk does not wait for the lock either (a commit may hold it while
        // it records ranges in the index).
        let found = checking
            ? table.locked(noticingChangesWithin: CacheStore.hitPathStaleness, lookUp)
            : table.lockedIfAvailable(noticingChangesWithin: CacheStore.hitPathStaleness, lookUp) ?? nil
        guard let found else { return nil }
        if !found.checks.isEmpty {
            // Checked outside the lock; then still this version, still whole?
            guard let file = found.file else { return nil }
            for pending in found.checks {
                do { _ = try check(pending, in: file) } catch { return nil }
            }
            let whole = table.locked { s in
                guard let current = s.entry(of: key), current.info.generation == found.generation,
                    current.info.state == .complete, let length = current.info.metadata.contentLength
                else { return false }
                return current.written.contains(0..<length)
            }
            guard whole else { return nil }
        }
        let (generation, metadata, range) = (found.generation, found.metadata, found.range)
        // A complete version's file is never written again (bytes found corrupt are moved out of the complete
        // state first, and come back only as the same bytes), and its name holds the version's generation, which
        // no other version ever has: a file opened for this generation holds exactly the bytes checked above.
        if holding == generation {
            return CompleteFile(descriptor: nil, version: generation, metadata: metadata, range: range)
        }
        // Opened without the lock (other threads answer from the store meanwhile): the file, or nothing if it was
        // evicted meanwhile (the caller then reads through the loader).
        let fd = SystemCalls.openFile(layout.path(for: key, generation: generation, state: .complete), O_RDONLY | O_CLOEXEC, 0)
        guard fd >= 0 else { return nil }
        return CompleteFile(descriptor: fd, version: generation, metadata: metadata, range: range)
    }
    /// Checks the span of `pending` in `file` outside the lock, then records what the check found (see
    /// `BlockVerifier.check` and `EntryTable.take(_:of:generation:_:)`). Returns the bytes read (of `pending.span`).
    func check(_ pending: BlockVerifier.PendingCheck, in file: DataFile) throws -> [UInt8] {
        let (bytes, verdicts) = try table.verifier.check(pending, in: file)
        try table.locked { s in try table.take(verdicts, of: pending.key, generation: pending.generation, &s) }
        return bytes
    }
}

/// A completely cached resource's data file opened for sending (see `CacheStore.openCompleteFile`).
public struct CompleteFile: Sendable {
    /// Read-only descriptor, which the receiver closes; nil when the receiver holds this version's file already.
    public let descriptor: Int32?
    /// Which version of the resource this is (its data file's generation; no two versions share one).
    public let version: Int64
    /// The version stored (its length is the file's).
    public let metadata: ResourceMetadata
    /// The bytes picked to send, checked; nil when none were picked.
    public let range: ByteRange?
}
