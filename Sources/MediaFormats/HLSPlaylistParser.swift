import Foundation

/// Reads HLS playlists (RFC 8216): the tags a video-on-demand stream uses, URIs resolved against the playlist's
/// own URL. Anything malformed is one `HLSPlaylistError` naming the line; tags it does not know are skipped, as
/// the RFC asks of clients.
public enum HLSPlaylistParser {
    /// Playlists larger than this are refused (a story's playlist is a few kilobytes).
    public static let maxBytes = 4 << 20

    /// Parses `text`, the playlist found at `url`.
    public static func parse(_ text: String, url: URL) throws(HLSPlaylistError) -> HLSPlaylist {
        guard text.utf8.count <= maxBytes else {
            throw HLSPlaylistError(line: 0, "the playlist is larger than \(maxBytes >> 20) MiB")
        }
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = first.dropFirst() }
        guard lines.first?.trimmingCharacters(in: .whitespaces) == "#EXTM3U" else {
            throw HLSPlaylistError(line: 1, "not an HLS playlist (it must start with #EXTM3U)")
        }
        var reader = Reader(base: url)
        for (offset, raw) in lines.enumerated().dropFirst() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            try reader.read(line, number: offset + 1)
        }
        return try reader.finish()
    }

    /// Parses `bytes` as UTF-8 text (see `parse(_:url:)`); text that is not UTF-8 is refused.
    public static func parse(_ bytes: [UInt8], url: URL) throws(HLSPlaylistError) -> HLSPlaylist {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HLSPlaylistError(line: 0, "the playlist is not UTF-8 text")
        }
        return try parse(text, url: url)
    }

    /// True when `url`'s path or `contentType` names an HLS playlist.
    public static func isPlaylist(url: URL, contentType: String?) -> Bool {
        isPlaylist(contentType: contentType) || isPlaylistPath(url)
    }

    /// True when `url`'s path ends in `.m3u8` (any case).
    public static func isPlaylistPath(_ url: URL) -> Bool {
        url.path.utf8.reversed().starts(with: "8u3m.".utf8, by: { asciiLowercase($0) == $1 })
    }

    /// True when `contentType` (parameters and surrounding spaces aside, any case) is an HLS playlist's type.
    /// A proxy asks this of every request it answers from the cache, so it allocates nothing.
    public static func isPlaylist(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let utf8 = contentType.utf8
        let end = utf8.firstIndex(of: UInt8(ascii: ";")) ?? utf8.endIndex
        let type = utf8[utf8.startIndex..<end].drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return playlistTypes.contains { type.elementsEqual($0.utf8, by: { asciiLowercase($0) == $1 }) }
    }

    private static let playlistTypes = [
        "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl",
    ]

    private static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

/// The state of a parse: tags wait for the URI line they describe.
private struct Reader {
    let base: URL
    var variants: [HLSVariant] = []
    var subtitles: [HLSRendition] = []
    var segments: [HLSSegment] = []
    var pendingVariant: (attributes: [String: String], line: Int)?
    var pendingDuration: Double?
    var pendingRange: (length: Int64, offset: Int64?)?
    /// Where the last byte-range segment ended, by URL (the next may leave its offset out).
    var lastRangeEnd: (url: URL, end: Int64)?
    var map: HLSMap?
    var key: HLSKey?
    var targetDuration: Double?
    var mediaSequence = 0
    var playlistType: String?
    var isComplete = false
    var firstSegmentLine = 0

    init(base: URL) { self.base = base }

