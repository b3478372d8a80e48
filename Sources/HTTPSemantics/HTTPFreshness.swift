import Foundation

/// How long an origin's answer may be used without asking the origin again (RFC 9111 §4.2, as a private cache).
///
/// What the origin states counts first: `Cache-Control: max-age` (less the `Age` an intermediate cache reports),
/// else `Expires` against the response's `Date`. An answer that states nothing but has a `Last-Modified` is
/// fresh for a tenth of its age at the time (the heuristic of RFC 9111 §4.2.2), at most `heuristicCap`: a file
/// unchanged for ten days is trusted for a day. `no-cache`, `no-store` and `must-revalidate` give no freshness
/// at all, and neither does an answer without any of these: such a copy is checked again whenever it is used
/// after the loader's `recheckInterval`.
public enum HTTPFreshness {
    /// The longest heuristic lifetime: one day.
    public static let heuristicCap: TimeInterval = 86_400

    /// The seconds the answer stays fresh after it was received, or nil when it gives none. `receivedAt` stands
    /// for the answer's `Date` when it has none.
    public static func lifetime(
        cacheControl: String?, expires: String?, date: String?, age: String?, lastModified: String? = nil,
        receivedAt: Date = Date()
    ) -> TimeInterval? {
        let directives = cacheControl.map(Self.directives) ?? [:]
        if directives["no-cache"] != nil || directives["no-store"] != nil { return nil }
        let ageSeconds = age.flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) }.map { Swift.max(0, $0) } ?? 0
        if let maxAge = directives["max-age"] {
            // An unreadable max-age makes the answer stale (RFC 9111 §4.2.1).
            guard let value = maxAge.flatMap({ TimeInterval($0) }), value >= 0 else { return nil }
            return positive(value - ageSeconds)
        }
        // An Expires that is not a date (often "0" or "-1") means already expired; without the answer's Date the
        // two clocks cannot be compared, so nothing is assumed.
        if let expires {
            guard let expiry = HTTPDate.parse(expires), let sent = date.flatMap(HTTPDate.parse) else { return nil }
            return positive(expiry.timeIntervalSince(sent) - ageSeconds)
        }
        // Heuristic freshness is for answers that say nothing; must-revalidate asks for none.
        guard directives["must-revalidate"] == nil, let modified = lastModified.flatMap(HTTPDate.parse) else {
            return nil
        }
        let sent = date.flatMap(HTTPDate.parse) ?? receivedAt
        return positive(Swift.min(heuristicCap, sent.timeIntervalSince(modified) / 10) - ageSeconds)
    }

    /// Directive names (lowercased) and their values (unquoted; nil for a bare directive).
    public static func directives(_ header: String) -> [String: String?] {
        var result: [String: String?] = [:]
        for part in header.split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1)
            guard let rawName = pieces.first else { continue }
            let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty else { continue }
            var value: String?
            if pieces.count == 2 {
                value = pieces[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            // The first occurrence wins.
            if result[name] == nil { result[name] = .some(value) }
        }
        return result
    }

    private static func positive(_ seconds: TimeInterval) -> TimeInterval? { seconds > 0 ? seconds : nil }
}
