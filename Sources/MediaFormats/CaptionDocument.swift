import Foundation

/// One caption: its text shown from `start` to `end` (seconds on the story's clock).
public struct CaptionCue: Sendable, Equatable {
    /// When it appears.
    public var start: Double
    /// When it leaves.
    public var end: Double
    /// Its lines, markup stripped.
    public var text: String
    /// The whole cue was in italics (`<i>`), as a speaker off screen or a sound is written.
    public var italic: Bool

    /// A cue.
    public init(start: Double, end: Double, text: String, italic: Bool = false) {
        self.start = start
        self.end = end
        self.text = text
        self.italic = italic
    }
}

/// Reads SubRip (`.srt`) and WebVTT (`.vtt`) captions: what can be read is kept, a cue with broken timings is
/// passed over, text in UTF-8, UTF-16 (with its byte-order mark) or, failing those, Latin-1.
public enum CaptionDocument {
    /// The most of a file read: a caption file larger than this is not a caption file (what fits is read).
    public static let byteLimit = 10 << 20
    /// The most cues kept.
    public static let cueLimit = 20_000

    /// WebVTT's `X-TIMESTAMP-MAP`: the MPEG-TS time (in seconds) that the cue time `local` stands for.
    public struct TimestampMap: Sendable, Equatable {
        /// The cue time, in seconds.
        public var local: Double
        /// The MPEG-TS time, in seconds (90 kHz ticks / 90,000).
        public var mpegts: Double

        /// A map.
        public init(local: Double, mpegts: Double) {
            self.local = local
            self.mpegts = mpegts
        }
    }

    /// What a document holds.
    public struct Parsed: Sendable, Equatable {
        /// Its cues in order of start (overlapping cues kept).
        public var cues: [CaptionCue]
        /// The timestamp map of an HLS WebVTT segment, if it has one.
        public var timestampMap: TimestampMap?
    }

