import Foundation
import MediaCache

/// What the stories screen shows of the store, read off the UI thread.
struct StoreFigures: Sendable {
    /// The story playing when they were read.
    var current: Int?
    /// Each story's length (once known) and bytes cached, in playlist order.
    var rows: [(length: Int64?, cached: Int64)] = []
    /// The current story's cached byte ranges.
    var currentRanges = ByteRangeSet()
    /// Bytes on disk.
    var diskUsed: Int64 = 0
}

extension StoryController {
    /// How often the screen's store figures are read again.
    static let figuresInterval: Duration = .milliseconds(100)

    /// Reads the store figures until cancelled.
    func refreshFigures() async {
        while !Task.isCancelled {
            let figures = readFigures()
            state.withLockedValue { $0.figures = figures }
            try? await Task.sleep(for: Self.figuresInterval)
        }
    }

    /// Every story's length and cached bytes, the current story's cached map and the disk used, from the store.
    private func readFigures() -> StoreFigures {
        let (current, parts) = state.withLockedValue { ($0.navigator.index, $0.parts) }
        let loader = session.loader
        var figures = StoreFigures(current: current)
        for i in session.playlist.stories.indices {
            let length: Int64?
            let ranges: ByteRangeSet
            if let run = parts[i] {
                // Over every resource the story plays (an HLS story's segments), as one run of bytes.
                (length, ranges) = (run.length, run.cachedRanges(in: loader))
            } else {
                let info = loader.cached(keys[i])
                (length, ranges) = (info?.metadata.contentLength, info?.ranges ?? ByteRangeSet())
            }
            if i == current { figures.currentRanges = ranges }
            figures.rows.append((length, ranges.total))
        }
        figures.diskUsed = loader.cacheBytesStored
        return figures
    }
}
