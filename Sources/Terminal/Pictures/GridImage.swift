/// A picture placed over a block of cells as an image (sixel or kitty) rather than drawn with characters. The
/// cells under it hold `placeholder`, so the cell layer leaves them to the image.
public struct GridImage: Sendable, Hashable {
    /// The first column.
    public var x: Int
    /// The first row.
    public var y: Int
    /// Columns covered.
    public var columns: Int
    /// Rows covered.
    public var rows: Int
    /// The picture.
    public var pixels: ChafaPicture.Pixels
    /// A frame of a video that plays: sent to be gone soon, as small as it can be (a sixel image in a fixed
    /// palette is half the bytes of one with its own, so twice the frames reach the terminal), where a still is
    /// sent at its finest shades.
    public var moving: Bool

    /// An image.
    public init(x: Int, y: Int, columns: Int, rows: Int, pixels: ChafaPicture.Pixels, moving: Bool = false) {
        self.x = x
        self.y = y
        self.columns = columns
        self.rows = rows
        self.pixels = pixels
        self.moving = moving
    }

    /// True when `other` covers the same cells.
    public func samePlace(as other: GridImage) -> Bool {
        x == other.x && y == other.y && columns == other.columns && rows == other.rows
    }

    /// What the cells under an image hold: a character that shows nothing but is not a space, so the cell layer
    /// never clears to the end of a line through the image (U+2800, the empty braille pattern; a space without
    /// UTF-8).
    public static func placeholder(unicode: Bool) -> Cell { Cell(unicode ? "\u{2800}" : " ") }
}
