import StoryPlayer
import Terminal

/// The cache pane: one row per story (plays, cached %, state) and the session's totals.
struct CachePaneRenderer {
    let screen: StoriesScreen
    let glyphs: Glyphs

    /// The session as the screen shows it.
    var snapshot: SessionSnapshot { screen.snapshot }

    /// Draws the pane into `grid`'s `width`×`height` cells at `x`, `y`.
    func draw(into grid: inout CellGrid, x: Int, y: Int, width: Int, height: Int) {
        let inner = width - 2
        let left = x + 1
        grid.put("Cache", x: left, y: y, style: CellStyle(bold: true))
        let stateWidth = 14
        let playsWidth = 5
        let cachedWidth = 6
        let titleWidth = Swift.max(6, inner - 3 - playsWidth - cachedWidth - stateWidth - 3)
        let header = "#".padded(to: 3) + "Story".padded(to: titleWidth) + " " + "Plays".leftPadded(to: playsWidth)
            + " " + "Cached".leftPadded(to: cachedWidth) + " " + "State"
        grid.put(header, x: left, y: y + 1, style: CellStyle(dim: true), maxWidth: inner)
        let totalsRows = 9
        let listRows = Swift.max(1, height - 2 - totalsRows)
        let stories = snapshot.stories
        let first = Swift.max(0, Swift.min((snapshot.current ?? 0) - listRows / 2, stories.count - listRows))
        var rowY = y + 2
        for i in first..<Swift.min(stories.count, first + listRows) {
            let row = stories[i]
            let isCurrent = i == snapshot.current
            let marker = isCurrent ? String(glyphs.current) : "\(i + 1)"
            let plays = "\(row.plays)" + (row.maxViews.map { "/\($0)" } ?? "")
            let cached = row.isLocal ? "-" : row.cachedFraction.map { "\(Int(($0 * 100).rounded(.down)))%" } ?? "-"
            let base = CellStyle(bold: isCurrent, dim: !row.eligible && !isCurrent)
            var column = grid.put(marker.padded(to: 3), x: left, y: rowY, style: base)
            column = grid.put(row.title.padded(to: titleWidth, ellipsis: glyphs.ellipsis) + " ", x: column, y: rowY, style: base)
            column = grid.put(plays.leftPadded(to: playsWidth) + " ", x: column, y: rowY, style: base)
            column = grid.put(cached.leftPadded(to: cachedWidth) + " ", x: column, y: rowY, style: base)
            let (state, style) = stateLabel(row, isCurrent: isCurrent)
            grid.put(state, x: column, y: rowY, style: style, maxWidth: left + inner - column)
            rowY += 1
        }
        if first + listRows < stories.count {
            grid.put(
                "\(glyphs.ellipsis) \(stories.count - first - listRows) more", x: left, y: rowY - 1,
                style: CellStyle(dim: true), maxWidth: inner)
        }
        drawTotals(into: &grid, x: left, y: y + height - totalsRows + 1, width: inner)
    }

    /// A story's cache state: FAILED when it could not play in this run, its preload while one is queued or
    /// running (not for the playing story, whose bytes the player now fetches), else HIT / PART / MISS by bytes
    /// cached.
    func stateLabel(_ row: StoryRow, isCurrent: Bool) -> (String, CellStyle) {
        if row.failed { return ("FAILED", screen.tint(.red, bold: true)) }
        // Read from disk as it plays: never cached, nothing to preload.
        if row.isLocal { return ("local", screen.tint(.blue)) }
        let complete = (row.cachedFraction ?? 0) >= 1
        if let preload = row.preload, !complete, !isCurrent {
            let percent = preload.fraction.map { " \(Int(($0 * 100).rounded(.down)))%" } ?? ""
            switch preload.phase {
            case .queued: return ("QUEUED", CellStyle(dim: true))
            case .preloading: return ("PRELOADING" + percent, screen.tint(.cyan, bold: true))
            case .paused: return ("HELD" + percent, screen.tint(.cyan))
            case .preloaded: return ("PRELOADED", screen.tint(.cyan, bold: true))
            case .failed: return ("FAILED", screen.tint(.red))
            }
        }
        if complete { return ("HIT", screen.tint(.green, bold: true)) }
        if row.cachedBytes > 0 { return ("PART", screen.tint(.yellow)) }
        return ("MISS", screen.tint(.red))
    }

    /// Where sound goes, or why there is none, in one line.
    private var soundDescription: String {
        let muted = snapshot.muted ? ", muted (m)" : ""
        switch snapshot.sound {
        case .ready(let device): return device + muted
        case .opening where snapshot.muted: return "muted (m opens the device)"
        case .opening: return "opening the device\(glyphs.ellipsis)"
        case .unavailable(let reason): return "off: " + reason
        case nil: return "off" + muted
        }
    }

    /// The session's totals: hit ratio, bytes, disk, network, preloading, sound and pictures.
    private func drawTotals(into grid: inout CellGrid, x: Int, y: Int, width: Int) {
        let totals = snapshot.totals
        let ratio = totals.hitRatio.map { "\(Int(($0 * 100).rounded()))%" } ?? "-"
        let rows: [(String, String)] = [
            ("Hit ratio", "\(ratio) saved/(saved+origin)"),
            ("Bytes saved", ByteFormat.string(totals.cacheBytes)),
            ("Origin bytes", ByteFormat.string(totals.originBytes)),
            ("Disk", "\(ByteFormat.string(totals.diskUsed)) / \(ByteFormat.string(totals.diskLimit))"),
            ("Network", ByteFormat.rate(totals.networkBytesPerSecond)),
            ("Preloading", snapshot.preloading ? "on" : "off (--no-preload)"),
            ("Sound", soundDescription),
            ("Picture", PictureRenderer.description(of: screen.output, times: glyphs.times)
                + (screen.imagesForVideo || !screen.output.picture.isPixels ? "" : "; video as cells")),
        ]
        for (i, (label, value)) in rows.enumerated() {
            let column = grid.put(label.padded(to: 14), x: x, y: y + i, style: CellStyle(bold: true), maxWidth: width)
            grid.put(value.shortened(to: x + width - column, ellipsis: glyphs.ellipsis), x: column, y: y + i)
        }
    }
}
