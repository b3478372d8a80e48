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
    /// The least time between two reads of the store figures: bytes arrive in many small writes, and one read
    /// covers them all.
    static let figuresGap: Duration = .milliseconds(50)

    /// Reads the store figures, then again each time the cache changes (here or in another process) or another
    /// story starts, until cancelled. Nothing is read while nothing changes.
    func refreshFigures() async {
        let loader = session.loader
        while !Task.isCancelled {
            let (cacheSeen, movesSeen) = (loader.cacheVersion, moves.version)
            let figures = readFigures()
            state.withLockedValue { $0.figures = figures }
            let read = ContinuousClock.now
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await loader.waitForChange(after: cacheSeen) }
                group.addTask { await self.moves.wait(after: movesSeen) }
                await group.next()
                group.cancelAll()
            }
            try? await Task.sleep(until: read + Self.figuresGap, clock: .continuous)
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
