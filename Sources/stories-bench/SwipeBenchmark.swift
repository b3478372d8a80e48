import Foundation
import MediaCache
import MediaOrigin
import StoryPlayer

/// Key to first frame: how long after → the next story's picture is on screen, once that story is preloaded,
/// with and without its first frame decoded ahead. Over the demo playlist and a set of phone-size (1080x1920)
/// clips made with ffmpeg, in alternating rounds with a fresh cache each time, on an unshaped local origin (the
/// bytes are preloaded either way: this measures what happens between the key and the picture).
///
///     swift run -c release stories-bench swipe [--rounds N] [--box 960x640] [--phone-clips N]
enum SwipeBenchmark {
    static func main(_ arguments: [String]) async {
        var arguments = arguments
        var rounds = 3
        var box = (width: 960, height: 640)
        var phoneClips = 5
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch (argument, arguments.first) {
            case ("--rounds", let value?):
                guard let n = Int(value), n > 0 else { PreloadBenchmark.fail("--rounds needs a number above 0") }
                rounds = n
            case ("--phone-clips", let value?):
                guard let n = Int(value), n > 1 else { PreloadBenchmark.fail("--phone-clips needs a number above 1") }
                phoneClips = n
            case ("--box", let value?):
                let sides = value.split(separator: "x").compactMap { Int($0) }
                guard sides.count == 2, sides.allSatisfy({ $0 > 0 }) else { PreloadBenchmark.fail("--box needs WxH") }
                box = (sides[0], sides[1])
            default:
                PreloadBenchmark.fail("usage: stories-bench swipe [--rounds N] [--box WxH] [--phone-clips N]")
            }
            arguments.removeFirst()
        }
        let demo: Playlist
        do { demo = try PlaylistParser.load(path: "assets/playlist.json") } catch { PreloadBenchmark.fail("\(error)") }
        let phone: Playlist
        do { phone = try makePhoneClips(count: phoneClips) } catch { PreloadBenchmark.fail("\(error)") }
        defer { try? FileManager.default.removeItem(at: phone.folder) }
        print("key to first frame after →, next story preloaded; picture box \(box.width)x\(box.height) px; \(rounds) rounds")
        print("")
        print("set              decode ahead  swipes   p50 ms   p95 ms   max ms")
        for (name, playlist) in [("demo", demo), ("phone 1080x1920", phone)] {
            var samples: [Bool: [Double]] = [false: [], true: []]
            for _ in 0..<rounds {
                for ahead in [false, true] {
                    do {
                        samples[ahead, default: []] += try await swipes(playlist, ahead: ahead, box: box)
                    } catch {
                        PreloadBenchmark.fail("\(name): \(error)")
                    }
                }
            }
            for ahead in [false, true] {
                let values = samples[ahead] ?? []
                print(
                    name.padding(toLength: 17, withPad: " ", startingAt: 0)
                        + (ahead ? "on" : "off").padding(toLength: 14, withPad: " ", startingAt: 0)
                        + "\(values.count)".leftPad(6)
                        + format(percentile(values, 0.5)).leftPad(9) + format(percentile(values, 0.95)).leftPad(9)
                        + format(values.max() ?? 0).leftPad(9))
            }
        }
    }

    /// Presses → once each story's successor is preloaded (and, decoding ahead, its first frame held) and times
    /// the key to the first `snapshot()` showing the new story's picture.
    static func swipes(_ playlist: Playlist, ahead: Bool, box: (width: Int, height: Int)) async throws -> [Double] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try CacheStore(directory: directory)
        let origin = try await MediaOriginServer(root: playlist.localRoot, folders: playlist.localFolders)
        let loader = MediaLoader(store: store)
        var configuration = PlayerConfiguration()
        configuration.decodesVideo = true
        configuration.decodesAhead = ahead
        let session = StorySession(
            playlist: playlist, loader: loader, resolve: StorySession.resolver(originBase: origin.baseURL),
            clock: RealPlaybackClock(), configuration: configuration, showAll: true, preload: PreloadPolicy())
        let controller = try StoryController(session: session, failureDwell: 0)
        controller.setPictureBox(box)
        controller.start()
        var samples: [Double] = []
        for next in 1..<playlist.stories.count {
            let ready = await waitFor(seconds: 30) {
                let snapshot = controller.snapshot()
                guard snapshot.current == next - 1, snapshot.frame != nil,
                    snapshot.stories[next].preload?.phase == .preloaded
                else { return false }
                return !ahead || controller.ahead.heldStories.contains(next)
            }
            // A story that moved on by itself (or an HLS story, never decoded ahead) gives no sample.
            guard ready else {
                controller.perform(.jump(to: next))
                continue
            }
            let pressed = ContinuousClock.now
            controller.perform(.next)
            _ = await waitFor(seconds: 10, poll: .microseconds(200)) {
                let snapshot = controller.snapshot()
                return snapshot.current == next && snapshot.frame != nil
            }
            let elapsed = ContinuousClock.now - pressed
            samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
        }
        await controller.stop()
        await loader.shutdown()
        try? store.close()
        await origin.shutdown()
        return samples
    }

    /// Polls `condition` until it holds (true) or `seconds` pass (false).
    static func waitFor(seconds: Double, poll: Duration = .milliseconds(5), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: poll)
        }
        return condition()
    }

    /// `count` five-second 1080x1920 H.264 clips at 30 fps, as a phone records them, in a new folder.
    static func makePhoneClips(count: Int) throws -> Playlist {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-phone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard let ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first(where: FileManager.default.isExecutableFile)
        else { throw PlayerBenchError("ffmpeg is needed to make the phone-size clips (apt-get install ffmpeg)") }
        var stories: [Story] = []
        for i in 0..<count {
            let file = folder.appendingPathComponent("IMG_\(i + 1).mp4")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ffmpeg)
            process.arguments = [
                "-v", "error", "-y", "-nostdin", "-f", "lavfi", "-i", "testsrc2=s=1080x1920:r=30:d=5", "-c:v", "libx264",
                "-preset", "veryfast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", file.path,
            ]
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw PlayerBenchError("ffmpeg could not make \(file.lastPathComponent)") }
            stories.append(Story(id: file.path, title: file.lastPathComponent, source: .local(path: file.path, file: file)))
        }
        return Playlist(title: "Phone", stories: stories, file: folder.appendingPathComponent("phone.json"))
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[Swift.min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded(.up)))]
    }

    static func format(_ ms: Double) -> String { String(format: "%.1f", ms) }
}
