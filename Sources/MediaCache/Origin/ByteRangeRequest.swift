/// A parsed single `Range: bytes=…` header, resolved against a length: the one parser of Range headers, used by
/// every server here (the proxy, the test and demo origin).
public enum ByteRangeRequest: Equatable, Sendable {
    /// No usable Range header: send everything with 200.
    case whole
    /// Send `range` with 206.
    case partial(ClosedRange<Int64>)
    /// Nothing of the resource matches: 416.
    case unsatisfiable

    /// Resolves `header` (nil when absent) for a resource of `length` bytes. Malformed or multi-range headers
    /// are ignored, as RFC 9110 allows.
    public init(header: String?, length: Int64) {
        // Read as bytes: a proxy parses one of these per request, and this is on its hottest path.
        guard let header, let (first, last) = Self.bounds(Array(header.utf8)) else {
            self = .whole
            return
        }
        guard let first else {
            // `bytes=-N`: the last N bytes.
            self = last == 0 || length == 0 ? .unsatisfiable : .partial(Swift.max(0, length - last)...(length - 1))
            return
        }
        guard last >= first else {
            self = .whole
            return
        }
        self = first >= length ? .unsatisfiable : .partial(first...Swift.min(last, length - 1))
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
