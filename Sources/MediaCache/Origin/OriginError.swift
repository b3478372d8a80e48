import HTTPSemantics
/// Why the origin could not supply bytes; each case says what it answered or what went wrong.
public enum OriginError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The origin could not be reached (connection refused or timed out, DNS failure).
    case unreachable(url: String, reason: String)
    /// The origin answered with an error status.
    case httpStatus(url: String, status: Int, reason: String)
    /// The origin stopped sending for longer than the read timeout.
    case timeout(url: String)
    /// The connection closed before the response was complete.
    case connectionLost(url: String, reason: String)
    /// The origin's `Content-Range` was missing, malformed or did not match the request.
    case badContentRange(url: String, header: String?)
    /// The requested range starts past the resource's end.
    case rangeNotSatisfiable(url: String, length: Int64?)
    /// More redirects than allowed.
    case tooManyRedirects(url: String)
    /// The URL's scheme is not http or https.
    case unsupportedScheme(url: String)
    /// The resource changed at the origin after this reader had received bytes of the old version.
    case resourceChanged(url: String)
    /// The URL (given, or from a redirect) cannot be requested: bad scheme, host or port.
    case invalidURL(url: String, reason: String)
    /// The origin sent too little for too long (below the minimum throughput).
    case tooSlow(url: String, bytesPerSecond: Int, seconds: Double)
    /// The retry budget of one request ran out.
    case retriesExhausted(url: String, attempts: Int, last: String)
    /// The origin's own figures disagree (Content-Length, the Content-Range it names, the body it sends).
    case lengthsDisagree(url: String, detail: String)
    /// The origin failed one request for longer than the loader waits (`LoaderConfiguration.giveUpAfter`).
    case gaveUp(url: String, seconds: Double, last: String)

    /// What went wrong, as a sentence naming the URL.
    public var description: String {
        OriginURL.redactingCredentials(in: rawDescription)
    }

    private var rawDescription: String {
        switch self {
        case .unreachable(let url, let reason): return "\(url): origin unreachable: \(reason)"
        case .httpStatus(let url, let status, let reason): return "\(url): origin answered \(status) \(reason)"
        case .timeout(let url): return "\(url): origin stopped sending (read timeout)"
        case .connectionLost(let url, let reason): return "\(url): connection lost mid-transfer: \(reason)"
        case .badContentRange(let url, let header):
            return "\(url): origin sent an invalid Content-Range (\(header ?? "none"))"
        case .rangeNotSatisfiable(let url, let length):
            return "\(url): range not satisfiable (resource length \(length.map(String.init) ?? "unknown"))"
        case .tooManyRedirects(let url): return "\(url): too many redirects"
        case .unsupportedScheme(let url): return "\(url): unsupported scheme (use http or https)"
        case .resourceChanged(let url): return "\(url): the resource changed at the origin during the transfer; request it again"
        case .invalidURL(let url, let reason): return "\(url): \(reason)"
        case .tooSlow(let url, let rate, let seconds):
            return "\(url): origin too slow (under \(rate) bytes/s for \(seconds.formatted()) s)"
        case .retriesExhausted(let url, let attempts, let last):
            return "\(url): gave up after \(attempts) attempts (last: \(last))"
        case .lengthsDisagree(let url, let detail):
            return "\(url): the origin's lengths disagree (\(detail)); nothing of this answer was used"
        case .gaveUp(let url, let seconds, let last):
            return "\(url): the origin sent too little for \(seconds.formatted()) s, giving up (last: \(last)); try again later"
        }
    }

    /// True for failures worth retrying from the first missing byte.
    var isTransient: Bool {
        switch self {
        case .connectionLost, .timeout, .tooSlow: return true
        default: return false
        }
    }
}
