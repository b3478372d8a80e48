import CNcurses
import Foundation

/// Why the terminal could not be taken over.
public struct TerminalError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    public let description: String
}

/// The ncurses backend: the only code that calls curses. Not thread-safe by design: curses is single-threaded, so
/// one thread creates a screen, draws on it, reads input from it and stops it.
public final class TerminalScreen {
    /// True when the locale's character set is UTF-8 (block characters can be drawn).
    public let unicode: Bool
    /// True when colours are used (the terminal has them and `NO_COLOR` is not set).
    public let color: Bool
    /// Colours the terminal has (256 on xterm-256color; pictures are reduced to fewer where it has fewer).
    public let colors: Int
    /// How pictures are shown here (detected, or as asked with `picture`).
    public let output: PictureOutput
    private var screen: OpaquePointer?
    private var drawn: CellGrid?
    private var pairs: ColorPairTable
    private var layer: PictureLayer
    /// Keys told from late answers of the terminal.
    private var replies = TerminalReplyFilter()
    /// Inputs read together and not yet returned.
    private var queued: [TerminalInput] = []
    private let started = Date()

    /// Takes over the terminal on stdin/stdout: raw keys without echo, hidden cursor, mouse clicks, colours
    /// unless `NO_COLOR` is set. Pictures go as `picture` says, or (nil) as the terminal answers to a query sent
    /// first. Throws when stdout is not a terminal curses can drive.
    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment, picture: PictureProtocol? = nil,
        pictureBytesPerSecond: Double = 8_000_000
    ) throws {
        setlocale(LC_ALL, "")
        let codeset = String(cString: stories_codeset()).uppercased()
        unicode = codeset == "UTF-8" || codeset == "UTF8"
        // Asked before curses owns the terminal; not asked when the answer is already given (or cannot matter).
        let answers = picture == nil && (environment["NO_COLOR"] ?? "").isEmpty ? TerminalProbe.ask(environment: environment) : TerminalAnswers()
        guard let screen = newterm(nil, stories_stdout(), stories_stdin()) else {
            throw TerminalError(
                description: "cannot drive this terminal (TERM=\(environment["TERM"] ?? "unset")); use --headless")
        }
        self.screen = screen
        _ = set_term(screen)
        cbreak()
        noecho()
        nonl()
        keypad(stories_stdscr(), true)
        _ = curs_set(0)
        set_escdelay(25)
        _ = mousemask(stories_button1_mask(), nil)
        mouseinterval(0)
        let wantsColor = (environment["NO_COLOR"] ?? "").isEmpty
        if wantsColor, has_colors() {
            start_color()
            use_default_colors()
            let palette: [(CellColor, Int32)] = [
                (.red, COLOR_RED), (.green, COLOR_GREEN), (.yellow, COLOR_YELLOW), (.blue, COLOR_BLUE),
                (.magenta, COLOR_MAGENTA), (.cyan, COLOR_CYAN), (.white, COLOR_WHITE),
            ]
            for (name, value) in palette { init_pair(Int16(name.rawValue), Int16(value), -1) }
            color = true
            colors = Int(stories_colors())
        } else {
            color = false
            colors = 0
        }
        pairs = ColorPairTable(
            colors: colors, pairLimit: Int(stories_color_pairs()), firstPair: CellColor.allCases.count + 1)
        // Curses must not shift lines or characters sideways: cells it believes blank may hold a picture.
        idlok(stories_stdscr(), false)
        idcok(stories_stdscr(), false)
        let facts = PictureDetection.Facts(
            environment: environment, unicode: unicode, colors: colors,
            terminfoRGB: color && (tigetflag("RGB") > 0 || tigetflag("Tc") > 0), answers: answers,
            windowCell: TerminalProbe.windowCell())
        var output = PictureDetection.choose(facts, requested: picture)
        if !ChafaPicture.available, output.picture != .ascii, output.picture != .kitty {
            output.picture = .half  // this program's own half blocks
        }
        self.output = output
        layer = PictureLayer(picture: output.picture, unicode: unicode, bytesPerSecond: pictureBytesPerSecond)
    }

    deinit { stop() }

    /// Columns and rows now.
    public var size: (width: Int, height: Int) { (Int(stories_cols()), Int(stories_lines())) }

    /// Whether the terminal takes images as fast as a video needs: the byte rate it was measured to drain (within
    /// the cap) against the size of the last image sent; nil before an image was sent.
    public var imagesKeepUp: Bool? {
        guard layer.imageBytes > 0 else { return nil }
        return PictureOutput.imagesKeepUp(bytesPerSecond: layer.budget.rate, frameBytes: layer.imageBytes)
    }

    /// Draws `grid`, writing only the cells that changed since the last draw; nothing at all when none did.
    public func draw(_ full: CellGrid) {
        guard screen != nil else { return }
        let window = stories_stdscr()
        var previous = drawn
        if previous?.width != full.width || previous?.height != full.height {
            werase(window)
            previous = nil
        }
        writeOut(layer.before(full, full: previous == nil))
        let grid = layer.cursesGrid(full)
        var runs = grid.changes(since: previous)
        if color {
            var allocation = pairs.allocate(Self.colorRequests(runs))
            if allocation.recycled {
                // Pairs now mean other colours: everything on screen is drawn again with the new ones.
                runs = grid.changes(since: nil)
                allocation.define += pairs.allocate(Self.colorRequests(runs)).define
            }
            for (pair, combo) in allocation.define {
                _ = init_extended_pair(Int32(pair), Int32(combo.foreground), Int32(combo.background))
            }
        }
        for run in runs {
            let (attributes, pair) = self.attributes(run.style)
            _ = stories_set_attributes(window, attributes, pair)
            // The bottom-right cell makes curses report a scroll it does not do; the text is drawn regardless.
            _ = mvwaddstr(window, Int32(run.y), Int32(run.x), run.text)
        }
        _ = stories_set_attributes(window, 0, 0)
        drawn = grid
        if !runs.isEmpty || previous == nil { wrefresh(window) }
        let output = self.output
        var after = layer.after(full, cursesRuns: runs, now: Date().timeIntervalSince(started)) { image in
            ChafaPicture.sixel(
                image.pixels, columns: image.columns, rows: image.rows, output: output, fixedPalette: image.moving)
        }
        guard !after.isEmpty else { return }
        // Back to where curses left the cursor, so its next moves stay right.
        after += Array("\u{1B}[\(stories_cury() + 1);\(stories_curx() + 1)H".utf8)
        let start = Date()
        writeOut(after)
        layer.wrote(after.count, seconds: Date().timeIntervalSince(start))
    }

    /// Writes bytes straight to the terminal (curses has flushed what it wrote before).
    private func writeOut(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            offset += written
        }
    }

    /// The picture colours `runs` ask for (runs in the interface's own palette need no pair of their own).
    private static func colorRequests(_ runs: [CellRun]) -> Set<ColorRequest> {
        Set(runs.compactMap { run in
            run.style.foreground == nil && run.style.background == nil
                ? nil
                : ColorRequest(
                    foreground: run.style.foreground?.paletteIndex, background: run.style.background?.paletteIndex)
        })
    }

    /// Forgets what is on screen, so the next draw repaints everything (after a resize).
    public func invalidate() {
        drawn = nil
        clearok(stories_stdscr(), true)
    }

    /// Waits up to `timeoutMs` for input, or until `wake` is signalled; nil when none came.
    public func read(timeoutMs: Int, wake: TerminalWake?) -> TerminalInput? {
        guard let wake, screen != nil, queued.isEmpty, !replies.isPending else { return read(timeoutMs: timeoutMs) }
        // What curses already holds first; then the terminal and the wake together.
        if let input = read(timeoutMs: 0) { return input }
        guard queued.isEmpty, !replies.isPending else { return read(timeoutMs: timeoutMs) }
        guard wake.wait(input: 0, timeoutMs: timeoutMs) else { return nil }
        return read(timeoutMs: 0)
    }

    /// Waits up to `timeoutMs` for input; nil when none came.
    public func read(timeoutMs: Int) -> TerminalInput? {
        guard screen != nil else { return nil }
        if !queued.isEmpty { return queued.removeFirst() }
        let window = stories_stdscr()
        var value: wint_t = 0
        var result: Int32
        repeat {
            // The rest of something that began with ESC comes at once or not at all.
            wtimeout(window, replies.isPending ? Self.sequenceWait : Int32(timeoutMs))
            result = wget_wch(window, &value)
            if result == ERR {
                return replies.timedOut().flatMap(Self.input)
            }
            if result == KEY_CODE_YES { break }
            queued += replies.feed(UInt32(value)).compactMap(Self.input)
        } while queued.isEmpty && replies.isPending
        if result != KEY_CODE_YES {
            return queued.isEmpty ? nil : queued.removeFirst()
        }
        replies = TerminalReplyFilter()
        switch Int32(value) {
        case KEY_LEFT: return .left
        case KEY_RIGHT: return .right
        case KEY_SLEFT: return .shiftLeft
        case KEY_SRIGHT: return .shiftRight
        case KEY_UP: return .up
        case KEY_DOWN: return .down
        case KEY_RESIZE: return .resize
        case KEY_MOUSE:
            var event = MEVENT()
            guard getmouse(&event) == OK, stories_button1_pressed(event.bstate) != 0 else { return nil }
            return .click(x: Int(event.x), y: Int(event.y))
        default: return nil
        }
    }

    /// How long the rest of an escape sequence is waited for, in milliseconds.
    static let sequenceWait: Int32 = 50

    private static func input(_ outcome: TerminalReplyFilter.Outcome) -> TerminalInput? {
        switch outcome {
        case .escape: return .escape
        case .key(let value): return Unicode.Scalar(value).map { .character(Character($0)) }
        }
    }

    /// True when the terminal went away (its input hung up or failed): nothing can be read or shown any more.
    public var isGone: Bool {
        var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) >= 0 else { return false }
        return descriptor.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
    }

    /// Gives the terminal back: cursor, echo, line mode, and the screen as it was. Safe to call twice.
    public func stop() {
        guard let screen else { return }
        if layer.shownImage != nil, output.picture == .kitty { writeOut(KittyImage.delete(id: PictureLayer.kittyID)) }
        self.screen = nil
        _ = curs_set(1)
        endwin()
        delscreen(screen)
        fflush(stories_stdout())
    }

    private func attributes(_ style: CellStyle) -> (Int32, Int32) {
        var value: Int32 = 0
        if style.bold { value |= stories_a_bold() }
        if style.dim { value |= stories_a_dim() }
        if style.reverse { value |= stories_a_reverse() }
        if style.italic { value |= stories_a_italic() }
        guard color else { return (value, 0) }
        if style.foreground != nil || style.background != nil {
            let request = ColorRequest(
                foreground: style.foreground?.paletteIndex, background: style.background?.paletteIndex)
            return (value, Int32(pairs.pair(for: request) ?? 0))
        }
        return (value, style.color.map { Int32($0.rawValue) } ?? 0)
    }
}
