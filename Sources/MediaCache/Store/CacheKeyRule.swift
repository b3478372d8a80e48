import Foundation

/// Which query parameters a URL's cache key leaves out: those that sign or expire a URL (a CDN's token, an S3 or
/// CloudFront signature), which change on every resolve while the bytes stay the same.
///
/// Names compare without regard to case; a name ending in `*` matches every name it begins (`X-Amz-*`). The list
/// keeps to names no CDN uses for anything but signing: two resources merged under one key would only be told
/// apart by their validators.
public struct CacheKeyRule: Sendable, Hashable {
    /// The parameter names (or `prefix*` patterns) left out of keys.
    public var ignoredParameters: [String]

    /// A rule leaving out `ignoredParameters`.
    public init(ignoredParameters: [String]) {
        self.ignoredParameters = ignoredParameters
    }

    /// Keys from the whole URL: every parameter counts.
    public static let exact = CacheKeyRule(ignoredParameters: [])

    /// The parameters that sign or expire URLs on the common CDNs and object stores.
    public static let standardParameters = [
        "X-Amz-*", "X-Goog-*", "AWSAccessKeyId", "GoogleAccessId", "Signature", "Expires", "Key-Pair-Id",
        "Policy", "token", "hdnts", "hdnea", "__gda__", "sig", "se", "oh", "oe", "_nc_*", "wmsAuthSign",
    ]

    /// The default rule: `standardParameters`.
    public static let standard = CacheKeyRule(ignoredParameters: standardParameters)

    /// True when `name` is left out of keys.
    public func ignores(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return ignoredParameters.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern.hasSuffix("*") { return lowered.hasPrefix(pattern.dropLast()) }
            return lowered == pattern
        }
    }

    /// This rule leaving out `more` as well.
    public func ignoring(_ more: [String]) -> CacheKeyRule {
        CacheKeyRule(ignoredParameters: ignoredParameters + more)
    }
}
