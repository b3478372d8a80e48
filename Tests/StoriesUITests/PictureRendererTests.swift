import MediaCache
import StoriesUI
import StoryPlayer
import Terminal
import Testing

/// A frame whose upper half is `top` and lower half `bottom`, `width`×`height` pixels.
func twoToneFrame(width: Int, height: Int, top: (UInt8, UInt8, UInt8), bottom: (UInt8, UInt8, UInt8)) -> VideoFrame {
    var rgb: [UInt8] = []
    for y in 0..<height {
        let colour = y < height / 2 ? top : bottom
        for _ in 0..<width { rgb += [colour.0, colour.1, colour.2] }
    }
    return VideoFrame(width: width, height: height, rgb: rgb, time: 0)
}

/// Alternating rows: even rows `even`, odd rows `odd` (each cell's upper and lower pixel differ).
func stripedFrame(width: Int, height: Int, even: (UInt8, UInt8, UInt8), odd: (UInt8, UInt8, UInt8)) -> VideoFrame {
    var rgb: [UInt8] = []
    for y in 0..<height {
        let colour = y % 2 == 0 ? even : odd
        for _ in 0..<width { rgb += [colour.0, colour.1, colour.2] }
    }
    return VideoFrame(width: width, height: height, rgb: rgb, time: 0)
}

/// The rows of `grid` that hold picture cells (cells with a picture's colours).
func pictureRows(_ grid: CellGrid) -> [Int] {
    (0..<grid.height).filter { y in (0..<grid.width).contains { grid[$0, y].style.background != nil } }
}

/// The colour a cell shows over most of its area: its background for a space or a half block's lower half, its
/// foreground for a full block.
func shownColor(_ cell: Cell) -> (Int, Int, Int)? {
    let paint = cell.character == "█" ? cell.style.foreground : cell.style.background
    switch paint {
    case .rgb(let v)?: return (Int(v >> 16) & 0xFF, Int(v >> 8) & 0xFF, Int(v) & 0xFF)
    case .palette(let i)?: return Palette256.rgb(i)
    case nil: return nil
    }
}

func near(_ a: (Int, Int, Int)?, _ b: (Int, Int, Int), within: Int) -> Bool {
    guard let a else { return false }
    return abs(a.0 - b.0) <= within && abs(a.1 - b.1) <= within && abs(a.2 - b.2) <= within
}

@Suite struct PictureRendererTests {
    static let halfBlocks = PictureOutput(picture: .half, colors: .palette256)

