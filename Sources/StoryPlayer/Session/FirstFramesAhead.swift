import MediaCache
import NIOConcurrencyHelpers

/// First frames decoded ahead for the stories → and auto-advance go to next, held until their story starts.
/// One decode at a time, at a lower priority than playback; frames decoded at another picture box are dropped.
public final class FirstFramesAhead: Sendable {
    struct Held {
        var key: CacheKey
        var box: [Int]
        var frame: VideoFrame?
    }

    struct State {
        /// By story index: the frame (nil while it is decoded) and the box it is decoded at.
        var held: [Int: Held] = [:]
        var task: Task<Void, Never>?
        var decoding: Int?
        /// Stories whose first frame could not be decoded ahead (not tried again this session).
        var failed: Set<CacheKey> = []
    }

    let state = NIOLockedValueBox(State())

    /// Nothing held.
    public init() {}

    /// The stories whose first frame is held now.
    public var heldStories: [Int] {
        state.withLockedValue { s in s.held.filter { $0.value.frame != nil }.map(\.key).sorted() }
    }

    /// Keeps (or starts decoding) the first frames of `wanted` (story index and key) at `box`, and drops every
    /// other; `player` makes a player for a story to decode with.
    func want(
        _ wanted: [(index: Int, key: CacheKey)], box: (width: Int, height: Int), player: @escaping @Sendable (Int) -> Player
    ) {
        let boxKey = [box.width, box.height]
        let start = state.withLockedValue { s -> (Int, CacheKey)? in
            s.held = s.held.filter { entry in
                wanted.contains { $0.index == entry.key && $0.key == entry.value.key } && entry.value.box == boxKey
            }
            if let decoding = s.decoding, s.held[decoding] == nil {
                s.task?.cancel()
                s.decoding = nil
            }
            guard s.decoding == nil,
                let next = wanted.first(where: { s.held[$0.index] == nil && !s.failed.contains($0.key) })
            else { return nil }
            s.held[next.index] = Held(key: next.key, box: boxKey, frame: nil)
            s.decoding = next.index
            return (next.index, next.key)
        }
        guard let (index, key) = start else { return }
        let task = Task.detached(priority: .background) { [self] in
            let frame = try? await player(index).decodeFirstFrame(box: box)
            state.withLockedValue { s in
                if s.decoding == index { s.decoding = nil }
                guard s.held[index]?.key == key, s.held[index]?.box == boxKey else { return }
                // A story whose frame cannot be decoded ahead shows it when it plays, as before.
                if let frame {
                    s.held[index]?.frame = frame
                } else {
                    s.held[index] = nil
                    if !Task.isCancelled { s.failed.insert(key) }
                }
            }
        }
        state.withLockedValue { s in
            if s.decoding == index { s.task = task }
        }
    }

    /// The first frame of story `index` at `box`, taken (held once).
    func take(_ index: Int, key: CacheKey, box: (width: Int, height: Int)?) -> VideoFrame? {
        state.withLockedValue { s in
            guard let held = s.held.removeValue(forKey: index), held.key == key, let box, held.box == [box.width, box.height]
            else { return nil }
            return held.frame
        }
    }

    /// Stops decoding and forgets every frame.
    func stop() async {
        let task = state.withLockedValue { s -> Task<Void, Never>? in
            defer {
                s.held = [:]
                s.task = nil
                s.decoding = nil
            }
            return s.task
        }
        task?.cancel()
        await task?.value
    }
}
