import StoryPlayer
import Terminal

/// The authors' tray in the rule under the header, as a phone shows its row of faces: each author's name with a
/// filled mark while they have unseen stories and a ring once all were seen, the current one highlighted. Where the
/// row is too narrow for all, it shows those around the current author. Nothing when the playlist names fewer
/// than two authors.
struct AuthorTrayRenderer {
    let snapshot: SessionSnapshot
    let glyphs: Glyphs

    /// Draws the tray into row `y` of `grid`.
    func draw(into grid: inout CellGrid, y: Int) {
        let entries = Self.trayEntries(snapshot, glyphs: glyphs)
        guard entries.count > 1 else { return }
        let current = snapshot.currentAuthor.flatMap { author in snapshot.authors.firstIndex(of: author) } ?? 0
        let room = grid.width - 4
        let widths = entries.map { $0.text.count + 2 }
        // The widest window of whole entries around the current one.
        var first = current
        var last = current
        var used = widths[current]
        while true {
            let canRight = last + 1 < entries.count && used + widths[last + 1] <= room
            let canLeft = first > 0 && used + widths[first - 1] <= room
            if canRight && (!canLeft || last - current <= current - first) {
                last += 1
                used += widths[last]
            } else if canLeft {
                first -= 1
                used += widths[first]
            } else {
                break
            }
        }
        var x = 1
        if first > 0 { x = grid.put(glyphs.ellipsis, x: x, y: y, style: CellStyle(dim: true)) }
        for i in first...last {
            x = grid.put(" ", x: x, y: y, style: .plain)
            let style = i == current ? CellStyle(bold: true, reverse: true) : CellStyle(dim: !entries[i].unseen)
            x = grid.put(entries[i].text.shortened(to: room, ellipsis: glyphs.ellipsis), x: x, y: y, style: style)
            x = grid.put(" ", x: x, y: y, style: .plain)
        }
        if last + 1 < entries.count { grid.put(glyphs.ellipsis, x: x, y: y, style: CellStyle(dim: true)) }
    }

    /// Each author's tray text (`● Ana`) and whether they have stories not seen yet.
    static func trayEntries(_ snapshot: SessionSnapshot, glyphs: Glyphs) -> [(text: String, unseen: Bool)] {
        snapshot.authors.map { author in
            let unseen = author.stories.contains { snapshot.stories[$0].eligible && !snapshot.stories[$0].seen }
            return ("\(unseen ? glyphs.unseen : glyphs.allSeen) \(author.name ?? snapshot.title)", unseen)
        }
    }
}
