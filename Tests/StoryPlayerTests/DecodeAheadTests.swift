import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

/// Instant swipes: once the next story is preloaded its first frame is decoded ahead and held, so → shows it
/// without a decode.
@Suite(.serialized, .decodesOnWallClock) struct DecodeAheadTests {
    typealias Rig = VideoDecoderTests.Rig

    private func controller(
        _ rig: Rig, ahead: Bool, files: [String] = ["bars.mp4", "mandel.mp4", "life.mp4"]
    ) throws -> StoryController {
        let stories = files.map { file in
            Story(id: file, title: file, source: .remote(rig.origin.url(file)))
        }
        var configuration = PlayerVideoTests.configuration()
        configuration.decodesAhead = ahead
        let session = StorySession(
            playlist: Playlist(title: "Clips", stories: stories, file: URL(fileURLWithPath: "/t/clips.json")),
            loader: rig.loader, resolve: StorySession.resolver(originBase: nil), clock: RealPlaybackClock(speed: 1),
            configuration: configuration, preload: PreloadPolicy())
        return try StoryController(session: session, failureDwell: 0)
    }

    /// Waits until `condition` holds, failing with what was awaited. The deadline bounds a hang, not speed: a
    /// clean-clone CI run beside the command-line tests' video decoding took longer than 60 s to preload and decode
    /// one 64x36 frame ahead.
    private func eventually(_ what: String, _ condition: () -> Bool) async throws {
        guard await MediaTestSupport.eventually(within: .seconds(240), condition) else { throw TimedOut(what: what) }
    }

    struct TimedOut: Error { let what: String }

    /// Pauses the current story before it plays, so it never moves on by itself while the test waits (waiting to
    /// see it playing first could miss a whole short story on a busy machine).
    private func pauseAtOnce(_ controller: StoryController) {
        controller.perform(.togglePause)
        #expect(controller.snapshot().paused)
    }

    @Test func theNextStorysFirstFrameIsOnScreenTheMomentItStarts() async throws {
        let rig = try await Rig()
        let controller = try controller(rig, ahead: true)
        controller.start()
        // Paused at once, the story never moves on by itself while the test waits (a paused story with
        // enough buffered keeps the preload gate open).
        pauseAtOnce(controller)
        try await eventually("the next story's first frame held") { controller.ahead.heldStories == [1] }
        controller.perform(.next)
        // No decode between the key and the picture: the held frame is the story's picture at once.
        let frame = try #require(controller.snapshot().frame)
        #expect(controller.snapshot().current == 1)
        #expect(frame.width == 64 || frame.height == 36)
        // It is taken, not kept: the story after it is decoded ahead next.
        #expect(!controller.ahead.heldStories.contains(1))
        pauseAtOnce(controller)
        try await eventually("story 3's first frame held") { controller.ahead.heldStories == [2] }
        await controller.stop()
        #expect(controller.ahead.heldStories.isEmpty)
        await rig.close()
    }

    /// An HLS story is decoded ahead too, from the first segment its preload cached (before, its first frame
    /// waited for a decoder to open its segments when it started).
    @Test func anHLSStorysFirstFrameIsHeldToo() async throws {
        let rig = try await Rig()
        let controller = try controller(rig, ahead: true, files: ["bars.mp4", "hls/master.m3u8"])
        controller.start()
        pauseAtOnce(controller)
        try await eventually("the HLS story's first frame held") { controller.ahead.heldStories == [1] }
        // Its row says it is preloaded, as an MP4's does (its preload is its playlists and first segments).
        #expect(controller.snapshot().stories[1].preload?.phase == .preloaded)
        controller.perform(.next)
        let frame = try #require(controller.snapshot().frame, "the held frame is on screen at once")
        #expect(controller.snapshot().current == 1)
        #expect(frame.width > 0 && frame.height > 0)
        await controller.stop()
        await rig.close()
    }

    @Test func withoutDecodingAheadTheStoryStartsWithoutAPicture() async throws {
        let rig = try await Rig()
        let controller = try controller(rig, ahead: false)
        controller.start()
        pauseAtOnce(controller)
        try await eventually("the next story preloaded") {
            controller.snapshot().stories[1].preload?.phase == .preloaded
        }
        controller.perform(.next)
        #expect(controller.snapshot().frame == nil)
        #expect(controller.ahead.heldStories.isEmpty)
        await controller.stop()
        await rig.close()
    }
}
