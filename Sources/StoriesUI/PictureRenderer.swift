import StoryPlayer
import Terminal

/// Draws a video frame into a cell grid, aspect kept by the cell's real pixel size, letterboxed and centred: as cells
/// (quadrants worked out here in 24-bit and 256 colours; chafa's symbols in 16, or ASCII) or as an image over the
/// cells (sixel, kitty), as `PictureOutput` says.
public enum PictureRenderer {
    /// From dark to bright (the ASCII picture without libchafa).
    public static let ramp: [Character] = Array(" .:-=+*#%@")

    /// The picture's size in cells for `frame` in an area of `width`×`height` cells of `cell` pixels, within
    /// `limit` pixels when the terminal shows no larger image.
    public static func size(
        of frame: VideoFrame, width: Int, height: Int, cell: CellPixels = .assumed, limit: PixelSize? = nil
    ) -> (width: Int, height: Int) {
        var box = (width * cell.width, height * cell.height)
        if let limit {
            // Whole cells that stay within the limit.
            box.0 = Swift.min(box.0, limit.width / Swift.max(1, cell.width) * cell.width)
            box.1 = Swift.min(box.1, limit.height / Swift.max(1, cell.height) * cell.height)
        }
        let fitted = VideoFrame.fitted(videoWidth: frame.width, videoHeight: frame.height, box: box)
        let columns = Int((Double(fitted.width) / Double(Swift.max(1, cell.width))).rounded())
        let rows = Int((Double(fitted.height) / Double(Swift.max(1, cell.height))).rounded())
        return (Swift.max(1, Swift.min(width, columns)), Swift.max(1, Swift.min(height, rows)))
    }

    /// The image limit that applies to `output`'s pictures (only images have one).
    static func limitOf(_ output: PictureOutput) -> PixelSize? { output.picture.isPixels ? output.imageLimit : nil }

    /// The pixel box the decoder scales frames to for an area of `width`×`height` cells (square pixels). Once a
    /// frame says the video's shape, it is the picture's own cells: at the cell's real pixel size for images (so
    /// chafa is given exactly the pixels it draws, with no second scaling: a sixel image of a 720×1280 frame loses
    /// 0.04 SSIM to one), at half of it for symbols (chafa looks at 8×8 samples a cell; more costs time and shows
    /// nothing). Before that, the whole area.
    public static func decoderBox(
        width: Int, height: Int, output: PictureOutput, frame: VideoFrame? = nil
    ) -> (width: Int, height: Int) {
        let cell = output.cell
        let divisor = output.picture.isPixels ? 1 : 2
        guard let frame, frame.width > 0, frame.height > 0 else {
            return (width * cell.width / divisor, height * cell.height / divisor)
        }
        let (columns, rows) = size(of: frame, width: width, height: height, cell: cell, limit: limitOf(output))
        return (columns * cell.width / divisor, rows * cell.height / divisor)
    }

    /// Draws `frame` centred in the area at column `x`, row `y`, `width`×`height` cells; cells around it are left
    /// as they are. An image protocol places the frame as `grid.image` unless `images` is false (an overlay is
    /// open): then it is drawn as symbols. A `moving` frame (a video that plays) is an image sent for speed.
    public static func draw(
        _ frame: VideoFrame, into grid: inout CellGrid, x: Int, y: Int, width: Int, height: Int,
        output: PictureOutput, images: Bool = true, moving: Bool = false
    ) {
        guard frame.width > 0, frame.height > 0, width > 0, height > 0 else { return }
        let limit = images ? limitOf(output) : nil
        let (columns, rows) = size(of: frame, width: width, height: height, cell: output.cell, limit: limit)
        let left = x + (width - columns) / 2
        let top = y + (height - rows) / 2
        let pixels = ChafaPicture.Pixels(width: frame.width, height: frame.height, rgb: frame.rgb)
        if output.picture.isPixels, images {
            grid.image = GridImage(x: left, y: top, columns: columns, rows: rows, pixels: pixels, moving: moving)
            return
        }
        var cellOutput = output
        if output.picture.isPixels { cellOutput.picture = .symbols }
        // In true colour and 256 colours, quadrants worked out here are as close as chafa's symbol search (closer in
        // 256 colours, where each side's palette entry is weighed in choosing the split) at a small part of the
        // cost; chafa draws 16 colours (it dithers) and the sextants of terminals that draw them themselves.
        let ownPalette = cellOutput.colors == .palette256
        let own = (cellOutput.colors == .truecolor || ownPalette)
            && (cellOutput.picture == .half || (cellOutput.picture == .symbols && !cellOutput.sextants))
        let chosen = own
            ? QuadrantPicture.cells(
                pixels, columns: columns, rows: rows, halves: cellOutput.picture == .half, palette: ownPalette)
            : ChafaPicture.cells(pixels, columns: columns, rows: rows, output: cellOutput)
        guard let cells = chosen else {
            drawOwn(frame, into: &grid, left: left, top: top, columns: columns, rows: rows, output: cellOutput)
            return
        }
        for row in 0..<rows {
            for column in 0..<columns {
                let cell = cells[row * columns + column]
                grid[left + column, top + row] = Cell(
                    cell.character, CellStyle(foreground: cell.foreground, background: cell.background))
            }
        }
    }

