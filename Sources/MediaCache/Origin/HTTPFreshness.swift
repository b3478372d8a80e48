import Foundation

/// How long an origin's answer may be used without asking the origin again (RFC 9111 §4.2, as a private cache).
///
/// Only what the origin states counts: `Cache-Control: max-age` (less the `Age` an intermediate cache reports),
/// else `Expires` against the response's `Date`. `no-cache` and `no-store` give no freshness at all, and neither
/// does an answer that says nothing: such a copy is checked once per session, as before freshness was known.
enum HTTPFreshness {
    /// The seconds the answer stays fresh after it was received, or nil when it gives none.
    static func lifetime(cacheControl: String?, expires: String?, date: String?, age: String?) -> TimeInterval? {
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
        guard let expiry = expires.flatMap(httpDate), let sent = date.flatMap(httpDate) else { return nil }
        return positive(expiry.timeIntervalSince(sent) - ageSeconds)
    }

    /// Directive names (lowercased) and their values (unquoted; nil for a bare directive).
    static func directives(_ header: String) -> [String: String?] {
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

    /// An HTTP date in the preferred format (`Sun, 06 Nov 1994 08:49:37 GMT`), or nil.
    static func httpDate(_ text: String) -> Date? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]),
            let month = months.firstIndex(of: String(parts[2])).map({ $0 + 1 })
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int($0) }
        guard time.count == 3, (1...31).contains(day), (0...23).contains(time[0]), (0...59).contains(time[1]),
            (0...60).contains(time[2])
        else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (time[0], time[1], time[2])
        var calendar = Calendar(identifier: .gregorian)
        guard let utc = TimeZone(identifier: "UTC") else { return nil }
        calendar.timeZone = utc
        return calendar.date(from: components)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}
