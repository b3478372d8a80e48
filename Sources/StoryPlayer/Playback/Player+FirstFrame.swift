import Foundation
import MediaCache
import MediaFormats

extension Player {
    /// Decodes the story's first frame at `box` pixels ahead of its turn, from bytes a preload cached, on a
    /// thread that yields to playback; nil when video is not decoded. An HLS story's comes from the first segment
    /// of the variant it would start with (the one its preload cached). Bounded: gives up after `timeout` seconds
    /// (bytes that never come, a file that cannot be decoded). The bytes read count as preloaded, not as saved by
    /// the cache.
    func decodeFirstFrame(box: (width: Int, height: Int), timeout: Double = 10) async throws -> VideoFrame? {
        guard configuration.decodesVideo else { return nil }
        let (url, key, partKey, throughput) = (self.url, self.key, self.partKey, self.throughput?.bitsPerSecond)
        let fallbackDuration = fallbackDuration
        let opened = try await loader.preloading(keys: [key]) { () async throws -> (MediaRun, [CacheKey])? in
            let info = try await loader.contentInformation(for: url, key: key)
            guard let length = info.contentLength, length > 0 else { return nil }
            if HLSPlaylistParser.isPlaylist(url: url, contentType: info.contentType) {
                let plan = try await HLSStory.plan(
                    loader: loader, url: url, key: key, length: length, partKey: partKey, throughput: throughput,
                    forPreload: true)
                return (HLSStory.start(plan, loader: loader).run, plan.keys)
            }
            let header = try await StoryHeader.read(
                loader: loader, url: url, key: key, length: length, fallbackDuration: fallbackDuration)
            return (MediaRun(
                MediaParts(url: url, key: key, length: length, payload: header.payload, duration: header.duration)), [])
        }
        guard let (run, parts) = opened else { return nil }
        return try await loader.preloading(keys: [key] + parts) { () async throws -> VideoFrame? in
            let (frames, arrived) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let decoder = MediaDecoder(
                loader: loader, run: run, box: box, soundFormat: nil, pictures: true,
                onFrame: { _ in arrived.yield() }, background: true)
            decoder.start()
            defer { decoder.stop() }
            let frame = await withTaskGroup(of: Bool.self) { group -> VideoFrame? in
                group.addTask {
                    for await _ in frames { return true }
                    return false
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(timeout))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                arrived.finish()
                return first ? decoder.frame : nil
            }
            return frame
        }
    }

    /// Shows `frame` (this story's first, decoded ahead at the current box) until the decoder has its own, so
    /// the story's first frame is on screen the moment it starts.
    public func hold(_ frame: VideoFrame) {
        shared.withLockedValue { $0.held = frame }
        wakeup.signal()
        // On screen at once (the playback loop may be busy opening the file).
        updates?.signal()
    }
}