    /// Without libchafa: `▀` half blocks from the 256-colour palette, or the ASCII ramp.
    private static func drawOwn(
        _ frame: VideoFrame, into grid: inout CellGrid, left: Int, top: Int, columns: Int, rows: Int,
        output: PictureOutput
    ) {
        let pixelRows = rows * 2
        func pixel(_ column: Int, _ row: Int) -> (UInt8, UInt8, UInt8) {
            let sx = Swift.min(frame.width - 1, column * frame.width / columns)
            let sy = Swift.min(frame.height - 1, row * frame.height / pixelRows)
            let index = (sy * frame.width + sx) * 3
            guard index + 2 < frame.rgb.count else { return (0, 0, 0) }
            return (frame.rgb[index], frame.rgb[index + 1], frame.rgb[index + 2])
        }
        let colored = output.colors != .none
        for row in 0..<rows {
            for column in 0..<columns {
                let upper = pixel(column, row * 2)
                let lower = pixel(column, row * 2 + 1)
                let cell: Cell
                if output.picture == .ascii || !colored {
                    let average = ((Int(upper.0) + Int(lower.0)) / 2, (Int(upper.1) + Int(lower.1)) / 2,
                        (Int(upper.2) + Int(lower.2)) / 2)
                    let luminance = (299 * average.0 + 587 * average.1 + 114 * average.2) / 1000
                    let character = ramp[Swift.min(ramp.count - 1, luminance * ramp.count / 256)]
                    let paint = Palette256.index(r: UInt8(average.0), g: UInt8(average.1), b: UInt8(average.2))
                    cell = Cell(character, colored ? CellStyle(foreground: .palette(paint)) : .plain)
                } else {
                    cell = Cell(
                        "▀",
                        CellStyle(
                            foreground: .palette(Palette256.index(r: upper.0, g: upper.1, b: upper.2)),
                            background: .palette(Palette256.index(r: lower.0, g: lower.1, b: lower.2))))
                }
                grid[left + column, top + row] = cell
            }
        }
    }

    /// How pictures are drawn here, in one line: "sixel, 8×17 px cells", "symbols, 24-bit colour".
    public static func description(of output: PictureOutput, times: String = "x") -> String {
        let colours: String
        switch output.colors {
        case .truecolor: colours = "24-bit colour"
        case .palette256: colours = "256 colours"
        case .palette16: colours = "16 colours"
        case .none: colours = "no colour"
        }
        let cell = "\(output.cell.width)\(times)\(output.cell.height) px cells"
        switch output.picture {
        case .kitty: return "kitty graphics, \(cell)"
        case .sixel:
            return "sixel, \(cell)" + (output.imageLimit.map { ", up to \($0.width)\(times)\($0.height) px" } ?? "")
        case .symbols: return "symbols, \(colours)"
        case .half: return "half blocks, \(colours)"
        case .ascii: return "ASCII, \(colours)"
        }
    }
}