    /// Reads `bytes` as WebVTT when it says so, else as SubRip.
    public static func parse(_ bytes: [UInt8]) -> Parsed {
        let text = decode(Array(bytes.prefix(byteLimit)))
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var parsed = Parsed(cues: [], timestampMap: nil)
        let isVTT = lines.first?.hasPrefix("WEBVTT") == true
        var index = 0
        while index < lines.count, parsed.cues.count < cueLimit {
            let line = lines[index].trimmingCharacters(in: .whitespaces)
            index += 1
            if isVTT, line.hasPrefix("X-TIMESTAMP-MAP=") { parsed.timestampMap = timestampMap(line) }
            if isVTT, line.hasPrefix("NOTE") || line == "STYLE" || line == "REGION" {
                // A block up to the next blank line.
                while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).isEmpty { index += 1 }
                continue
            }
            guard line.contains("-->"), let (start, end) = timing(line) else { continue }
            var body: [String] = []
            while index < lines.count {
                let next = lines[index]
                if next.trimmingCharacters(in: .whitespaces).isEmpty { break }
                // A cue without the blank line before the next one's timing: the timing starts the next cue.
                if next.contains("-->"), timing(next) != nil { break }
                body.append(next)
                index += 1
            }
            // SubRip numbers each cue: a lone number right before a timing line is its counter, not text.
            if !isVTT, let last = body.last, index < lines.count, lines[index].contains("-->"),
                last.allSatisfy(\.isNumber)
            {
                body.removeLast()
            }
            if let cue = cue(start: start, end: end, lines: body) { parsed.cues.append(cue) }
        }
        parsed.cues.sort { $0.start == $1.start ? $0.end < $1.end : $0.start < $1.start }
        return parsed
    }

    /// A cue of `lines` (markup stripped) from `start` to `end`; nil when the timing is broken or no text is left.
    public static func cue(start: Double, end: Double, lines: [String]) -> CaptionCue? {
        guard start.isFinite, end.isFinite, start >= 0, end > start else { return nil }
        let (text, italic) = strip(lines)
        return text.isEmpty ? nil : CaptionCue(start: start, end: end, text: text, italic: italic)
    }

    /// `bytes` as text: UTF-8 or UTF-16 by their byte-order marks, UTF-8 when valid, else Latin-1.
    public static func decode(_ bytes: [UInt8]) -> String {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return String(decoding: bytes.dropFirst(3), as: UTF8.self) }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            let little = bytes[0] == 0xFF
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            var i = 2
            while i + 1 < bytes.count {
                units.append(little ? UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8 : UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
                i += 2
            }
            return String(decoding: units, as: UTF16.self)
        }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }

    /// The start and end of a timing line (`00:00:01,000 --> 00:00:02,500 align:start`).
    static func timing(_ line: String) -> (Double, Double)? {
        let halves = line.components(separatedBy: "-->")
        guard halves.count == 2 else { return nil }
        let endText = halves[1].trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
        guard let start = seconds(halves[0].trimmingCharacters(in: .whitespaces)), let end = seconds(endText) else {
            return nil
        }
        return (start, end)
    }

    /// `hh:mm:ss,mmm`, `hh:mm:ss.mmm` or `mm:ss.mmm` in seconds.
    static func seconds(_ text: String) -> Double? {
        let fields = text.replacingOccurrences(of: ",", with: ".").split(separator: ":")
        guard (2...3).contains(fields.count) else { return nil }
        var total = 0.0
        for (i, field) in fields.enumerated() {
            let isLast = i == fields.count - 1
            guard !field.isEmpty, field.allSatisfy({ $0.isASCII && ($0.isNumber || (isLast && $0 == ".")) }),
                let value = Double(field), value.isFinite, value >= 0, isLast || value == value.rounded()
            else { return nil }
            if !isLast, i > 0, value >= 60 { return nil }
            total = total * 60 + value
        }
        return total <= 86_400 * 7 ? total : nil
    }

    /// `X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000` (either order).
    static func timestampMap(_ line: String) -> TimestampMap? {
        var local: Double?
        var mpegts: Double?
        for field in line.dropFirst("X-TIMESTAMP-MAP=".count).split(separator: ",") {
            let pair = field.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "LOCAL" { local = seconds(pair[1]) }
            if pair[0] == "MPEGTS", let ticks = Double(pair[1]), ticks.isFinite, ticks >= 0 { mpegts = ticks / 90_000 }
        }
        guard let local, let mpegts else { return nil }
        return TimestampMap(local: local, mpegts: mpegts)
    }

    /// The cue's text without markup (`<i>`, `<b>`, `<font …>`, `<c.x>`, `<v Name>`, inline timestamps, ASS
    /// `{\an8}` overrides), entities decoded, blank lines dropped; italic when every line was.
    static func strip(_ lines: [String]) -> (String, Bool) {
        var kept: [String] = []
        var allItalic = true
        var italicOpen = false
        for line in lines {
            var out = ""
            var italicText = false
            var plainText = false
            var index = line.startIndex
            while index < line.endIndex {
                let character = line[index]
                if character == "<", let close = line[index...].firstIndex(of: ">") {
                    let tag = line[line.index(after: index)..<close].lowercased()
                    if tag == "i" || tag.hasPrefix("i.") { italicOpen = true }
                    if tag == "/i" { italicOpen = false }
                    index = line.index(after: close)
                    continue
                }
                if character == "{", let close = line[index...].firstIndex(of: "}"), line[line.index(after: index)...].first == "\\" {
                    index = line.index(after: close)
                    continue
                }
                if !character.isWhitespace {
                    if italicOpen { italicText = true } else { plainText = true }
                }
                out.append(character)
                index = line.index(after: index)
            }
            let text = decodeEntities(out).replacingOccurrences(of: "\\N", with: " ").trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            if plainText || !italicText { allItalic = false }
            kept.append(text)
        }
        return (kept.joined(separator: "\n"), allItalic && !kept.isEmpty)
    }

    private static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&nbsp;", with: " ").replacingOccurrences(of: "&lrm;", with: "")
            .replacingOccurrences(of: "&rlm;", with: "").replacingOccurrences(of: "&amp;", with: "&")
    }
}
