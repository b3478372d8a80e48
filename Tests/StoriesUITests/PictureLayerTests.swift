import Terminal
import Testing

@Suite struct PictureLayerTests {
    static func grid(_ paint: (Int, Int) -> UInt32?, width: Int = 6, height: Int = 2) -> CellGrid {
        var grid = CellGrid(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                if let value = paint(x, y) { grid[x, y] = Cell("▀", CellStyle(foreground: .rgb(value), background: .rgb(value))) }
            }
        }
        return grid
    }

    @Test func trueColourCellsGoOutsideCursesAndOnlyWhenTheyVisiblyChange() {
        var layer = PictureLayer(picture: .symbols, unicode: true)
        let first = Self.grid { x, _ in x < 3 ? 0x336699 : nil }
        // Curses is given a placeholder where the 24-bit cells are, and draws the rest.
        let curses = layer.cursesGrid(first)
        #expect(curses[0, 0] == GridImage.placeholder(unicode: true) && curses[4, 0] == .blank)
        _ = layer.before(first, full: true)
        let out = String(decoding: layer.after(first, cursesRuns: [], now: 0), as: UTF8.self)
        #expect(out.hasPrefix("\u{1B}[1;1H\u{1B}[38;2;51;102;153;48;2;51;102;153m▀▀▀\u{1B}[2;1H▀▀▀"))
        #expect(out.hasSuffix("\u{1B}[0m"))
        // A flicker of a few levels is not sent; a real change is, alone.
        let flicker = Self.grid { x, _ in x < 3 ? 0x346698 : nil }
        _ = layer.before(flicker, full: false)
        #expect(layer.after(flicker, cursesRuns: [], now: 0.04).isEmpty)
        var changed = flicker
        changed[1, 1] = Cell("▄", CellStyle(foreground: .rgb(0xFF0000), background: .rgb(0x336699)))
        _ = layer.before(changed, full: false)
        let one = String(decoding: layer.after(changed, cursesRuns: [], now: 0.08), as: UTF8.self)
        #expect(one == "\u{1B}[2;2H\u{1B}[38;2;255;0;0;48;2;51;102;153m▄\u{1B}[0m")
        // Only the colour that changes is sent; a space needs no foreground.
        var next = changed
        next[2, 1] = Cell("▄", CellStyle(foreground: .rgb(0xFF0000), background: .rgb(0x00FF00)))
        next[3, 1] = Cell(" ", CellStyle(foreground: .rgb(0x123456), background: .rgb(0x00FF00)))
        _ = layer.before(next, full: false)
        let two = String(decoding: layer.after(next, cursesRuns: [], now: 0.09), as: UTF8.self)
        #expect(two == "\u{1B}[2;3H\u{1B}[38;2;255;0;0;48;2;0;255;0m▄ \u{1B}[0m")
        // Cells curses wrote over (an overlay that closed) are drawn again.
        let again = String(
            decoding: layer.after(next, cursesRuns: [CellRun(x: 0, y: 0, text: "ab", style: .plain)], now: 0.1),
            as: UTF8.self)
        #expect(again.hasPrefix("\u{1B}[1;1H") && again.filter { $0 == "▀" }.count == 2)
    }

    @Test func anImageIsSentWhenItChangesAndRemovedWhenItGoes() {
        let still = ChafaPicture.Pixels(width: 2, height: 2, rgb: [UInt8](repeating: 200, count: 12))
        let image = GridImage(x: 2, y: 1, columns: 4, rows: 2, pixels: still)
        var grid = CellGrid(width: 10, height: 5)
        grid.image = image
        for picture in [PictureProtocol.kitty, .sixel] {
            var layer = PictureLayer(picture: picture, unicode: true)
            let sixel: (GridImage) -> [UInt8]? = { _ in Array("\u{1B}Pq#0;2;80;80;80#0~~\u{1B}\\".utf8) }
            // Curses leaves the cells under the image alone: it holds placeholders there.
            let curses = layer.cursesGrid(grid)
            #expect(curses[2, 1] == GridImage.placeholder(unicode: true) && curses[5, 2] == GridImage.placeholder(unicode: true))
            #expect(curses[1, 1] == .blank && curses.image == nil)
            _ = layer.before(grid, full: true)
            let shown = String(decoding: layer.after(grid, cursesRuns: [], now: 0, sixel: sixel), as: UTF8.self)
            #expect(shown.hasPrefix("\u{1B}[2;3H"), "\(picture): placed at the image's top-left cell")
            #expect(shown.contains(picture == .kitty ? "\u{1B}_Ga=T" : "\u{1B}Pq"))
            if picture == .sixel {
                // The first sixel picture on an empty screen went out fast; the next draw sends it at its finest.
                #expect(layer.shownImage?.moving == true)
                _ = layer.before(grid, full: false)
                #expect(!layer.after(grid, cursesRuns: [], now: 0.01, sixel: sixel).isEmpty)
            }
            #expect(layer.shownImage == image)
            // The same frame again: nothing is sent.
            _ = layer.before(grid, full: false)
            #expect(layer.after(grid, cursesRuns: [], now: 0.02, sixel: sixel).isEmpty)
            // Text written over it (curses drew there) brings it back at once.
            let damaged = layer.after(grid, cursesRuns: [CellRun(x: 3, y: 2, text: "x", style: .plain)], now: 0.03, sixel: sixel)
            #expect(!damaged.isEmpty)
            // It goes (an overlay opened, the story changed): kitty deletes it, sixel erases its cells.
            var without = grid
            without.image = nil
            let removed = String(decoding: layer.before(without, full: false), as: UTF8.self)
            if picture == .kitty {
                #expect(removed == "\u{1B}_Ga=d,d=I,i=\(PictureLayer.kittyID),q=2\u{1B}\\")
            } else {
                #expect(removed == "\u{1B}[2;3H\u{1B}[4X\u{1B}[3;3H\u{1B}[4X")
            }
            #expect(layer.shownImage == nil)
        }
    }

    /// The first sixel picture where none was (the program's first, or a story's after the last one's went) is
    /// encoded as a video's frame (a fixed palette, made in a fraction of the time), then again at its finest;
    /// one that replaces another on screen is not sent twice.
    @Test func aSixelPictureWhereNoneWasIsSentFastThenAtItsFinest() {
        var layer = PictureLayer(picture: .sixel, unicode: true)
        var encoded: [Bool] = []
        let sixel: (GridImage) -> [UInt8]? = { image in
            encoded.append(image.moving)
            return Array("\u{1B}Pq#0~\u{1B}\\".utf8)
        }
        func draw(_ shade: UInt8, at now: Double) {
            var grid = CellGrid(width: 10, height: 5)
            grid.image = GridImage(
                x: 0, y: 0, columns: 4, rows: 2, pixels: ChafaPicture.Pixels(width: 2, height: 2, rgb: [UInt8](repeating: shade, count: 12)))
            _ = layer.before(grid, full: now == 0)
            _ = layer.after(grid, cursesRuns: [], now: now, sixel: sixel)
        }
        draw(100, at: 0)
        draw(100, at: 0.1)
        draw(100, at: 0.2)
        #expect(encoded == [true, false])
        // Another still replacing it: sent once, at its finest.
        draw(150, at: 0.3)
        draw(150, at: 0.4)
        #expect(encoded == [true, false, false])
    }

    @Test func framesBeyondTheByteCapAreSkippedNotQueued() {
        var layer = PictureLayer(picture: .kitty, unicode: true, bytesPerSecond: 100_000)
        var sent = 0
        for n in 0..<50 {
            // 50 different frames of ~10 kB in one second (at 50 a second): 500 kB wanted, 100 kB/s allowed.
            let frame = ChafaPicture.Pixels(width: 60, height: 40, rgb: [UInt8](repeating: UInt8(n), count: 7200))
            var grid = CellGrid(width: 20, height: 10)
            grid.image = GridImage(x: 0, y: 0, columns: 20, rows: 10, pixels: frame)
            _ = layer.before(grid, full: n == 0)
            if !layer.after(grid, cursesRuns: [], now: Double(n) / 50).isEmpty { sent += 1 }
        }
        #expect(sent >= 8 && sent <= 14, "\(sent) frames sent")
        #expect(layer.budget.skipped == 50 - sent)
        #expect(Double(layer.budget.sent) <= 100_000 * 1.0 + 25_000 + 10_000)
    }

    @Test func aSkippedFrameIsNeverEncoded() {
        final class Counter: @unchecked Sendable { var encoded = 0 }
        let counter = Counter()
        var layer = PictureLayer(picture: .sixel, unicode: true, bytesPerSecond: 100_000)
        var sent = 0
        for n in 0..<50 {
            let frame = ChafaPicture.Pixels(width: 2, height: 2, rgb: [UInt8](repeating: UInt8(n), count: 12))
            var grid = CellGrid(width: 20, height: 10)
            grid.image = GridImage(x: 0, y: 0, columns: 20, rows: 10, pixels: frame)
            _ = layer.before(grid, full: n == 0)
            let out = layer.after(grid, cursesRuns: [], now: Double(n) / 50) { _ in
                counter.encoded += 1
                return [UInt8](repeating: 0x3F, count: 10_000)  // a 10 kB sixel image
            }
            if !out.isEmpty { sent += 1 }
        }
        #expect(sent < 20, "\(sent) frames sent")
        #expect(counter.encoded == sent, "\(counter.encoded) images made for \(sent) sent")
        // The same frame again costs nothing, not even a look at the budget.
        let skipped = layer.budget.skipped
        var same = CellGrid(width: 20, height: 10)
        same.image = layer.shownImage
        #expect(layer.after(same, cursesRuns: [], now: 1.5).isEmpty && layer.budget.skipped == skipped)
    }

    @Test func aWriteThatBlockedLowersTheRateAndFastWritesRaiseItBack() {
        var budget = PictureBudget(limit: 1_000_000)
        budget.wrote(100_000, seconds: 0.5)  // the terminal took 200 kB/s
        #expect(budget.rate <= 200_000 * 0.8 + 1)
        for _ in 0..<200 { budget.wrote(1_000, seconds: 0.001) }
        #expect(budget.rate == 1_000_000)
    }
}
