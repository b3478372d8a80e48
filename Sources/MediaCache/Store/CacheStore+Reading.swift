import Foundation

extension CacheStore {
    // MARK: - Reading

    /// Reads `range` of a resource; every byte must be available. Pass `generation` to fail with `resourceChanged`
    /// instead of reading a newer version than the one the reader started with. Bytes that fail their checksum
    /// are dropped from the cache and `corruptData` is thrown (fetch them again).
    public func read(key: CacheKey, range: ByteRange, generation: Int64? = nil) throws -> [UInt8] {
        try read(key: key, range: range, generation: generation, noticingChangesWithin: 0)
    }

    /// As `read(key:range:generation:)`, trusting a look at other processes' changes taken less than `maxAge` ago.
    func read(key: CacheKey, range: ByteRange, generation: Int64?, noticingChangesWithin maxAge: UInt64) throws
        -> [UInt8]
    {
        try reader.read(key: key, range: range, generation: generation, noticingChangesWithin: maxAge)
    }

    /// An open read-only descriptor of a completely cached resource's data file (the caller closes it), for
    /// zero-copy sending, with the stored version and the bytes `select` picked from it (nil: none, e.g. a HEAD);
    /// nil unless every byte is cached and the picked ones passed their checksums. Eviction renames the file, so
    /// an open descriptor stays valid while it is read. One lock and index look-up for the lot (a proxy's hit path).
    /// `holding`: the version whose file the caller holds open from an earlier call; when it is still the one
    /// stored, nothing is opened (the descriptor is nil) and the caller sends from the file it holds.
    /// `checking` false returns nil instead of reading blocks not yet checked in this process, or of waiting for
    /// the store's lock while a commit holds it (a caller that must not wait on the disk or the index, e.g. an
    /// event loop, answers such a request elsewhere).
    public func openCompleteFile(
        for key: CacheKey, holding: Int64? = nil, checking: Bool = true, sending select: (ResourceMetadata) -> ByteRange?
    ) -> CompleteFile? {
        reader.openCompleteFile(for: key, holding: holding, checking: checking, sending: select)
    }
}
