import Foundation

/// Works out and checks the checksums of cached blocks: the sums a commit records with its ranges, and what a read
/// must check before its bytes are served (each block once per process). It reads files and computes; recording a
/// result in an entry is the entry table's part.
struct BlockVerifier: Sendable {
    let layout: CacheLayout
    /// False: nothing is checked when read (sums are still recorded).
    let verifiesChecksums: Bool

    /// What a read of `range` must check first: the blocks of it not yet checked in this process, with their
    /// checksum (if recorded) and the run each covers, and the span that holds them and `range` (read at once).
    struct PendingCheck {
        let key: CacheKey
        let generation: Int64
        let items: [Item]
        let span: ByteRange

        /// One block to check: its recorded sum (nil: none yet, one is taken from the bytes) and the run it covers.
        struct Item {
            let block: Int64
            let sum: BlockChecksums.Sum?
            let checked: ByteRange
        }
    }

    /// What the check of one block found.
    enum Verdict: Equatable {
        /// The bytes match (`newSum`: the block had no sum, and this is the one its bytes give).
        case passed(block: Int64, newSum: BlockChecksums.Sum?)
        /// The bytes of this run do not match their recorded sum.
        case corrupt(ByteRange)
    }

    /// The checksums of the blocks that `ranges` adds to `recorded`, each over its run in `ranges`, read from
    /// `file` (outside the store's lock: a commit works them out before it records the ranges).
    static func sums(of ranges: ByteRangeSet, beyond recorded: ByteRangeSet, in file: DataFile)
        -> [Int64: BlockChecksums.Sum]
    {
        var sums: [Int64: BlockChecksums.Sum] = [:]
        for block in freshBlocks(ranges, beyond: recorded) {
            guard let run = BlockChecksums.run(of: block, in: ranges),
                let bytes = try? file.read(count: run.count, at: run.lowerBound)
            else { continue }
            sums[block] = BlockChecksums.Sum(range: run, crc: BlockChecksums.crc(bytes))
        }
        return sums
    }

