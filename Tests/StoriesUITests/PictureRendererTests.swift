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

@Suite struct PictureRendererTests {
    @Test func aCellIsTwoPixelsUpperAsForegroundLowerAsBackground() {
        let frame = stripedFrame(width: 4, height: 4, even: (255, 0, 0), odd: (0, 0, 255))
        var grid = CellGrid(width: 4, height: 2)
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 4, height: 2, mode: .halfBlocks)
        let red = Palette256.index(r: 255, g: 0, b: 0)
        let blue = Palette256.index(r: 0, g: 0, b: 255)
        #expect(red == 196 && blue == 21)
        for y in 0..<2 {
            for x in 0..<4 {
                #expect(grid[x, y].character == "▀")
                #expect(grid[x, y].style.foreground == red)
                #expect(grid[x, y].style.background == blue)
            }
        }
    }

    @Test(arguments: [
        // (frame w, h, area w, h cells) → expected picture cells (w, h) and its top-left corner.
        (480, 270, 120, 40, 120, 34, 0, 3),  // wide video in a tall area: letterboxed above and below
        (480, 270, 60, 10, 36, 10, 12, 0),  // short area: pillarboxed left and right
        (270, 480, 100, 30, 34, 30, 33, 0),  // portrait video
        (100, 100, 40, 20, 40, 20, 0, 0),  // square video in a square box (20 rows are 40 pixels)
    ])
    func aspectIsKeptAndThePictureCentred(
        frameWidth: Int, frameHeight: Int, width: Int, height: Int, cellsWide: Int, cellsHigh: Int, left: Int, top: Int
    ) {
        let frame = twoToneFrame(width: frameWidth, height: frameHeight, top: (200, 200, 200), bottom: (200, 200, 200))
        let size = PictureRenderer.size(of: frame, width: width, height: height)
        #expect(size.width == cellsWide && size.height == cellsHigh)
        var grid = CellGrid(width: width, height: height)
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: width, height: height, mode: .halfBlocks)
        let drawn = (0..<height).flatMap { y in (0..<width).map { (x: $0, y: y) } }.filter { grid[$0.x, $0.y] != .blank }
        #expect(drawn.count == cellsWide * cellsHigh)
        #expect(drawn.map(\.x).min() == left && drawn.map(\.y).min() == top)
        #expect(drawn.map(\.x).max() == left + cellsWide - 1 && drawn.map(\.y).max() == top + cellsHigh - 1)
    }

    @Test func withoutUTF8OrColourTheRampShowsBrightness() {
        let frame = twoToneFrame(width: 8, height: 8, top: (0, 0, 0), bottom: (255, 255, 255))
        for mode in [PictureMode.forTerminal(unicode: false, color: true), .forTerminal(unicode: true, color: false)] {
            var grid = CellGrid(width: 8, height: 4)
            PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 8, height: 4, mode: mode)
            #expect(grid.lines[0] == "", "\(mode)")  // black: spaces
            #expect(grid.lines[3] == "@@@@@@@@", "\(mode)")
            #expect(grid.cells.allSatisfy { $0.character.isASCII })
        }
        #expect(PictureMode.forTerminal(unicode: false, color: true) == .ramp(colored: true))
        #expect(PictureMode.forTerminal(unicode: true, color: false) == .ramp(colored: false))
        var plain = CellGrid(width: 8, height: 4)
        PictureRenderer.draw(frame, into: &plain, x: 0, y: 0, width: 8, height: 4, mode: .ramp(colored: false))
        #expect(plain.cells.allSatisfy { $0.style.foreground == nil && $0.style.background == nil })
    }

    @Test func aMidGreyGradientUsesTheWholeRamp() {
        var rgb: [UInt8] = []
        for _ in 0..<2 { for x in 0..<10 { let v = UInt8(x * 255 / 9); rgb += [v, v, v] } }
        let frame = VideoFrame(width: 10, height: 2, rgb: rgb, time: 0)
        var grid = CellGrid(width: 10, height: 1)
        PictureRenderer.draw(frame, into: &grid, x: 0, y: 0, width: 10, height: 1, mode: .ramp(colored: false))
        #expect(grid.text(row: 0) == String(PictureRenderer.ramp))
    }

    @Test func thePaletteMapsToTheCubeAndGreys() {
        #expect(Palette256.index(r: 0, g: 0, b: 0) == 16)
        #expect(Palette256.index(r: 255, g: 255, b: 255) == 231)
        #expect(Palette256.index(r: 128, g: 128, b: 128) == 244)  // grey 128 is on the grey ramp
        #expect(Palette256.index(r: 0, g: 255, b: 0) == 46)
        for index in 16...255 {
            let colour = Palette256.rgb(UInt8(index))
            #expect(Palette256.index(r: UInt8(colour.r), g: UInt8(colour.g), b: UInt8(colour.b)) == UInt8(index)
                || Palette256.rgb(Palette256.index(r: UInt8(colour.r), g: UInt8(colour.g), b: UInt8(colour.b))) == colour)
        }
        #expect(Palette256.reduce(196, to: 8) == 1)  // bright red → red
        #expect(Palette256.reduce(21, to: 16) == 4)  // pure blue → blue (0, 0, 238)
    }

    @Test func thePictureSitsInTheStoryAreaWithACaptionUnderIt() throws {
        var snapshot = midStory()
        snapshot.frame = twoToneFrame(width: 480, height: 270, top: (255, 0, 0), bottom: (0, 0, 255))
        let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 120, height: 40)
        let pictureRows = (0..<40).filter { y in (0..<120).contains { grid[$0, y].character == "▀" } }
        #expect(pictureRows.count >= 25)
        let caption = try #require(row(grid, containing: "Mandelbrot zoom · ▶ Playing"))
        #expect(caption == (pictureRows.last ?? 0) + 1)
        #expect(row(grid, containing: "Buffer") == caption + 2)
        let box = StoriesRenderer.pictureBox(StoriesScreen(snapshot: snapshot), width: 120, height: 40)
        #expect(box?.width == 120 && box?.height == 2 * pictureRows.count)

        snapshot.status?.state = .stalled
        let stalled = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 120, height: 40)
        let label = try #require(row(stalled, containing: " Buffering… "))
        #expect(pictureRows.contains(label))  // on the picture, which stays
        #expect(stalled.lines.filter { $0.contains("▀") }.count == pictureRows.count)
    }

    @Test func aVerticalStoryInAWideTerminalKeepsItsShapeAndTheSpaceBesideItStaysStill() throws {
        var snapshot = midStory()
        // A phone's 9:16 picture (as the decoder fits it to the box) in a 160×40 terminal.
        snapshot.frame = twoToneFrame(width: 40, height: 70, top: (255, 0, 0), bottom: (0, 0, 255))
        let first = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: 160, height: 40)
        let columns = (0..<160).filter { x in (0..<40).contains { first[x, $0].character == "▀" } }
        let rows = (0..<40).filter { y in (0..<160).contains { first[$0, y].character == "▀" } }
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
        #expect(StoriesRenderer.pictureBox(open, width: 120, height: 40)?.width == 120 - 59 - 1, "the pane takes 59 columns at 120")
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
        next[4, 0] = Cell("X", CellStyle(foreground: 196, background: 21))
        next[5, 0] = Cell("Y", CellStyle(foreground: 196, background: 21))
        next[9, 2] = Cell("Z")
        let changes = next.changes(since: grid)
        #expect(changes == [
            CellRun(x: 4, y: 0, text: "XY", style: CellStyle(foreground: 196, background: 21)),
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
