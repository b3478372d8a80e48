import Crypto
import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import Testing

import _CryptoExtras

@testable import StoryPlayer

/// An HLS story with the picture on (the bundled two-variant stream, real MPEG-TS), on wall-clock time.
@Suite(.serialized, .decodesOnWallClock) struct PlayerHLSVideoTests {
    typealias Rig = VideoDecoderTests.Rig

    private func player(
        _ rig: Rig, throughput: ThroughputEstimate? = nil, onEvent: @escaping @Sendable (PlayerEvent) -> Void = { _ in }
    ) -> Player {
        Player(
            loader: rig.loader, url: rig.origin.url("hls/master.m3u8"), storyID: "hls", clock: RealPlaybackClock(speed: 1),
            configuration: PlayerVideoTests.configuration(), throughput: throughput, onEvent: onEvent)
    }

    /// A seek lands on the segment holding the target: the picture shows the frame due there (the decoder
    /// restarts at that segment's key frame), forwards and back.
    @Test func aSeekShowsTheFrameOfTheTargetSegment() async throws {
        let rig = try await Rig()
        let playing = player(rig)
        let run = Task { await playing.run() }
        #expect(await eventually { playing.status.state == .playing })
        playing.setPaused(true)
        #expect(await eventually { playing.status.state == .paused })
        let before = playing.status.position
        playing.seek(by: 3.3 - before)
        #expect(await eventually { abs((playing.frame?.time ?? 0) - 3.3) < 0.05 }, "\(playing.frame?.time ?? -1)")
        playing.seek(by: -2)
        #expect(await eventually { abs((playing.frame?.time ?? 0) - 1.3) < 0.05 }, "\(playing.frame?.time ?? -1)")
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
        var loading = CacheHarness.defaultConfiguration
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
        #expect(await eventually { switchedAt(events) != nil })
        let at = try #require(switchedAt(events))
        #expect(at >= 1 && at <= 4)
        #expect(await eventually { playing.status.position >= at + 0.3 })
        playing.setPaused(true)
        #expect(await eventually { (playing.frame?.time ?? 0) >= at + 0.2 }, "\(playing.frame?.time ?? -1)")
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

    /// The bundled stream's lower variant encrypted with AES-128 (PKCS#7, whole segments) under `key`, with the
    /// playlist's IV or each segment's sequence number (from 7) as IV; `servedKey` is what the key URI holds.
    private func serveEncrypted(on rig: Rig, key: [UInt8], servedKey: [UInt8], explicitIV: Bool) throws -> [[UInt8]] {
        let folder = VideoDecoderTests.videos.appendingPathComponent("hls/v0")
        let iv: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:7\n"
        text += "#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\""
            + (explicitIV ? ",IV=0x" + iv.map { String(format: "%02X", $0) }.joined() : "") + "\n"
        var encrypted: [[UInt8]] = []
        for index in 0..<5 {
            let plain = try #require(FileManager.default.contents(atPath: folder.appendingPathComponent("seg\(index).ts").path))
            let segmentIV = explicitIV ? iv : [UInt8](repeating: 0, count: 15) + [UInt8(7 + index)]
            let sealed = Array(try AES._CBC.encrypt(plain, using: SymmetricKey(data: key), iv: try AES._CBC.IV(ivBytes: segmentIV)))
            encrypted.append(sealed)
            rig.origin.set(OriginResource(bytes: sealed, contentType: "video/mp2t"), at: "/enc/seg\(index).ts")
            text += "#EXTINF:1.000000,\nseg\(index).ts\n"
        }
        text += "#EXT-X-ENDLIST\n"
        rig.origin.set(OriginResource(bytes: Array(text.utf8), contentType: "application/vnd.apple.mpegurl"), at: "/enc/index.m3u8")
        rig.origin.set(OriginResource(bytes: servedKey), at: "/enc/key.bin")
        return encrypted
    }

    /// An AES-128 story plays: its key and segments come through the loader and stay encrypted in the cache (as
    /// the origin sent them), the decoder reads them decrypted, and the picture runs to the end.
    @Test(arguments: [false, true])
    func anEncryptedStoryShowsItsPicture(explicitIV: Bool) async throws {
        let rig = try await Rig()
        let key: [UInt8] = (0..<16).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        let encrypted = try serveEncrypted(on: rig, key: key, servedKey: key, explicitIV: explicitIV)
        // The segments are cached through the loader before the story plays: what is under test is decrypting
        // them, not a download racing a paused playhead (on a crowded machine a decoder once waited at 3.88 s,
        // paused, for bytes of the last segment).
        for index in encrypted.indices {
            _ = try await rig.loader.data(LoadingRequest(url: rig.origin.url("enc/seg\(index).ts")))
        }
        let playing = Player(
            loader: rig.loader, url: rig.origin.url("enc/index.m3u8"), storyID: "enc", clock: RealPlaybackClock(speed: 4),
            configuration: PlayerVideoTests.configuration())
        let run = Task { await playing.run() }
        // Paused near the end, the decoder catches up with the playhead whatever the machine's load: every frame
        // up to 4 s was decrypted and decoded (25 a second), the last one shown.
        #expect(await eventually { playing.status.position >= 4.2 || playing.status.state == .failed })
        playing.setPaused(true)
        #expect(await eventually { (playing.frame?.time ?? 0) >= 4 }, "\(playing.frame?.time ?? -1)")
        playing.setPaused(false)
        let status = await run.value
        #expect(status.state == .finished, "\(status.error ?? "")")
        #expect(status.frames.shown + status.frames.dropped >= 100, "\(status.frames)")
        for (index, sealed) in encrypted.enumerated() {
            let url = rig.origin.url("enc/seg\(index).ts")
            #expect(try rig.store.read(key: CacheKey(url: url), range: 0..<Int64(sealed.count)) == sealed)
        }
        await rig.close()
    }

    /// A wrong key fails the story in a sentence naming the segment and the key, not with a damaged picture.
    @Test func anEncryptedStoryWithTheWrongKeyFailsInASentence() async throws {
        let rig = try await Rig()
        let key: [UInt8] = (0..<16).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        _ = try serveEncrypted(on: rig, key: key, servedKey: key.reversed(), explicitIV: false)
        let playing = Player(
            loader: rig.loader, url: rig.origin.url("enc/index.m3u8"), storyID: "enc", clock: RealPlaybackClock(speed: 4),
            configuration: PlayerVideoTests.configuration())
        let status = await playing.run()
        #expect(status.state == .failed)
        #expect(status.error?.contains("cannot decrypt HLS segment seg0.ts with the key key.bin") == true, "\(status.error ?? "")")
        await rig.close()
    }

    private func switchedAt(_ events: EventRecorder) -> Double? {
        events.all.lazy.compactMap { event -> Double? in
            guard case .variant(_, let positionMs, let bandwidth, _) = event, bandwidth == 440_000 else { return nil }
            return Double(positionMs) / 1000
        }.first
    }
}
