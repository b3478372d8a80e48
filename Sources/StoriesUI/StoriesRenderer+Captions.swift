import StoryPlayer
import Terminal

extension StoriesRenderer {
    /// The most lines a caption takes.
    public static let captionLines = 3

    /// Rows kept clear under an image for the captions: an image is drawn over the cells, so text cells inside it
    /// would be covered (and redrawing the image for each cue would cost a whole frame); cell pictures need none,
    /// their lower rows are overwritten by the words.
    static func captionRows(_ screen: StoriesScreen) -> Int {
        screen.showsCaptions && screen.effectiveOutput.picture.isPixels && !screen.helpOpen ? captionLines : 0
    }

    /// The caption's lines wrapped to `width` columns at word boundaries, at most three (the third cut with an
    /// ellipsis when more would follow).
    func captionText(width: Int) -> [String] {
        guard screen.showsCaptions, let caption = snapshot.caption, width > 0 else { return [] }
        var lines = caption.text.split(separator: "\n").flatMap { String($0).wrapped(to: width) }
        if lines.count > Self.captionLines {
            lines = Array(lines.prefix(Self.captionLines))
            lines[lines.count - 1] = (lines[lines.count - 1] + " " + glyphs.ellipsis)
                .shortened(to: width, ellipsis: glyphs.ellipsis)
        }
        return lines
    }

    /// Light text on a dark cell background, readable over any picture; reverse video without colours.
    var captionStyle: CellStyle {
        let italic = snapshot.caption?.italic ?? false
        switch screen.output.colors {
        case .none:
            return CellStyle(reverse: true, italic: italic)
        case .palette16:
            return screen.color
                ? CellStyle(foreground: .palette(15), background: .palette(0), italic: italic)
                : CellStyle(reverse: true, italic: italic)
        case .palette256, .truecolor:
            return screen.color
                ? CellStyle(foreground: .palette(231), background: .palette(235), italic: italic)
                : CellStyle(reverse: true, italic: italic)
        }
    }

    /// Draws the caption centred on column `centre`, its last line on row `bottom`, no higher than `top`.
    mutating func drawCaption(centre: Int, bottom: Int, top: Int, width: Int) {
        let lines = captionText(width: Swift.max(1, width - 2))
        guard !lines.isEmpty else { return }
        let first = Swift.max(top, bottom - lines.count + 1)
        for (i, line) in lines.enumerated() where first + i <= bottom {
            // One space either side: the dark band reads as a box, not as bare letters.
            let padded = " \(line) "
            grid.put(padded, x: Swift.max(0, centre - padded.count / 2), y: first + i, style: captionStyle)
        }
    }
}