    mutating func read(_ line: String, number: Int) throws(HLSPlaylistError) {
        guard line.hasPrefix("#") else {
            try uri(line, number: number)
            return
        }
        guard line.hasPrefix("#EXT") else { return }  // a comment
        let colon = line.firstIndex(of: ":")
        let name = colon.map { String(line[..<$0]) } ?? line
        let value = colon.map { String(line[line.index(after: $0)...]) } ?? ""
        switch name {
        case "#EXT-X-STREAM-INF":
            pendingVariant = (try Attributes.parse(value, tag: name, line: number), number)
        case "#EXT-X-MEDIA":
            // Subtitle renditions only (audio and video ones are not played); one that cannot be read is passed
            // over: the story plays without it.
            guard let attributes = try? Attributes.parse(value, tag: name, line: number),
                attributes["TYPE"] == "SUBTITLES", let text = attributes["URI"], let url = try? resolve(text, line: number)
            else { break }
            subtitles.append(HLSRendition(
                url: url, group: attributes["GROUP-ID"] ?? "", language: attributes["LANGUAGE"], name: attributes["NAME"],
                isDefault: attributes["DEFAULT"] == "YES"))
        case "#EXTINF":
            let text = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard let duration = Double(text.trimmingCharacters(in: .whitespaces)), duration.isFinite, duration >= 0 else {
                throw HLSPlaylistError(line: number, "#EXTINF duration '\(text)' is not a number of seconds")
            }
            pendingDuration = duration
        case "#EXT-X-BYTERANGE":
            pendingRange = try Self.byteRange(value, tag: name, line: number)
        case "#EXT-X-MAP":
            let attributes = try Attributes.parse(value, tag: name, line: number)
            guard let text = attributes["URI"] else { throw HLSPlaylistError(line: number, "#EXT-X-MAP has no URI") }
            var range: Range<Int64>?
            if let rangeText = attributes["BYTERANGE"] {
                let (length, offset) = try Self.byteRange(rangeText, tag: name, line: number)
                range = offset.map { $0..<($0 + length) } ?? 0..<length
            }
            map = HLSMap(url: try resolve(text, line: number), byteRange: range)
        case "#EXT-X-KEY":
            let attributes = try Attributes.parse(value, tag: name, line: number)
            switch attributes["METHOD"] {
            case "NONE":
                key = nil
            case "AES-128":
                guard let text = attributes["URI"] else {
                    throw HLSPlaylistError(line: number, "#EXT-X-KEY METHOD=AES-128 has no URI")
                }
                var iv: [UInt8]?
                if let ivText = attributes["IV"] {
                    guard let bytes = Attributes.hex(ivText), bytes.count <= 16 else {
                        throw HLSPlaylistError(line: number, "#EXT-X-KEY IV '\(ivText)' is not a 128-bit hexadecimal number")
                    }
                    iv = [UInt8](repeating: 0, count: 16 - bytes.count) + bytes
                }
                key = HLSKey(url: try resolve(text, line: number), iv: iv)
            case let method?:
                throw HLSPlaylistError(
                    line: number, "#EXT-X-KEY METHOD=\(method) is not supported (only NONE and AES-128 are)")
            case nil:
                throw HLSPlaylistError(line: number, "#EXT-X-KEY has no METHOD")
            }
        case "#EXT-X-TARGETDURATION":
            guard let seconds = Int(value), seconds >= 0 else {
                throw HLSPlaylistError(line: number, "#EXT-X-TARGETDURATION '\(value)' is not a whole number of seconds")
            }
            targetDuration = Double(seconds)
        case "#EXT-X-MEDIA-SEQUENCE":
            guard let sequence = Int(value), sequence >= 0, sequence <= 1 << 53 else {
                throw HLSPlaylistError(line: number, "#EXT-X-MEDIA-SEQUENCE '\(value)' is not a whole number")
            }
            mediaSequence = sequence
        case "#EXT-X-PLAYLIST-TYPE":
            guard value == "VOD" || value == "EVENT" else {
                throw HLSPlaylistError(line: number, "#EXT-X-PLAYLIST-TYPE '\(value)' is neither VOD nor EVENT")
            }
            playlistType = value
        case "#EXT-X-ENDLIST":
            isComplete = true
        default:
            break  // other tags (#EXT-X-VERSION, #EXT-X-INDEPENDENT-SEGMENTS, ...) do not change what is fetched
        }
    }

