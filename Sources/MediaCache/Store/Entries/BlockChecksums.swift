import CCRC32C

/// The CRC-32C of each cached block of one resource, recorded with its ranges and checked when the bytes are read
/// back, so bytes changed on disk behind the cache's back (a bad sector, another program) are fetched again
/// instead of being served.
///
/// Blocks are `blockSize` bytes at fixed offsets. A block's checksum covers the one run of cached bytes it holds
/// (all of it once the block is complete); a block holding two separate runs has none until they join.
struct BlockChecksums: Equatable, Sendable {
    /// The checksum granularity.
    static let blockSize: Int64 = 64 << 10

    /// One block's checksum: the bytes it covers and their CRC-32C.
    struct Sum: Equatable, Sendable {
        var range: ByteRange
        var crc: UInt32
    }

    /// Checksums by block number.
    private(set) var sums: [Int64: Sum] = [:]

    init() {}

    /// The CRC-32C of `bytes`.
    static func crc(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress else { return 0 }
        return media_crc32c(0, base, bytes.count)
    }

    /// The CRC-32C of `bytes`.
    static func crc(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { crc($0) } }

    /// The CRC-32C of `bytes` computed with tables only (the reference the fast path is tested against).
    static func portableCRC(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { raw in raw.baseAddress.map { media_crc32c_portable(0, $0, raw.count) } ?? 0 }
    }

    /// Block numbers overlapping `range`.
    static func blocks(overlapping range: ByteRange) -> ClosedRange<Int64>? {
        guard !range.isEmpty else { return nil }
        return (range.lowerBound / blockSize)...((range.upperBound - 1) / blockSize)
    }

    /// The byte range of block `block`.
    static func bounds(of block: Int64) -> ByteRange { (block * blockSize)..<((block + 1) * blockSize) }

    /// The one run of `present` inside `block`, or nil when it holds none or several.
    static func run(of block: Int64, in present: ByteRangeSet) -> ByteRange? {
        let runs = present.present(in: bounds(of: block))
        return runs.count == 1 ? runs[0] : nil
    }

    /// The checksum of `block`.
    subscript(block: Int64) -> Sum? {
        get { sums[block] }
        set { sums[block] = newValue }
    }

    /// Drops checksums whose bytes are no longer all in `present`.
    mutating func keepOnly(coveredBy present: ByteRangeSet) {
        sums = sums.filter { present.contains($0.value.range) }
    }

    /// True when nothing is recorded.
    var isEmpty: Bool { sums.isEmpty }

    // MARK: - Storage

    /// Each checksum as 20 little-endian bytes: block (8), offset in the block (4), length (4), CRC (4).
    var blob: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sums.count * 20)
        for (block, sum) in sums.sorted(by: { $0.key < $1.key }) {
            Self.append(UInt64(bitPattern: block), 8, to: &bytes)
            Self.append(UInt64(sum.range.lowerBound - block * Self.blockSize), 4, to: &bytes)
            Self.append(UInt64(sum.range.count), 4, to: &bytes)
            Self.append(UInt64(sum.crc), 4, to: &bytes)
        }
        return bytes
    }

    /// Decodes `blob`; entries that cannot be right (outside their block) are left out.
    init(blob: [UInt8]) {
        var index = 0
        while index + 20 <= blob.count {
            let block = Int64(bitPattern: Self.read(blob, index, 8))
            let offset = Int64(Self.read(blob, index + 8, 4))
            let length = Int64(Self.read(blob, index + 12, 4))
            let crc = UInt32(Self.read(blob, index + 16, 4))
            index += 20
            guard block >= 0, block < Int64.max / Self.blockSize - 1, length > 0,
                offset + length <= Self.blockSize
            else { continue }
            let start = block * Self.blockSize + offset
            sums[block] = Sum(range: start..<(start + length), crc: crc)
        }
    }

    private static func append(_ value: UInt64, _ count: Int, to bytes: inout [UInt8]) {
        for shift in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(shift)))) }
    }

    private static func read(_ bytes: [UInt8], _ at: Int, _ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for shift in 0..<count { value |= UInt64(bytes[at + shift]) << (8 * UInt64(shift)) }
        return value
    }
}
