import Foundation

/// Rewrites every URI of an HLS playlist — variant and segment lines, and each `URI="…"` of a tag (keys, maps,
/// renditions) — through a function, so a player that reads the result fetches everything where it says (a proxy
/// puts its own URL there). Tags, byte ranges and the order of lines stay as they are.
public enum HLSPlaylistRewriter {
    /// `text` with each URI resolved against `base` (the playlist's URL) and passed to `rewrite`; a URI that does
    /// not resolve is kept as it is.
    public static func rewrite(_ text: String, base: URL, _ rewrite: (URL) -> String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count * 2)
        var rest = Substring(text)
        while !rest.isEmpty {
            let end = rest.firstIndex { $0 == "\n" || $0 == "\r\n" || $0 == "\r" } ?? rest.endIndex
            let line = rest[..<end]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || (trimmed.hasPrefix("#") && !trimmed.hasPrefix("#EXT")) {
                output += line
            } else if trimmed.hasPrefix("#") {
                output += rewriteAttributes(line, base: base, rewrite)
            } else if let url = URL(string: trimmed, relativeTo: base)?.absoluteURL {
                output += rewrite(url)
            } else {
                output += line
            }
            if end < rest.endIndex {
                output.append(rest[end])
                rest = rest[rest.index(after: end)...]
            } else {
                rest = rest[end...]
            }
        }
        return output
    }

    /// Each `URI="…"` of a tag line rewritten.
    private static func rewriteAttributes(_ line: Substring, base: URL, _ rewrite: (URL) -> String) -> String {
        var output = ""
        var rest = line
        while let marker = rest.range(of: "URI=\"") {
            // Only a whole attribute name: preceded by ':' or ',' (not e.g. `XURI="`).
            let before = marker.lowerBound > rest.startIndex ? rest[rest.index(before: marker.lowerBound)] : ":"
            output += rest[..<marker.upperBound]
            rest = rest[marker.upperBound...]
            guard let close = rest.firstIndex(of: "\"") else { break }
            let value = String(rest[..<close])
            if before == ":" || before == ",", let url = URL(string: value, relativeTo: base)?.absoluteURL {
                output += rewrite(url)
            } else {
                output += value
            }
            rest = rest[close...]
        }
        return output + rest
    }
}