    @Test(arguments: [ColorDepth.truecolor, .palette256])
    func cellsLandInTheGridWithTheFramesColours(depth: ColorDepth) throws {
        // Orange over teal: colours off the palette's cube, so true colour must be exact and 256 colours close.
        let frame = twoToneFrame(width: 64, height: 64, top: (250, 120, 30), bottom: (20, 130, 140))
        var grid = CellGrid(width: 16, height: 8)
        let output = PictureOutput(picture: .symbols, colors: depth)
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 16, height: 8, output: output)
        let tolerance = depth == .truecolor ? 2 : 40
        for x in 0..<16 {
            #expect(near(shownColor(grid[x, 0]), (250, 120, 30), within: tolerance), "\(grid[x, 0])")
            #expect(near(shownColor(grid[x, 7]), (20, 130, 140), within: tolerance), "\(grid[x, 7])")
        }
        let paints = grid.cells.compactMap(\.style.background)
        #expect(paints.count == 16 * 8)
        #expect(paints.allSatisfy { $0.isRGB == (depth == .truecolor) })
        if depth == .palette256 {
            // The 16 system colours are themed by users: pictures keep off them.
            #expect(paints.allSatisfy { ($0.paletteIndex ?? 0) >= 16 })
        }
    }

    @Test func aCellSplitBetweenTwoColoursTakesAHalfBlock() throws {
        try #require(ChafaPicture.available, "libchafa is needed: \(ChafaPicture.unavailableReason ?? "")")
        // Each cell row is red above blue: the edge runs through the middle of every cell (4 rows of 16 pixels).
        let frame = VideoFrame(
            width: 64, height: 64,
            rgb: (0..<64).flatMap { y in (0..<64).flatMap { _ in y % 16 < 8 ? [255, 0, 0] : [0, 0, 255] as [UInt8] } },
            time: 0)
        var grid = CellGrid(width: 8, height: 4)
        let output = PictureOutput(picture: .half, colors: .truecolor, cell: CellPixels(width: 8, height: 16))
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 8, height: 4, output: output)
        for cell in grid.cells {
            let upper = cell.character == "▀" ? cell.style.foreground : cell.style.background
            let lower = cell.character == "▀" ? cell.style.background : cell.style.foreground
            #expect(["▀", "▄"].contains(cell.character), "\(cell)")
            #expect(upper == .rgb(0xFF0000) && lower == .rgb(0x0000FF), "\(cell)")
        }
    }

    @Test(arguments: [
        // (frame w, h, area w, h cells, cell w, h px) → expected picture cells (w, h) and its top-left corner.
        (480, 270, 120, 40, 8, 16, 120, 34, 0, 3),  // wide video in a tall area: letterboxed above and below
        (480, 270, 120, 40, 8, 17, 120, 32, 0, 4),  // xterm's 8×17 cells: fewer rows for the same shape
        (480, 270, 60, 10, 8, 16, 36, 10, 12, 0),  // short area: pillarboxed left and right
        (270, 480, 100, 30, 8, 16, 34, 30, 33, 0),  // portrait video
        (270, 480, 100, 30, 10, 20, 34, 30, 33, 0),  // the same with larger cells of the same shape
        (100, 100, 40, 20, 8, 16, 40, 20, 0, 0),  // square video in a square box (20 rows are 40 pixels)
    ])
    func aspectFollowsTheCellsRealShapeAndThePictureIsCentred(
        frameWidth: Int, frameHeight: Int, width: Int, height: Int, cellWidth: Int, cellHeight: Int,
        cellsWide: Int, cellsHigh: Int, left: Int, top: Int
    ) {
        let frame = twoToneFrame(width: frameWidth, height: frameHeight, top: (200, 200, 200), bottom: (200, 200, 200))
        let cell = CellPixels(width: cellWidth, height: cellHeight)
        let size = PictureRenderer.size(of: frame, width: width, height: height, cell: cell)
        #expect(size.width == cellsWide && size.height == cellsHigh)
        var grid = CellGrid(width: width, height: height)
        var output = Self.halfBlocks
        output.cell = cell
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: width, height: height, output: output)
        let drawn = (0..<height).flatMap { y in (0..<width).map { (x: $0, y: y) } }.filter { grid[$0.x, $0.y] != .blank }
        #expect(drawn.count == cellsWide * cellsHigh)
        #expect(drawn.map(\.x).min() == left && drawn.map(\.y).min() == top)
        #expect(drawn.map(\.x).max() == left + cellsWide - 1 && drawn.map(\.y).max() == top + cellsHigh - 1)
    }

    @Test func withoutUTF8OnlyASCIIAndWithoutColourNoColours() throws {
        let frame = twoToneFrame(width: 16, height: 16, top: (0, 0, 0), bottom: (255, 255, 255))
        var grid = CellGrid(width: 8, height: 4)
        PictureRenderer.draw(
            frame, into: &grid, x: 0, y: 0, width: 8, height: 4,
            output: .conservative(unicode: false, color: true))
        #expect(grid.cells.allSatisfy { $0.character.isASCII })
        var plain = CellGrid(width: 8, height: 4)
        PictureRenderer.draw(
            frame, into: &plain, x: 0, y: 0, width: 8, height: 4, output: .conservative(unicode: true, color: false))
        #expect(plain.cells.allSatisfy { $0.style.foreground == nil && $0.style.background == nil })
        // The bright half is drawn with ink, the dark half left empty.
        #expect(plain.lines[3].contains { $0 != " " })
        #expect(PictureOutput.conservative(unicode: false, color: true).picture == .ascii)
        #expect(PictureOutput.conservative(unicode: true, color: false).colors == .none)
    }

    @Test(arguments: [PictureProtocol.sixel, .kitty])
    func anImageProtocolPlacesTheFrameOverTheCellsUnlessAnOverlayIsOpen(picture: PictureProtocol) throws {
        let frame = twoToneFrame(width: 960, height: 540, top: (255, 0, 0), bottom: (0, 0, 255))
        let output = PictureOutput(picture: picture, colors: .truecolor, cell: CellPixels(width: 8, height: 17))
        var grid = CellGrid(width: 120, height: 34)
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 120, height: 34, output: output)
        let image = try #require(grid.image)
        #expect(image.x == 0 && image.columns == 120 && image.rows == 32 && image.y == 1)
        #expect(image.pixels.width == 960 && image.pixels.height == 540)
        #expect(grid.cells.allSatisfy { $0 == .blank })
        let box = PictureRenderer.decoderBox(width: 120, height: 34, output: output)
        #expect(box.width == 960 && box.height == 34 * 17)  // the area's real pixels

        var covered = CellGrid(width: 120, height: 34)
        PictureRenderer.draw(
            frame, into: &covered, x: 0, y: 0, width: 120, height: 34, output: output, images: false)
        #expect(covered.image == nil)
        if ChafaPicture.available { #expect(pictureRows(covered).count == 32) }
    }

    /// A landscape picture in a wide area of a terminal that shows sixel images up to 1000×1000 (xterm's
    /// default) is made to fit it, centred: before, 160 columns of 8 px made it 1280 px wide and nothing showed.
    @Test func aSixelPictureFitsTheTerminalsImageLimit() throws {
        let frame = twoToneFrame(width: 1920, height: 1080, top: (255, 0, 0), bottom: (0, 0, 255))
        var output = PictureOutput(picture: .sixel, colors: .truecolor, cell: CellPixels(width: 8, height: 17))
        output.imageLimit = PixelSize(width: 1000, height: 1000)
        var grid = CellGrid(width: 160, height: 50)
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 160, height: 50, output: output)
        let image = try #require(grid.image)
        #expect(image.columns * 8 <= 1000 && image.rows * 17 <= 1000, "\(image.columns)x\(image.rows) cells")
        #expect(image.columns == 125, "as wide as the limit allows")
        #expect(image.x == (160 - image.columns) / 2)
        let box = PictureRenderer.decoderBox(width: 160, height: 50, output: output, frame: frame)
        #expect(box.width <= 1000 && box.height <= 1000, "\(box)")
        // Drawn as cells (an overlay is open) it has no such limit.
        var cells = CellGrid(width: 160, height: 50)
        PictureRenderer.draw(frame, into: &cells, x: 0, y: 0, width: 160, height: 50, output: output, images: false)
        #expect(cells.image == nil)
        #expect(PictureRenderer.size(of: frame, width: 160, height: 50, cell: output.cell).width == 160)
    }

    /// Auto mode keeps video smooth: images are sent only while the terminal takes them at 24 fps; a playing video
    /// the terminal cannot keep up with is drawn with cells (and decoded for cells), a still stays an image.
    /// (In xterm, sixel video reached the screen at 3-7 frames a second where cells show about 30.)
    @Test func aVideoTheTerminalCannotTakeAsImagesIsDrawnWithCells() throws {
        #expect(PictureOutput.imagesKeepUp(bytesPerSecond: 8_000_000, frameBytes: 100_000))
        #expect(!PictureOutput.imagesKeepUp(bytesPerSecond: 8_000_000, frameBytes: 400_000))  // 20 fps at the cap
        #expect(!PictureOutput.imagesKeepUp(bytesPerSecond: 2_000_000, frameBytes: 100_000))  // a slow drain
        var snapshot = midStory()
        snapshot.frame = twoToneFrame(width: 480, height: 270, top: (255, 0, 0), bottom: (0, 0, 255))
        snapshot.status?.frameInterval = 1.0 / 30
        snapshot.status?.frames.shown = 12
        var screen = StoriesScreen(
            snapshot: snapshot,
            output: PictureOutput(picture: .sixel, colors: .truecolor, cell: CellPixels(width: 8, height: 17)))
        #expect(StoriesRenderer.render(screen, width: 120, height: 40).image != nil)
        screen.imagesForVideo = false
        let cells = StoriesRenderer.render(screen, width: 120, height: 40)
        #expect(cells.image == nil)
        #expect(pictureRows(cells).count >= 20)
        // The decoder is asked for cells' samples (half the cell's pixels), not the image's pixels.
        let box = try #require(StoriesRenderer.pictureBox(screen, width: 120, height: 40))
        #expect(box.width <= 120 * 4, "\(box)")
        screen.paneOpen = true
        #expect(StoriesRenderer.render(screen, width: 160, height: 40).lines.contains { $0.contains("video as cells") })
        // A still (one frame shown, whatever its cadence says) stays an image.
        screen.paneOpen = false
        screen.snapshot.status?.frames.shown = 1
        #expect(StoriesRenderer.render(screen, width: 120, height: 40).image != nil)
    }

    @Test func thePaletteMapsToTheCubeAndGreys() {
        #expect(Palette256.index(r: 0, g: 0, b: 0) == 16)
        #expect(Palette256.index(r: 255, g: 255, b: 255) == 231)
        #expect(Palette256.index(r: 128, g: 128, b: 128) == 244)  // grey 128 is on the grey ramp
        #expect(Palette256.index(r: 0, g: 255, b: 0) == 46)
        #expect(Palette256.reduce(196, to: 8) == 1)  // bright red → red
        #expect(Palette256.reduce(21, to: 16) == 4)  // pure blue → blue (0, 0, 238)
    }

    @Test func thePictureSitsInTheStoryAreaWithACaptionUnderIt() throws {
        var snapshot = midStory()
        snapshot.frame = twoToneFrame(width: 480, height: 270, top: (255, 0, 0), bottom: (0, 0, 255))
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 120, height: 40)
        let rows = pictureRows(grid)
        #expect(rows.count >= 25)
        let caption = try #require(row(grid, containing: "Mandelbrot zoom · ▶ Playing"))
        #expect(caption == (rows.last ?? 0) + 1)
        #expect(row(grid, containing: "Buffer") == caption + 2)
        let box = StoriesRenderer.pictureBox(StoriesScreen(snapshot: snapshot), width: 120, height: 40)
        // The decoder is asked for the picture's own cells at half the cell's pixel size (8×16 assumed): chafa
        // looks at 8×8 samples a cell.
        let columns = (0..<120).filter { grid[$0, rows[0]].style.background != nil }.count
        #expect(box?.width == columns * 4 && box?.height == 8 * rows.count, "\(String(describing: box))")
        var before = snapshot
        before.frame = nil
        let area = StoriesRenderer.pictureBox(StoriesScreen(snapshot: before), width: 120, height: 40)
        #expect(area?.width == 120 * 4 && area?.height == 8 * (caption - 3))  // the whole area from row 3

        snapshot.status?.state = .stalled
        let stalled = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 120, height: 40)
        // (The picture's cells are mostly spaces on a coloured background, which `lines` trims at the end.)
        let label = try #require(row(stalled, containing: " Buffering…"))
        #expect(rows.contains(label))  // on the picture, which stays
        #expect(pictureRows(stalled) == rows)
    }

    @Test func aVerticalStoryInAWideTerminalKeepsItsShapeAndTheSpaceBesideItStaysStill() throws {
        var snapshot = midStory()
        // A phone's 9:16 picture (as the decoder fits it to the box) in a 160×40 terminal.
        snapshot.frame = twoToneFrame(width: 40, height: 70, top: (255, 0, 0), bottom: (0, 0, 255))
        let first = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 160, height: 40)
        let rows = pictureRows(first)
        let columns = (0..<160).filter { x in rows.contains { first[x, $0].style.background != nil } }
        let left = try #require(columns.first), right = try #require(columns.last)
        // Upright 9:16 within 5 % (a cell is two pixels tall), centred.
        let aspect = Double(columns.count) / Double(rows.count * 2)
        #expect(abs(aspect - 40.0 / 70) < 0.05 * 40 / 70, "\(columns.count)x\(rows.count) cells")
        #expect(abs((left + right) / 2 - 80) <= 1)
        // The next frame changes only cells of the picture: beside it nothing is redrawn.
        snapshot.frame = twoToneFrame(width: 40, height: 70, top: (0, 255, 0), bottom: (255, 255, 0))
        let next = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 160, height: 40)
        let changed = next.changes(since: first).filter { rows.contains($0.y) }
        #expect(!changed.isEmpty)
        #expect(changed.allSatisfy { $0.x >= left && $0.x + $0.text.count - 1 <= right }, "\(changed)")
    }

    @Test func thePaneBesideThePictureShrinksItsBox() {
        var snapshot = midStory()
        snapshot.frame = twoToneFrame(width: 480, height: 270, top: (255, 0, 0), bottom: (0, 0, 255))
        let open = StoriesScreen(snapshot: snapshot, paneOpen: true)
        #expect(StoriesRenderer.pictureBox(open, width: 120, height: 40)?.width == (120 - 59 - 1) * 4, "the pane takes 59 columns at 120")
        #expect(StoriesRenderer.pictureBox(open, width: 80, height: 24) == nil)  // the pane covers the story
        #expect(StoriesRenderer.pictureBox(open, width: 40, height: 10) == nil)  // too small
    }
}

