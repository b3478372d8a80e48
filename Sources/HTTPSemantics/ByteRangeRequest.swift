/// A parsed `Range: bytes=…` header, resolved against a length: the one parser of Range headers, used by every
/// server here (the proxy, the test and demo origin).
public enum ByteRangeRequest: Equatable, Sendable {
    /// No usable Range header: send everything with 200.
    case whole
    /// Send `range` with 206.
    case partial(ClosedRange<Int64>)
    /// Several ranges that neither overlap nor touch, in the order asked: 206 with `multipart/byteranges`.
    case multiple([ClosedRange<Int64>])
    /// Nothing of the resource matches: 416.
    case unsatisfiable

    /// Most ranges answered as parts; a header with more is answered whole (RFC 9110 §14.2 lets a server
    /// ignore a Range it finds abusive).
    public static let maxParts = 32

    /// The `Range` header asking for bytes `start..<end` (to the resource's end when `end` is nil).
    public static func header(from start: Int64, to end: Int64?) -> String {
        "bytes=\(start)-" + (end.map { String($0 - 1) } ?? "")
    }

    /// Resolves `header` (nil when absent) for a resource of `length` bytes. A malformed header is ignored, as
    /// RFC 9110 allows; of several ranges the unsatisfiable ones are dropped and overlapping or touching ones
    /// merged, leaving one range, several parts, or none.
    public init(header: String?, length: Int64) {
        guard let header else {
            self = .whole
            return
        }
        // Read as bytes: a proxy parses one of these per request, and this is on its hottest path.
        let bytes = Array(header.utf8)
        guard bytes.contains(UInt8(ascii: ",")) else {
            self = Self.single(bytes, length: length)
            return
        }
        self = Self.several(header, length: length)
    }

    /// `bytes=A-B,C-D,…`: each spec resolved on its own, then merged.
    private static func several(_ header: String, length: Int64) -> ByteRangeRequest {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        let specs = trimmed.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count <= maxParts else { return .whole }
        var ranges: [ClosedRange<Int64>] = []
        for spec in specs {
            switch single(Array(("bytes=" + spec.trimmingCharacters(in: .whitespaces)).utf8), length: length) {
            case .partial(let range): ranges.append(range)
            case .unsatisfiable: continue
            case .whole, .multiple: return .whole  // a malformed part makes the header malformed
            }
        }
        // In the order asked (RFC 9110 §15.3.7.2); a range that overlaps or touches earlier ones joins them, in
        // the place of the first.
        var merged: [ClosedRange<Int64>] = []
        for range in ranges {
            var joined = range
            var place: Int?
            var index = 0
            while index < merged.count {
                let other = merged[index]
                if joined.lowerBound <= other.upperBound + 1, other.lowerBound <= joined.upperBound + 1 {
                    joined = Swift.min(joined.lowerBound, other.lowerBound)...Swift.max(joined.upperBound, other.upperBound)
                    merged.remove(at: index)
                    place = Swift.min(place ?? index, index)
                } else {
                    index += 1
                }
            }
            merged.insert(joined, at: place ?? merged.count)
        }
        switch merged.count {
        case 0: return .unsatisfiable
        case 1: return .partial(merged[0])
        default: return .multiple(merged)
        }
    }

    /// One `bytes=FIRST-LAST` resolved against `length`.
    private static func single(_ bytes: [UInt8], length: Int64) -> ByteRangeRequest {
        guard let (first, last) = Self.bounds(bytes) else { return .whole }
        guard let first else {
            // `bytes=-N`: the last N bytes.
            return last == 0 || length == 0 ? .unsatisfiable : .partial(Swift.max(0, length - last)...(length - 1))
        }
        guard last >= first else { return .whole }
        return first >= length ? .unsatisfiable : .partial(first...Swift.min(last, length - 1))
    }

    /// The first and last byte of `bytes=FIRST-LAST` (LAST open: `Int64.max`; FIRST absent: a suffix of LAST
    /// bytes), with spaces and tabs allowed around each part; nil when malformed or several ranges.
    private static func bounds(_ text: [UInt8]) -> (Int64?, Int64)? {
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        var start = 0
        var end = text.count
        while start < end, blank(text[start]) { start += 1 }
        while end > start, blank(text[end - 1]) { end -= 1 }
        let unit = Array("bytes=".utf8)
        guard end - start >= unit.count else { return nil }
        for (offset, expected) in unit.enumerated() {
            let byte = text[start + offset]
            guard (0x41...0x5A).contains(byte) ? byte | 0x20 == expected : byte == expected else { return nil }
        }
        start += unit.count
        guard let dash = text[start..<end].firstIndex(of: UInt8(ascii: "-")) else { return nil }
        // nil: malformed; .some(nil): empty.
        func number(_ from: Int, _ to: Int) -> Int64?? {
            var from = from
            var to = to
            while from < to, blank(text[from]) { from += 1 }
            while to > from, blank(text[to - 1]) { to -= 1 }
            if from == to { return .some(nil) }
            guard to - from <= 18 else { return nil }
            var value: Int64 = 0
            for byte in text[from..<to] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return .some(value)
        }
        guard let first = number(start, dash), let last = number(dash + 1, end) else { return nil }
        switch (first, last) {
        case (nil, let suffix?): return (nil, suffix)
        case (let first?, let last?): return (first, last)
        case (let first?, nil): return (first, Int64.max)
        case (nil, nil): return nil
        }
    }
}
