import StoryPlayer
import Terminal

/// What the screen shows: the session's state plus the viewer's display choices. A value; rendering it is pure.
public struct StoriesScreen: Sendable, Equatable {
    /// The session now.
    public var snapshot: SessionSnapshot
    /// The cache pane is open (`c`).
    public var paneOpen = false
    /// The list of keys is shown over everything (`?`; any key closes it).
    public var helpOpen = false
    /// Draw block characters (UTF-8 locale) rather than ASCII.
    public var unicode = true
    /// Colour the cache indicator and states (off under `NO_COLOR`; text carries the meaning either way).
    public var color = true
    /// How the picture is drawn (the terminal's protocol, colours and cell size).
    public var output: PictureOutput
    /// Moving pictures may be sent as images: false once the terminal was measured too slow to take them at
    /// `PictureOutput.smoothFramesPerSecond` (stills are images still).
    public var imagesForVideo = true
    /// When the story's captions show (`v` turns them on or off).
    public var captions = CaptionMode.auto

    /// The story's captions show now: on, or in `auto` while its sound is not heard.
    public var showsCaptions: Bool {
        guard snapshot.hasCaptions else { return false }
        switch captions {
        case .on: return true
        case .off: return false
        case .auto: return snapshot.status?.sound != .playing
        }
    }

    /// The mode `v` turns to: the opposite of what shows now.
    public var toggledCaptions: CaptionMode { showsCaptions || (!snapshot.hasCaptions && captions == .on) ? .off : .on }

    /// How the picture is drawn now: cells instead of images for a playing video the terminal cannot take as
    /// images smoothly.
    public var effectiveOutput: PictureOutput {
        guard output.picture.isPixels, !imagesForVideo, showsMovingPicture else { return output }
        var cells = output
        cells.picture = unicode ? .symbols : .ascii
        return cells
    }

    /// A screen state; `output` defaults to half blocks in 256 colours (ASCII without UTF-8 or colour).
    public init(
        snapshot: SessionSnapshot, paneOpen: Bool = false, helpOpen: Bool = false, unicode: Bool = true,
        color: Bool = true, output: PictureOutput? = nil
    ) {
        self.snapshot = snapshot
        self.paneOpen = paneOpen
        self.helpOpen = helpOpen
        self.unicode = unicode
        self.color = color
        self.output = output ?? .conservative(unicode: unicode, color: color)
    }

    /// The story is a moving picture (more than one frame shown, at a known cadence), not a photo or a still.
    public var showsMovingPicture: Bool {
        guard let status = snapshot.status, status.frameInterval != nil else { return false }
        return status.frames.shown > 1
    }

    /// The smallest terminal the layout fits.
    public static let minimumSize = (width: 60, height: 16)
    /// From this width the cache pane sits beside the story instead of over it.
    public static let sideBySideWidth = 100
}

/// What a key, click or resize means.
public enum UIAction: Sendable, Equatable {
    /// Tell the session.
    case command(StoryCommand)
    /// Open or close the cache pane.
    case togglePane
    /// Show or hide the list of keys.
    case toggleHelp
    /// Show or hide captions.
    case toggleCaptions
    /// Leave.
    case quit
    /// Lay out again (the terminal changed size).
    case relayout
}

/// The key map: ←/→ and h/l, space, r, c, ?, q/Esc (and Ctrl-C), `,`/`.` and Shift+←/→ to seek a second, 1–9
/// for story N, and clicks on the left or right half. `StoriesRenderer.helpLines` lists them for the help.
public enum KeyMap {
    /// Seconds `,` and `.` move the playhead.
    public static let seekStep = 1.0

    /// The action for `input` on a screen `width` columns wide, nil when it means nothing.
    public static func action(for input: TerminalInput, width: Int) -> UIAction? {
        switch input {
        case .left: return .command(.previous)
        case .right: return .command(.next)
        case .shiftLeft: return .command(.seek(by: -seekStep))
        case .shiftRight: return .command(.seek(by: seekStep))
        case .up: return .command(.previousAuthor)
        case .down: return .command(.nextAuthor)
        case .escape: return .quit
        case .resize: return .relayout
        case .click(let x, _): return .command(x < width / 2 ? .previous : .next)
        case .character(let character):
            switch character {
            case "h", "H": return .command(.previous)
            case "l", "L": return .command(.next)
            case " ", "p", "P": return .command(.togglePause)
            case "r", "R": return .command(.replay)
            case "m", "M": return .command(.toggleMute)
            case "c", "C": return .togglePane
            case "v", "V": return .toggleCaptions
            case "?": return .toggleHelp
            case "q", "Q", "\u{3}", "\u{4}": return .quit
            case "\u{C}": return .relayout
            case ",", "<": return .command(.seek(by: -seekStep))
            case ".", ">": return .command(.seek(by: seekStep))
            case "1"..."9": return character.wholeNumberValue.map { .command(.jump(to: $0 - 1)) }
            default: return nil
            }
        }
    }
}

/// When captions show: always, never, or while the story is not heard (the default: words over the picture help
/// when the sound is off, muted or missing, and only cover it while the sound says the same).
public enum CaptionMode: String, Sendable, Equatable, CaseIterable {
    case on, off, auto
}

extension StoriesScreen {
    /// `color` as this screen shows it: none where colours are off.
    func tint(_ color: CellColor, bold: Bool = false, reverse: Bool = false) -> CellStyle {
        CellStyle(color: self.color ? color : nil, bold: bold, reverse: reverse)
    }
}
