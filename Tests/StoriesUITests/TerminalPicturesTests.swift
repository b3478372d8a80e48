import Foundation
import Terminal
import Testing

/// A frame of `width`×`height` packed RGB made by `colour(x, y)`.
func pixels(_ width: Int, _ height: Int, _ colour: (Int, Int) -> (UInt8, UInt8, UInt8)) -> ChafaPicture.Pixels {
    var rgb: [UInt8] = []
    rgb.reserveCapacity(width * height * 3)
    for y in 0..<height {
        for x in 0..<width {
            let c = colour(x, y)
            rgb += [c.0, c.1, c.2]
        }
    }
    return ChafaPicture.Pixels(width: width, height: height, rgb: rgb)
}

@Suite struct PictureDetectionTests {
    static let xterm = ["TERM": "xterm-256color"]

    @Test func noQueryReachesAMultiplexerThatItWouldShow() {
        // tmux takes kitty's graphics query for the pane's title; inside one only the cell size and DA1 go out.
        for environment in [["TMUX": "/tmp/tmux-0/default,1,0", "TERM": "tmux-256color"], ["TERM": "screen"]] {
            let query = String(decoding: TerminalAnswers.query(environment: environment), as: UTF8.self)
            #expect(query == "\u{1B}[16t\u{1B}[c", "\(environment)")
        }
        let direct = String(decoding: TerminalAnswers.query(environment: Self.xterm), as: UTF8.self)
        #expect(direct.hasPrefix("\u{1B}_Gi=31,") && direct.hasSuffix("\u{1B}[16t\u{1B}[?2;1;0S\u{1B}[c"))
    }

    /// xterm shows nothing of a sixel image larger than its graphics limit (1000×1000 by default): the limit
    /// it tells (XTSMGRAPHICS) is kept, an untold one assumed, and pictures fit within it.
    @Test func theSixelLimitIsAskedKeptAndAssumedWhenUntold() {
        let xterm = TerminalAnswers.parse(Array("\u{1B}[6;17;8t\u{1B}[?2;0;1000;1000S\u{1B}[?63;1;2;4c".utf8))
        #expect(xterm.sixelLimit == PixelSize(width: 1000, height: 1000))
        #expect(TerminalAnswers.parse(Array("\u{1B}[?2;3;0S\u{1B}[?63;4c".utf8)).sixelLimit == nil)  // refused
        func choose(_ answers: TerminalAnswers) -> PictureOutput {
            PictureDetection.choose(.init(environment: Self.xterm, unicode: true, colors: 256, answers: answers))
        }
        #expect(choose(xterm).imageLimit == PixelSize(width: 1000, height: 1000))
        let big = TerminalAnswers.parse(Array("\u{1B}[?2;0;4096;4096S\u{1B}[?63;4c".utf8))
        #expect(choose(big).imageLimit == PixelSize(width: 4096, height: 4096))
        #expect(choose(TerminalAnswers(deviceAttributes: [63, 4])).imageLimit == PictureOutput.assumedSixelLimit)
        #expect(choose(TerminalAnswers(deviceAttributes: [62])).imageLimit == nil)  // cells have none
    }

