import StoryPlayer
import Terminal

/// How a picture becomes cells.
public enum PictureMode: Sendable, Equatable {
    /// `▀` cells: foreground the upper pixel, background the lower one, from the 256-colour palette.
    case halfBlocks
    /// ASCII characters by brightness (no UTF-8, or `NO_COLOR`), coloured when `colored`.
    case ramp(colored: Bool)

    /// Half blocks where the terminal has UTF-8 and colour, else the ramp.
    public static func forTerminal(unicode: Bool, color: Bool) -> PictureMode {
        unicode && color ? .halfBlocks : .ramp(colored: color)
    }
}

/// Draws a video frame into a cell grid: aspect kept (a cell is two square pixels tall), letterboxed and centred.
public enum PictureRenderer {
    /// From dark to bright.
    public static let ramp: [Character] = Array(" .:-=+*#%@")

    /// The picture's size in cells for `frame` in an area of `width`×`height` cells.
    public static func size(of frame: VideoFrame, width: Int, height: Int) -> (width: Int, height: Int) {
        let pixels = VideoFrame.fitted(videoWidth: frame.width, videoHeight: frame.height, box: (width, height * 2))
        return (pixels.width, (pixels.height + 1) / 2)
    }

    /// Draws `frame` centred in the area at column `x`, row `y`, `width`×`height` cells; cells around it are left
    /// as they are.
    public static func draw(
        _ frame: VideoFrame, into grid: inout CellGrid, x: Int, y: Int, width: Int, height: Int, mode: PictureMode
    ) {
        guard frame.width > 0, frame.height > 0, width > 0, height > 0 else { return }
        let pixels = VideoFrame.fitted(videoWidth: frame.width, videoHeight: frame.height, box: (width, height * 2))
        let rows = (pixels.height + 1) / 2
        let left = x + (width - pixels.width) / 2
        let top = y + (height - rows) / 2
        // Nearest-neighbour sampling: the decoder already scaled to this size, except just after a resize.
        let columns = (0..<pixels.width).map { Swift.min(frame.width - 1, $0 * frame.width / pixels.width) }
        func sourceRow(_ row: Int) -> Int { Swift.min(frame.height - 1, row * frame.height / pixels.height) }
        frame.rgb.withUnsafeBufferPointer { rgb in
            func pixel(_ column: Int, _ row: Int) -> (UInt8, UInt8, UInt8) {
                let index = (sourceRow(row) * frame.width + columns[column]) * 3
                guard index + 2 < rgb.count else { return (0, 0, 0) }
                return (rgb[index], rgb[index + 1], rgb[index + 2])
            }
            for cellRow in 0..<rows {
                let upperRow = cellRow * 2
                let lowerRow = Swift.min(pixels.height - 1, upperRow + 1)
                let hasLower = upperRow + 1 < pixels.height
                for column in 0..<pixels.width {
                    let upper = pixel(column, upperRow)
                    let lower = pixel(column, lowerRow)
                    let cell: Cell
                    switch mode {
                    case .halfBlocks:
                        let background = hasLower ? Palette256.index(r: lower.0, g: lower.1, b: lower.2) : nil
                        cell = Cell(
                            "▀",
                            CellStyle(
                                foreground: Palette256.index(r: upper.0, g: upper.1, b: upper.2),
                                background: background))
                    case .ramp(let colored):
                        let average = hasLower
                            ? (UInt8((Int(upper.0) + Int(lower.0)) / 2), UInt8((Int(upper.1) + Int(lower.1)) / 2),
                                UInt8((Int(upper.2) + Int(lower.2)) / 2))
                            : upper
                        let luminance = (299 * Int(average.0) + 587 * Int(average.1) + 114 * Int(average.2)) / 1000
                        let character = ramp[Swift.min(ramp.count - 1, luminance * ramp.count / 256)]
                        cell = Cell(
                            character,
                            colored
                                ? CellStyle(foreground: Palette256.index(r: average.0, g: average.1, b: average.2))
                                : .plain)
                    }
                    grid[left + column, top + cellRow] = cell
                }
            }
        }
    }
}
