import MediaCache
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

    func tint(_ color: CellColor, bold: Bool = false, reverse: Bool = false) -> CellStyle {
        CellStyle(color: screen.color ? color : nil, bold: bold, reverse: reverse)
    }

    private mutating func draw() {
        let (width, height) = (grid.width, grid.height)
        guard width >= StoriesScreen.minimumSize.width, height >= StoriesScreen.minimumSize.height else {
            drawTooSmall()
            return
        }
        drawSegments(y: 0)
        drawHeader(y: 1)
        grid.fill(glyphs.horizontal, x: 0, y: 2, count: width, style: CellStyle(dim: true))
        let bodyTop = Self.bodyTop
        let bodyBottom = height - 2  // exclusive
        grid.fill(glyphs.horizontal, x: 0, y: bodyBottom, count: width, style: CellStyle(dim: true))
        let body = Self.bodyArea(width: width, height: height, paneOpen: screen.paneOpen)
        if screen.paneOpen {
            if let body {
                drawBody(x: body.x, y: bodyTop, width: body.width, height: bodyBottom - bodyTop)
                for y in bodyTop..<bodyBottom { grid[body.width, y] = Cell(glyphs.vertical, CellStyle(dim: true)) }
                drawPane(x: body.width + 1, y: bodyTop, width: width - body.width - 1, height: bodyBottom - bodyTop)
            } else {
                drawPane(x: 0, y: bodyTop, width: width, height: bodyBottom - bodyTop)
            }
        } else {
            drawBody(x: 0, y: bodyTop, width: width, height: bodyBottom - bodyTop)
        }
        drawKeyHelp(y: height - 1)
    }

    static let bodyTop = 3
    static let paneWidth = 48

    /// Where the story area is on a `width`×`height` screen: nil when the pane covers it.
    static func bodyArea(width: Int, height: Int, paneOpen: Bool) -> (x: Int, width: Int, height: Int)? {
        let bodyHeight = height - 2 - bodyTop
        guard paneOpen else { return (0, width, bodyHeight) }
        guard width >= StoriesScreen.sideBySideWidth else { return nil }
        return (0, width - paneWidth - 1, bodyHeight)
    }

    /// The picture's box in pixels (two per cell row) for `screen` on a `width`×`height` terminal: what the decoder
    /// scales frames to. Nil when no picture is visible (too small, or the pane covers the story).
    public static func pictureBox(_ screen: StoriesScreen, width: Int, height: Int) -> (width: Int, height: Int)? {
        guard width >= StoriesScreen.minimumSize.width, height >= StoriesScreen.minimumSize.height,
            let body = bodyArea(width: width, height: height, paneOpen: screen.paneOpen)
        else { return nil }
        return (body.width, (viewportHeight(bodyHeight: body.height) - 1) * 2)
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
            let text = line.truncated(to: grid.width, ellipsis: "")
            grid.put(text, x: Swift.max(0, (grid.width - text.count) / 2), y: top + i, style: CellStyle(bold: i == 0))
        }
    }

    /// One segment per story: watched ones full, the current one filling with its progress, later ones empty.
    private mutating func drawSegments(y: Int) {
        let count = snapshot.stories.count
        guard count > 0 else { return }
        let available = grid.width - 2 - (count - 1)
        let base = Swift.max(1, available / count)
        var extra = Swift.max(0, available - base * count)
        var x = 1
        let current = snapshot.current ?? (snapshot.finished ? count : -1)
        for i in 0..<count {
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
            let position = TimeFormat.clock(status?.position ?? 0)
            let duration = status?.duration.map(TimeFormat.clock) ?? "-:--.-"
            right.append(("\(position) / \(duration)", .plain))
            right.append(("   plays \(row.plays)" + (row.maxViews.map { "/\($0)" } ?? ""), .plain))
            right.append(("   ", .plain))
            right.append(indicator(status?.cache))
        }
        let rightWidth = right.reduce(0) { $0 + $1.0.count }
        var x = grid.width - 1 - rightWidth
        for (text, style) in right { x = grid.put(text, x: x, y: y, style: style) }
        var left = " \(snapshot.title)"
        if let index = snapshot.current {
            left += " \(glyphs.dot) \(index + 1)/\(stories.count) \(glyphs.dot) "
            let start = grid.put(left, x: 0, y: y, style: CellStyle(bold: true), maxWidth: grid.width - rightWidth - 2)
            grid.put(
                stories[index].title.truncated(to: grid.width - rightWidth - 2 - start, ellipsis: glyphs.ellipsis),
                x: start, y: y, style: .plain)
        } else {
            grid.put(left, x: 0, y: y, style: CellStyle(bold: true), maxWidth: grid.width - rightWidth - 2)
        }
    }

    /// The cache indicator: its text always says the state; colour only adds to it.
    func indicator(_ cache: CacheOutcome?) -> (String, CellStyle) {
        switch cache {
        case .hit: return (" HIT ", tint(.green, bold: true, reverse: true))
        case .partial: return (" PARTIAL ", tint(.yellow, bold: true, reverse: true))
        case .miss: return (" MISS ", tint(.red, bold: true, reverse: true))
        case .offline: return (" OFFLINE ", tint(.magenta, bold: true, reverse: true))
        case nil: return (" \(glyphs.ellipsis) ", CellStyle(dim: true))
        }
    }

    private mutating func drawKeyHelp(y: Int) {
        let pauseLabel = snapshot.paused ? "resume" : "pause"
        let keys: [(String, String)] = [
            (glyphs.keys.previous, "prev"), (glyphs.keys.next, "next"), ("space", pauseLabel), (", .", "seek"),
            ("r", "replay"), ("c", screen.paneOpen ? "hide cache" : "cache"), ("q", "quit"), ("1-9", "story"),
        ]
        var x = 1
        for (key, label) in keys {
            guard x + key.count + label.count + 1 < grid.width else { break }
            x = grid.put(key, x: x, y: y, style: CellStyle(bold: true))
            x = grid.put(" \(label)   ", x: x, y: y, style: CellStyle(dim: true))
        }
    }
}