    @Test func theTerminalsAnswersChooseTheProtocol() {
        let kitty = TerminalAnswers.parse(Array("\u{1B}_Gi=31;OK\u{1B}\\\u{1B}[6;17;8t\u{1B}[?62;22;52c".utf8))
        #expect(kitty.kittyGraphics && kitty.complete && !kitty.sixel)
        #expect(kitty.cell == CellPixels(width: 8, height: 17))
        let vt340 = TerminalAnswers.parse(Array("\u{1B}[?63;1;2;4;6;9;15;16;22;28c".utf8))
        #expect(vt340.sixel && !vt340.kittyGraphics)
        // A key typed while waiting is skipped; an answer cut short is not complete.
        #expect(TerminalAnswers.parse(Array("x\u{1B}[?1;2c".utf8)).deviceAttributes == [1, 2])
        #expect(!TerminalAnswers.parse(Array("\u{1B}[?63;4".utf8)).complete)

        func choose(_ answers: TerminalAnswers, _ env: [String: String] = Self.xterm, unicode: Bool = true) -> PictureOutput {
            PictureDetection.choose(.init(environment: env, unicode: unicode, colors: 256, answers: answers))
        }
        #expect(choose(kitty).picture == .kitty)
        #expect(choose(kitty).cell == CellPixels(width: 8, height: 17))
        #expect(choose(vt340).picture == .sixel)
        #expect(choose(TerminalAnswers.parse(Array("\u{1B}[?62;22c".utf8))).picture == .symbols)
        #expect(choose(TerminalAnswers.parse(Array("\u{1B}[?62;22c".utf8)), unicode: false).picture == .ascii)
        // Inside tmux (no passthrough) cells, whatever the outer terminal says.
        #expect(choose(vt340, ["TERM": "tmux-256color", "TMUX": "/tmp/t,1,0"]).picture == .symbols)
        #expect(choose(kitty, ["TERM": "screen-256color"]).picture == .symbols)
        // No answer in time: the terminal's name.
        #expect(choose(TerminalAnswers(), ["TERM": "xterm-kitty"]).picture == .kitty)
        #expect(choose(TerminalAnswers(), ["TERM": "foot"]).picture == .sixel)
        #expect(choose(TerminalAnswers(), ["TERM": "xterm-256color"]).picture == .symbols)
        // The viewer's choice wins, but symbols need UTF-8.
        let asked = PictureDetection.choose(.init(environment: Self.xterm, unicode: true, colors: 256), requested: .sixel)
        #expect(asked.picture == .sixel)
        #expect(PictureDetection.choose(.init(environment: Self.xterm, unicode: false, colors: 256), requested: .half).picture == .ascii)
    }

    @Test func coloursAndCellSizeComeFromTheEnvironmentTerminfoAndTheWindow() {
        func depth(_ env: [String: String], colors: Int = 256, rgb: Bool = false) -> ColorDepth {
            PictureDetection.colorDepth(.init(environment: env, unicode: true, colors: colors, terminfoRGB: rgb))
        }
        #expect(depth(["COLORTERM": "truecolor"]) == .truecolor)
        #expect(depth(["COLORTERM": "24bit"]) == .truecolor)
        #expect(depth([:], rgb: true) == .truecolor)
        #expect(depth([:]) == .palette256)
        #expect(depth([:], colors: 8) == .palette16)
        #expect(depth(["NO_COLOR": "1", "COLORTERM": "truecolor"]) == .none)
        #expect(depth([:], colors: 0) == .none)
        // NO_COLOR: cells without colour, never images.
        let plain = PictureDetection.choose(
            .init(environment: ["NO_COLOR": "1"], unicode: true, colors: 256,
                answers: TerminalAnswers(deviceAttributes: [63, 4])))
        #expect(plain.picture == .symbols && plain.colors == .none)
        // TIOCGWINSZ's pixel size wins over the answer to CSI 16 t; neither: a cell twice as tall as wide.
        let window = PictureDetection.choose(
            .init(environment: [:], unicode: true, colors: 256,
                answers: TerminalAnswers(deviceAttributes: [1], cell: CellPixels(width: 9, height: 18)),
                windowCell: CellPixels(width: 8, height: 17)))
        #expect(window.cell == CellPixels(width: 8, height: 17))
        #expect(PictureDetection.choose(.init(environment: [:], unicode: true, colors: 256)).cell == .assumed)
        #expect(PictureDetection.choose(.init(environment: ["TERM": "xterm-kitty"], unicode: true, colors: 256)).sextants)
        #expect(!PictureDetection.choose(.init(environment: Self.xterm, unicode: true, colors: 256)).sextants)
    }
}

@Suite struct PictureEncodingTests {
    @Test func anOddWidthFrameIsNotSheared() throws {
        try #require(ChafaPicture.available, "libchafa is needed: \(ChafaPicture.unavailableReason ?? "")")
        // 453 pixels wide (rows of 1359 bytes): a vertical edge at the middle must stay vertical in every row.
        let frame = pixels(453, 256) { x, _ in x < 226 ? (255, 255, 255) : (0, 0, 0) }
        let output = PictureOutput(picture: .symbols, colors: .truecolor)
        let cells = try #require(ChafaPicture.cells(frame, columns: 40, rows: 12, output: output))
        for row in 0..<12 {
            for column in 0..<40 where column != 19 && column != 20 {
                let cell = cells[row * 40 + column]
                let paint = cell.character == "█" ? cell.foreground : cell.background
                #expect(paint == .rgb(column < 20 ? 0xFFFFFF : 0), "row \(row) column \(column): \(cell)")
            }
        }
    }

