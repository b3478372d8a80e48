import StoryPlayer
import Terminal

/// Turns a `StoriesScreen` into cells: the segmented progress row, the header with the cache indicator, the story
/// body (player state, buffer health, the map of cached byte ranges, startup time and stalls), the cache pane and
/// the key-help row. Pure: no I/O, no clock.
public struct StoriesRenderer {
    let screen: StoriesScreen
    let glyphs: Glyphs
    var grid: CellGrid

    /// Renders `screen` into a `width`×`height` grid.
    public static func render(_ screen: StoriesScreen, width: Int, height: Int) -> CellGrid {
        var renderer = StoriesRenderer(
            screen: screen, glyphs: screen.unicode ? .unicode : .ascii, grid: CellGrid(width: width, height: height))
        renderer.draw()
        return renderer.grid
    }

    var snapshot: SessionSnapshot { screen.snapshot }

    private mutating func draw() {
        let (width, height) = (grid.width, grid.height)
        guard width >= StoriesScreen.minimumSize.width, height >= StoriesScreen.minimumSize.height else {
            drawTooSmall()
            return
        }
        drawSegments(y: 0)
        drawHeader(y: 1)
        grid.fill(glyphs.horizontal, x: 0, y: 2, count: width, style: CellStyle(dim: true))
        AuthorTrayRenderer(snapshot: snapshot, glyphs: glyphs).draw(into: &grid, y: 2)
        let bodyTop = Self.bodyTop
        let bodyBottom = height - 2  // exclusive
        grid.fill(glyphs.horizontal, x: 0, y: bodyBottom, count: width, style: CellStyle(dim: true))
        let body = Self.bodyArea(width: width, height: height, paneOpen: screen.paneOpen)
        if screen.paneOpen {
            if let body {
                drawBody(x: body.x, y: bodyTop, width: body.width, height: bodyBottom - bodyTop)
                for y in bodyTop..<bodyBottom { grid[body.width, y] = Cell(glyphs.vertical, CellStyle(dim: true)) }
                CachePaneRenderer(screen: screen, glyphs: glyphs).draw(into: &grid, x: body.width + 1, y: bodyTop, width: width - body.width - 1, height: bodyBottom - bodyTop)
            } else {
                CachePaneRenderer(screen: screen, glyphs: glyphs).draw(into: &grid, x: 0, y: bodyTop, width: width, height: bodyBottom - bodyTop)
            }
        } else {
            drawBody(x: 0, y: bodyTop, width: width, height: bodyBottom - bodyTop)
        }
        drawKeyHelp(y: height - 1)
        if screen.helpOpen { drawHelp() }
    }

    static let bodyTop = 3

    /// The side pane's width on a `width`-column terminal: 48 columns, growing with wide terminals (to 72) so
    /// titles are not cut while the story keeps at least 60.
    static func paneWidth(for width: Int) -> Int { Swift.min(72, Swift.max(48, width - 61)) }

    /// Where the story area is on a `width`×`height` screen: nil when the pane covers it.
    static func bodyArea(width: Int, height: Int, paneOpen: Bool) -> (x: Int, width: Int, height: Int)? {
        let bodyHeight = height - 2 - bodyTop
        guard paneOpen else { return (0, width, bodyHeight) }
        guard width >= StoriesScreen.sideBySideWidth else { return nil }
        return (0, width - paneWidth(for: width) - 1, bodyHeight)
    }

    /// The picture's box in square pixels for `screen` on a `width`×`height` terminal: what the decoder scales
    /// frames to (the area's real pixels for images, a few a cell for symbols). Nil when no picture is visible (too
    /// small, or the pane covers the story).
    public static func pictureBox(_ screen: StoriesScreen, width: Int, height: Int) -> (width: Int, height: Int)? {
        guard let area = pictureArea(screen, width: width, height: height) else { return nil }
        return PictureRenderer.decoderBox(
            width: area.width, height: area.height, output: screen.effectiveOutput, frame: screen.snapshot.frame)
    }

    /// The cells the picture may take: the story area above its caption row.
    static func pictureArea(_ screen: StoriesScreen, width: Int, height: Int) -> (width: Int, height: Int)? {
        guard width >= StoriesScreen.minimumSize.width, height >= StoriesScreen.minimumSize.height,
            let body = bodyArea(width: width, height: height, paneOpen: screen.paneOpen)
        else { return nil }
        return (body.width, viewportHeight(bodyHeight: body.height) - 1 - captionRows(screen))
    }

    private mutating func drawTooSmall() {
        let need = StoriesScreen.minimumSize
        let lines = [
            "Terminal too small",
            "needs \(need.width)\(glyphs.times)\(need.height), this is \(grid.width)\(glyphs.times)\(grid.height)",
            "enlarge it, or press q to quit",
        ]
        let top = Swift.max(0, (grid.height - lines.count) / 2)
        for (i, line) in lines.enumerated() {
            let text = line.shortened(to: grid.width, ellipsis: "")
            grid.put(text, x: Swift.max(0, (grid.width - text.count) / 2), y: top + i, style: CellStyle(bold: i == 0))
        }
    }

