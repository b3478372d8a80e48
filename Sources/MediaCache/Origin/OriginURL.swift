import Foundation

/// The one check every URL passes before it reaches an origin: the command line, playlists, the proxy and every
/// redirect go through it, so a malformed URL is a clear error for that request and never reaches the HTTP client.
public enum OriginURL {
    /// Returns `url` when it is http or https with a host and a port in 1–65535; throws `OriginError.invalidURL`
    /// saying what is wrong otherwise.
    @discardableResult
    public static func validate(_ url: URL) throws(OriginError) -> URL {
        try validate(text: url.absoluteString)
        return url
    }

    /// Parses `text` as an origin URL (see `validate`).
    public static func parse(_ text: String) throws(OriginError) -> URL {
        try validate(text: text)
        guard let url = URL(string: text, encodingInvalidCharacters: false) else {
            throw .invalidURL(url: text, reason: "is not a URL (use http://… or https://…)")
        }
        return url
    }

    private static func validate(text: String) throws(OriginError) {
        guard !text.contains(where: { $0.isWhitespace }) else {
            throw .invalidURL(url: text, reason: "is not a URL (use http://… or https://…)")
        }
        let scheme = text.range(of: "://").map { text[..<$0.lowerBound].lowercased() }
        guard let scheme, !scheme.isEmpty else {
            throw .invalidURL(url: text, reason: "is not a URL (use http://… or https://…)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidURL(url: text, reason: "unsupported scheme '\(scheme)' (use http or https)")
        }
        // The port is read from the authority text itself: Foundation's parsers disagree on out-of-range ports.
        guard let authority = authority(of: text), let host = host(of: authority), !host.isEmpty else {
            throw .invalidURL(url: text, reason: "is not a valid URL (it has no host)")
        }
        if let portText = port(of: authority) {
            guard !portText.isEmpty else { return }
            guard portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText),
                (1...65535).contains(port)
            else {
                throw .invalidURL(url: text, reason: "port \(portText) is out of range (use 1-65535)")
            }
        }
        guard host.allSatisfy({ !$0.isWhitespace && $0 != "\\" && $0 != "%" }) else {
            throw .invalidURL(url: text, reason: "host '\(host)' is not a valid host name")
        }
    }

    /// `userinfo@host:port` between `//` and the path.
    private static func authority(of text: String) -> Substring? {
        guard let start = text.range(of: "://")?.upperBound else { return nil }
        let rest = text[start...]
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        return rest[..<end]
    }

    private static func hostAndPort(of authority: Substring) -> Substring {
        if let at = authority.lastIndex(of: "@") { return authority[authority.index(after: at)...] }
        return authority
    }

    private static func host(of authority: Substring) -> Substring? {
        let hostPort = hostAndPort(of: authority)
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            return hostPort[...close]
        }
        return hostPort.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first
    }

    private static func port(of authority: Substring) -> Substring? {
        var hostPort = hostAndPort(of: authority)
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            hostPort = hostPort[hostPort.index(after: close)...]
            guard hostPort.hasPrefix(":") else { return nil }
            return hostPort.dropFirst()
        }
        guard let colon = hostPort.firstIndex(of: ":") else { return nil }
        return hostPort[hostPort.index(after: colon)...]
    }

    /// `text` with every `scheme://user:password@` shortened to `scheme://`: messages never show credentials.
    public static func redactingCredentials(in text: String) -> String {
        guard text.contains("@") else { return text }
        var result = ""
        var rest = Substring(text)
        while let marker = rest.range(of: "://") {
            result += rest[..<marker.upperBound]
            rest = rest[marker.upperBound...]
            let authorityEnd = rest.firstIndex(where: { "/?# \n\t\"'()".contains($0) }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        }
        return result + rest
    }

    /// `url` without `user:password@`: what the index stores and what messages show.
    public static func withoutCredentials(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
    }
}
