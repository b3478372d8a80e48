/// Where a file's first picture lies and how to decode it: an MP4's from its `moov` box, a photo's the whole
/// file. Enough to decode that one picture without a demuxer (the first frame of a story shows while the
/// demuxers' libraries still load).
public struct FirstPicture: Sendable, Equatable {
    /// The codecs whose first picture this reads.
    public enum Codec: String, Sendable {
        case h264, hevc, jpeg, png, webp
    }

    /// Largest photo decoded this way (a larger one is left to the demuxer).
    public static let photoLimit: Int64 = 32 << 20

    /// The picture's codec.
    public var codec: Codec
    /// The decoder configuration record (`avcC` or `hvcC` body): the codec's extradata.
    public var configuration: [UInt8]
    /// The picture's coded size from the sample entry (0 for a photo: its decoder reads it).
    public var width: Int
    /// See `width`.
    public var height: Int
    /// The first sample's bytes in the file (a photo's: the whole file).
    public var sample: Range<Int64>
    /// The track header's matrix (nine 32-bit values, as FFmpeg's display matrix), nil when it is the identity.
    public var displayMatrix: [Int32]?
    /// The `colr` box's `nclx` values: primaries, transfer, matrix, full range; nil when the file has none.
    public var colour: Colour?
    /// The `pasp` box's pixel aspect ratio (width over height of a sample), nil when the file has none.
    public var pixelAspect: Double?

    /// Colour description from an `nclx` `colr` box.
    public struct Colour: Sendable, Equatable {
        /// ISO/IEC 23091-4 colour primaries.
        public var primaries: Int
        /// Transfer characteristics.
        public var transfer: Int
        /// Matrix coefficients.
        public var matrix: Int
        /// Full-range samples.
        public var fullRange: Bool
    }

    /// A photo of `kind` (`jpeg`, `png`, `webp`, as `MediaLayout` names them), `length` bytes long: the whole file
    /// is its one picture; nil for another kind or a file over `photoLimit`.
    public static func photo(_ kind: String, length: Int64) -> FirstPicture? {
        guard let codec = Codec(rawValue: kind), [.jpeg, .png, .webp].contains(codec), length > 0, length <= photoLimit
        else { return nil }
        return FirstPicture(codec: codec, configuration: [], width: 0, height: 0, sample: 0..<length)
    }

    /// The first picture of the first video track in `moov` (the box's bytes, header included); nil when the file
    /// has no H.264 or HEVC track, or its first sample is not a picture that decodes alone (no sync sample first).
    public static func mp4(moov: [UInt8]) -> FirstPicture? {
        guard let children = try? boxes(in: moov, range: 0..<moov.count, skippingHeader: true) else { return nil }
        for (type, body) in children where type == "trak" {
            if let picture = try? track(moov, body) { return picture }
        }
        return nil
    }

