/// What is written to the terminal outside curses around each draw: 24-bit colour cells (curses has no such
/// colours; it holds a placeholder there) and images (sixel, kitty), removed when they go. A value that turns grids
/// into bytes, tested without a terminal; `TerminalScreen` writes what it returns.
public struct PictureLayer: Sendable {
    /// The image id used with the kitty protocol.
    public static let kittyID = 0x5354

    /// How images are sent.
    public let picture: PictureProtocol
    /// Whether the locale has UTF-8 (the placeholder under images).
    public let unicode: Bool
    /// The byte cap for images.
    public private(set) var budget: PictureBudget
    /// The image on screen now.
    public private(set) var shownImage: GridImage?
    /// The image's size when last sent: what the next one is expected to cost.
    public private(set) var imageBytes = 0
    /// The 24-bit cells on screen, row-major (nil: not one, or not known).
    private var shownCells: [Cell?] = []

    /// A layer for `picture`, sending at most `bytesPerSecond` of images.
    public init(picture: PictureProtocol, unicode: Bool, bytesPerSecond: Double = 8_000_000) {
        self.picture = picture
        self.unicode = unicode
        budget = PictureBudget(limit: bytesPerSecond)
    }

    /// The grid curses is given: 24-bit cells and the cells under the image hold the placeholder.
    public func cursesGrid(_ grid: CellGrid) -> CellGrid {
        guard grid.image != nil || grid.cells.contains(where: { $0.style.isRGB }) else { return grid }
        var out = grid
        out.image = nil
        let placeholder = GridImage.placeholder(unicode: unicode)
        for y in 0..<grid.height {
            for x in 0..<grid.width where grid[x, y].style.isRGB { out[x, y] = placeholder }
        }
        if let image = grid.image {
            for y in image.y..<(image.y + image.rows) {
                for x in image.x..<(image.x + image.columns) { out[x, y] = placeholder }
            }
        }
        return out
    }

    /// Before curses draws `grid`: removes the image on screen when it goes or moves. `full`: the screen is being
    /// cleared and drawn anew.
    public mutating func before(_ grid: CellGrid, full: Bool) -> [UInt8] {
        var out: [UInt8] = []
        if full || shownCells.count != grid.width * grid.height {
            shownCells = Array(repeating: nil, count: grid.width * grid.height)
        }
        guard let shown = shownImage else { return out }
        if full || grid.image.map({ !$0.samePlace(as: shown) }) ?? true {
            switch picture {
            case .kitty: out += KittyImage.delete(id: Self.kittyID)
            default:
                if !full {
                    for y in shown.y..<(shown.y + shown.rows) {
                        out += Array("\u{1B}[\(y + 1);\(shown.x + 1)H\u{1B}[\(shown.columns)X".utf8)
                    }
                }
            }
            shownImage = nil
        }
        return out
    }

    /// After curses drew `cursesRuns`: the 24-bit cells that changed (or that curses wrote over), then the image
    /// when it is new, changed or was written over and the budget lets it through at `now` (seconds). `encode`
    /// makes a sixel image (chafa); kitty's is made here.
    public mutating func after(
        _ grid: CellGrid, cursesRuns: [CellRun], now: Double,
        sixel: (GridImage) -> [UInt8]? = { _ in nil }
    ) -> [UInt8] {
        if shownCells.count != grid.width * grid.height {
            shownCells = Array(repeating: nil, count: grid.width * grid.height)
        }
        for run in cursesRuns {
            for x in run.x..<Swift.min(grid.width, run.x + run.text.count) { shownCells[run.y * grid.width + x] = nil }
        }
        var out = cells(grid)
        if let image = grid.image {
            let damaged = cursesRuns.contains { run in
                run.y >= image.y && run.y < image.y + image.rows && run.x < image.x + image.columns
                    && run.x + run.text.count > image.x
            }
            // A frame the budget cannot take is skipped, before it is encoded; the one on screen stays (unless it
            // was written over or there is none).
            if damaged || shownImage != image, damaged || shownImage == nil || budget.hasRoom(for: imageBytes, now: now) {
                // The first sixel picture on an empty screen goes out as fast as it can be made (as a video's frame),
                // and again at its finest with the next draw that still shows it.
                var image = image
                if shownImage == nil, picture == .sixel { image.moving = true }
                let bytes: [UInt8]?
                switch picture {
                case .kitty: bytes = KittyImage.show(image.pixels, columns: image.columns, rows: image.rows, id: Self.kittyID)
                case .sixel: bytes = sixel(image)
                default: bytes = nil
                }
                if let bytes {
                    budget.spend(bytes.count)
                    imageBytes = bytes.count
                    out += Array("\u{1B}[\(image.y + 1);\(image.x + 1)H".utf8)
                    out += bytes
                    shownImage = image
                }
            }
        }
        return out
    }

