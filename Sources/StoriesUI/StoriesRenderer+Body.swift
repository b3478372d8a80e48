import StoryPlayer
import Terminal

extension StoriesRenderer {
    /// The story area: the player's state centred, then buffer health, the cached-bytes map, startup and stalls.
    mutating func drawBody(x: Int, y: Int, width: Int, height: Int) {
        let infoRows = 3
        let viewportHeight = Self.viewportHeight(bodyHeight: height)
        if snapshot.current != nil, let frame = snapshot.frame {
            drawPicture(frame, x: x, y: y, width: width, height: viewportHeight)
        } else {
            drawViewportText(x: x, y: y, width: width, height: viewportHeight)
        }
        guard snapshot.current != nil else { return }
        let infoTop = y + height - infoRows
        if let index = snapshot.current, snapshot.stories[index].isLocal {
            drawLocalSource(x: x + 1, y: infoTop, width: width - 2)
        } else {
            drawBuffer(x: x + 1, y: infoTop, width: width - 2)
            drawCacheMap(x: x + 1, y: infoTop + 1, width: width - 2)
        }
        drawStartup(x: x + 1, y: infoTop + 2, width: width - 2)
    }

    /// Rows of the story area above the buffer, cache map and startup rows.
    static func viewportHeight(bodyHeight: Int) -> Int { Swift.max(3, bodyHeight - 3 - 1) }

    /// The picture with a caption row under it (title and state); a stall or pause also says so on the picture.
    private mutating func drawPicture(_ frame: VideoFrame, x: Int, y: Int, width: Int, height: Int) {
        let pictureHeight = height - 1
        let clear = Self.captionRows(screen)
        // A video that plays is sent for speed; paused, stalled or ended, the frame is drawn again at its finest.
        let moving = screen.showsMovingPicture && screen.snapshot.status?.state == .playing
        PictureRenderer.draw(
            frame, into: &grid, x: x, y: y, width: width, height: pictureHeight - clear, output: screen.effectiveOutput,
            images: !screen.helpOpen, moving: moving)
        if clear > 0 {
            drawCaption(centre: x + width / 2, bottom: y + pictureHeight - 1, top: y + pictureHeight - clear, width: width)
        } else {
            // Over the lower part of the picture, one row above its edge, no wider than it.
            let size = PictureRenderer.size(
                of: frame, width: width, height: pictureHeight, cell: screen.effectiveOutput.cell)
            let top = y + (pictureHeight - size.height) / 2
            let bottom = top + size.height - (size.height >= 8 ? 2 : 1)
            drawCaption(centre: x + width / 2, bottom: bottom, top: top, width: Swift.max(size.width, Swift.min(width, 24)))
        }
        let lines = viewportLines()
        guard let title = lines.first else { return }
        let state = lines.dropFirst(2).map(\.0).joined(separator: " \(glyphs.dot) ")
        let stateStyle = lines.dropFirst(2).first?.1 ?? .plain
        let caption = state.isEmpty ? title.0 : "\(title.0) \(glyphs.dot) \(state)"
        let shown = caption.shortened(to: width - 2, ellipsis: glyphs.ellipsis)
        let start = x + Swift.max(1, (width - shown.count) / 2)
        let titleShown = String(shown.prefix(title.0.count))
        let column = grid.put(titleShown, x: start, y: y + pictureHeight, style: title.1)
        grid.put(String(shown.dropFirst(titleShown.count)), x: column, y: y + pictureHeight, style: stateStyle)
        // Over an image the label would be hidden; the caption says the same.
        if grid.image == nil, let status = snapshot.status, status.state == .stalled || status.state == .paused {
            let label = " \(status.state == .stalled ? "Buffering\(glyphs.ellipsis)" : "\(glyphs.pause) Paused") "
            grid.put(
                label, x: x + Swift.max(0, (width - label.count) / 2), y: y + pictureHeight / 2,
                style: CellStyle(bold: true, reverse: true))
        }
    }