    /// One segment per story of the current author (of every story when none is current): watched ones full,
    /// the current one filling with its progress, later ones empty.
    private mutating func drawSegments(y: Int) {
        let shown = snapshot.currentAuthor?.stories ?? snapshot.stories.indices
        let count = shown.count
        guard count > 0 else { return }
        let available = grid.width - 2 - (count - 1)
        let base = Swift.max(1, available / count)
        var extra = Swift.max(0, available - base * count)
        var x = 1
        let current = snapshot.current ?? (snapshot.finished ? shown.upperBound : -1)
        for i in shown {
            let width = base + (extra > 0 ? 1 : 0)
            if extra > 0 { extra -= 1 }
            var filled = 0
            if i < current {
                filled = width
            } else if i == current, let status = snapshot.status, let duration = status.duration, duration > 0 {
                filled = Int((Double(width) * Swift.min(1, status.position / duration)).rounded(.down))
            }
            grid.fill(glyphs.segmentDone, x: x, y: y, count: filled, style: CellStyle(bold: true))
            grid.fill(glyphs.segmentAhead, x: x + filled, y: y, count: width - filled, style: CellStyle(dim: true))
            x += width + 1
        }
    }

    /// Playlist title, story n/N and title on the left; position/duration, plays and the cache indicator right.
    private mutating func drawHeader(y: Int) {
        let stories = snapshot.stories
        var right: [(String, CellStyle)] = []
        if let index = snapshot.current {
            let row = stories[index]
            let status = snapshot.status
            if status?.state == .failed {
                right.append(("could not play", screen.tint(.red, bold: true)))
            } else {
                let position = TimeFormat.clock(status?.position ?? 0)
                let duration = status?.duration.map(TimeFormat.clock) ?? "-:--.-"
                right.append(("\(position) / \(duration)", .plain))
            }
            if let sound = soundLabel(status?.sound) { right.append(("   ", .plain)); right.append(sound) }
            if snapshot.hasCaptions {
                right.append(("   ", .plain))
                right.append(("CC", screen.showsCaptions ? CellStyle(bold: true) : CellStyle(dim: true)))
            }
            right.append(("   plays \(row.plays)" + (row.maxViews.map { "/\($0)" } ?? ""), .plain))
            right.append(("   ", .plain))
            right.append(indicator(status))
        }
        let rightWidth = right.reduce(0) { $0 + $1.0.count }
        var x = grid.width - 1 - rightWidth
        for (text, style) in right { x = grid.put(text, x: x, y: y, style: style) }
        var left = " \(snapshot.title)"
        if let index = snapshot.current, let author = snapshot.currentAuthor {
            let room = grid.width - rightWidth - 2
            // Whose story it is, and which of theirs: the author's name and its place among their stories.
            if let name = author.name { left = " \(name)" }
            let position = "\(index - author.stories.lowerBound + 1)/\(author.stories.count) \(glyphs.dot) "
            left += " \(glyphs.dot) " + position
            // The story's title matters more than the playlist's: on a narrow screen the playlist's goes first.
            let minimumTitle = Swift.min(stories[index].title.count, 12)
            if left.count + minimumTitle > room { left = " " + position }
            let start = grid.put(left, x: 0, y: y, style: CellStyle(bold: true), maxWidth: room)
            // A feed item's age follows its title while there is room for both.
            let age = stories[index].age.map { " \(glyphs.dot) \($0)" } ?? ""
            let titleRoom = room - start - (room - start - age.count >= minimumTitle ? age.count : 0)
            let end = grid.put(
                stories[index].title.shortened(to: titleRoom, ellipsis: glyphs.ellipsis), x: start, y: y, style: .plain)
            if titleRoom < room - start { grid.put(age, x: end, y: y, style: CellStyle(dim: true)) }
        } else {
            grid.put(left, x: 0, y: y, style: CellStyle(bold: true), maxWidth: grid.width - rightWidth - 2)
        }
    }

    /// The cache indicator: its text always says the state; colour only adds to it.
    /// The header's word for the story's sound: a speaker mark while it plays, `muted`, or `no sound`.
    func soundLabel(_ sound: StorySound?) -> (String, CellStyle)? {
        switch sound {
        case .playing: return (glyphs.sound, .plain)
        case .muted: return ("muted", screen.tint(.yellow))
        case .silent, .off: return ("no sound", CellStyle(dim: true))
        case .unknown, nil: return nil
        }
    }

    /// The cache badge of the story's status: where its bytes came from, once known.
    func indicator(_ status: PlaybackStatus?) -> (String, CellStyle) {
        switch status?.cache {
        case .hit: return (" HIT ", screen.tint(.green, bold: true, reverse: true))
        case .partial: return (" PARTIAL ", screen.tint(.yellow, bold: true, reverse: true))
        case .miss: return (" MISS ", screen.tint(.red, bold: true, reverse: true))
        case .offline: return (" OFFLINE ", screen.tint(.magenta, bold: true, reverse: true))
        case .local: return (" LOCAL ", screen.tint(.blue, bold: true, reverse: true))
        case nil: return (" \(glyphs.ellipsis) ", CellStyle(dim: true))
        }
    }

