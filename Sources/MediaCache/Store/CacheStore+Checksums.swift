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
    func updateChecksums(_ resource: inout IndexedResource, previous: ByteRangeSet, file: DataFile?) -> Set<Int64> {
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

    /// Checks every block of `range` not yet checked in this process against its checksum, reading the blocks and
    /// `range` in one read; returns that read (its range and bytes) so the caller need not read `range` again, or
    /// nil when every block was checked before. A block recorded before checksums existed gets one now (from the
    /// bytes as they are). A block that fails is dropped from the cache (logged) and `corruptData` is thrown: the
    /// caller fetches those bytes again.
    @discardableResult
    func verifyLocked(_ s: inout StoreState, _ key: CacheKey, _ range: ByteRange) throws -> (ByteRange, [UInt8])? {
        guard configuration.verifiesChecksums, let blocks = BlockChecksums.blocks(overlapping: range),
            let pending = s.entries[key].map({ Self.unverified(blocks, of: $0) }), !pending.isEmpty
        else { return nil }
        // Each checked run overlaps `range` (a block's one run holds the part of `range` inside it), so together
        // they are one contiguous span of cached bytes.
        let low = pending.map(\.checked.lowerBound).min() ?? range.lowerBound
        let high = pending.map(\.checked.upperBound).max() ?? range.upperBound
        let span = Swift.min(low, range.lowerBound)..<Swift.max(high, range.upperBound)
        let bytes = try fileLocked(&s, key).read(count: span.count, at: span.lowerBound)
        for item in pending {
            let from = Int(item.checked.lowerBound - span.lowerBound)
            let crc = bytes.withUnsafeBytes {
                BlockChecksums.crc(UnsafeRawBufferPointer(rebasing: $0[from..<(from + item.checked.count)]))
            }
            if let sum = item.sum, sum.crc != crc {
                try dropCorruptLocked(&s, key, item.checked)
                throw CacheError.corruptData(key, item.checked)
            }
            // Changed in place: a copy of the entry here would copy its whole set of verified blocks per block.
            guard s.entries[key] != nil else { return nil }
            if item.sum == nil {
                s.entries[key]?.checksums[item.block] = BlockChecksums.Sum(range: item.checked, crc: crc)
            }
            s.entries[key]?.verified.insert(item.block)
        }
        return (span, bytes)
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
