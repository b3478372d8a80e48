/// A parsed `Content-Range: bytes first-last/complete` (or `bytes */complete`), validated strictly.
public struct ContentRange: Sendable, Equatable {
    /// The byte range carried, nil for the unsatisfied form `*/length`.
    public var range: ClosedRange<Int64>?
    /// The complete length, nil when the origin sent `*`.
    public var completeLength: Int64?

    /// The header value for bytes `range` of a `length`-byte resource: `bytes FIRST-LAST/LENGTH`.
    public static func value(for range: ClosedRange<Int64>, of length: Int64) -> String {
        "bytes \(range.lowerBound)-\(range.upperBound)/\(length)"
    }

    /// The header value of a `416` for a `length`-byte resource: `bytes */LENGTH`.
    public static func unsatisfied(length: Int64) -> String { "bytes */\(length)" }

    /// Parses `value`; nil unless it is exactly one well-formed byte range whose last byte is below the length.
    public init?(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" {
            completeLength = nil
        } else {
            guard let length = Self.number(halves[1]) else { return nil }
            completeLength = length
        }
        if halves[0] == "*" {
            guard completeLength != nil else { return nil }
            range = nil
            return
        }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]), first <= last
        else { return nil }
        if let completeLength, last >= completeLength { return nil }
        range = first...last
    }

    /// The complete length `value` names when its range is well formed but reaches past it (`bytes 0-99/50`):
    /// an origin whose lengths disagree, not a garbled header.
    public static func totalOverrun(_ value: String) -> Int64? {
        guard ContentRange(value) == nil, let slash = value.lastIndex(of: "/"),
            let total = number(value[value.index(after: slash)...].drop(while: { $0 == " " })),
            let range = ContentRange(value[..<slash] + "/*")?.range, range.upperBound >= total
        else { return nil }
        return total
    }

    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(text)
    }
}

import Foundation