    /// The story's title and state as centred text (no picture: `--no-video`, before the first frame, failures).
    private mutating func drawViewportText(x: Int, y: Int, width: Int, height viewportHeight: Int) {
        var lines = viewportLines()
        if let status = snapshot.status, status.state == .failed, let last = lines.popLast() {
            // The reason in full, over as many lines as it takes (a failure is worth reading).
            lines += last.0.wrapped(to: Swift.max(1, width - 2)).map { ($0, last.1) }
        }
        let top = y + Swift.max(0, (viewportHeight - lines.count) / 2)
        for (i, (text, style)) in lines.enumerated() where top + i < y + viewportHeight {
            let shown = text.shortened(to: width - 2, ellipsis: glyphs.ellipsis)
            grid.put(shown, x: x + Swift.max(1, (width - shown.count) / 2), y: top + i, style: style)
        }
        // Without a picture (`--no-video`) the words sit under the title and state.
        let below = top + lines.count + 1
        drawCaption(
            centre: x + width / 2, bottom: Swift.min(y + viewportHeight - 1, below + Self.captionLines - 1), top: below,
            width: Swift.min(width, 72))
    }

    /// The centred lines: the story's title and what the player is doing, or the end-of-playlist message.
    private func viewportLines() -> [(String, CellStyle)] {
        guard let index = snapshot.current else {
            if snapshot.finished {
                let anyEligible = snapshot.stories.contains(where: \.eligible)
                if !anyEligible {
                    return [
                        ("Every story reached its view limit", CellStyle(bold: true)), ("", .plain),
                        ("run with --all to watch them again \(glyphs.dot) q quits", CellStyle(dim: true)),
                    ]
                }
                let failed = snapshot.stories.filter(\.failed).map(\.title)
                var lines: [(String, CellStyle)] = [
                    (failed.isEmpty ? "All stories watched" : "End of the stories", CellStyle(bold: true)), ("", .plain),
                ]
                if !failed.isEmpty {
                    let names = failed.joined(separator: ", ")
                    lines.append(("\(failed.count) could not play: \(names)", screen.tint(.red, bold: true)))
                    lines.append(("", .plain))
                }
                lines.append(
                    ("\(glyphs.keys.previous) back \(glyphs.dot) r start over \(glyphs.dot) q quit", CellStyle(dim: true)))
                return lines
            }
            return [("Starting\(glyphs.ellipsis)", CellStyle(dim: true))]
        }
        let row = snapshot.stories[index]
        var lines: [(String, CellStyle)] = [(row.title, CellStyle(bold: true)), ("", .plain)]
        guard let status = snapshot.status else {
            lines.append(("Loading\(glyphs.ellipsis)", screen.tint(.yellow)))
            return lines
        }
        switch status.state {
        case .loading:
            lines.append(("Loading\(glyphs.ellipsis)", screen.tint(.yellow)))
        case .playing:
            lines.append(("\(glyphs.play) Playing", screen.tint(.green)))
        case .paused:
            lines.append(("\(glyphs.pause) Paused \(glyphs.dot) space resumes", CellStyle(bold: true, reverse: true)))
        case .stalled:
            lines.append(("Buffering\(glyphs.ellipsis)", screen.tint(.yellow, bold: true)))
        case .finished:
            lines.append(("Finished", CellStyle(dim: true)))
        case .failed:
            lines.append(("Cannot play: \(status.error ?? "unknown error")", screen.tint(.red, bold: true)))
        }
        if snapshot.paused, status.state == .loading || status.state == .stalled {
            lines.append(("\(glyphs.pause) paused", CellStyle(bold: true)))
        }
        return lines
    }

    /// Seconds buffered ahead of the playhead, as a bar full at `bufferScale` seconds (a little over the player's
    /// read-ahead); the text says the scale.
    static let bufferScale = 2.5

    private mutating func drawBuffer(x: Int, y: Int, width: Int) {
        let status = snapshot.status
        let buffered = status?.bufferedSeconds ?? 0
        let suffix: String
        switch status?.state {
        case .failed: suffix = "stopped"
        case .loading where buffered == 0: suffix = "waiting"
        default:
            // The bar's scale where it fits; a long story's buffer ("592.7 s") says just how far ahead, whole.
            let ahead = "\(TimeFormat.seconds(buffered)) of \(TimeFormat.seconds(Self.bufferScale)) ahead"
            suffix = ahead.count < 22 ? ahead : "\(TimeFormat.seconds(buffered)) ahead"
        }
        let barWidth = Self.barWidth(width, suffix: 22)
        let filled = Int((Double(barWidth) * Swift.min(1, buffered / Self.bufferScale)).rounded())
        var column = grid.put("Buffer".padded(to: 9), x: x, y: y, style: CellStyle(bold: true))
        let healthy = buffered >= 1 || status?.state == .finished
        grid.fill(glyphs.full, x: column, y: y, count: filled, style: screen.tint(healthy ? .green : .yellow))
        grid.fill(glyphs.none, x: column + filled, y: y, count: barWidth - filled, style: CellStyle(dim: true))
        column += barWidth
        grid.put((" " + suffix).shortened(to: x + width - column, ellipsis: glyphs.ellipsis), x: column, y: y)
    }

