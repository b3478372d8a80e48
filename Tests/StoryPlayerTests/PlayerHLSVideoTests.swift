import Foundation
import MediaCache
import MediaOrigin
import Testing

@testable import StoryPlayer

/// An HLS story with the picture on (the bundled two-variant stream, real MPEG-TS), on wall-clock time.
@Suite(.serialized, .decodesOnWallClock) struct PlayerHLSVideoTests {
    typealias Rig = VideoDecoderTests.Rig

    private func player(
        _ rig: Rig, throughput: ThroughputEstimate? = nil, onEvent: @escaping @Sendable (PlayerEvent) -> Void = { _ in }
    ) -> PlayerStub {
        PlayerStub(
            loader: rig.loader, url: rig.origin.url("hls/master.m3u8"), storyID: "hls", clock: RealPlaybackClock(speed: 1),
            configuration: PlayerVideoTests.configuration(), throughput: throughput, onEvent: onEvent)
    }

    /// A seek lands on the segment holding the target: the picture shows the frame due there (the decoder
    /// restarts at that segment's key frame), forwards and back.
    @Test func aSeekShowsTheFrameOfTheTargetSegment() async throws {
        let rig = try await Rig()
        let playing = player(rig)
        let run = Task { await playing.run() }
        #expect(await VideoDecoderTests.eventually { playing.status.state == .playing })
        playing.setPaused(true)
        #expect(await VideoDecoderTests.eventually { playing.status.state == .paused })
        let before = playing.status.position
        playing.seek(by: 3.3 - before)
        #expect(await VideoDecoderTests.eventually { abs((playing.frame?.time ?? 0) - 3.3) < 0.05 }, "\(playing.frame?.time ?? -1)")
        playing.seek(by: -2)
        #expect(await VideoDecoderTests.eventually { abs((playing.frame?.time ?? 0) - 1.3) < 0.05 }, "\(playing.frame?.time ?? -1)")
        #expect(playing.status.error == nil)
        run.cancel()
        _ = await run.value
        await rig.close()
    }

    /// The story starts on the lower variant (nothing measured); once the link proves fast it moves to the higher
    /// one at a segment boundary the decoder has not reached, and the picture goes on from there (the decoder
    /// follows the new size) to the end. The loader fetches in 4 KiB blocks here, so learning a segment's length
    /// does not fetch all of the bundled stream's small segments.
    @Test func thePictureGoesOnAcrossAVariantSwitch() async throws {
        var loading = LoaderConfiguration()
        loading.blockSize = 4096
        let rig = try await Rig(loading: loading)
        let estimate = ThroughputEstimate()
        let events = EventRecorder()
        let playing = player(rig, throughput: estimate) { event in
            // The link turns out fast once the story has started.
            if case .firstFrame = event { estimate.record(bytes: 10_000_000, seconds: 1) }
            events.handler(event)
        }
        let run = Task { await playing.run() }
        #expect(await VideoDecoderTests.eventually { switchedAt(events) != nil })
        let at = try #require(switchedAt(events))
        #expect(at >= 1 && at <= 4)
        #expect(await VideoDecoderTests.eventually { playing.status.position >= at + 0.3 })
        playing.setPaused(true)
        #expect(await VideoDecoderTests.eventually { (playing.frame?.time ?? 0) >= at + 0.2 }, "\(playing.frame?.time ?? -1)")
        playing.setPaused(false)
        let status = await run.value
        #expect(status.state == .finished, "\(status.error ?? "")")
        // From the switch on, the higher variant's segments were read whole and the lower one's only learned about.
        let parts = try #require(playing.parts)
        let switchedSegment = Int(at.rounded())
        #expect(parts.parts.map { $0.url.pathComponents.suffix(2).joined(separator: "/") }
            == (0..<5).map { "\($0 < switchedSegment ? "v0" : "v1")/seg\($0).ts" })
        var bytes: [String: Int] = [:]
        for request in rig.origin.requests where request.path.hasSuffix(".ts") { bytes[request.path, default: 0] += request.bodyBytes }
        for part in parts.parts { #expect(bytes[part.url.path] == Int(part.resourceLength), "\(part.url.path)") }
        for index in switchedSegment..<5 { #expect((bytes["/hls/v0/seg\(index).ts"] ?? 0) <= 4096) }
        await rig.close()
    }

    private func switchedAt(_ events: EventRecorder) -> Double? {
        events.all.lazy.compactMap { event -> Double? in
            guard case .variant(_, let positionMs, let bandwidth, _) = event, bandwidth == 440_000 else { return nil }
            return Double(positionMs) / 1000
        }.first
    }
}
