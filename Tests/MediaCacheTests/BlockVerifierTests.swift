import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// The store's parts alone, without a store: block verification on a file and the directory layout.
@Suite struct BlockVerifierTests {
    private let block = BlockChecksums.blockSize

    /// A directory with a data file holding `bytes`, and a verifier over it.
    private func setUp(_ bytes: [UInt8], verifying: Bool = true) throws -> (TemporaryDirectory, DataFile, BlockVerifier) {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)
        let path = dir.url.appendingPathComponent("data").path
        let file = try DataFile(path: path, create: true)
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        return (dir, file, BlockVerifier(layout: CacheLayout(directory: dir.url), verifiesChecksums: verifying))
    }

    /// An entry recording `ranges` of the test resource, with the sums the verifier works out for them.
    private func entry(_ ranges: ByteRangeSet, in file: DataFile) -> StoreEntry {
        let info = ResourceInfo(
            key: testKey("v.mp4"), metadata: testMetadata("v.mp4", length: 3 * block), ranges: ranges, state: .partial,
            createdAt: Date(), lastAccess: Date(), generation: 7, servedFromCache: 0, fetchedFromOrigin: 0)
        var resource = IndexedResource(info: info, checksums: BlockChecksums())
        for (number, sum) in BlockVerifier.sums(of: ranges, beyond: ByteRangeSet(), in: file) {
            resource.checksums[number] = sum
        }
        return StoreEntry(resource, epoch: 0)
    }

    @Test func aReadChecksEachUncheckedBlockItTouchesAndTheSpanHoldsThem() throws {
        let (dir, file, verifier) = try setUp(content(Int(3 * block)))
        defer { dir.cleanup() }
        let entry = entry(ByteRangeSet([0..<(3 * block)]), in: file)
        // A read inside blocks 0 and 1 checks both whole blocks: the span is what is read.
        let pending = try #require(verifier.pendingCheck(entry, 100..<(block + 100)))
        #expect(pending.items.map(\.block) == [0, 1])
        #expect(pending.span == 0..<(2 * block))
        #expect(pending.generation == 7)
        let (bytes, verdicts) = try verifier.check(pending, in: file)
        #expect(bytes == Array(content(Int(3 * block))[0..<Int(2 * block)]))
        #expect(verdicts == [.passed(block: 0, newSum: nil), .passed(block: 1, newSum: nil)])
        // Blocks checked before are not checked again.
        var checked = entry
        checked.verified = [0, 1]
        #expect(verifier.pendingCheck(checked, 100..<(block + 100)) == nil)
        #expect(verifier.pendingCheck(checked, (2 * block)..<(2 * block + 1))?.items.map(\.block) == [2])
    }

    @Test func aChangedByteMakesItsBlockCorruptAndTheCheckStopsThere() throws {
        var bytes = content(Int(3 * block))
        let (dir, file, verifier) = try setUp(bytes)
        defer { dir.cleanup() }
        let entry = entry(ByteRangeSet([0..<(3 * block)]), in: file)
        bytes[Int(block + 5)] ^= 0xFF
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        let pending = try #require(verifier.pendingCheck(entry, 0..<(3 * block)))
        let (_, verdicts) = try verifier.check(pending, in: file)
        #expect(verdicts == [.passed(block: 0, newSum: nil), .corrupt(block..<(2 * block))])
    }

    @Test func aBlockWithoutASumGetsTheOneItsBytesGive() throws {
        let bytes = content(Int(block))
        let (dir, file, verifier) = try setUp(bytes)
        defer { dir.cleanup() }
        var entry = entry(ByteRangeSet([0..<block]), in: file)
        entry.checksums[0] = nil
        let pending = try #require(verifier.pendingCheck(entry, 0..<10))
        let (_, verdicts) = try verifier.check(pending, in: file)
        let sum = BlockChecksums.Sum(range: 0..<block, crc: BlockChecksums.crc(bytes))
        #expect(verdicts == [.passed(block: 0, newSum: sum)])
    }

    @Test func nothingIsCheckedWhenChecksumsAreOffOrBytesAreNotRecorded() throws {
        let (dir, file, verifier) = try setUp(content(Int(2 * block)), verifying: false)
        defer { dir.cleanup() }
        #expect(verifier.pendingCheck(entry(ByteRangeSet([0..<(2 * block)]), in: file), 0..<block) == nil)
        let on = BlockVerifier(layout: verifier.layout, verifiesChecksums: true)
        // Two separate runs in one block: no sum can cover them, so nothing to check against.
        let split = entry(ByteRangeSet([0..<100, 200..<300]), in: file)
        #expect(on.pendingCheck(split, 0..<100) == nil)
    }

    @Test func sumsCoverOnlyTheBlocksNewBytesTouch() throws {
        let (dir, file, _) = try setUp(content(Int(3 * block)))
        defer { dir.cleanup() }
        let sums = BlockVerifier.sums(
            of: ByteRangeSet([0..<(2 * block + 10)]), beyond: ByteRangeSet([0..<block]), in: file)
        #expect(Set(sums.keys) == [1, 2])
        #expect(sums[2]?.range == (2 * block)..<(2 * block + 10))
    }

    @Test func theLayoutNamesEachGenerationsFileInTheFolderOfItsState() {
        let layout = CacheLayout(directory: URL(fileURLWithPath: "/c"))
        let key = testKey("v.mp4")
        #expect(layout.path(for: key, generation: 3, state: .partial) == "/c/temp/\(key.hex).3")
        #expect(layout.path(for: key, generation: 3, state: .complete) == "/c/media/\(key.hex).3")
        #expect(layout.legacyPaths(for: key) == ["/c/temp/\(key.hex)", "/c/media/\(key.hex)"])
        #expect(layout.file("index.sqlite") == "/c/index.sqlite")
    }
}
