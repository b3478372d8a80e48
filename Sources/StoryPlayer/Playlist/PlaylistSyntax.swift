import Foundation

/// What the JSON parser leaves unsaid about a playlist's text: where a fault is, by line and column, commas that
/// close nothing (which JSON forbids and the parser lets pass), and field names the playlist does not know.
enum PlaylistSyntax {
    /// The line and column (both from 1) of byte `offset` of `data`; columns count characters, not bytes.
    static func position(of offset: Int, in data: Data) -> (line: Int, column: Int) {
        let bytes = data.prefix(Swift.max(0, Swift.min(offset, data.count)))
        let line = bytes.reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        let lineStart = bytes.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? bytes.startIndex
        // (Continuation bytes of UTF-8 start no character.)
        let column = bytes[lineStart...].filter { $0 & 0xC0 != 0x80 }.count + 1
        return (line, column)
    }

    /// The parser's reason with its "around character N" told as "at line L, column C".
    static func describe(_ reason: String, in data: Data) -> String {
        guard let range = reason.range(of: #"around character \d+"#, options: .regularExpression),
            let offset = Int(reason[range].split(separator: " ").last ?? "")
        else { return reason }
        let (line, column) = position(of: offset, in: data)
        return reason.replacingCharacters(in: range, with: "at line \(line), column \(column)")
            .trimmingCharacters(in: CharacterSet(charactersIn: ". "))
    }

    /// The offset of the first comma followed by nothing but white space and `]` or `}`, outside strings.
    static func trailingComma(in data: Data) -> (offset: Int, closing: Character)? {
        var inString = false
        var escaped = false
        var comma: Int?
        for (offset, byte) in data.enumerated() {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true }
                else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true; comma = nil
            case UInt8(ascii: ","): comma = offset
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if let comma { return (comma, Character(UnicodeScalar(byte))) }
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): break
            default: comma = nil
            }
        }
        return nil
    }

    /// The first key of `object` not among `known` (in the text's sorted order, so the message is stable), with
    /// the known one it most likely misspells.
    static func unknownKey(in object: [String: Any], known: [String]) -> (key: String, suggestion: String?)? {
        guard let key = object.keys.sorted().first(where: { !known.contains($0) }) else { return nil }
        let nearest = known.map { ($0, distance($0.lowercased(), key.lowercased())) }.min { $0.1 < $1.1 }
        // Near enough to be a slip: two edits, or the same first four letters ("story" for "stories").
        let near = nearest.flatMap { candidate, edits in
            edits <= 2 || (key.count >= 4 && candidate.lowercased().hasPrefix(key.lowercased().prefix(4)))
                ? candidate : nil
        }
        return (key, near)
    }

    /// The message for an unknown key of a `what` (e.g. "a story") whose fields are `known`.
    static func unknownKeyMessage(_ found: (key: String, suggestion: String?), what: String, known: [String]) -> String {
        let hint = found.suggestion.map { "did you mean \"\($0)\"? " } ?? ""
        let list = known.dropLast().joined(separator: ", ") + (known.count > 1 ? " and " : "") + (known.last ?? "")
        return "is not a field of \(what) (\(hint)the fields are \(list))"
    }

    /// Levenshtein distance between two short strings.
    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...Swift.max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = Swift.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}
