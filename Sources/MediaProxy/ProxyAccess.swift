import Foundation
import MediaCache

/// One request the proxy answered, for an access log.
public struct ProxyAccess: Sendable, Equatable {
    /// When the request arrived.
    public var time: Date
    /// `GET` or `HEAD` (or whatever the client sent).
    public var method: String
    /// The origin URL asked for (without credentials), when the request named one.
    public var url: String?
    /// The request's `Range` header, if any.
    public var range: String?
    /// The status answered.
    public var status: Int
    /// Body bytes sent.
    public var bytes: Int64
    /// How much of a media response came from the cache (nil for error answers).
    public var outcome: CacheOutcome?
    /// Seconds from the request to the end of the response.
    public var duration: TimeInterval

    /// One line: time, method, status, range, bytes, outcome, duration, URL — fields apart by spaces, `-` for none.
    public var line: String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return [
            formatter.string(from: time), method, String(status), range.map { $0.replacingOccurrences(of: " ", with: "") } ?? "-",
            String(bytes), outcome?.rawValue ?? "-", String(format: "%.3fs", duration), url ?? "-",
        ].joined(separator: " ")
    }
}

/// What a response amounted to, as the handler reports it.
struct Answered: Sendable {
    var status: Int
    var bytes: Int64 = 0
    var outcome: CacheOutcome? = nil
    var url: String? = nil
}
