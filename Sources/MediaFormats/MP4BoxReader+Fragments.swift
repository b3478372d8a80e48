import Foundation

/// Fragmented MP4 (`moov` with `mvex`, then `moof`/`mdat` pairs): the duration from `mvhd`, `mehd`, a `sidx`
/// covering the file, or the last fragment (found through `mfra` at the end, else by walking the fragments).
extension MP4BoxReader {
    /// A track's clock and defaults, from `moov`.
    struct TrackTiming: Equatable {
        var timescale: UInt64
        var defaultSampleDuration: UInt64 = 0
    }

    static func fragmentedLayout(
        of reader: some ByteRangeReader, length: Int64, moov: Range<Int64>, moovBytes: [UInt8], firstMoof: Range<Int64>,
        sidx: Range<Int64>?
    ) async throws -> MP4Layout {
        let mfra = try await movieFragmentRandomAccess(of: reader, length: length, after: firstMoof.lowerBound)
        let payload = firstMoof.lowerBound..<(mfra?.lowerBound ?? length)
        var index: [Range<Int64>] = []
        if let sidx { index.append(sidx) }
        if let mfra { index.append(mfra) }
        let duration = try await fragmentedDuration(
            of: reader, moovBytes: moovBytes, firstMoof: firstMoof, sidx: sidx, mfra: mfra, payload: payload)
        return MP4Layout(duration: duration, moov: moov, mdat: payload, index: index, fragmented: true)
    }

    /// The `mfra` box at the file's end, located by the `mfro` box that closes it; nil when there is none.
    static func movieFragmentRandomAccess(of reader: some ByteRangeReader, length: Int64, after start: Int64) async throws
        -> Range<Int64>?
    {
        guard length - start >= 16 else { return nil }
        let tail = try await reader.read((length - 16)..<length)
        guard tail.count == 16, String(decoding: tail[4..<8], as: UTF8.self) == "mfro" else { return nil }
        let size = Int64(bigEndian32(tail, 12))
        guard size >= 16, size <= length - start else { return nil }
        let range = (length - size)..<length
        let header = try await reader.read(range.lowerBound..<(range.lowerBound + 8))
        guard header.count == 8, String(decoding: header[4..<8], as: UTF8.self) == "mfra" else { return nil }
        return range
    }

    private static func fragmentedDuration(
        of reader: some ByteRangeReader, moovBytes: [UInt8], firstMoof: Range<Int64>, sidx: Range<Int64>?,
        mfra: Range<Int64>?, payload: Range<Int64>
    ) async throws -> Double {
        let (movieScale, movieDuration) = try movieHeader(inMoov: moovBytes)
        if movieScale > 0, movieDuration > 0, movieDuration != UInt64(UInt32.max), movieDuration != UInt64.max {
            return Double(movieDuration) / Double(movieScale)
        }
        if movieScale > 0, let mehd = try findBox("mehd", in: moovBytes, range: 0..<moovBytes.count, depth: 0) {
            let value = fullBoxValue(moovBytes, body: mehd, at: 4)
            if let value, value > 0 { return Double(value) / Double(movieScale) }
        }
        if let sidx, sidx.count <= maxHeaderBytes,
            let seconds = segmentIndexDuration(try await reader.read(sidx), sidxEnd: sidx.upperBound, payloadEnd: payload.upperBound)
        {
            return seconds
        }
        let tracks = try trackTimings(inMoov: moovBytes)
        guard !tracks.isEmpty else { throw MP4Error.missing("trak") }
        guard firstMoof.count <= maxHeaderBytes else { throw MP4Error.headerTooLarge(Int64(firstMoof.count)) }
        let first = try fragmentTimes(try await reader.read(firstMoof), tracks: tracks)
        var lastMoof: Range<Int64>?
        if let mfra, mfra.count <= maxHeaderBytes {
            lastMoof = try await lastFragment(listedIn: try await reader.read(mfra), reader: reader, payload: payload)
        }
        if lastMoof == nil { lastMoof = try await lastFragment(walking: reader, payload: payload) }
        guard let lastMoof, lastMoof.count <= maxHeaderBytes else { throw MP4Error.fragmentsWithoutDuration }
        let last = try fragmentTimes(try await reader.read(lastMoof), tracks: tracks)
        // The longest track, from its first fragment's start to its last one's end.
        var seconds = 0.0
        for (track, times) in last {
            guard let timing = tracks[track], timing.timescale > 0 else { continue }
            let start = first[track]?.start ?? 0
            guard times.end > start else { continue }
            seconds = Swift.max(seconds, Double(times.end - start) / Double(timing.timescale))
        }
        guard seconds > 0 else { throw MP4Error.fragmentsWithoutDuration }
        return seconds
    }

