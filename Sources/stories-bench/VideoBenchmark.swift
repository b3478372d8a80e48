import Foundation
import MediaCache
import MediaOrigin
import StoriesUI
import StoryPlayer
import Terminal

/// What the picture costs: a clip is played at 1× through the cache with the picture on, while a stand-in for the
/// terminal thread renders the stories screen fifty times a second and works out the cells to write (everything
/// but the terminal itself); the same play with the picture off is the baseline, in the same run. Reports CPU as a
/// share of one core over the clip's duration, frames shown and dropped, and peak memory growth.
///
///     swift run -c release stories-bench video [--clip FILE] [--sizes 120x40,200x60]
///
/// Without --clip, a 10 s 640×360 25 fps clip is made with ffmpeg.
enum VideoBenchmark {
    static func main(_ arguments: [String]) async {
        var arguments = arguments
        var clip: String?
        var sizes = [(120, 40), (200, 60)]
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch argument {
            case "--clip":
                guard let value = arguments.first else { PreloadBenchmark.fail("--clip needs a video file") }
                clip = value
                arguments.removeFirst()
            case "--sizes":
                guard let value = arguments.first else { PreloadBenchmark.fail("--sizes needs sizes, e.g. 120x40,200x60") }
                sizes = value.split(separator: ",").compactMap { size in
                    let parts = size.split(separator: "x").compactMap { Int($0) }
                    return parts.count == 2 && parts[0] >= 60 && parts[1] >= 16 ? (parts[0], parts[1]) : nil
                }
                guard !sizes.isEmpty else { PreloadBenchmark.fail("--sizes: use COLUMNSxROWS, at least 60x16") }
                arguments.removeFirst()
            default:
                PreloadBenchmark.fail("video: unknown argument '\(argument)' (use --clip FILE, --sizes 120x40,200x60)")
            }
        }
        do {
            let file = try clip.map { URL(fileURLWithPath: $0) } ?? makeClip()
            try await run(clip: file, sizes: sizes)
        } catch {
            PreloadBenchmark.fail("video failed: \(error)")
        }
    }

    /// A 640×360, 25 fps, 10 s H.264 clip with motion and colour, made by ffmpeg in a temporary folder.
    static func makeClip() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-clip")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("mandel-640x360.mp4")
        if FileManager.default.fileExists(atPath: file.path) { return file }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "mandelbrot=size=640x360:rate=25", "-t", "10",
            "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-movflags", "+faststart", file.path,
        ]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PlayerBenchError("ffmpeg could not make the clip (install ffmpeg, or pass --clip FILE)")
        }
        return file
    }

    struct Sample {
        var cpuSeconds: Double
        var mediaSeconds: Double
        var frames: FrameCounts
        var peakGrowthMB: Double
    }

    static func run(clip: URL, sizes: [(Int, Int)]) async throws {
        print("clip \(clip.lastPathComponent), played at 1× through the cache; CPU as a share of one core")
        print("")
        print("terminal   picture box   CPU picture on   CPU picture off   frames shown   dropped   peak RSS growth")
        for (columns, rows) in sizes {
            let off = try await play(clip: clip, columns: columns, rows: rows, video: false)
            let on = try await play(clip: clip, columns: columns, rows: rows, video: true)
            let box = StoriesRenderer.pictureBox(
                StoriesScreen(snapshot: SessionSnapshot(title: "", stories: [])), width: columns, height: rows)
            let boxText = box.map { "\($0.width)×\($0.height)" } ?? "-"
            func percent(_ sample: Sample) -> String {
                String(format: "%.1f %%", 100 * sample.cpuSeconds / sample.mediaSeconds)
            }
            print(
                "\("\(columns)×\(rows)".padding(toLength: 11, withPad: " ", startingAt: 0))"
                    + "\(boxText.padding(toLength: 14, withPad: " ", startingAt: 0))"
                    + "\(percent(on).padding(toLength: 17, withPad: " ", startingAt: 0))"
                    + "\(percent(off).padding(toLength: 18, withPad: " ", startingAt: 0))"
                    + "\(String(on.frames.shown).padding(toLength: 15, withPad: " ", startingAt: 0))"
                    + "\(String(on.frames.dropped).padding(toLength: 10, withPad: " ", startingAt: 0))"
                    + String(format: "%.1f MB", on.peakGrowthMB))
        }
    }

    /// Plays `clip` once on a fresh cache with a stand-in screen of `columns`×`rows`, returning what it cost.
    static func play(clip: URL, columns: Int, rows: Int, video: Bool) async throws -> Sample {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await MediaOriginServer(root: clip.deletingLastPathComponent())
        var cacheConfiguration = CacheConfiguration()
        cacheConfiguration.minimumFreeDiskBytes = 0
        let store = try CacheStore(directory: directory, configuration: cacheConfiguration)
        let loader = MediaLoader(store: store)
        var configuration = PlayerConfiguration()
        configuration.decodesVideo = video
        let player = Player(
            loader: loader, url: origin.url(clip.lastPathComponent), storyID: "bench", clock: RealPlaybackClock(speed: 1),
            configuration: configuration)
        let title = SessionSnapshot(title: "Bench", stories: [StoryRow(id: "bench", title: "Bench")], current: 0)
        if let box = StoriesRenderer.pictureBox(StoriesScreen(snapshot: title), width: columns, height: rows) {
            player.setPictureBox(box)
        }
        let startRSS = peakRSS()
        let startCPU = cpuSeconds()
        let playing = Task { await player.run() }
        // The terminal thread's work: render the screen and find the cells to write, fifty times a second.
        let screen = Thread {
            var previous: CellGrid?
            while !playing.isCancelled {
                var snapshot = title
                snapshot.status = player.status
                snapshot.frame = player.frame
                if let state = snapshot.status?.state, state == .finished || state == .failed { break }
                let grid = StoriesRenderer.render(StoriesScreen(snapshot: snapshot), width: columns, height: rows)
                _ = grid.changes(since: previous)
                previous = grid
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        screen.start()
        let status = await playing.value
        let cpu = cpuSeconds() - startCPU
        await loader.shutdown()
        try? store.close()
        await origin.shutdown()
        guard status.state == .finished, let duration = status.duration else {
            throw PlayerBenchError("the clip did not play: \(status.error ?? status.state.rawValue)")
        }
        return Sample(
            cpuSeconds: cpu, mediaSeconds: duration, frames: status.frames,
            peakGrowthMB: Double(peakRSS() - startRSS) / 1_048_576)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Peak resident memory of the process so far, in bytes.
    static func peakRSS() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss * 1024
    }
}

/// A benchmark that could not run, with what to do.
struct PlayerBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