    @Test func aSixelImageDecodesBackToTheFrame() throws {
        try #require(ChafaPicture.available, "libchafa is needed: \(ChafaPicture.unavailableReason ?? "")")
        // Soft gradients and a hard edge, 10×3 cells of 8×16 pixels.
        let frame = pixels(80, 48) { x, y in
            x < 40 ? (UInt8(x * 6), UInt8(y * 5), 128) : (230, 40, UInt8(255 - y * 4))
        }
        let output = PictureOutput(picture: .sixel, colors: .truecolor, cell: CellPixels(width: 8, height: 16))
        let bytes = try #require(ChafaPicture.sixel(frame, columns: 10, rows: 3, output: output))
        let image = try #require(SixelImage.decode(bytes))
        #expect(image.width == 80 && image.height == 48)
        var error = 0.0
        for i in 0..<(80 * 48 * 3) { error += Double(abs(Int(image.rgb[i]) - Int(frame.rgb[i]))) }
        let mean = error / Double(80 * 48 * 3)
        #expect(mean < 6, "mean error \(mean) levels")
    }

    /// A playing video's frames are sent in 240 fixed colours, undithered: about half the bytes of an image with
    /// its own palette (so twice the frames get through a terminal that drains a few MB a second), still close.
    @Test func aMovingFrameTakesAFixedPaletteAtAboutHalfTheBytes() throws {
        try #require(ChafaPicture.available, "libchafa is needed: \(ChafaPicture.unavailableReason ?? "")")
        // A smooth zoom-like picture: rings of slowly changing colour, 40×12 cells of 8×16 pixels.
        let frame = pixels(320, 192) { x, y in
            let d = Double((x - 160) * (x - 160) + (y - 96) * (y - 96)).squareRoot()
            return (UInt8(128 + 100 * sin(d / 9)), UInt8(128 + 100 * sin(d / 13 + 1)), UInt8(128 + 100 * cos(d / 17)))
        }
        let output = PictureOutput(picture: .sixel, colors: .truecolor, cell: CellPixels(width: 8, height: 16))
        let still = try #require(ChafaPicture.sixel(frame, columns: 40, rows: 12, output: output))
        let moving = try #require(ChafaPicture.sixel(frame, columns: 40, rows: 12, output: output, fixedPalette: true))
        #expect(moving.count * 10 < still.count * 7, "moving \(moving.count) bytes, still \(still.count)")
        // (240 fixed colours are steps of some 40 levels: smooth gradients band, 16 levels off on average here.)
        for (bytes, bound) in [(still, 6.0), (moving, 20.0)] {
            let image = try #require(SixelImage.decode(bytes))
            #expect(image.width == 320 && image.height == 192)
            var error = 0.0
            for i in 0..<(320 * 192 * 3) { error += Double(abs(Int(image.rgb[i]) - Int(frame.rgb[i]))) }
            #expect(error / Double(320 * 192 * 3) < bound, "mean error \(error / Double(320 * 192 * 3)) levels")
        }
        // The still's canvas was kept beside the moving one's: it is the same image again.
        #expect(ChafaPicture.sixel(frame, columns: 40, rows: 12, output: output) == still)
    }

    @Test func aKittyImageCarriesTheFramesExactBytesInChunks() throws {
        let frame = pixels(100, 60) { x, y in (UInt8(x), UInt8(y), UInt8((x * y) % 256)) }
        let bytes = KittyImage.show(frame, columns: 12, rows: 4, id: 7)
        let text = String(decoding: bytes, as: UTF8.self)
        let messages = text.components(separatedBy: "\u{1B}_G").dropFirst().map { $0.replacingOccurrences(of: "\u{1B}\\", with: "") }
        #expect(messages.count == 6)  // 18,000 bytes are 24,000 base64 characters: 5 chunks of 4096 and the rest
        let first = try #require(messages.first)
        #expect(first.hasPrefix("a=T,f=24,s=100,v=60,c=12,r=4,i=7,p=1,C=1,q=2,m=1;"))
        #expect(messages.dropLast().allSatisfy { $0.contains("m=1;") } && messages.last?.hasPrefix("m=0;") == true)
        let payload = messages.map { String($0.split(separator: ";", maxSplits: 1)[1]) }.joined()
        #expect(messages.dropLast().allSatisfy { $0.split(separator: ";", maxSplits: 1)[1].count == 4096 })
        #expect(Data(base64Encoded: payload).map { Array($0) } == frame.rgb)
        #expect(String(decoding: KittyImage.delete(id: 7), as: UTF8.self) == "\u{1B}_Ga=d,d=I,i=7,q=2\u{1B}\\")
    }
}

