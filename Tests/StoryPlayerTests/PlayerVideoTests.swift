import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

/// The player with the picture on, on wall-clock time (the decoder's work is real), sped up to keep tests short.
@Suite(.serialized, .decodesOnWallClock) struct PlayerVideoTests {
    typealias Rig = VideoDecoderTests.Rig

    static func configuration() -> PlayerConfiguration {
        var configuration = PlayerConfiguration()
        configuration.decodesVideo = true
        configuration.pictureWidth = 64
        configuration.pictureHeight = 36
        // Wall-clock tests leave the 30 s wait limit out: on a loaded machine (CI runs the suite beside four busy
        // loops) reading a header can take that long. PlayerWaitingTests test the limit on virtual time.
        configuration.waitLimit = nil
        return configuration
    }

    @Test func theFirstFrameIsDecodedBeforeTheStoryCountsAsStarted() async throws {
        let rig = try await Rig()
        let events = EventRecorder()
        let url = rig.origin.url("bars.mp4")
        let player = Player(
            loader: rig.loader, url: url, storyID: "bars", clock: RealPlaybackClock(speed: 4),
            configuration: Self.configuration(), onEvent: events.handler)
        let status = await player.run()
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(status.startupMs != nil)
        #expect(status.frames.shown >= 1)
        // No sound output: said from the first look on (the wait for the file's length looks at the clock first).
        #expect(status.sound == .off)
        let frame = try #require(player.frame)
        #expect(frame.width == 64 && frame.height == 36)
        #expect(events.all.contains { if case .firstFrame = $0 { return true } else { return false } })
        await rig.close()
    }

    @Test func contentThatCannotBeDecodedFailsTheStoryWithAReason() async throws {
        let rig = try await Rig()
        rig.origin.set(OriginResource(bytes: Array(repeating: 0x42, count: 20_000)), at: "/junk.mp4")
        let player = Player(
            loader: rig.loader, url: rig.origin.url("junk.mp4"), storyID: "junk", clock: RealPlaybackClock(speed: 4),
            configuration: Self.configuration(), fallbackDuration: 3)
        let status = await player.run()
        #expect(status.state == .failed)
        #expect(status.error?.hasPrefix("cannot decode the video: ") == true, "\(status.error ?? "")")
        #expect(status.startupMs == nil)
        await rig.close()
    }

    @Test func seekingMovesThePlayheadAndThePicture() async throws {
        let rig = try await Rig()
        let player = Player(
            loader: rig.loader, url: rig.origin.url("life.mp4"), storyID: "life", clock: RealPlaybackClock(speed: 1),
            configuration: Self.configuration())
        let run = Task { await player.run() }
        #expect(await eventually { player.status.state == .playing })
        player.setPaused(true)
        #expect(await eventually { player.status.state == .paused })
        let before = player.status.position
        player.seek(by: 2)
        #expect(await eventually { (player.frame?.time ?? 0) >= before + 1.95 })
        #expect(abs(player.status.position - (before + 2)) < 0.01)
        // Paused, the picture holds still.
        let still = player.frame
        try await Task.sleep(for: .milliseconds(200))
        #expect(player.frame == still)
        player.seek(by: -1)
        #expect(await eventually { abs((player.frame?.time ?? 0) - (before + 1)) < 0.05 })
        run.cancel()
        _ = await run.value
        await rig.close()
    }

    @Test func thePictureCostsTheOriginNoExtraByte() async throws {
        // The demo playlist played headless with and without the picture, each on a fresh cache: the same bytes
        // leave the origin, each byte once (the decoder reads what the player's reads already fetched). Without
        // preloading, whose requests are cancelled when playback needs the link, so only the picture differs.
        let demo = VideoDecoderTests.videos.deletingLastPathComponent().appendingPathComponent("playlist.json")
        let list = try PlaylistParser.load(path: demo.path)
        var sizes = 0
        for story in list.stories {
            // (The HLS story's playlists and segments are counted file by file below.)
            guard case .local(_, let file) = story.source, !file.path.contains("/videos/hls/") else { continue }
            sizes += try #require(FileManager.default.contents(atPath: file.path)).count
        }
        // The HLS story plays the variants the measured link allows (it may switch on a busy machine): of each
        // playlist and segment it asked for, no byte twice.
        func hlsBytes(_ requests: [OriginRequestRecord]) throws -> Int {
            var perFile: [String: Int] = [:]
            for request in requests where request.path.hasPrefix("/videos/hls/") {
                perFile[request.path, default: 0] += request.bodyBytes
            }
            for (path, bytes) in perFile {
                let file = list.folder.appendingPathComponent(String(path.dropFirst()))
                let size = try #require(FileManager.default.contents(atPath: file.path)).count
                #expect(bytes <= size, "\(path): \(bytes) bytes sent of \(size)")
            }
            return perFile.values.reduce(0, +)
        }
        var sent: [Bool: Int] = [:]
        var shown: [Bool: Int] = [:]
        for video in [true, false] {
            let rig = try await Rig(root: list.folder)
            var configuration = Self.configuration()
            configuration.decodesVideo = video
            let session = StorySession(
                playlist: list, loader: rig.loader,
                resolve: StorySession.resolver(originBase: rig.origin.baseURL), clock: RealPlaybackClock(speed: 8),
                configuration: configuration, showAll: true)
            let events = EventRecorder()
            _ = try await session.runHeadless(emit: events.handler)
            #expect(!events.all.contains { if case .failed = $0 { return true } else { return false } }, "\(events.all)")
            sent[video] = rig.origin.bodyBytesSent - (try hlsBytes(rig.origin.requests))
            shown[video] = events.all.reduce(0) { total, event in
                if case .storyEnd(_, _, _, _, _, let frames) = event { return total + frames.shown }
                return total
            }
            await rig.close()
        }
        #expect(sent[true] == sizes)
        #expect(sent[false] == sizes)
        #expect((shown[true] ?? 0) > 4)
        #expect(shown[false] == 0)
    }
}

extension PlayerVideoTests {
    /// A cached story is read from disk once: the decoder reads its bytes, and the download, which only paces what
    /// is missing, passes over what is there. Before, the download read the whole file to count it (a request run
    /// to its end, in the event log, as long as the file) and the decoder read it again.
    @Test func aCachedStoryIsReadFromDiskOnce() async throws {
        let rig = try await Rig()
        let url = rig.origin.url("bars.mp4")
        let length = Int64(try await rig.loader.data(LoadingRequest(url: url)).count)
        let logPath = rig.directory.appendingPathComponent("events.jsonl").path
        let loader = MediaLoader(
            store: rig.store, configuration: CacheHarness.defaultConfiguration, eventLog: try EventLog(path: logPath))
        let player = Player(
            loader: loader, url: url, storyID: "bars", clock: RealPlaybackClock(speed: 4),
            configuration: Self.configuration())
        let status = await player.run()
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(status.frames.shown >= 1)
        await loader.shutdown()
        // Requests that ran to their end (the decoder's open-ended one is dropped when the story ends).
        var (ended, fromOrigin): (Int64, Int64) = (0, 0)
        for line in try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard object?["event"] as? String == "request" else { continue }
            ended += (object?["length"] as? NSNumber)?.int64Value ?? 0
            fromOrigin += (object?["originBytes"] as? NSNumber)?.int64Value ?? 0
        }
        #expect(fromOrigin == 0)
        #expect(ended < length / 2, "\(ended) bytes read by requests run to their end, for a \(length)-byte file")
        await rig.close()
    }
}
