import StoriesUI
import StoryPlayer
import Terminal
import Testing

/// Captions on the screen: centred over the lower part of the picture in cell modes, under an image in rows the
/// image keeps clear, under the title without video; wrapped to three lines; `v` and the modes; `CC`.
@Suite struct CaptionScreenTests {
    static func screen(
        text: String = "Hello there", sound: StorySound = .muted, frame: Bool = true, output: PictureOutput? = nil,
        mode: CaptionMode = .auto
    ) -> StoriesScreen {
        var snapshot = midStory()
        snapshot.status?.sound = sound
        snapshot.hasCaptions = true
        snapshot.caption = CaptionShown(text: text, start: 2, end: 3, language: "en")
        if frame { snapshot.frame = twoToneFrame(width: 90, height: 160, top: (250, 250, 250), bottom: (20, 200, 20)) }
        var screen = StoriesScreen(snapshot: snapshot, output: output)
        screen.captions = mode
        return screen
    }

    @Test func overTheLowerPartOfACellPictureOnADarkBand() throws {
        for picture in [PictureProtocol.half, .symbols] {
            let output = PictureOutput(picture: picture, colors: .palette256)
            let grid = StoriesRenderer.render(Self.screen(output: output), width: 100, height: 40)
            let y = try #require(row(grid, containing: "Hello there"), "\(picture)")
            let pictureRowsShown = pictureRows(grid)
            let bottom = try #require(pictureRowsShown.max())
            #expect(y < bottom && y > bottom - 4, "\(picture): caption on row \(y), picture ends at \(bottom)")
            let x = try #require(grid.lines[y].range(of: "Hello there")).lowerBound.utf16Offset(in: grid.lines[y])
            #expect(abs((x + 5) - 50) <= 2, "centred: starts at \(x)")
            #expect(grid[x, y].style.background == .palette(235) && grid[x, y].style.foreground == .palette(231))
            #expect(grid.lines[1].contains("CC"))
        }
    }

    @Test(arguments: [PictureProtocol.sixel, .kitty])
    func underAnImageInRowsItKeepsClear(_ picture: PictureProtocol) throws {
        let output = PictureOutput(picture: picture, colors: .truecolor, cell: CellPixels(width: 8, height: 17))
        let shown = StoriesRenderer.render(Self.screen(output: output), width: 100, height: 40)
        let hidden = StoriesRenderer.render(Self.screen(output: output, mode: .off), width: 100, height: 40)
        let image = try #require(shown.image)
        let y = try #require(row(shown, containing: "Hello there"))
        #expect(y >= image.y + image.rows, "the caption is below the image, not under it")
        #expect(image.rows <= (hidden.image?.rows ?? 0) - StoriesRenderer.captionLines + 1, "the image gave up rows")
        #expect(row(hidden, containing: "Hello there") == nil)
        // The decoder is asked for the smaller picture too.
        let box = try #require(StoriesRenderer.pictureBox(Self.screen(output: output), width: 100, height: 40))
        let full = try #require(StoriesRenderer.pictureBox(Self.screen(output: output, mode: .off), width: 100, height: 40))
        #expect(box.height < full.height)
    }

    /// A video that plays is sent as a moving image (for speed); paused, stalled, or a photo, at its finest.
    @Test func onlyAPlayingVideosImageIsMoving() throws {
        let output = PictureOutput(picture: .sixel, colors: .truecolor, cell: CellPixels(width: 8, height: 17))
        var screen = Self.screen(output: output)
        screen.snapshot.status?.frameInterval = 1.0 / 30
        screen.snapshot.status?.frames.shown = 40
        #expect(StoriesRenderer.render(screen, width: 100, height: 40).image?.moving == true)
        for state in [PlaybackState.paused, .stalled, .finished] {
            screen.snapshot.status?.state = state
            #expect(StoriesRenderer.render(screen, width: 100, height: 40).image?.moving == false, "\(state)")
        }
        // A photo: one frame shown, no cadence.
        screen.snapshot.status?.state = .playing
        screen.snapshot.status?.frameInterval = nil
        screen.snapshot.status?.frames.shown = 1
        #expect(StoriesRenderer.render(screen, width: 100, height: 40).image?.moving == false)
    }

    @Test func withoutVideoUnderTheTitle() throws {
        let grid = StoriesRenderer.render(Self.screen(frame: false), width: 80, height: 24)
        let title = try #require(row(grid, containing: "Mandelbrot zoom"))
        let y = try #require(row(grid, containing: "Hello there"))
        #expect(y > title)
    }

    @Test func longTextWrapsAtWordsToThreeLines() throws {
        let words = (1...60).map { "word\($0)" }.joined(separator: " ")
        let grid = StoriesRenderer.render(Self.screen(text: words, frame: false), width: 60, height: 24)
        let first = try #require(row(grid, containing: "word1 "))
        let lines = grid.lines[first...].prefix { $0.contains("word") }
        #expect(lines.count == 3)
        #expect(lines.last?.contains("…") == true)
        for line in lines { #expect(!line.contains("wor ") && line.count <= 60) }
    }

    @Test func autoShowsThemWhileTheSoundIsNotHeard() {
        #expect(Self.screen(sound: .muted).showsCaptions)
        #expect(Self.screen(sound: .off).showsCaptions)
        #expect(!Self.screen(sound: .playing).showsCaptions)
        #expect(Self.screen(sound: .playing, mode: .on).showsCaptions)
        #expect(!Self.screen(sound: .muted, mode: .off).showsCaptions)
        let heard = StoriesRenderer.render(Self.screen(sound: .playing, frame: false), width: 80, height: 24)
        #expect(row(heard, containing: "Hello there") == nil)
        #expect(heard.lines[1].contains("CC"), "the header says the story has captions")
        var none = Self.screen()
        none.snapshot.hasCaptions = false
        #expect(!StoriesRenderer.render(none, width: 80, height: 24).lines[1].contains("CC"))
    }

    @Test func vTogglesWhatShowsNow() {
        #expect(KeyMap.action(for: .character("v"), width: 80) == .toggleCaptions)
        #expect(Self.screen(sound: .muted).toggledCaptions == .off)
        #expect(Self.screen(sound: .playing).toggledCaptions == .on)
        #expect(Self.screen(sound: .playing, mode: .on).toggledCaptions == .off)
        var help = Self.screen()
        help.helpOpen = true
        let grid = StoriesRenderer.render(help, width: 100, height: 40)
        #expect(row(grid, containing: "captions on / off") != nil)
    }

    @Test func italicCuesAreItalic() throws {
        var screen = Self.screen(frame: false)
        screen.snapshot.caption?.italic = true
        let grid = StoriesRenderer.render(screen, width: 80, height: 24)
        let y = try #require(row(grid, containing: "Hello there"))
        let x = try #require(grid.lines[y].range(of: "Hello")).lowerBound.utf16Offset(in: grid.lines[y])
        #expect(grid[x, y].style.italic)
    }

    @Test func inASCIIWithoutColoursOnReverseVideo() throws {
        let output = PictureOutput(picture: .ascii, colors: .none)
        var screen = Self.screen(output: output)
        screen.color = false
        let grid = StoriesRenderer.render(screen, width: 100, height: 40)
        let y = try #require(row(grid, containing: "Hello there"))
        let x = try #require(grid.lines[y].range(of: "Hello")).lowerBound.utf16Offset(in: grid.lines[y])
        #expect(grid[x, y].style.reverse && grid[x, y].style.background == nil)
    }
}