    private mutating func uri(_ text: String, number: Int) throws(HLSPlaylistError) {
        let url = try resolve(text, line: number)
        if let variant = pendingVariant {
            let (attributes, tagLine) = (variant.attributes, variant.line)
            pendingVariant = nil
            guard let bandwidth = attributes["BANDWIDTH"].flatMap({ Int($0) }), bandwidth > 0 else {
                throw HLSPlaylistError(line: tagLine, "#EXT-X-STREAM-INF needs BANDWIDTH, a whole number of bits per second")
            }
            var resolution: HLSResolution?
            if let text = attributes["RESOLUTION"] {
                let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
                guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
                    throw HLSPlaylistError(line: tagLine, "#EXT-X-STREAM-INF RESOLUTION '\(text)' is not WIDTHxHEIGHT")
                }
                resolution = HLSResolution(width: width, height: height)
            }
            variants.append(HLSVariant(
                url: url, bandwidth: bandwidth, averageBandwidth: attributes["AVERAGE-BANDWIDTH"].flatMap { Int($0) },
                resolution: resolution, codecs: attributes["CODECS"]))
            return
        }
        guard let duration = pendingDuration else {
            throw HLSPlaylistError(line: number, "'\(text)' follows neither #EXTINF nor #EXT-X-STREAM-INF")
        }
        pendingDuration = nil
        var range: Range<Int64>?
        if let pending = pendingRange {
            let (length, offset) = (pending.length, pending.offset)
            pendingRange = nil
            let start: Int64
            if let offset {
                start = offset
            } else if let last = lastRangeEnd, last.url == url, last.end <= Int64.max - length {
                start = last.end
            } else {
                throw HLSPlaylistError(
                    line: number, "#EXT-X-BYTERANGE without an offset must follow a byte range of the same URI")
            }
            range = start..<(start + length)
            lastRangeEnd = (url, start + length)
        } else {
            lastRangeEnd = nil
        }
        if segments.isEmpty { firstSegmentLine = number }
        segments.append(HLSSegment(
            url: url, duration: duration, byteRange: range, map: map, key: key, sequence: mediaSequence + segments.count))
    }

    func finish() throws(HLSPlaylistError) -> HLSPlaylist {
        if pendingVariant != nil { throw HLSPlaylistError(line: 0, "the last #EXT-X-STREAM-INF has no URI after it") }
        if pendingDuration != nil { throw HLSPlaylistError(line: 0, "the last #EXTINF has no URI after it") }
        if !variants.isEmpty {
            guard segments.isEmpty else {
                throw HLSPlaylistError(line: firstSegmentLine, "a playlist cannot hold both variants and segments")
            }
            return .master(HLSMasterPlaylist(variants: variants, subtitles: subtitles))
        }
        guard !segments.isEmpty else { throw HLSPlaylistError(line: 0, "the playlist names no variant and no segment") }
        guard let targetDuration else {
            throw HLSPlaylistError(line: 0, "a media playlist needs #EXT-X-TARGETDURATION")
        }
        return .media(HLSMediaPlaylist(
            targetDuration: targetDuration, mediaSequence: mediaSequence, playlistType: playlistType,
            isComplete: isComplete, segments: segments))
    }

    private func resolve(_ text: String, line: Int) throws(HLSPlaylistError) -> URL {
        // A playlist read from a file on this machine may name files beside it; one from the network only URLs.
        let local = base.isFileURL
        guard let url = URL(string: text, relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https" ? url.host?.isEmpty == false : (local && url.isFileURL)
        else {
            let kinds = local ? "a file or an http or https URI" : "an http or https URI"
            throw HLSPlaylistError(line: line, "'\(text)' is not \(kinds) (absolute, or relative to the playlist)")
        }
        return url
    }

    /// `LENGTH[@OFFSET]`.
    static func byteRange(_ text: String, tag: String, line: Int) throws(HLSPlaylistError) -> (Int64, Int64?) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let length = Int64(parts[0]), length >= 0,
            parts.count == 1 || Int64(parts[1]).map({ $0 >= 0 && $0 <= Int64.max - length }) == true
        else {
            throw HLSPlaylistError(line: line, "\(tag) byte range '\(text)' is not LENGTH[@OFFSET]")
        }
        return (length, parts.count == 2 ? Int64(parts[1]) : nil)
    }
}

/// An attribute list: `NAME=VALUE,NAME="quoted, string",...`.
enum Attributes {
    static func parse(_ text: String, tag: String, line: Int) throws(HLSPlaylistError) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else {
                throw HLSPlaylistError(line: line, "\(tag) attribute '\(rest)' has no value")
            }
            let name = String(rest[..<equals]).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.allSatisfy({ ($0.isASCII && ($0.isUppercase || $0.isNumber)) || $0 == "-" }) else {
                throw HLSPlaylistError(line: line, "\(tag) attribute name '\(name)' is not upper-case letters, digits and '-'")
            }
            rest = rest[rest.index(after: equals)...]
            let value: String
            if rest.first == "\"" {
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: "\"") else {
                    throw HLSPlaylistError(line: line, "\(tag) attribute \(name) has an unclosed quoted string")
                }
                value = String(body[..<close])
                rest = body[body.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = String(rest[..<end]).trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result[name] = value
            rest = rest.drop { $0 == " " || $0 == "\t" }
            if rest.first == "," {
                rest = rest.dropFirst()
            } else if !rest.isEmpty {
                throw HLSPlaylistError(line: line, "\(tag) attribute \(name) is followed by '\(rest)' instead of a comma")
            }
        }
        return result
    }

    /// `0x...` as bytes.
    static func hex(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("0x") || text.hasPrefix("0X") else { return nil }
        var digits = Array(text.utf8.dropFirst(2))
        guard !digits.isEmpty, digits.count <= 64 else { return nil }
        if digits.count % 2 == 1 { digits.insert(UInt8(ascii: "0"), at: 0) }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
