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
        // Bytes first (a proxy checks one URL per request); characters only for text beyond ASCII.
        let hasWhitespace = text.utf8.allSatisfy { $0 < 0x80 }
            ? text.utf8.contains { $0 == 0x20 || (0x09...0x0D).contains($0) }
            : text.contains { $0.isWhitespace }
        guard !hasWhitespace else {
            throw .invalidURL(url: text, reason: "is not a URL (use http://… or https://…)")
        }
        let scheme = schemeSeparator(in: text).map { text[..<$0.lowerBound].lowercased() }
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
        guard let start = schemeSeparator(in: text)?.upperBound else { return nil }
        let rest = text[start...]
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        return rest[..<end]
    }

    /// Where the first `://` is.
    private static func schemeSeparator(in text: String) -> Range<String.Index>? {
        let bytes = text.utf8
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index] == UInt8(ascii: ":") {
                let rest = bytes[index...].prefix(3)
                if rest.elementsEqual("://".utf8) { return index..<bytes.index(index, offsetBy: 3) }
            }
            index = bytes.index(after: index)
        }
        return nil
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
