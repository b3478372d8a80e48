import Foundation

/// Byte counts for people: decimal units, one decimal place.
public enum ByteFormat {
    /// `1234567` → `1.2 MB`.
    public static func string(_ bytes: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : "\(String(format: "%.1f", value)) \(units[unit])"
    }

    /// A rate: `480 kB/s`.
    public static func rate(_ bytesPerSecond: Double) -> String {
        string(Int64(bytesPerSecond.rounded())) + "/s"
    }
}

/// Media times for people.
enum TimeFormat {
    /// `63.25` → `1:03.2`.
    static func clock(_ seconds: Double) -> String {
        let tenths = Int((Swift.max(0, seconds) * 10).rounded(.down))
        let minutes = tenths / 600
        let rest = tenths % 600
        return String(format: "%d:%02d.%d", minutes, rest / 10, rest % 10)
    }

    /// `0.4` → `0.4 s`.
    static func seconds(_ seconds: Double) -> String { String(format: "%.1f s", seconds) }
}

/// The characters the screen is drawn with: block elements in a UTF-8 locale, plain ASCII otherwise.
struct Glyphs: Sendable {
    var segmentDone: Character
    var segmentAhead: Character
    var full: Character
    var partial: Character
    var none: Character
    var horizontal: Character
    var vertical: Character
    var dot: String
    var play: String
    var pause: String
    var current: Character
    var ellipsis: String
    var times: String
    var keys: (previous: String, next: String)
    /// The header's mark for a story whose sound plays.
    var sound: String
    /// The tray's marks for an author with unseen stories (a ring, as on a phone) and one with none left.
    var unseen: String
    var allSeen: String
    /// The keys that move between authors.
    var authorKeys: String

    static let unicode = Glyphs(
        segmentDone: "━", segmentAhead: "─", full: "█", partial: "▓", none: "░", horizontal: "─", vertical: "│",
        dot: "·", play: "▶", pause: "‖", current: "▶", ellipsis: "…", times: "×", keys: ("←/h", "→/l"),
        sound: "♪ sound", unseen: "●", allSeen: "○", authorKeys: "↑/↓")
    static let ascii = Glyphs(
        segmentDone: "=", segmentAhead: "-", full: "#", partial: "+", none: ".", horizontal: "-", vertical: "|",
        dot: "-", play: ">", pause: "||", current: ">", ellipsis: "...", times: "x", keys: ("<-/h", "->/l"),
        sound: "sound", unseen: "*", allSeen: "o", authorKeys: "up/dn")
}

extension String {
    /// Cut to `width` characters, ending with `ellipsis` when cut.
    func truncated(to width: Int, ellipsis: String) -> String {
        guard count > width else { return self }
        guard width > ellipsis.count else { return String(prefix(Swift.max(0, width))) }
        return String(prefix(width - ellipsis.count)) + ellipsis
    }

    /// Shortened to `width` characters at a word's end, ending with `ellipsis` (never cut mid-word, unless the
    /// first word alone is too long).
    func shortened(to width: Int, ellipsis: String) -> String {
        guard count > width else { return self }
        let room = width - ellipsis.count
        guard room > 0 else { return String(prefix(Swift.max(0, width))) }
        let head = prefix(room + 1)
        // The last space within the room: the words before it are whole.
        guard let space = head.lastIndex(where: { $0 == " " }), space > startIndex else {
            return truncated(to: width, ellipsis: ellipsis)
        }
        var kept = self[..<space]
        while let last = kept.last, ",;:(-".contains(last) { kept.removeLast() }
        return String(kept) + ellipsis
    }

    /// Padded with spaces (or cut, at a word's end when `ellipsis` marks the cut) to exactly `width` characters.
    func padded(to width: Int, ellipsis: String = "") -> String {
        let cut = ellipsis.isEmpty ? truncated(to: width, ellipsis: "") : shortened(to: width, ellipsis: ellipsis)
        return cut + String(repeating: " ", count: Swift.max(0, width - cut.count))
    }

    /// Word-wrapped into lines of at most `width` characters (a word longer than a line is cut across lines).
    func wrapped(to width: Int) -> [String] {
        guard width > 0 else { return [] }
        var lines: [String] = []
        var line = ""
        for word in split(separator: " ", omittingEmptySubsequences: true) {
            var word = Substring(word)
            if !line.isEmpty, line.count + 1 + word.count <= width {
                line += " " + word
                continue
            }
            if !line.isEmpty { lines.append(line) }
            while word.count > width {
                lines.append(String(word.prefix(width)))
                word = word.dropFirst(width)
            }
            line = String(word)
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// Right-aligned in `width` characters.
    func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: Swift.max(0, width - count)) + self
    }
}