    /// `mvhd`'s timescale and duration (0 when unknown).
    static func movieHeader(inMoov moov: [UInt8]) throws -> (timescale: UInt64, duration: UInt64) {
        guard let mvhd = try findBox("mvhd", in: moov, range: 0..<moov.count, depth: 0) else {
            throw MP4Error.missing("mvhd")
        }
        guard mvhd.count >= 4 else { throw MP4Error.badMovieHeader("too short") }
        let wide = moov[mvhd.lowerBound] == 1
        let scaleAt = mvhd.lowerBound + (wide ? 20 : 12)
        guard mvhd.upperBound >= scaleAt + (wide ? 12 : 8) else { throw MP4Error.badMovieHeader("too short") }
        let timescale = UInt64(bigEndian32(moov, scaleAt))
        let duration = wide ? bigEndian64(moov, scaleAt + 4) : UInt64(bigEndian32(moov, scaleAt + 4))
        return (timescale, duration)
    }

    /// A full box's 32-bit (version 0) or 64-bit (version 1) field at `offset` past its version and flags.
    static func fullBoxValue(_ bytes: [UInt8], body: Range<Int>, at offset: Int) -> UInt64? {
        guard body.count >= 4 else { return nil }
        let wide = bytes[body.lowerBound] == 1
        let at = body.lowerBound + offset
        guard at + (wide ? 8 : 4) <= body.upperBound else { return nil }
        return wide ? bigEndian64(bytes, at) : UInt64(bigEndian32(bytes, at))
    }

    /// Seconds a `sidx` box indexes, when it indexes the whole payload (one index for the file, not per segment).
    static func segmentIndexDuration(_ sidx: [UInt8], sidxEnd: Int64, payloadEnd: Int64) -> Double? {
        guard sidx.count >= 8 + 4 + 8 else { return nil }
        let body = 8..<sidx.count
        let wide = sidx[body.lowerBound] == 1
        let timescale = UInt64(bigEndian32(sidx, body.lowerBound + 8))
        var at = body.lowerBound + 12
        guard at + (wide ? 16 : 8) + 4 <= sidx.count, timescale > 0 else { return nil }
        let firstOffset = wide ? bigEndian64(sidx, at + 8) : UInt64(bigEndian32(sidx, at + 4))
        at += wide ? 16 : 8
        let count = Int(sidx[at + 2]) << 8 | Int(sidx[at + 3])
        at += 4
        guard count > 0, at + count * 12 <= sidx.count else { return nil }
        var covered = UInt64(sidxEnd) &+ firstOffset
        var duration: UInt64 = 0
        for i in 0..<count {
            covered &+= UInt64(bigEndian32(sidx, at + i * 12) & 0x7fff_ffff)
            duration &+= UInt64(bigEndian32(sidx, at + i * 12 + 4))
        }
        guard covered >= UInt64(payloadEnd), duration > 0 else { return nil }
        return Double(duration) / Double(timescale)
    }

