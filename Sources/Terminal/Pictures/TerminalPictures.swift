/// How pictures reach the terminal, from the best a terminal can show to the plainest.
public enum PictureProtocol: String, Sendable, CaseIterable, Equatable {
    /// The kitty graphics protocol: the frame's pixels, scaled by the terminal (kitty, WezTerm, Ghostty, Konsole).
    case kitty
    /// Sixel images (xterm -ti vt340, foot, WezTerm, Konsole, mlterm, Windows Terminal).
    case sixel
    /// Cells: block, quadrant and (where the terminal draws them itself) sextant symbols, chosen by chafa.
    case symbols
    /// Cells of `▀`/`▄` half blocks only: the conservative mode for fonts without the other symbols.
    case half
    /// ASCII characters by brightness (no UTF-8).
    case ascii

    /// True for the protocols that place images over cells.
    public var isPixels: Bool { self == .kitty || self == .sixel }
}

/// How many colours cells can take.
public enum ColorDepth: Sendable, Equatable, Comparable {
    /// No colour (`NO_COLOR`, or a terminal without colours).
    case none
    /// The 8 or 16 system colours.
    case palette16
    /// The xterm 256-colour palette.
    case palette256
    /// 24-bit colour (`COLORTERM=truecolor`, or a terminfo with `RGB`/`Tc`).
    case truecolor
}

/// A size in pixels: a cell's, as the terminal reports it (`TIOCGWINSZ`, or its answer to `CSI 16 t`), or an
/// image's limit (`PixelSize`).
public struct CellPixels: Sendable, Equatable {
    /// Width.
    public var width: Int
    /// Height.
    public var height: Int

    /// A size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// What is assumed when the terminal does not say: a cell twice as tall as wide.
    public static let assumed = CellPixels(width: 8, height: 16)

    /// Height over width (2 for the assumed cell, 17/8 for xterm's default font).
    public var aspect: Double { Double(height) / Double(Swift.max(1, width)) }
}

/// What the terminal showing the stories can do with pictures: the protocol, the colours cells take, the cell's
/// pixel size and whether the font's symbols beyond half blocks are drawn by the terminal itself.
/// A size in pixels (an image's limit): the same value as a cell's size.
public typealias PixelSize = CellPixels

public struct PictureOutput: Sendable, Equatable {
    /// How pictures are sent.
    public var picture: PictureProtocol
    /// Colours cells take (also what the symbol modes pick from).
    public var colors: ColorDepth
    /// A cell's size in pixels.
    public var cell: CellPixels
    /// The terminal draws block and sextant symbols itself (kitty, foot, WezTerm, Ghostty), so every symbol is
    /// safe; otherwise sextants, which many fonts lack, are left out.
    public var sextants: Bool
    /// The largest image the terminal shows (sixel): pictures are fitted within it, never sent larger and lost.
    public var imageLimit: PixelSize?

    /// Frames a second a moving picture needs to look smooth: below it, video is better drawn with cells.
    public static let smoothFramesPerSecond = 24.0

    /// True when images of `frameBytes` each can reach the terminal `smoothFramesPerSecond` times a second at
    /// `bytesPerSecond` (the rate the terminal was measured to take, within the image byte cap).
    public static func imagesKeepUp(bytesPerSecond: Double, frameBytes: Int) -> Bool {
        guard frameBytes > 0 else { return true }
        return bytesPerSecond / Double(frameBytes) >= smoothFramesPerSecond
    }

    /// What a sixel terminal that does not say its limit is assumed to show at most: xterm's default.
    public static let assumedSixelLimit = PixelSize(width: 1000, height: 1000)

    /// An output.
    public init(
        picture: PictureProtocol, colors: ColorDepth, cell: CellPixels = .assumed, sextants: Bool = false,
        imageLimit: PixelSize? = nil
    ) {
        self.picture = picture
        self.colors = colors
        self.cell = cell
        self.sextants = sextants
        self.imageLimit = imageLimit
    }

    /// Half blocks in 256 colours where the terminal has UTF-8 and colour, else the ASCII ramp: what is assumed
    /// before anything is known of the terminal.
    public static func conservative(unicode: Bool, color: Bool) -> PictureOutput {
        PictureOutput(picture: unicode ? .half : .ascii, colors: color ? .palette256 : .none)
    }
}
