import Foundation

extension CacheStore {
    /// Takes `length` as the resource's true length when the origin's own answers disagreed about it and every
    /// byte of generation `generation` up to `length` is recorded (and none beyond): the copy is then whole. For an
    /// origin whose `Content-Range` totals overstate the file, which its `416` for the bytes past the end then
    /// corrects. False (nothing changed) when the entry is another generation or the bytes do not fit exactly.
    public func adoptLength(key: CacheKey, generation: Int64, length: Int64) throws -> Bool {
        guard length > 0, !isReadOnly else { return false }
        return try table.locked { s in
            guard let entry = table.entry(&s, key), entry.info.generation == generation,
                entry.written == entry.info.ranges
            else { return false }
            return try table.modify(&s, key) { resource, _ -> Bool in
                guard var current = resource, current.info.generation == generation,
                    current.info.ranges.contiguousLength(from: 0) == length,
                    current.info.ranges.ranges.last?.upperBound == length
                else { return false }
                current.info.metadata.contentLength = length
                try table.completeIfWhole(&current)
                resource = current
                logger.warning("resource \(key): the origin's lengths disagreed; its \(length) bytes are the whole file")
                return true
            }
        }
    }
}

extension CacheStore {
    /// Forgets the length recorded for generation `generation` of `key`, keeping its bytes: the origin named two
    /// lengths for one version, so neither is trusted and the next answer's figures are checked afresh (a
    /// healed origin's are then taken; a lying one's show again). False when the entry is another generation,
    /// complete, or knows no length.
    public func forgetLength(key: CacheKey, generation: Int64) throws -> Bool {
        guard !isReadOnly else { return false }
        return try table.locked { s in
            guard let entry = table.entry(&s, key), entry.info.generation == generation,
                entry.info.state != .complete, entry.info.metadata.contentLength != nil
            else { return false }
            try table.commit(&s, key)
            return try table.modify(&s, key) { resource, _ -> Bool in
                guard var current = resource, current.info.generation == generation else { return false }
                current.info.metadata.contentLength = nil
                resource = current
                logger.warning("resource \(key): the origin named two lengths for one version; both are set aside")
                return true
            }
        }
    }
}
