import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheStore {
    // MARK: - Checksums

    /// Computes the checksums of the blocks that `resource`'s ranges gained over `previous`, from the bytes just
    /// written (still in the page cache): called inside the transaction that records the ranges, so a range and
    /// its checksum reach the index together. Returns the blocks checked.
    func updateChecksums(
        _ resource: inout IndexedResource, previous: ByteRangeSet, file: DataFile?,
        computed: [Int64: BlockChecksums.Sum] = [:]
    ) -> Set<Int64> {
        var fresh = resource.info.ranges
        for range in previous { fresh.remove(range) }
        guard !fresh.isEmpty else { return [] }
        var blocks = Set<Int64>()
        for range in fresh {
            if let touched = BlockChecksums.blocks(overlapping: range) { blocks.formUnion(touched) }
        }
        let info = resource.info
        let file = file ?? (try? DataFile(path: path(for: info.key, generation: info.generation, state: info.state), readOnly: true))
        var checked = Set<Int64>()
        for block in blocks {
            // Worked out before the lock over the same run (another process's bytes did not extend it meanwhile).
            if let sum = computed[block], sum.range == BlockChecksums.run(of: block, in: info.ranges) {
                resource.checksums[block] = sum
                checked.insert(block)
                continue
            }
            guard let run = BlockChecksums.run(of: block, in: info.ranges), let file,
                let bytes = try? file.read(count: run.count, at: run.lowerBound)
            else {
                resource.checksums[block] = nil
                continue
            }
            resource.checksums[block] = BlockChecksums.Sum(range: run, crc: BlockChecksums.crc(bytes))
            checked.insert(block)
        }
        return checked
    }

    /// The checksums of the blocks that `ranges` adds to `recorded`, each over its run in `ranges`, read from
    /// `file` (outside the store's lock: a commit works them out before it records the ranges).
    static func checksums(of ranges: ByteRangeSet, beyond recorded: ByteRangeSet, in file: DataFile)
        -> [Int64: BlockChecksums.Sum]
    {
        var fresh = ranges
        for range in recorded { fresh.remove(range) }
        var blocks = Set<Int64>()
        for range in fresh {
            if let touched = BlockChecksums.blocks(overlapping: range) { blocks.formUnion(touched) }
        }
        var sums: [Int64: BlockChecksums.Sum] = [:]
        for block in blocks {
            guard let run = BlockChecksums.run(of: block, in: ranges),
                let bytes = try? file.read(count: run.count, at: run.lowerBound)
            else { continue }
            sums[block] = BlockChecksums.Sum(range: run, crc: BlockChecksums.crc(bytes))
        }
        return sums
    }

    /// What a read of `range` must check first: the blocks of it not yet checked in this process, with their
    /// checksum (if recorded) and the run each covers, and the span that holds them and `range` (read at once).
    struct PendingCheck {
        let key: CacheKey
        let generation: Int64
        let items: [(block: Int64, sum: BlockChecksums.Sum?, checked: ByteRange)]
        let span: ByteRange
    }

    /// The checks a read of `range` needs (nil: every block of it was checked before in this process). Each checked
    /// run overlaps `range` (a block's one run holds the part of `range` inside it), so together they are one
    /// contiguous span of cached bytes.
    func pendingCheckLocked(_ s: inout StoreState, _ key: CacheKey, _ range: ByteRange) -> PendingCheck? {
        guard configuration.verifiesChecksums, let blocks = BlockChecksums.blocks(overlapping: range),
            let entry = s.entries[key]
        else { return nil }
        let items = Self.unverified(blocks, of: entry)
        guard !items.isEmpty else { return nil }
        let low = items.map(\.checked.lowerBound).min() ?? range.lowerBound
        let high = items.map(\.checked.upperBound).max() ?? range.upperBound
        let span = Swift.min(low, range.lowerBound)..<Swift.max(high, range.upperBound)
        return PendingCheck(key: key, generation: entry.info.generation, items: items, span: span)
    }

    /// Reads the span of `pending` from `file` and checks it, outside the store's lock (the file of a generation
    /// only ever gains bytes: what was cached when the check was planned stays as it was); then records the blocks
    /// that passed. A block recorded before checksums existed gets one now (from the bytes as they are). A block
    /// that fails is dropped from the cache (logged) and `corruptData` is thrown: the caller fetches those bytes
    /// again. Returns the bytes read (of `pending.span`).
    func check(_ pending: PendingCheck, in file: DataFile) throws -> [UInt8] {
        let span = pending.span
        let bytes = try file.read(count: span.count, at: span.lowerBound)
        let crcs = pending.items.map { item in
            let from = Int(item.checked.lowerBound - span.lowerBound)
            return bytes.withUnsafeBytes {
                BlockChecksums.crc(UnsafeRawBufferPointer(rebasing: $0[from..<(from + item.checked.count)]))
            }
        }
        let key = pending.key
        try locked { s in
            // Replaced or evicted meanwhile: nothing to record (the bytes read are the old version's, as a read just
            // before the change would have returned).
            guard s.entries[key]?.info.generation == pending.generation else { return }
            for (item, crc) in zip(pending.items, crcs) {
                if let sum = item.sum, sum.crc != crc {
                    try dropCorruptLocked(&s, key, item.checked)
                    throw CacheError.corruptData(key, item.checked)
                }
                // Changed in place: a copy of the entry here would copy its whole set of verified blocks per block.
                guard s.entries[key] != nil else { return }
                if item.sum == nil {
                    s.entries[key]?.checksums[item.block] = BlockChecksums.Sum(range: item.checked, crc: crc)
                }
                s.entries[key]?.verified.insert(item.block)
            }
        }
        return bytes
    }

    /// The blocks among `blocks` that `entry` has not verified in this process, with their checksum (if
    /// recorded) and the run of bytes it covers; blocks with nothing to check against are left out.
    private static func unverified(_ blocks: ClosedRange<Int64>, of entry: StoreEntry)
        -> [(block: Int64, sum: BlockChecksums.Sum?, checked: ByteRange)]
    {
        var pending: [(block: Int64, sum: BlockChecksums.Sum?, checked: ByteRange)] = []
        for block in blocks where !entry.verified.contains(block) {
            let sum = entry.checksums[block]
            // Several runs in one block, or bytes not yet recorded: nothing to check against.
            guard let checked = sum?.range ?? BlockChecksums.run(of: block, in: entry.info.ranges),
                entry.written.contains(checked)
            else { continue }
            pending.append((block, sum, checked))
        }
        return pending
    }

    /// Forgets `range` of `key` (its bytes failed their checksum): a complete file becomes partial again.
    func dropCorruptLocked(_ s: inout StoreState, _ key: CacheKey, _ range: ByteRange) throws {
        guard var entry = s.entries[key] else { return }
        logger.error(
            "cache entry \(key): bytes \(range.lowerBound)-\(range.upperBound - 1) do not match their checksum (changed on disk); dropping them to fetch them again")
        let blocks = BlockChecksums.blocks(overlapping: range)
        guard !isReadOnly else {
            // Nothing can be moved or recorded: the bytes are gone from this process's view only.
            entry.written.remove(range)
            entry.info.ranges.remove(range)
            for block in blocks ?? 0...(-1) {
                entry.checksums[block] = nil
                entry.verified.remove(block)
            }
            s.entries[key] = entry
            return
        }
        let generation = entry.info.generation
        try modifyLocked(&s, key) { resource, _ in
            guard var current = resource, current.info.generation == generation else { return }
            current.info.ranges.remove(range)
            for block in blocks ?? 0...(-1) { current.checksums[block] = nil }
            if current.info.state == .complete {
                try DataFile.rename(
                    from: path(for: key, generation: generation, state: .complete),
                    to: path(for: key, generation: generation, state: .partial))
                current.info.state = .partial
            }
            resource = current
        }
        if var updated = s.entries[key] {
            // Bytes this process wrote there and has not recorded are just as suspect.
            updated.written.remove(range)
            updated.unrecordedBytes = updated.written.total - updated.info.ranges.total
            for block in blocks ?? 0...(-1) { updated.verified.remove(block) }
            s.entries[key] = updated
        }
    }
}
