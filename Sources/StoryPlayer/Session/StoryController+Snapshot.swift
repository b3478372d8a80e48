import Foundation
import MediaCache

extension StoryController {
    /// The screen's state now. Cheap and synchronous, for a UI thread: it reads only what the player and the
    /// preloader publish, never the store. What the screen shows of the store (cached bytes, lengths, the cached
    /// map, disk used) comes from `StoreFigures`, read by a task of its own whenever the cache changes or another
    /// story starts (started by the first snapshot, so headless runs never pay for it).
    public func snapshot() -> SessionSnapshot {
        let (navigator, player, paused, failing, figures, muted, begin) = state.withLockedValue { s in
            // The playing story's parts, once its player has read them, stay known for its row.
            if let index = s.navigator.index, let playing = s.player?.parts { s.parts[index] = playing }
            let begin = s.figuresTask == nil && !s.stopped
            if begin { s.figuresTask = Task {} }
            return (s.navigator, s.player, s.paused, s.failing, s.figures, s.muted, begin)
        }
        if begin {
            let task = Task.detached { [self] in await refreshFigures() }
            state.withLockedValue { s in
                if s.stopped { task.cancel() } else { s.figuresTask = task }
            }
        }
        let preloads = session.preload?.preloader.progress ?? [:]
        var rows: [StoryRow] = []
        let now = Date()
        for (i, story) in session.playlist.stories.enumerated() {
            let known = figures?.rows[i]
            rows.append(StoryRow(
                id: story.id, title: story.title, plays: navigator.plays(i), maxViews: story.maxViews,
                eligible: navigator.isEligible(i), contentLength: known?.length,
                cachedBytes: known?.cached ?? 0, preload: session.preload?.progress(of: keys[i], in: preloads), failed: failing.contains(i),
                author: story.author, isLocal: urls[i].isFileURL,
                age: story.published.map { AgeText.ago($0, now: now) }))
        }
        let metrics = session.loader.metrics
        let totals = SessionTotals(
            cacheBytes: metrics.cacheBytes, originBytes: metrics.originBytesReceived, diskUsed: figures?.diskUsed ?? 0,
            diskLimit: session.loader.cacheByteLimit, networkBytesPerSecond: networkSpeed())
        var snapshot = SessionSnapshot(
            title: session.playlist.title, stories: rows, current: navigator.index, finished: navigator.isFinished,
            paused: paused, status: navigator.index == nil ? nil : player?.status,
            cachedRanges: figures.flatMap { $0.current == navigator.index ? $0.currentRanges : nil } ?? ByteRangeSet(),
            totals: totals, preloading: session.preload != nil,
            frame: navigator.index == nil ? nil : player?.frame, muted: muted, sound: session.sound?.availability)
        if navigator.index != nil, let player {
            snapshot.hasCaptions = player.captions != nil
            snapshot.caption = player.captionShown
        }
        return snapshot
    }

    /// Bytes per second received from the origin over about the last two seconds of wall time.
    func networkSpeed() -> Double {
        let elapsed = ContinuousClock.now - started
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let bytes = session.loader.metrics.originBytesReceived
        return state.withLockedValue { s in
            s.samples.append((now, bytes))
            s.samples.removeAll { now - $0.time > 2 }
            guard let first = s.samples.first, now - first.time > 0.2 else { return 0 }
            return Double(bytes - first.bytes) / (now - first.time)
        }
    }
}
