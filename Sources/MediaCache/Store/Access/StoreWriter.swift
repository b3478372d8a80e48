import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's write path: bytes into a version's data file (room made first, the file written outside the entry
/// table's lock), and commits that sync them and record them with their block sums.
struct StoreWriter: Sendable {
    let table: EntryTable
    let evictor: Evictor
    let configuration: CacheConfiguration
    let faults: (any StorageFaultInjecting)?
    let now: @Sendable () -> Date

    /// Writes `bytes` at `offset` (see `CacheStore.write`), leaving a commit that came due to the caller (`commitDue`), which can run it where blocking on
    /// the disk costs nothing (the fetches' own thread pool). The bytes go to the file outside the store's lock:
    /// they are not readable (nor counted as written) until they are there, and budgets count them meanwhile.
    func storeBytes(
        key: CacheKey, generation: Int64, offset: Int64, bytes: UnsafeRawBufferPointer
    ) throws -> (stored: Bool, commitDue: Bool) {
        guard bytes.count > 0 else { return (true, false) }
        let range = offset..<(offset + Int64(bytes.count))
        let reserved = try table.locked { s -> (file: DataFile, newBytes: Int64)?? in
            guard let entry = table.entry(&s, key), entry.info.generation == generation else {
                throw CacheError.resourceChanged(key)
            }
            if let length = entry.info.metadata.contentLength, range.upperBound > length || offset < 0 {
                throw CacheError.outOfBounds(key, range, length: length)
            }
            let newBytes = Int64(bytes.count) - entry.written.present(in: range).reduce(0) { $0 + Int64($1.count) }
            guard newBytes > 0 else { return .some(nil) }
            guard try evictor.makeRoom(&s, forNewBytes: newBytes, of: key) else { return nil }
            let file: DataFile
            do {
                file = try table.file(&s, key)
            } catch CacheError.notCached {
                throw CacheError.resourceChanged(key)  // evicted by another process meanwhile
            }
            if let code = faults?.writeErrno { throw CacheError.io("cannot write \(file.path): \(String(cString: strerror(code)))") }
            guard s.resources[key]?.entry?.info.generation == generation else { throw CacheError.resourceChanged(key) }
            s.writing.bytes += newBytes
            return (file, newBytes)
        }
        guard let reserved else { return (false, false) }
        guard let (file, newBytes) = reserved else { return (true, false) }
        faults?.beforeDiskWork()
        do {
            try file.write(bytes, at: offset)
        } catch {
            table.lockedAsSeen { s in s.writing.bytes -= newBytes }
            throw error
        }
        let due = try table.locked { s -> Bool in
            s.writing.bytes -= newBytes
            let entry = try table.noteWritten(&s, key, generation: generation, range: range)
            let complete = entry.info.metadata.contentLength.map { entry.written.contains(0..<$0) } ?? false
            return complete || entry.unrecordedBytes >= configuration.commitInterval
                || now().timeIntervalSince(entry.lastRecorded) >= configuration.commitLatency
        }
        return (true, due)
    }

    /// Syncs `key`'s unrecorded bytes outside the lock, then records them with their sums (see
    /// `CacheStore.commit`); runs an eviction pass when one is due.
    func commit(key: CacheKey) throws {
        let pending = table.locked {
            s -> (file: DataFile?, ranges: ByteRangeSet, recorded: ByteRangeSet, generation: Int64, fault: Int32?)? in
            guard let entry = s.entry(of: key), entry.unrecordedBytes > 0 else { return nil }
            return (s.resources[key]?.file, entry.written, entry.info.ranges, entry.info.generation, faults?.syncErrno)
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
        // The checksums of the blocks these bytes touch, worked out here rather than under the lock.
        let sums = failure == nil
            ? pending.file.map { BlockVerifier.sums(of: pending.ranges, beyond: pending.recorded, in: $0) } ?? [:] : [:]
        try table.locked { s in
            try table.record(
                &s, key, durable: pending.ranges, generation: pending.generation, syncFailed: failure != nil, sums: sums)
        }
        if let failure { throw failure }
        try table.locked { s in
            let date = now()
            if evictor.isDue(&s, at: date) { _ = try evictor.enforceBudgets(&s, excluding: nil, at: date) }
        }
    }

    /// Commits every resource with unrecorded bytes.
    func commitAll() throws {
        try table.locked { s in
            for key in Array(s.unrecorded) { try table.commit(&s, key) }
        }
    }
}

/// New bytes reserved in the budgets and being written outside the lock right now (the writer's alone).
struct WritesInFlight: Sendable {
    fileprivate(set) var bytes: Int64 = 0
}