    /// Computes the checksums of the blocks that `resource`'s ranges gained over `previous`, from the bytes just
    /// written (still in the page cache): called inside the transaction that records the ranges, so a range and
    /// its checksum reach the index together. `computed` holds sums worked out before, used where their run is
    /// still the block's. Returns the blocks checked.
    func updateSums(
        _ resource: inout IndexedResource, previous: ByteRangeSet, file: DataFile?,
        computed: [Int64: BlockChecksums.Sum] = [:]
    ) -> Set<Int64> {
        let blocks = Self.freshBlocks(resource.info.ranges, beyond: previous)
        guard !blocks.isEmpty else { return [] }
        let info = resource.info
        let file = file ?? (try? DataFile(path: layout.path(for: info), readOnly: true))
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

    /// The checks a read of `range` of `entry` needs (nil: every block of it was checked before in this process).
    /// Each checked run overlaps `range` (a block's one run holds the part of `range` inside it), so together they
    /// are one contiguous span of cached bytes.
    func pendingCheck(_ entry: StoreEntry, _ range: ByteRange) -> PendingCheck? {
        guard verifiesChecksums, let blocks = BlockChecksums.blocks(overlapping: range) else { return nil }
        let items = Self.unverified(blocks, of: entry)
        guard !items.isEmpty else { return nil }
        let low = items.map(\.checked.lowerBound).min() ?? range.lowerBound
        let high = items.map(\.checked.upperBound).max() ?? range.upperBound
        let span = Swift.min(low, range.lowerBound)..<Swift.max(high, range.upperBound)
        return PendingCheck(key: entry.info.key, generation: entry.info.generation, items: items, span: span)
    }

    /// Reads the span of `pending` from `file` and checks each block, outside the store's lock (the file of a
    /// generation only ever gains bytes: what was cached when the check was planned stays as it was). Returns the
    /// bytes read (of `pending.span`) and a verdict per block, in order, ending at the first corrupt one. A large
    /// span is read and checked in two halves on two threads, each half's sums computed as it arrives.
    func check(_ pending: PendingCheck, in file: DataFile) throws -> (bytes: [UInt8], verdicts: [Verdict]) {
        let span = pending.span
        let pieces = Self.pieces(of: pending)
        let crcs = UnsafeMutableBufferPointer<UInt32>.allocate(capacity: pending.items.count)
        crcs.initialize(repeating: 0)
        defer { crcs.deallocate() }
        let bytes = try file.read(count: span.count, at: span.lowerBound, in: pieces.map(\.bytes)) { index, piece in
            let start = pieces[index].bytes.lowerBound
            for item in pieces[index].items {
                let checked = pending.items[item].checked
                let from = Int(checked.lowerBound - span.lowerBound) - start
                crcs[item] = BlockChecksums.crc(UnsafeRawBufferPointer(rebasing: piece[from..<(from + checked.count)]))
            }
        }
        var verdicts: [Verdict] = []
        for (index, item) in pending.items.enumerated() {
            let crc = crcs[index]
            if let sum = item.sum, sum.crc != crc {
                verdicts.append(.corrupt(item.checked))
                break
            }
            verdicts.append(.passed(block: item.block, newSum: item.sum == nil ? BlockChecksums.Sum(range: item.checked, crc: crc) : nil))
        }
        return (bytes, verdicts)
    }

    /// Spans at least this long are read and checked in two halves at once (below it, a second thread costs
    /// more than it saves).
    static let parallelSpan = 512 << 10

    /// How `pending.span` is read: whole, or, when it is long and the machine has more than one core, in two
    /// pieces split between two blocks near its middle (bytes relative to the span, and the items each holds).
    static func pieces(of pending: PendingCheck) -> [(bytes: Range<Int>, items: Range<Int>)] {
        let count = pending.span.count
        let whole = [(bytes: 0..<count, items: 0..<pending.items.count)]
        guard count >= parallelSpan, pending.items.count >= 2, cores > 1 else { return whole }
        let middle = pending.span.lowerBound + Int64(count / 2)
        // The first item starting at or after the middle begins the second piece (no item is split).
        guard let second = pending.items.firstIndex(where: { $0.checked.lowerBound >= middle }), second > 0 else {
            return whole
        }
        let cut = Int(pending.items[second].checked.lowerBound - pending.span.lowerBound)
        return [(bytes: 0..<cut, items: 0..<second), (bytes: cut..<count, items: second..<pending.items.count)]
    }

    /// Cores this process may run on.
    private static let cores = ProcessInfo.processInfo.activeProcessorCount

    /// The blocks touched by the bytes `ranges` holds beyond `recorded`.
    private static func freshBlocks(_ ranges: ByteRangeSet, beyond recorded: ByteRangeSet) -> Set<Int64> {
        var fresh = ranges
        for range in recorded { fresh.remove(range) }
        var blocks = Set<Int64>()
        for range in fresh {
            if let touched = BlockChecksums.blocks(overlapping: range) { blocks.formUnion(touched) }
        }
        return blocks
    }

    /// The blocks among `blocks` that `entry` has not verified in this process, with their checksum (if
    /// recorded) and the run of bytes it covers; blocks with nothing to check against are left out.
    private static func unverified(_ blocks: ClosedRange<Int64>, of entry: StoreEntry) -> [PendingCheck.Item] {
        var pending: [PendingCheck.Item] = []
        for block in blocks where !entry.verified.contains(block) {
            let sum = entry.checksums[block]
            // Several runs in one block, or bytes not yet recorded: nothing to check against.
            guard let checked = sum?.range ?? BlockChecksums.run(of: block, in: entry.info.ranges),
                entry.written.contains(checked)
            else { continue }
            pending.append(PendingCheck.Item(block: block, sum: sum, checked: checked))
        }
        return pending
    }
}