    /// A file on this machine: what is true of it, in place of a buffer bar (nothing waits for a link) and a cache
    /// map (nothing is copied into the cache).
    private mutating func drawLocalSource(x: Int, y: Int, width: Int) {
        // The longest wording that fits whole: never a word cut.
        func fitting(_ wordings: [String], from column: Int) -> String {
            wordings.first { $0.count <= x + width - column } ?? ""
        }
        var column = grid.put("Source".padded(to: 9), x: x, y: y, style: CellStyle(bold: true))
        let length = snapshot.current.flatMap { snapshot.stories[$0].contentLength }
        let size = length.map { ", \(ByteFormat.string($0))" } ?? ""
        grid.put(fitting([
            "a file on this machine\(size), read from disk as it plays", "a file on this machine, read from disk",
            "read from disk",
        ], from: column), x: column, y: y)
        column = grid.put("Cached".padded(to: 9), x: x, y: y + 1, style: CellStyle(bold: true))
        grid.put(fitting([
            "nothing: a local file is not copied into the cache", "nothing (a local file is not copied)", "nothing",
        ], from: column), x: column, y: y + 1, style: CellStyle(dim: true))
    }

    /// Which byte ranges of the current video are cached: one cell per slice of the file, full, partly or not.
    private mutating func drawCacheMap(x: Int, y: Int, width: Int) {
        var column = grid.put("Cached".padded(to: 9), x: x, y: y, style: CellStyle(bold: true))
        guard let index = snapshot.current, let length = snapshot.stories[index].contentLength, length > 0 else {
            let text = snapshot.status?.state == .failed
                ? "nothing cached" : "waiting for the first bytes\(glyphs.ellipsis)"
            grid.put(text, x: column, y: y, style: CellStyle(dim: true), maxWidth: x + width - column)
            return
        }
        let barWidth = Self.barWidth(width, suffix: 22)
        let ranges = snapshot.cachedRanges
        for cell in 0..<barWidth {
            let start = length * Int64(cell) / Int64(barWidth)
            let end = Swift.max(start + 1, length * Int64(cell + 1) / Int64(barWidth))
            let present = ranges.present(in: start..<end).reduce(Int64(0)) { $0 + Int64($1.count) }
            if present >= end - start {
                grid[column + cell, y] = Cell(glyphs.full, screen.tint(.cyan))
            } else if present > 0 {
                grid[column + cell, y] = Cell(glyphs.partial, screen.tint(.cyan))
            } else {
                grid[column + cell, y] = Cell(glyphs.none, CellStyle(dim: true))
            }
        }
        column += barWidth
        let cached = ranges.total
        let percent = Int((Double(cached) * 100 / Double(length)).rounded(.down))
        grid.put(" \(percent)% of \(ByteFormat.string(length))", x: column, y: y, maxWidth: x + width - column)
    }

    /// A bar's cells in a row `width` wide after its 9-column label, leaving `suffix` columns for its text: the
    /// same for both bars, so they line up, and as wide as the screen allows.
    static func barWidth(_ width: Int, suffix: Int) -> Int { Swift.max(4, width - 9 - suffix) }

    private mutating func drawStartup(x: Int, y: Int, width: Int) {
        let status = snapshot.status
        var column = grid.put("Startup".padded(to: 9), x: x, y: y, style: CellStyle(bold: true))
        let startup = status?.startupMs.map { "\($0) ms" } ?? "\(glyphs.ellipsis)"
        column = grid.put(startup.padded(to: 12), x: column, y: y)
        column = grid.put("Stalls ", x: column, y: y, style: CellStyle(bold: true))
        let stalls = status?.stalls ?? 0
        grid.put(
            "\(stalls) (\(TimeFormat.seconds(status?.stallSeconds ?? 0)))", x: column, y: y,
            style: stalls > 0 ? screen.tint(.yellow) : .plain, maxWidth: x + width - column)
    }
}
