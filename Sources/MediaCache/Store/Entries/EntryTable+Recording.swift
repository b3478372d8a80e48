import Foundation

extension EntryTable {
    // MARK: - Recording ranges

    /// Syncs and records under the lock (shutdown, and closing one of too many open files).
    func commit(_ s: inout StoreState, _ key: CacheKey) throws {
        guard let entry = s.entry(of: key), entry.unrecordedBytes > 0 else { return }
        var syncFailed = false
        if let file = s.resources[key]?.file {
            do { try file.sync() } catch { syncFailed = true }
        }
        try record(&s, key, durable: entry.written, generation: entry.info.generation, syncFailed: syncFailed)
    }

    /// Records `durable` (ranges whose bytes were synced) for the entry, if it is still that generation: the
    /// ranges this process added go into the index on top of whatever other processes recorded meanwhile, with
    /// the checksums of the blocks they touch (`sums`: worked out before the lock where possible).
    func record(
        _ s: inout StoreState, _ key: CacheKey, durable: ByteRangeSet, generation: Int64, syncFailed: Bool,
        sums: [Int64: BlockChecksums.Sum] = [:]
    ) throws {
        guard var entry = s.entry(of: key), entry.info.generation == generation else { return }
        if syncFailed {
            logger.error(
                "cache entry \(key): syncing its data failed; \(entry.unrecordedBytes) unrecorded bytes will be fetched again")
            entry.written = entry.info.ranges
            entry.unrecordedBytes = 0
            s.update(key) { $0.entry = entry }
            s.unrecorded.remove(key)
            view.publish(key, entry)
            changes.signal()
            return
        }
        var fresh = durable
        for range in entry.info.ranges { fresh.remove(range) }
        guard !fresh.isEmpty else { return }
        let file = s.resources[key]?.file
        let date = now()
        let checked = try modify(&s, key) { resource, _ -> Set<Int64> in
            // Evicted or replaced meanwhile (here or by another process): these bytes belong to no entry.
            guard var current = resource, current.info.generation == generation else { return [] }
            let previous = current.info.ranges
            current.info.ranges.formUnion(fresh)
            current.info.lastAccess = Swift.max(current.info.lastAccess, entry.info.lastAccess)
            let blocks = verifier.updateSums(&current, previous: previous, file: file, computed: sums)
            try completeIfWhole(&current)
            resource = current
            return blocks
        }
        guard var updated = s.entry(of: key), updated.info.generation == generation else { return }
        updated.lastRecorded = date
        updated.verified.formUnion(checked)
        s.update(key) { $0.entry = updated }
    }

    /// A partial resource whose recorded bytes now make it whole moves into `media/` and is complete.
    func completeIfWhole(_ resource: inout IndexedResource) throws {
        guard resource.info.state == .partial, resource.info.isComplete else { return }
        let (key, generation) = (resource.info.key, resource.info.generation)
        try DataFile.rename(
            from: layout.path(for: key, generation: generation, state: .partial),
            to: layout.path(for: key, generation: generation, state: .complete))
        resource.info.state = .complete
    }

    // MARK: - Removing

    /// Removes an entry: its file is renamed into `trash/` (unlinked in the background; a process still reading
    /// it keeps its bytes) and its row deleted, in one index transaction. Returns the bytes it held.
    @discardableResult
    func discard(_ s: inout StoreState, _ key: CacheKey) throws -> Int64 {
        let unrecorded = s.resources[key]?.entry?.unrecordedBytes ?? 0
        let recorded = try modify(&s, key) { resource, _ -> Int64 in
            guard let current = resource else { return 0 }
            try layout.moveToTrash(layout.path(for: current.info), name: key.hex)
            resource = nil
            return current.info.cachedBytes
        }
        return recorded + unrecorded
    }

    // MARK: - Checked blocks

    /// Records what checking blocks of generation `generation` of `key` found: blocks that passed are not checked
    /// again in this process (a block without a sum gets the one its bytes give); the first corrupt run is dropped
    /// and `corruptData` thrown, so the caller fetches those bytes again.
    func take(_ verdicts: [BlockVerifier.Verdict], of key: CacheKey, generation: Int64, _ s: inout StoreState) throws {
        // Replaced or evicted meanwhile: nothing to record (the bytes read are the old version's, as a read just
        // before the change would have returned).
        guard s.resources[key]?.entry?.info.generation == generation else { return }
        for verdict in verdicts {
            switch verdict {
            case .corrupt(let range):
                try dropCorrupt(&s, key, range)
                throw CacheError.corruptData(key, range)
            case .passed(let block, let newSum):
                // Changed in place: a copy of the entry here would copy its whole set of verified blocks per block.
                guard s.entry(of: key) != nil else { return }
                if let newSum { s.resources[key]?.entry?.checksums[block] = newSum }
                s.resources[key]?.entry?.verified.insert(block)
            }
        }
    }

    /// Forgets `range` of `key` (its bytes failed their checksum): a complete file becomes partial again.
    func dropCorrupt(_ s: inout StoreState, _ key: CacheKey, _ range: ByteRange) throws {
        guard var entry = s.entry(of: key) else { return }
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
            s.update(key) { $0.entry = entry }
            view.publish(key, entry)
            changes.signal()
            return
        }
        let generation = entry.info.generation
        try modify(&s, key) { resource, _ in
            guard var current = resource, current.info.generation == generation else { return }
            current.info.ranges.remove(range)
            for block in blocks ?? 0...(-1) { current.checksums[block] = nil }
            if current.info.state == .complete {
                try DataFile.rename(
                    from: layout.path(for: key, generation: generation, state: .complete),
                    to: layout.path(for: key, generation: generation, state: .partial))
                current.info.state = .partial
            }
            resource = current
        }
        if var updated = s.entry(of: key) {
            // Bytes this process wrote there and has not recorded are just as suspect.
            updated.written.remove(range)
            updated.unrecordedBytes = updated.written.total - updated.info.ranges.total
            for block in blocks ?? 0...(-1) { updated.verified.remove(block) }
            s.update(key) { $0.entry = updated }
            view.publish(key, updated)
        }
    }
}
