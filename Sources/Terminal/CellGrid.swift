/// A colour a cell's text can take (the terminal's own palette).
public enum CellColor: Int, Sendable, CaseIterable {
    case red = 1, green, yellow, blue, magenta, cyan, white
}

/// A picture's colour in a cell: an entry of the 256-colour palette, or 24-bit colour where the terminal has it.
public enum CellPaint: Sendable, Hashable {
    /// A palette entry.
    case palette(UInt8)
    /// Packed 0xRRGGBB.
    case rgb(UInt32)

    /// True for 24-bit colour (drawn by the terminal layer itself: curses has no such colours).
    public var isRGB: Bool {
        if case .rgb = self { return true }
        return false
    }

    /// The palette entry, nil for 24-bit colour.
    public var paletteIndex: UInt8? {
        if case .palette(let index) = self { return index }
        return nil
    }
}

/// How a cell is drawn.
public struct CellStyle: Sendable, Hashable {
    /// The text colour; nil for the terminal's default.
    public var color: CellColor?
    /// Bold.
    public var bold = false
    /// Dim.
    public var dim = false
    /// Reverse video (used for highlights, which stay visible without colour).
    public var reverse = false
    /// A picture's foreground (a palette entry or 24-bit colour); takes the place of `color`.
    public var foreground: CellPaint?
    /// A picture's background.
    public var background: CellPaint?
    /// Italic, where the terminal can draw it.
    public var italic = false

    /// A style.
    public init(
        color: CellColor? = nil, bold: Bool = false, dim: Bool = false, reverse: Bool = false,
        foreground: CellPaint? = nil, background: CellPaint? = nil, italic: Bool = false
    ) {
        self.italic = italic
        self.color = color
        self.bold = bold
        self.dim = dim
        self.reverse = reverse
        self.foreground = foreground
        self.background = background
    }

    /// The terminal's default look.
    public static let plain = CellStyle()

    /// True when a colour is 24-bit.
    public var isRGB: Bool { foreground?.isRGB == true || background?.isRGB == true }
}

/// One screen position: a single-column character and its style.
public struct Cell: Sendable, Hashable {
    /// The character (one column wide).
    public var character: Character
    /// Its style.
    public var style: CellStyle

    /// A cell.
    public init(_ character: Character, _ style: CellStyle = .plain) {
        self.character = character
        self.style = style
    }

    /// A blank cell.
    public static let blank = Cell(" ")
}

/// A screen's worth of cells, rows top to bottom: what a renderer produces and a terminal draws.
public struct CellGrid: Sendable, Hashable {
    /// Columns.
    public let width: Int
    /// Rows.
    public let height: Int
    /// The cells, row-major.
    public private(set) var cells: [Cell]
    /// A picture shown as an image over some of the cells (sixel or kitty graphics), drawn after them.
    public var image: GridImage?

    /// A blank grid.
    public init(width: Int, height: Int) {
        self.width = Swift.max(0, width)
        self.height = Swift.max(0, height)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    /// The cell at column `x`, row `y` (blank outside the grid).
    public subscript(x: Int, y: Int) -> Cell {
        get {
            guard x >= 0, y >= 0, x < width, y < height else { return .blank }
            return cells[y * width + x]
        }
        set {
            guard x >= 0, y >= 0, x < width, y < height else { return }
            cells[y * width + x] = newValue
        }
    }

    /// Writes `text` from column `x` on row `y`, clipped to the grid and to `maxWidth` columns; returns the column
    /// after the last character written.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, style: CellStyle = .plain, maxWidth: Int? = nil) -> Int {
        var column = x
        let limit = Swift.min(width, x + (maxWidth ?? width))
        for character in text {
            guard column < limit else { break }
            self[column, y] = Cell(character, style)
            column += 1
        }
        return column
    }

    /// Fills `count` cells of row `y` from column `x` with `character`.
    public mutating func fill(_ character: Character, x: Int, y: Int, count: Int, style: CellStyle = .plain) {
        guard count > 0 else { return }
        for column in x..<(x + count) { self[column, y] = Cell(character, style) }
    }

    /// Row `y`'s characters as a string (trailing spaces kept).
    public func text(row y: Int) -> String {
        guard y >= 0, y < height else { return "" }
        return String(cells[(y * width)..<(y * width + width)].map(\.character))
    }

    /// Every row, trailing spaces trimmed (for tests and plain-text dumps).
    public var lines: [String] {
        (0..<height).map { y in
            var line = text(row: y)
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    /// What differs from `previous` (everything when there is none or its size differs): runs of neighbouring changed
    /// cells of one style, row by row, left to right. A terminal writes only these.
    public func changes(since previous: CellGrid?) -> [CellRun] {
        let compare = previous.flatMap { $0.width == width && $0.height == height ? $0 : nil }
        var runs: [CellRun] = []
        for y in 0..<height {
            let row = y * width
            var x = 0
            while x < width {
                if let compare, compare.cells[row + x] == cells[row + x] {
                    x += 1
                    continue
                }
                let style = cells[row + x].style
                var text = ""
                let start = x
                while x < width, cells[row + x].style == style,
                    compare.map({ $0.cells[row + x] != cells[row + x] }) ?? true
                {
                    text.append(cells[row + x].character)
                    x += 1
                }
                runs.append(CellRun(x: start, y: y, text: text, style: style))
            }
        }
        return runs
    }

    /// The style of the first cell of row `y` whose text starts `needle`, if the row contains it.
    public func style(of needle: String, row y: Int) -> CellStyle? {
        let line = text(row: y)
        guard let range = line.range(of: needle) else { return nil }
        return self[line.distance(from: line.startIndex, to: range.lowerBound), y].style
    }
}

/// Neighbouring cells of one row with one style: what a terminal writes in one call.
public struct CellRun: Sendable, Equatable {
    /// The first column.
    public var x: Int
    /// The row.
    public var y: Int
    /// The characters, one per column.
    public var text: String
    /// Their style.
    public var style: CellStyle

    /// A run.
    public init(x: Int, y: Int, text: String, style: CellStyle) {
        self.x = x
        self.y = y
        self.text = text
        self.style = style
    }
}
