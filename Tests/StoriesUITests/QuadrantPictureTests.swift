import StoryPlayer
import Testing

@testable import StoriesUI
@testable import Terminal

/// True-colour quadrant cells worked out without chafa: the split with the least error, in the exact mean colours.
@Suite struct QuadrantPictureTests {
    /// An 8×8-pixel picture of 2×2 cells (4×4 pixels each, 2×2 a quarter) painted by `paint(x, y)`.
    private func pixels(_ paint: (Int, Int) -> (UInt8, UInt8, UInt8)) -> ChafaPicture.Pixels {
        var rgb: [UInt8] = []
        for y in 0..<8 {
            for x in 0..<8 {
                let (r, g, b) = paint(x, y)
                rgb += [r, g, b]
            }
        }
        return ChafaPicture.Pixels(width: 8, height: 8, rgb: rgb)
    }

    @Test func eachCellTakesTheSplitItsPixelsMakeInTheirExactColours() throws {
        let red: (UInt8, UInt8, UInt8) = (255, 0, 0)
        let blue: (UInt8, UInt8, UInt8) = (0, 0, 255)
        let teal: (UInt8, UInt8, UInt8) = (20, 130, 140)
        let picture = pixels { x, y in
            let (cx, cy, qx, qy) = (x / 4, y / 4, (x % 4) / 2, (y % 4) / 2)
            switch (cx, cy) {
            case (0, 0): return qx == 0 && qy == 0 ? red : blue  // top-left quarter
            case (1, 0): return qy == 0 ? red : blue  // top half
            case (0, 1): return qx == qy ? red : blue  // diagonal
            default: return teal  // flat
            }
        }
        let cells = try #require(QuadrantPicture.cells(picture, columns: 2, rows: 2))
        #expect(cells[0] == .init(character: "▘", foreground: .rgb(0xFF0000), background: .rgb(0x0000FF)))
        #expect(cells[1] == .init(character: "▀", foreground: .rgb(0xFF0000), background: .rgb(0x0000FF)))
        #expect(cells[2] == .init(character: "▚", foreground: .rgb(0xFF0000), background: .rgb(0x0000FF)))
        #expect(cells[3] == .init(character: " ", foreground: nil, background: .rgb(0x14828C)))
    }

    @Test func aSideIsPaintedInTheMeanOfItsPixels() throws {
        // Left half: two greys (100 and 201, mean 150.5 rounds to 151); right half: black.
        let picture = pixels { x, y in
            guard x % 4 < 2 else { return (0, 0, 0) }
            let grey: UInt8 = y % 2 == 0 ? 100 : 201
            return (grey, grey, grey)
        }
        let cells = try #require(QuadrantPicture.cells(picture, columns: 2, rows: 2))
        for cell in cells {
            #expect(cell == .init(character: "▌", foreground: .rgb(0x979797), background: .rgb(0x000000)))
        }
    }

    @Test func theHalfBlockModeSplitsTopFromBottomOnly() throws {
        // A left/right split cannot be drawn with half blocks: the cell takes one flat colour, the mean.
        let picture = pixels { x, _ in x % 4 < 2 ? (200, 0, 0) : (0, 0, 100) }
        let cells = try #require(QuadrantPicture.cells(picture, columns: 2, rows: 2, halves: true))
        #expect(cells.allSatisfy { $0 == .init(character: " ", foreground: nil, background: .rgb(0x640032)) })
        let stacked = pixels { _, y in y % 4 < 2 ? (200, 0, 0) : (0, 0, 100) }
        let halves = try #require(QuadrantPicture.cells(stacked, columns: 2, rows: 2, halves: true))
        #expect(halves.allSatisfy { $0 == .init(character: "▀", foreground: .rgb(0xC80000), background: .rgb(0x000064)) })
    }

    @Test func inTheTwoHundredFiftySixColoursEachSideTakesItsNearestEntry() throws {
        // Top half orange, bottom half teal: entries of the cube (never the 16 system colours), the split kept.
        let picture = pixels { _, y in y % 4 < 2 ? (250, 120, 30) : (20, 130, 140) }
        let cells = try #require(QuadrantPicture.cells(picture, columns: 2, rows: 2, palette: true))
        let orange = Palette256.index(r: 250, g: 120, b: 30)
        let teal = Palette256.index(r: 20, g: 130, b: 140)
        #expect(orange >= 16 && teal >= 16)
        #expect(cells.allSatisfy { $0 == .init(character: "▀", foreground: .palette(orange), background: .palette(teal)) })
        // Two shades that round to one entry: one flat cell (a split would add nothing).
        let close = pixels { _, y in y % 4 < 2 ? (250, 120, 30) : (252, 125, 28) }
        let flat = try #require(QuadrantPicture.cells(close, columns: 2, rows: 2, palette: true))
        #expect(flat.allSatisfy { $0.character == " " && $0.background == .palette(orange) })
    }

    @Test func theStoriesPictureInTrueColourIsQuadrantCells() {
        let frame = VideoFrame(
            width: 64, height: 64,
            rgb: (0..<64).flatMap { y in (0..<64).flatMap { x in [UInt8(x * 4), UInt8(y * 4), 90] } }, time: 0)
        var grid = CellGrid(width: 16, height: 8)
        let output = PictureOutput(picture: .symbols, colors: .truecolor, cell: CellPixels(width: 8, height: 16))
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 16, height: 8, output: output)
        let pixels = ChafaPicture.Pixels(width: 64, height: 64, rgb: frame.rgb)
        let expected = QuadrantPicture.cells(pixels, columns: 16, rows: 8)
        let drawn = (0..<8).flatMap { y in (0..<16).map { x in grid[x, y] } }
        #expect(drawn.map(\.character) == expected?.map(\.character))
        #expect(drawn.map(\.style.background) == expected?.map(\.background))
    }
}