/// A sixel decoder for tests: colour registers (`#n;2;r;g;b` in percent), `#n` selections, data characters, `!n`
/// repeats, `$` (back to the band's start) and `-` (the next band).
enum SixelImage {
    static func decode(_ bytes: [UInt8]) -> (width: Int, height: Int, rgb: [UInt8])? {
        guard let start = bytes.firstIndex(of: UInt8(ascii: "q")) else { return nil }
        var i = start + 1
        var width = 0, height = 0
        func number() -> Int {
            var value = 0
            while i < bytes.count, (48...57).contains(bytes[i]) {
                value = value * 10 + Int(bytes[i] - 48)
                i += 1
            }
            return value
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "\"") {
            i += 1
            _ = number(); i += 1; _ = number(); i += 1
            width = number(); i += 1
            height = number()
        }
        guard width > 0, height > 0 else { return nil }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        var palette: [Int: (UInt8, UInt8, UInt8)] = [:]
        var colour = 0, x = 0, band = 0
        func put(_ sixel: Int, count: Int) {
            let c = palette[colour] ?? (0, 0, 0)
            for _ in 0..<count {
                for bit in 0..<6 where sixel & (1 << bit) != 0 {
                    let y = band * 6 + bit
                    guard x < width, y < height else { continue }
                    let p = (y * width + x) * 3
                    rgb[p] = c.0; rgb[p + 1] = c.1; rgb[p + 2] = c.2
                }
                x += 1
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "#"):
                i += 1
                colour = number()
                if i < bytes.count, bytes[i] == UInt8(ascii: ";") {
                    i += 1
                    let kind = number(); i += 1
                    let r = number(); i += 1
                    let g = number(); i += 1
                    let bl = number()
                    if kind == 2 {
                        func level(_ percent: Int) -> UInt8 { UInt8(min(255, (percent * 255 + 50) / 100)) }
                        palette[colour] = (level(r), level(g), level(bl))
                    }
                }
            case UInt8(ascii: "!"):
                i += 1
                let count = number()
                if i < bytes.count { put(Int(bytes[i]) - 63, count: count); i += 1 }
            case UInt8(ascii: "$"): x = 0; i += 1
            case UInt8(ascii: "-"): x = 0; band += 1; i += 1
            case 63...126: put(Int(b) - 63, count: 1); i += 1
            case 0x1B: i = bytes.count
            default: i += 1
            }
        }
        return (width, height, rgb)
    }
}

/// Answers the terminal sends after the start-up probe stopped waiting are swallowed, never read as keys.
@Suite struct TerminalReplyFilterTests {
    private func outcomes(_ text: String, timingOut: Bool = false) -> [TerminalReplyFilter.Outcome] {
        var filter = TerminalReplyFilter()
        var result = text.unicodeScalars.flatMap { filter.feed($0.value) }
        if timingOut, let last = filter.timedOut() { result.append(last) }
        return result
    }

    @Test func lateAnswersAreNotKeys() {
        // Device attributes, the cell size, kitty's graphics answer (ended by ESC \), an OSC ended by BEL.
        for answer in ["\u{1B}[?1;2c", "\u{1B}[6;17;8t", "\u{1B}_Gi=31;OK\u{1B}\\", "\u{1B}]11;rgb:0000/0000/0000\u{07}"] {
            #expect(outcomes(answer, timingOut: true).isEmpty, "\(answer.debugDescription)")
        }
        // Keys around an answer still come through.
        #expect(outcomes("l\u{1B}[?62;4c2") == [.key(0x6C), .key(0x32)])
    }

    @Test func escapeOnItsOwnIsTheEscapeKey() {
        #expect(outcomes("\u{1B}", timingOut: true) == [.escape])
        #expect(outcomes("\u{1B}q") == [.escape, .key(0x71)])
        #expect(outcomes("\u{1B}\u{1B}", timingOut: true) == [.escape, .escape])
    }
}