    /// Each track's timescale (`mdhd`) and default sample duration (`trex`), by track ID.
    static func trackTimings(inMoov moov: [UInt8]) throws -> [UInt32: TrackTiming] {
        var tracks: [UInt32: TrackTiming] = [:]
        for trak in children(of: moov, in: 8..<moov.count) where trak.type == "trak" {
            guard let tkhd = try findBox("tkhd", in: moov, range: trak.body, depth: 1),
                let mdhd = try findBox("mdhd", in: moov, range: trak.body, depth: 1),
                tkhd.count >= 4, mdhd.count >= 4
            else { continue }
            let idAt = tkhd.lowerBound + (moov[tkhd.lowerBound] == 1 ? 20 : 12)
            let scaleAt = mdhd.lowerBound + (moov[mdhd.lowerBound] == 1 ? 20 : 12)
            guard idAt + 4 <= tkhd.upperBound, scaleAt + 4 <= mdhd.upperBound else { continue }
            tracks[bigEndian32(moov, idAt)] = TrackTiming(timescale: UInt64(bigEndian32(moov, scaleAt)))
        }
        if let mvex = try findBox("mvex", in: moov, range: 0..<moov.count, depth: 0) {
            for trex in children(of: moov, in: mvex) where trex.type == "trex" && trex.body.count >= 16 {
                let track = bigEndian32(moov, trex.body.lowerBound + 4)
                tracks[track]?.defaultSampleDuration = UInt64(bigEndian32(moov, trex.body.lowerBound + 12))
            }
        }
        return tracks
    }

    /// Each track's decode times in one `moof` box's bytes: where its fragment starts (`tfdt`) and ends.
    static func fragmentTimes(_ moof: [UInt8], tracks: [UInt32: TrackTiming]) throws -> [UInt32: (start: UInt64, end: UInt64)] {
        var times: [UInt32: (start: UInt64, end: UInt64)] = [:]
        guard moof.count >= 8 else { return times }
        for traf in children(of: moof, in: 8..<moof.count) where traf.type == "traf" {
            let boxes = children(of: moof, in: traf.body)
            guard let tfhd = boxes.first(where: { $0.type == "tfhd" })?.body, tfhd.count >= 8 else { continue }
            let flags = UInt32(moof[tfhd.lowerBound + 1]) << 16 | UInt32(moof[tfhd.lowerBound + 2]) << 8
                | UInt32(moof[tfhd.lowerBound + 3])
            let track = bigEndian32(moof, tfhd.lowerBound + 4)
            var defaultDuration = tracks[track]?.defaultSampleDuration ?? 0
            var at = tfhd.lowerBound + 8
            if flags & 0x01 != 0 { at += 8 }
            if flags & 0x02 != 0 { at += 4 }
            if flags & 0x08 != 0, at + 4 <= tfhd.upperBound { defaultDuration = UInt64(bigEndian32(moof, at)) }
            let start = boxes.first(where: { $0.type == "tfdt" }).flatMap { fullBoxValue(moof, body: $0.body, at: 4) }
                ?? times[track]?.end ?? 0
            var end = start
            for trun in boxes where trun.type == "trun" && trun.body.count >= 8 {
                end &+= runDuration(moof, trun: trun.body, defaultDuration: defaultDuration)
            }
            times[track] = (start, end)
        }
        return times
    }

    /// The sum of a `trun` box's sample durations.
    private static func runDuration(_ bytes: [UInt8], trun: Range<Int>, defaultDuration: UInt64) -> UInt64 {
        let flags = UInt32(bytes[trun.lowerBound + 2]) << 8 | UInt32(bytes[trun.lowerBound + 3])
        let count = Int(bigEndian32(bytes, trun.lowerBound + 4))
        var at = trun.lowerBound + 8
        if flags & 0x01 != 0 { at += 4 }
        if flags & 0x04 != 0 { at += 4 }
        guard flags & 0x100 != 0 else { return UInt64(count) &* defaultDuration }
        let stride = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count * 4
        var total: UInt64 = 0
        for i in 0..<count {
            let field = at + i * stride
            guard field + 4 <= trun.upperBound else { break }
            total &+= UInt64(bigEndian32(bytes, field))
        }
        return total
    }

