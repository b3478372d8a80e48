/// What a terminal answered to the start-up queries: kitty's graphics query, the cell size (`CSI 16 t`) and the
/// primary device attributes (DA1, which every terminal answers and so is asked last: its answer ends the wait).
public struct TerminalAnswers: Sendable, Equatable {
    /// The attributes of the DA1 answer (`CSI ? 63;1;4 c` → 63, 1, 4; 4 means sixel graphics); nil before it came.
    public var deviceAttributes: [Int]?
    /// The terminal answered kitty's graphics query with OK.
    public var kittyGraphics = false
    /// A cell's pixel size from the answer to `CSI 16 t`.
    public var cell: CellPixels?
    /// The largest sixel image the terminal shows, from its answer to XTSMGRAPHICS (`CSI ? 2 ; 1 ; 0 S`): xterm
    /// draws nothing of an image past it (its default is 1000×1000).
    public var sixelLimit: PixelSize?

    /// No answers.
    public init(
        deviceAttributes: [Int]? = nil, kittyGraphics: Bool = false, cell: CellPixels? = nil,
        sixelLimit: PixelSize? = nil
    ) {
        self.deviceAttributes = deviceAttributes
        self.kittyGraphics = kittyGraphics
        self.cell = cell
        self.sixelLimit = sixelLimit
    }

    /// The queries, in the order sent: kitty's graphics query (a 1×1 image it checks and does not keep), the cell
    /// size, the sixel geometry, then DA1. Inside a multiplexer (which shows no images, and where tmux would take
    /// kitty's query for the pane's title) only the cell size and DA1.
    public static func query(environment: [String: String]) -> [UInt8] {
        if PictureDetection.insideMultiplexer(environment) { return Array("\u{1B}[16t\u{1B}[c".utf8) }
        let kitty = "\u{1B}_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\u{1B}\\"
        return Array((kitty + "\u{1B}[16t\u{1B}[?2;1;0S\u{1B}[c").utf8)
    }

    /// True once the DA1 answer arrived (the answers to the earlier queries came before it, or never will).
    public var complete: Bool { deviceAttributes != nil }

    /// The terminal offers sixel graphics (attribute 4 of DA1).
    public var sixel: Bool { deviceAttributes?.contains(4) ?? false }

    /// Reads the answers out of what the terminal sent back (anything else, such as a key typed meanwhile, is
    /// skipped).
    public static func parse(_ bytes: [UInt8]) -> TerminalAnswers {
        var answers = TerminalAnswers()
        var i = 0
        while i < bytes.count {
            guard bytes[i] == 0x1B, i + 1 < bytes.count else {
                i += 1
                continue
            }
            if bytes[i + 1] == UInt8(ascii: "_") {
                // APC: ESC _ G <keys> ; <message> ESC \
                var end = i + 2
                while end + 1 < bytes.count, !(bytes[end] == 0x1B && bytes[end + 1] == UInt8(ascii: "\\")) { end += 1 }
                let body = String(decoding: bytes[(i + 2)..<Swift.min(end, bytes.count)], as: UTF8.self)
                if body.hasPrefix("Gi=31;"), body.hasSuffix(";OK") || body.hasSuffix("OK") { answers.kittyGraphics = true }
                i = end + 2
            } else if bytes[i + 1] == UInt8(ascii: "[") {
                // CSI: parameters, then a final byte in @…~.
                var end = i + 2
                while end < bytes.count, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
                guard end < bytes.count else { break }
                let parameters = String(decoding: bytes[(i + 2)..<end], as: UTF8.self)
                let final = bytes[end]
                if final == UInt8(ascii: "c"), parameters.hasPrefix("?") {
                    answers.deviceAttributes = parameters.dropFirst().split(separator: ";").compactMap { Int($0) }
                } else if final == UInt8(ascii: "S"), parameters.hasPrefix("?2;") {
                    // XTSMGRAPHICS: `? 2 ; status ; width ; height` (status 0: success).
                    let numbers = parameters.dropFirst().split(separator: ";").compactMap { Int($0) }
                    if numbers.count == 4, numbers[1] == 0, numbers[2] > 0, numbers[3] > 0 {
                        answers.sixelLimit = PixelSize(width: numbers[2], height: numbers[3])
                    }
                } else if final == UInt8(ascii: "t") {
                    let numbers = parameters.split(separator: ";").compactMap { Int($0) }
                    if numbers.count == 3, numbers[0] == 6, numbers[1] > 0, numbers[2] > 0 {
                        answers.cell = CellPixels(width: numbers[2], height: numbers[1])
                    }
                }
                i = end + 1
            } else {
                i += 1
            }
        }
        return answers
    }
}
