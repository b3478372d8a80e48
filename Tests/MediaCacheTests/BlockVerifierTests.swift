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
    private func entry(_ ranges: ByteRangeSet, in file: DataFile, length: Int64? = nil) -> StoreEntry {
        let info = ResourceInfo(
            key: testKey("v.mp4"), metadata: testMetadata("v.mp4", length: length ?? 3 * block), ranges: ranges, state: .partial,
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

    /// A long span (a megabyte) is read and checked in two halves at once, split between two blocks, with the same
    /// bytes and verdicts as a short one: in order, ending at the first corrupt block, whichever half holds it.
    @Test(arguments: [3, 11]) func aLongSpanIsCheckedInTwoHalvesWithTheSameVerdicts(corruptBlock: Int) throws {
        let length = 16 * block
        var bytes = content(Int(length))
        let (dir, file, verifier) = try setUp(bytes)
        defer { dir.cleanup() }
        let entry = entry(ByteRangeSet([0..<length]), in: file, length: length)
        // A read from the middle of block 0 to the middle of block 15: the span is the 16 whole blocks.
        let pending = try #require(verifier.pendingCheck(entry, 100..<(length - 100)))
        #expect(pending.span == 0..<length)
        let pieces = BlockVerifier.pieces(of: pending)
        #expect(pieces.map(\.bytes) == [0..<Int(8 * block), Int(8 * block)..<Int(length)])
        #expect(pieces.map(\.items) == [0..<8, 8..<16])
        let (whole, passed) = try verifier.check(pending, in: file)
        #expect(whole == bytes)
        #expect(passed == (0..<16).map { BlockVerifier.Verdict.passed(block: Int64($0), newSum: nil) })
        bytes[corruptBlock * Int(block) + 7] ^= 0x01
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        let (read, verdicts) = try verifier.check(pending, in: file)
        #expect(read == bytes)
        let bad = Int64(corruptBlock) * block..<Int64(corruptBlock + 1) * block
        #expect(verdicts == (0..<corruptBlock).map { .passed(block: Int64($0), newSum: nil) } + [.corrupt(bad)])
    }

    /// A span shorter than half a megabyte, or one whose blocks all start in its first half, is read whole.
    @Test func aShortSpanIsReadWhole() throws {
        let (dir, file, verifier) = try setUp(content(Int(16 * block)))
        defer { dir.cleanup() }
        let entry = entry(ByteRangeSet([0..<(16 * block)]), in: file, length: 16 * block)
        let short = try #require(verifier.pendingCheck(entry, 0..<(7 * block)))
        #expect(BlockVerifier.pieces(of: short).map(\.bytes) == [0..<Int(7 * block)])
        let (bytes, verdicts) = try verifier.check(short, in: file)
        #expect(bytes == Array(content(Int(16 * block))[0..<Int(7 * block)]))
        #expect(verdicts.count == 7)
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