    /// The last fragment an `mfra` box lists (its `tfra` entries point at `moof` boxes).
    private static func lastFragment(listedIn mfra: [UInt8], reader: some ByteRangeReader, payload: Range<Int64>)
        async throws -> Range<Int64>?
    {
        var last: Int64?
        for tfra in children(of: mfra, in: 8..<mfra.count) where tfra.type == "tfra" && tfra.body.count >= 16 {
            let body = tfra.body
            let wide = mfra[body.lowerBound] == 1
            let sizes = bigEndian32(mfra, body.lowerBound + 8)
            let count = Int(bigEndian32(mfra, body.lowerBound + 12))
            let entry = (wide ? 16 : 8) + Int((sizes >> 4 & 3) + (sizes >> 2 & 3) + (sizes & 3)) + 3
            let lastAt = body.lowerBound + 16 + (count - 1) * entry
            guard count > 0, lastAt + entry <= body.upperBound else { continue }
            let offset = wide ? Int64(bitPattern: bigEndian64(mfra, lastAt + 8)) : Int64(bigEndian32(mfra, lastAt + 4))
            if payload.contains(offset) { last = Swift.max(last ?? offset, offset) }
        }
        guard let last else { return nil }
        let header = try boxHeader(try await reader.read(last..<Swift.min(payload.upperBound, last + 16)), at: last, limit: payload.upperBound)
        guard header.type == "moof" else { return nil }
        // A fragment after the last one listed (an index of key frames may leave it out) is not looked for.
        return last..<(last + header.size)
    }

    /// The last `moof` box, walking the payload's top-level boxes (reads one header per box).
    private static func lastFragment(walking reader: some ByteRangeReader, payload: Range<Int64>) async throws -> Range<Int64>? {
        var offset = payload.lowerBound
        var last: Range<Int64>?
        var count = 0
        while offset < payload.upperBound {
            count += 1
            guard count <= maxFragments else { break }
            let header = try boxHeader(
                try await reader.read(offset..<Swift.min(payload.upperBound, offset + 16)), at: offset, limit: payload.upperBound)
            if header.type == "moof" { last = offset..<(offset + header.size) }
            offset += header.size
        }
        return last
    }

    /// Most top-level boxes of a fragmented payload walked.
    static let maxFragments = 100_000

    /// The end of the top-level box unit holding `offset` (a fragment's `moof` and its `mdat`), walking from
    /// `start`: what a preload rounds its payload up to, so it ends on a whole fragment.
    public static func fragmentEnd(containing offset: Int64, from start: Int64, in reader: some ByteRangeReader, length: Int64)
        async throws -> Int64
    {
        var at = start
        var count = 0
        while at < length {
            count += 1
            guard count <= maxFragments else { break }
            let header = try boxHeader(try await reader.read(at..<Swift.min(length, at + 16)), at: at, limit: length)
            at += header.size
            if at > offset, header.type != "moof" { return at }
        }
        return Swift.min(at, length)
    }

    /// The boxes directly inside `range` of `bytes`, stopping at the first malformed one.
    static func children(of bytes: [UInt8], in range: Range<Int>) -> [(type: String, range: Range<Int>, body: Range<Int>)] {
        var boxes: [(type: String, range: Range<Int>, body: Range<Int>)] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            guard let header = try? boxHeader(
                Array(bytes[offset..<Swift.min(range.upperBound, offset + 16)]), at: Int64(offset),
                limit: Int64(range.upperBound))
            else { break }
            let end = offset + Int(header.size)
            boxes.append((header.type, offset..<end, (offset + Int(header.headerSize))..<end))
            offset = end
        }
        return boxes
    }

    static func bigEndian64(_ bytes: [UInt8], _ index: Int) -> UInt64 {
        UInt64(bigEndian32(bytes, index)) << 32 | UInt64(bigEndian32(bytes, index + 4))
    }
}