    /// The keys row: as many of the keys as fit, in order, then always `? help` and `q quit`.
    private mutating func drawKeyHelp(y: Int) {
        let pauseLabel = snapshot.paused ? "resume" : "pause"
        var keys: [(String, String)] = [
            (glyphs.keys.previous, "prev"), (glyphs.keys.next, "next"), ("space", pauseLabel), (", .", "seek"),
            ("r", "replay"), ("c", screen.paneOpen ? "hide cache" : "cache"), ("m", snapshot.muted ? "unmute" : "mute"),
            ("1-9", "story"),
        ]
        if snapshot.hasCaptions { keys.insert(("v", screen.showsCaptions ? "hide captions" : "captions"), at: keys.count - 1) }
        if snapshot.authors.count > 1 { keys.insert((glyphs.authorKeys, "author"), at: 2) }
        let always: [(String, String)] = [("?", "help"), ("q", "quit")]
        func width(_ item: (String, String)) -> Int { item.0.count + 1 + item.1.count + 3 }
        let reserved = always.reduce(0) { $0 + width($1) }
        var x = 1
        for item in keys {
            guard x + width(item) + reserved <= grid.width else { break }
            x = drawKey(item, x: x, y: y)
        }
        for item in always { x = drawKey(item, x: x, y: y) }
    }

    private mutating func drawKey(_ item: (key: String, label: String), x: Int, y: Int) -> Int {
        let column = grid.put(item.key, x: x, y: y, style: CellStyle(bold: true))
        return grid.put(" \(item.label)   ", x: column, y: y, style: CellStyle(dim: true))
    }

    /// Every key and what it does, for the help overlay.
    var helpLines: [(keys: String, meaning: String)] {
        let authors: [(keys: String, meaning: String)] = snapshot.authors.count > 1
            ? [(glyphs.authorKeys, "previous / next author (their first unseen story)")] : []
        return [
            ("\(glyphs.keys.previous)  \(glyphs.keys.next)", "previous / next story"),
        ] + authors + [
            ("space  p", "pause / resume"),
            (",  .  Shift+\(Self.arrow(glyphs.keys.previous))/\(Self.arrow(glyphs.keys.next))", "seek 1 s back / forward"),
            ("1 \(glyphs.ellipsis) 9", authors.isEmpty ? "jump to story N" : "jump to the author's story N"),
            ("m", "mute / unmute the sound (for the rest of the session)"),
            ("v", "captions on / off (kept for the next runs)"),
            ("r", "replay the story (after the end: start over)"),
            ("c", "cache pane: stories, hits, bytes, disk"),
            ("click", "left half: previous, right half: next"),
            ("?", "this help (any key closes it)"),
            ("q  Esc", "quit"),
        ]
    }

    /// The arrow of a key pair such as `←/h` (the arrow alone, without the letter).
    static func arrow(_ keys: String) -> String { String(keys.split(separator: "/").first ?? Substring(keys)) }

    /// The help: a box over the middle of the screen listing every key.
    private mutating func drawHelp() {
        let lines = helpLines
        let keyWidth = (lines.map(\.keys.count).max() ?? 0) + 2
        let boxWidth = Swift.min(grid.width - 2, keyWidth + (lines.map(\.meaning.count).max() ?? 0) + 4)
        // A meaning wider than the box goes on over the rows below it, at a word's end; with no rows for that, it is
        // cut at one.
        let room = Swift.max(1, boxWidth - 4 - keyWidth)
        var rows = lines.flatMap { line in
            line.meaning.wrapped(to: room).enumerated().map { (keys: $0.offset == 0 ? line.keys : "", meaning: $0.element) }
        }
        if rows.count + 4 > grid.height - 2 {
            rows = lines.map { (keys: $0.keys, meaning: $0.meaning.shortened(to: room, ellipsis: glyphs.ellipsis)) }
        }
        let boxHeight = Swift.min(grid.height - 2, rows.count + 4)
        let left = Swift.max(0, (grid.width - boxWidth) / 2)
        let top = Swift.max(0, (grid.height - boxHeight) / 2)
        for row in top..<(top + boxHeight) {
            grid.fill(" ", x: left, y: row, count: boxWidth, style: .plain)
            grid[left, row] = Cell(glyphs.vertical, CellStyle(dim: true))
            grid[left + boxWidth - 1, row] = Cell(glyphs.vertical, CellStyle(dim: true))
        }
        grid.fill(glyphs.horizontal, x: left, y: top, count: boxWidth, style: CellStyle(dim: true))
        grid.fill(glyphs.horizontal, x: left, y: top + boxHeight - 1, count: boxWidth, style: CellStyle(dim: true))
        grid.put(" Keys ", x: left + 2, y: top, style: CellStyle(bold: true))
        for (i, line) in rows.enumerated() where top + 2 + i < top + boxHeight - 1 {
            let column = grid.put(line.keys.padded(to: keyWidth), x: left + 2, y: top + 2 + i, style: CellStyle(bold: true))
            grid.put(line.meaning, x: column, y: top + 2 + i, maxWidth: left + boxWidth - 2 - column)
        }
    }
}
