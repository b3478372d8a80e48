import Foundation

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
        guard let header else {
            self = .whole
            return
        }
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else {
            self = .whole
            return
        }
        let parts = value.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            self = .whole
            return
        }
        func number(_ text: Substring) -> Int64? {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed.count <= 18, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                return nil
            }
            return Int64(trimmed)
        }
        if parts[0].trimmingCharacters(in: .whitespaces).isEmpty {
            guard let suffix = number(parts[1]) else {
                self = .whole
                return
            }
            self = suffix == 0 || length == 0 ? .unsatisfiable : .partial(Swift.max(0, length - suffix)...(length - 1))
            return
        }
        guard let first = number(parts[0]) else {
            self = .whole
            return
        }
        let last = parts[1].trimmingCharacters(in: .whitespaces).isEmpty ? Int64.max : number(parts[1])
        guard let last, last >= first else {
            self = .whole
            return
        }
        self = first >= length ? .unsatisfiable : .partial(first...Swift.min(last, length - 1))
    }
}

import Foundation