@Suite struct TerminalDrawingTests {
    @Test func onlyChangedCellsAreWritten() {
        var grid = CellGrid(width: 10, height: 3)
        grid.put("abcdefghij", x: 0, y: 0)
        let first = grid.changes(since: nil)
        #expect(first.count == 3)  // every row once: nothing drawn yet
        var next = grid
        next[4, 0] = Cell("X", CellStyle(foreground: .palette(196), background: .palette(21)))
        next[5, 0] = Cell("Y", CellStyle(foreground: .palette(196), background: .palette(21)))
        next[9, 2] = Cell("Z")
        let changes = next.changes(since: grid)
        #expect(changes == [
            CellRun(x: 4, y: 0, text: "XY", style: CellStyle(foreground: .palette(196), background: .palette(21))),
            CellRun(x: 9, y: 2, text: "Z", style: .plain),
        ])
        #expect(next.changes(since: next).isEmpty)
        // A different size redraws everything.
        #expect(CellGrid(width: 5, height: 3).changes(since: grid).count == 3)
    }

    @Test func pairsAreAllocatedOnDemandAndReused() {
        var table = ColorPairTable(colors: 256, pairLimit: 100, firstPair: 8)
        let a = ColorRequest(foreground: 196, background: 21)
        let b = ColorRequest(foreground: 46, background: nil)
        let first = table.allocate([a, b])
        #expect(first.define.count == 2 && !first.recycled)
        #expect(Set(first.define.map(\.pair)) == [8, 9])
        #expect(table.allocate([a]).define.isEmpty)  // already there
        #expect(table.pair(for: b).map { (8...9).contains($0) } == true)
        #expect(table.combo(for: b) == ColorPairTable.Combo(foreground: 46, background: -1))
    }

    @Test func pastThePairLimitEveryPairIsRecycledAndTheScreenRedrawn() {
        var table = ColorPairTable(colors: 256, pairLimit: 8 + 50, firstPair: 8)
        let frameA = Set((0..<40).map { ColorRequest(foreground: UInt8(16 + $0), background: 16) })
        let frameB = Set((0..<40).map { ColorRequest(foreground: UInt8(100 + $0), background: 16) })
        #expect(!table.allocate(frameA).recycled)
        let second = table.allocate(frameB)
        #expect(second.recycled)
        #expect(table.recycles == 1)
        #expect(second.define.count == 40)
        #expect(second.define.allSatisfy { (8..<58).contains($0.pair) })
        for request in frameB { #expect(table.pair(for: request) != nil) }
        #expect(table.depth == 256)
    }

    @Test func aFrameNeedingMorePairsThanExistHasItsColoursReduced() {
        // 200 distinct pairs wanted, 64 available: 16 colours are tried, then 8, then foregrounds only.
        var table = ColorPairTable(colors: 256, pairLimit: 8 + 64, firstPair: 8)
        var requests = Set<ColorRequest>()
        for n in 0..<200 {
            let foreground = UInt8(16 + n % 216)
            let background = UInt8(16 + (n * 7) % 216)
            requests.insert(ColorRequest(foreground: foreground, background: background))
        }
        let allocation = table.allocate(requests)
        #expect(allocation.recycled)
        #expect(table.depth < 256)
        #expect(table.count <= 64)
        for request in requests { #expect(table.pair(for: request) != nil) }
        // On an 8-colour terminal colours are reduced from the start.
        var eight = ColorPairTable(colors: 8, pairLimit: 64, firstPair: 8)
        _ = eight.allocate([ColorRequest(foreground: 196, background: 21)])
        #expect(eight.combo(for: ColorRequest(foreground: 196, background: 21)) == ColorPairTable.Combo(foreground: 1, background: 4))
    }
}
