import Crypto
import Foundation

/// The identity of a cached resource: the SHA-256 of its normalized URL or of a caller-given key, in hex.
///
/// File names come from `hex` only, never from URL text, so hostile URLs cannot steer paths.
public struct CacheKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// 64 lowercase hex digits.
    public let hex: String

    /// The key for `url`: scheme and host lowercased, default port, fragment and empty path normalized away, and
    /// the query parameters that sign or expire a URL dropped (`CacheKeyRule.standard`): the same media under a
    /// freshly signed URL is one entry. Validators still guard the bytes (a changed ETag is a new version).
    public init(url: URL) {
        self.init(url: url, rule: .standard)
    }

    /// The key for `url` under `rule` (which query parameters say nothing about the bytes).
    public init(url: URL, rule: CacheKeyRule) {
        self.init(hashing: "url:" + CacheKey.normalize(url, rule: rule))
    }

    /// A caller-chosen key, for signed URLs whose query changes while the content does not.
    public init(custom: String) {
        self.init(hashing: "custom:" + custom)
    }

    /// Wraps an already computed hex digest (as read back from the index); nil unless it is 64 hex digits.
    public init?(hex: String) {
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
        self.hex = hex
    }

    private init(hashing text: String) {
        var digits = [UInt8]()
        digits.reserveCapacity(64)
        for byte in SHA256.hash(data: Array(text.utf8)) {
            digits.append(Self.hexDigits[Int(byte >> 4)])
            digits.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        hex = String(decoding: digits, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The normalized URL text the key hashes under `rule`.
    public static func normalize(_ url: URL, rule: CacheKeyRule = .standard) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return url.absoluteString
        }
        let scheme = components.scheme?.lowercased()
        components.scheme = scheme
        components.host = components.host?.lowercased()
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) {
            components.port = nil
        }
        components.fragment = nil
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        if let query = components.percentEncodedQuery, !query.isEmpty {
            let kept = query.split(separator: "&", omittingEmptySubsequences: false).filter { item in
                let name = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                return !rule.ignores(String(name).removingPercentEncoding ?? String(name))
            }
            components.percentEncodedQuery = kept.isEmpty ? nil : kept.joined(separator: "&")
        }
        return components.string ?? url.absoluteString
    }

    /// The first 12 hex digits, for logs.
    public var description: String { String(hex.prefix(12)) }

    /// Orders keys by their hex digits (a stable order for listings).
    public static func < (lhs: CacheKey, rhs: CacheKey) -> Bool { lhs.hex < rhs.hex }
}