    private static func track(_ bytes: [UInt8], _ trak: Range<Int>) throws -> FirstPicture? {
        let children = try boxes(in: bytes, range: trak)
        guard let mdia = children.first(where: { $0.type == "mdia" })?.body else { return nil }
        let media = try boxes(in: bytes, range: mdia)
        guard let hdlr = media.first(where: { $0.type == "hdlr" })?.body, hdlr.count >= 12,
            String(decoding: bytes[(hdlr.lowerBound + 8)..<(hdlr.lowerBound + 12)], as: UTF8.self) == "vide",
            let minf = media.first(where: { $0.type == "minf" })?.body,
            let stbl = try boxes(in: bytes, range: minf).first(where: { $0.type == "stbl" })?.body
        else { return nil }
        let table = try boxes(in: bytes, range: stbl)
        func body(_ type: String) -> Range<Int>? { table.first { $0.type == type }?.body }
        guard let stsd = body("stsd"), stsd.count >= 16 else { return nil }
        // The first sample entry: a visual sample entry is 78 bytes before its child boxes.
        let entry = try boxHeader(bytes, at: stsd.lowerBound + 8, limit: stsd.upperBound)
        let entryBody = (stsd.lowerBound + 8 + entry.headerSize)..<(stsd.lowerBound + 8 + entry.size)
        let codec: Codec
        let configurationType: String
        switch entry.type {
        case "avc1", "avc3":
            (codec, configurationType) = (.h264, "avcC")
        case "hvc1", "hev1":
            (codec, configurationType) = (.hevc, "hvcC")
        default:
            return nil
        }
        guard entryBody.count >= 78 else { return nil }
        let width = Int(u16(bytes, entryBody.lowerBound + 24))
        let height = Int(u16(bytes, entryBody.lowerBound + 26))
        let entryChildren = try boxes(in: bytes, range: (entryBody.lowerBound + 78)..<entryBody.upperBound)
        guard let configuration = entryChildren.first(where: { $0.type == configurationType })?.body,
            !configuration.isEmpty
        else { return nil }
        // The first sample must decode alone: the first sync sample is sample 1 (no `stss`: every sample is one).
        if let stss = body("stss") {
            guard stss.count >= 12, u32(bytes, stss.lowerBound + 4) > 0, u32(bytes, stss.lowerBound + 8) == 1 else {
                return nil
            }
        }
        guard let stsz = body("stsz"), stsz.count >= 12 else { return nil }
        var size = Int64(u32(bytes, stsz.lowerBound + 4))
        if size == 0 {
            guard u32(bytes, stsz.lowerBound + 8) > 0, stsz.count >= 16 else { return nil }
            size = Int64(u32(bytes, stsz.lowerBound + 12))
        }
        let offset: Int64
        if let stco = body("stco"), stco.count >= 12, u32(bytes, stco.lowerBound + 4) > 0 {
            offset = Int64(u32(bytes, stco.lowerBound + 8))
        } else if let co64 = body("co64"), co64.count >= 16, u32(bytes, co64.lowerBound + 4) > 0 {
            offset = Int64(bitPattern: UInt64(u32(bytes, co64.lowerBound + 8)) << 32 | UInt64(u32(bytes, co64.lowerBound + 12)))
        } else {
            return nil
        }
        guard size > 0, size <= 64 << 20, offset >= 0 else { return nil }
        var picture = FirstPicture(
            codec: codec, configuration: Array(bytes[configuration]), width: width, height: height,
            sample: offset..<(offset + size))
        if let tkhd = children.first(where: { $0.type == "tkhd" })?.body { picture.displayMatrix = matrix(bytes, tkhd) }
        if let colr = entryChildren.first(where: { $0.type == "colr" })?.body, colr.count >= 11,
            String(decoding: bytes[colr.lowerBound..<(colr.lowerBound + 4)], as: UTF8.self) == "nclx"
        {
            let start = colr.lowerBound + 4
            picture.colour = Colour(
                primaries: Int(u16(bytes, start)), transfer: Int(u16(bytes, start + 2)), matrix: Int(u16(bytes, start + 4)),
                fullRange: bytes[start + 6] & 0x80 != 0)
        }
        if let pasp = entryChildren.first(where: { $0.type == "pasp" })?.body, pasp.count >= 8 {
            let (across, down) = (u32(bytes, pasp.lowerBound), u32(bytes, pasp.lowerBound + 4))
            if across > 0, down > 0 { picture.pixelAspect = Double(across) / Double(down) }
        }
        return picture
    }

    /// The track header's matrix, nil when it is the identity (or the header is too short).
    private static func matrix(_ bytes: [UInt8], _ tkhd: Range<Int>) -> [Int32]? {
        guard let version = tkhd.isEmpty ? nil : bytes[tkhd.lowerBound] else { return nil }
        // After version/flags: times, track ID, reserved, duration, reserved, layer, group, volume, reserved.
        let start = tkhd.lowerBound + (version == 1 ? 4 + 8 + 8 + 4 + 4 + 8 : 4 + 4 + 4 + 4 + 4 + 4) + 8 + 2 + 2 + 2 + 2
        guard start + 36 <= tkhd.upperBound else { return nil }
        let values = (0..<9).map { Int32(bitPattern: u32(bytes, start + $0 * 4)) }
        let identity: [Int32] = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x4000_0000]
        return values == identity ? nil : values
    }

    /// The boxes directly inside `range` (after the enclosing box's own header when `skippingHeader`).
    private static func boxes(
        in bytes: [UInt8], range: Range<Int>, skippingHeader: Bool = false
    ) throws -> [(type: String, body: Range<Int>)] {
        var offset = range.lowerBound
        if skippingHeader { offset += try boxHeader(bytes, at: offset, limit: range.upperBound).headerSize }
        var found: [(type: String, body: Range<Int>)] = []
        while offset + 8 <= range.upperBound, found.count < MP4BoxReader.maxTopLevelBoxes {
            let header = try boxHeader(bytes, at: offset, limit: range.upperBound)
            found.append((header.type, (offset + header.headerSize)..<(offset + header.size)))
            offset += header.size
        }
        return found
    }

    private static func boxHeader(_ bytes: [UInt8], at offset: Int, limit: Int) throws -> (type: String, size: Int, headerSize: Int) {
        let header = try MP4BoxReader.boxHeader(
            Array(bytes[offset..<Swift.min(limit, offset + 16)]), at: Int64(offset), limit: Int64(limit))
        return (header.type, Int(header.size), Int(header.headerSize))
    }

    private static func u16(_ bytes: [UInt8], _ index: Int) -> UInt16 { UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]) }

    private static func u32(_ bytes: [UInt8], _ index: Int) -> UInt32 { MP4BoxReader.bigEndian32(bytes, index) }
}