    /// Tells the budget how long the last write took.
    public mutating func wrote(_ bytes: Int, seconds: Double) { budget.wrote(bytes, seconds: seconds) }

    /// The 24-bit cells to write: those whose symbol changed or whose colours moved by more than a step (cells
    /// that only flicker by a few levels are left, which saves most of the bytes of natural video).
    private mutating func cells(_ grid: CellGrid) -> [UInt8] {
        var out: [UInt8] = []
        var cursor: (x: Int, y: Int)?
        // The colours the terminal has now (nil: not known yet), so each cell sends only what changes: a space
        // shows no foreground, a full block no background.
        var foreground: CellPaint??
        var background: CellPaint??
        for y in 0..<grid.height {
            for x in 0..<grid.width {
                let index = y * grid.width + x
                let cell = grid[x, y]
                guard cell.style.isRGB else {
                    shownCells[index] = nil
                    continue
                }
                if let shown = shownCells[index], Self.close(shown, cell) { continue }
                if cursor.map({ $0.x != x || $0.y != y }) ?? true { out += Array("\u{1B}[\(y + 1);\(x + 1)H".utf8) }
                var parts: [String] = []
                if cell.character != " ", foreground.map({ $0 != cell.style.foreground }) ?? true {
                    parts.append(Self.sgr(cell.style.foreground, base: 30))
                    foreground = .some(cell.style.foreground)
                }
                if cell.character != "█", background.map({ $0 != cell.style.background }) ?? true {
                    parts.append(Self.sgr(cell.style.background, base: 40))
                    background = .some(cell.style.background)
                }
                if !parts.isEmpty { out += Array("\u{1B}[\(parts.joined(separator: ";"))m".utf8) }
                out += Array(String(cell.character).utf8)
                cursor = (x + 1, y)
                shownCells[index] = cell
            }
        }
        if foreground != nil || background != nil { out += Array("\u{1B}[0m".utf8) }
        return out
    }

    /// Two cells that look the same: one symbol, each colour within 6 levels a channel.
    static func close(_ a: Cell, _ b: Cell) -> Bool {
        guard a.character == b.character, a.style.bold == b.style.bold else { return false }
        return close(a.style.foreground, b.style.foreground) && close(a.style.background, b.style.background)
    }

    private static func close(_ a: CellPaint?, _ b: CellPaint?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.rgb(let p)?, .rgb(let q)?):
            for shift in [16, 8, 0] as [UInt32] where abs(Int((p >> shift) & 0xFF) - Int((q >> shift) & 0xFF)) > 6 {
                return false
            }
            return true
        default: return a == b
        }
    }

    /// The SGR parameters for a colour (`base` 30: foreground, 40: background).
    static func sgr(_ paint: CellPaint?, base: Int) -> String {
        switch paint {
        case .rgb(let value)?: return "\(base + 8);2;\((value >> 16) & 0xFF);\((value >> 8) & 0xFF);\(value & 0xFF)"
        case .palette(let index)?: return "\(base + 8);5;\(index)"
        case nil: return "\(base + 9)"
        }
    }
}
