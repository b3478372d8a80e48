import Foundation
import MediaCache

/// What the player and navigator report, one JSON line each in headless mode.
public enum PlayerEvent: Sendable, Equatable {
    /// A story begins loading: whose it is (nil when the playlist names no authors), whether it was seen before,
    /// where it came from (`file`, `url`, `feed`, `page`) and when it was posted (feed items).
    case storyStart(
        index: Int, id: String, title: String, url: String, author: String?, seen: Bool, source: String,
        published: Date?)
    /// A story was skipped (it reached maxViews).
    case skipped(index: Int, id: String, plays: Int, maxViews: Int)
    /// The first frame could be shown.
    case firstFrame(id: String, startupMs: Int, cache: CacheOutcome, duration: Double)
    /// Playback ran out of data.
    case stall(id: String, positionMs: Int)
    /// Playback resumed after a stall.
    case stallEnd(id: String, durationMs: Int)
    /// A story played to its end (or was left); `frames` are zero when video was not decoded.
    case storyEnd(id: String, playCount: Int, stalls: Int, stallMs: Int, completed: Bool, frames: FrameCounts)
    /// An HLS story moved to another variant at a segment boundary (the one starting at `positionMs`).
    case variant(id: String, positionMs: Int, bandwidth: Int, resolution: String?)
    /// A story could not play.
    case failed(id: String, message: String)
    /// Something the viewer should know about a story that still plays (its file was cut short).
    case note(id: String, message: String)
    /// Every eligible story was shown: what the run did.
    case playlistEnd(PlaylistSummary)
    /// A new picture is on screen: the frame at `timeMs` in the story (only when frames are reported).
    case frame(id: String, timeMs: Int)
    /// Where the stories' sound goes (`output`, the device's name), or why there is none (`reason`).
    case sound(output: String?, reason: String?)
    /// A followed source (or a feed or page named on the command line) was read before the run.
    case refresh(RefreshReport)
    /// A caption showed: its text, from `start` to `end` in story seconds.
    case caption(id: String, shown: CaptionShown)

    /// The event as a JSON object with an `event` field.
    public var json: [String: Any] {
        switch self {
        case .storyStart(let index, let id, let title, let url, let author, let seen, let source, let published):
            var json: [String: Any] = [
                "event": "story_start", "index": index, "id": id, "title": title, "url": url, "seen": seen,
                "source": source,
            ]
            if let author { json["author"] = author }
            if let published { json["published"] = published.formatted(.iso8601) }
            return json
        case .skipped(let index, let id, let plays, let maxViews):
            return ["event": "skipped", "index": index, "id": id, "plays": plays, "maxViews": maxViews, "reason": "maxViews"]
        case .firstFrame(let id, let startupMs, let cache, let duration):
            return ["event": "first_frame", "id": id, "startupMs": startupMs, "cache": cache.rawValue, "duration": duration]
        case .stall(let id, let positionMs):
            return ["event": "stall", "id": id, "positionMs": positionMs]
        case .stallEnd(let id, let durationMs):
            return ["event": "stall_end", "id": id, "durationMs": durationMs]
        case .storyEnd(let id, let playCount, let stalls, let stallMs, let completed, let frames):
            return ["event": "story_end", "id": id, "playCount": playCount, "stalls": stalls, "stallMs": stallMs,
                    "completed": completed, "framesShown": frames.shown, "framesDropped": frames.dropped,
                    "framesSkipped": frames.skipped]
        case .variant(let id, let positionMs, let bandwidth, let resolution):
            var json: [String: Any] = ["event": "variant", "id": id, "positionMs": positionMs, "bandwidth": bandwidth]
            if let resolution { json["resolution"] = resolution }
            return json
        case .failed(let id, let message):
            return ["event": "error", "id": id, "message": message]
        case .note(let id, let message):
            return ["event": "note", "id": id, "message": message]
        case .frame(let id, let timeMs):
            return ["event": "frame", "id": id, "timeMs": timeMs]
        case .refresh(let report):
            var json: [String: Any] = [
                "event": "refresh", "url": report.url.absoluteString, "author": report.author,
                "status": report.status.rawValue, "items": report.items, "stories": report.stories,
                "ms": report.milliseconds,
            ]
            if let message = report.message { json["message"] = message }
            return json
        case .caption(let id, let shown):
            var json: [String: Any] = [
                "event": "caption", "id": id, "text": shown.text, "start": (shown.start * 1000).rounded() / 1000,
                "end": (shown.end * 1000).rounded() / 1000, "source": shown.origin.rawValue,
            ]
            if let language = shown.language { json["lang"] = language }
            return json
        case .sound(let output, let reason):
            var json: [String: Any] = ["event": "sound"]
            if let output { json["output"] = output }
            if let reason { json["reason"] = reason }
            return json
        case .playlistEnd(let summary):
            return [
                "event": "playlist_end", "played": summary.finished, "skipped": summary.skipped, "failed": summary.failed,
                "watched": summary.watched, "stalls": summary.stalls, "savedBytes": summary.cacheBytes,
                "originBytes": summary.originBytes, "soundUnderruns": summary.soundUnderruns,
            ]
        }
    }

    /// One line of JSON.
    public var jsonLine: String { jsonLine(json) }

    /// One line of JSON with the time it happened: `t`, seconds since the run started, and `monotonic`, the same
    /// moment on the system's monotonic clock (CLOCK_MONOTONIC), so outside tools can line events up with what they
    /// record.
    public func jsonLine(t: Double, monotonic: Double) -> String {
        var json = json
        json["t"] = (t * 1e6).rounded() / 1e6
        json["monotonic"] = (monotonic * 1e6).rounded() / 1e6
        return jsonLine(json)
    }

    private func jsonLine(_ json: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
