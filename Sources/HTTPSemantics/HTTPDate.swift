import Foundation

/// HTTP dates in the preferred format of RFC 9110 §5.6.7 (`Sun, 06 Nov 1994 08:49:37 GMT`), read and written.
public enum HTTPDate {
    /// The date `text` names, or nil when it is not in the preferred format.
    public static func parse(_ text: String) -> Date? {
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
        // (An impossible day such as 31 Feb is refused, not rolled over into March.)
        guard let date = calendar.date(from: components),
            calendar.dateComponents([.day], from: date).day == day
        else { return nil }
        return date
    }

    /// `date` in the preferred format (whole seconds, UTC).
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = weekdays[Int(((days % 7) + 11) % 7)]  // 1970-01-01 was a Thursday
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(months[Int(month) - 1]) \(year) "
            + "\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60)) GMT"
    }

    /// Year, month and day of the day `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        return calendar
    }()

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
}

/// Conditional requests (RFC 9110 §13): whether a client already holds the representation it asks for.
public enum HTTPConditions {
    /// True when `ifNoneMatch` (else `ifModifiedSince`) says the client holds the version named by `etag` and
    /// `lastModified`, so a GET or HEAD is answered `304 Not Modified`: ETags compared weakly, `*` matching any,
    /// a date not before Last-Modified. If-Modified-Since is ignored when If-None-Match is present.
    public static func notModified(
        ifNoneMatch: String?, ifModifiedSince: String?, etag: String?, lastModified: String?
    ) -> Bool {
        if let ifNoneMatch {
            guard let etag else { return false }
            func opaque<S: StringProtocol>(_ tag: S) -> String {
                let trimmed = tag.trimmingCharacters(in: .whitespaces)
                return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
            }
            let tags = ifNoneMatch.split(separator: ",").map { opaque($0) }
            return tags.contains("*") || tags.contains(opaque(etag))
        }
        guard let since = ifModifiedSince.flatMap(HTTPDate.parse), let modified = lastModified.flatMap(HTTPDate.parse)
        else { return false }
        return modified <= since
    }
}
