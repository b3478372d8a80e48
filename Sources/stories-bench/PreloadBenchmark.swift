import Foundation
import MediaCache
import MediaOrigin
import StoryPlayer
import NIOConcurrencyHelpers

/// Plays a playlist headless over a shaped link, with and without preloading, in alternating rounds with a fresh
/// cache each time, and prints next-story startup (p50/p95) and stalls side by side.
///
///     swift run -c release stories-bench [PLAYLIST] [--rounds N] [--network 4g,3g]
///
/// `stories-bench cached-read` measures what checking block checksums costs instead (see CachedReadBenchmark),
/// `stories-bench video` what decoding and drawing the picture costs (see VideoBenchmark).
@main
enum PreloadBenchmark {
    struct Sample {
        var firstStartup: [Int] = []
        var nextStartups: [Int] = []
        var stalls = 0
        var stallMs = 0
        var originBytes: Int64 = 0
    }

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "cached-read" {
            return await CachedReadBenchmark.main(Array(arguments.dropFirst()))
        }
        if arguments.first == "video" {
            return await VideoBenchmark.main(Array(arguments.dropFirst()))
        }
        if arguments.first == "swipe" {
            return await SwipeBenchmark.main(Array(arguments.dropFirst()))
        }
        if arguments.first == "follow" {
            return await FollowBenchmark.main(Array(arguments.dropFirst()))
        }
        if arguments.first == "view" {
            return await ViewReadBenchmark.main(Array(arguments.dropFirst()))
        }
        if arguments.first == "fill" {
            return await IndexFillBenchmark.main(Array(arguments.dropFirst()))
        }
        var rounds = 3
        var profiles = ["4g", "3g"]
        var playlistPath = "assets/playlist.json"
        while !arguments.isEmpty {
            let argument = arguments.removeFirst()
            switch argument {
            case "--rounds":
                guard let value = arguments.first.flatMap(Int.init), value > 0 else { fail("--rounds needs a number above 0") }
                rounds = value
                arguments.removeFirst()
            case "--network":
                guard let value = arguments.first else { fail("--network needs profile names, e.g. 4g,3g") }
                profiles = value.split(separator: ",").map(String.init)
                arguments.removeFirst()
            case "-h", "--help":
                print("usage: stories-bench [PLAYLIST] [--rounds N] [--network 4g,3g]")
                print("       stories-bench cached-read [--size MB] [--rounds N]")
                print("       stories-bench video [--clip FILE] [--sizes 120x40,200x60]")
                print("       stories-bench fill DIR [--entries N] [--size BYTES]")
                print("       stories-bench swipe [--rounds N] [--box WxH] [--phone-clips N]")
                print("       stories-bench follow [--feeds N] [--rounds N]")
                print("       stories-bench view [--rounds N] [--seconds S] [--readers N]")
                return
            default:
                playlistPath = argument
            }
        }
        let playlist: Playlist
        do { playlist = try PlaylistParser.load(path: playlistPath) } catch { fail("\(error)") }
        print("playlist \(playlistPath): \(playlist.stories.count) stories, \(rounds) rounds per mode, real time")
        print("")
        print("network  preload  first start p50  next start p50  next start p95  stalls (ms)  origin bytes")
        for name in profiles {
            guard let profile = NetworkProfile.named(name) else { fail("unknown network profile '\(name)'") }
            var results: [Bool: Sample] = [false: Sample(), true: Sample()]
            for _ in 0..<rounds {
                for preload in [false, true] {
                    do {
                        let sample = try await run(playlist, profile: profile, preload: preload)
                        results[preload]?.firstStartup += sample.firstStartup
                        results[preload]?.nextStartups += sample.nextStartups
                        results[preload]?.stalls += sample.stalls
                        results[preload]?.stallMs += sample.stallMs
                        results[preload]?.originBytes += sample.originBytes
                    } catch {
                        fail("\(name) round failed: \(error)")
                    }
                }
            }
            for preload in [false, true] {
                let sample = results[preload] ?? Sample()
                print(
                    name.padding(toLength: 9, withPad: " ", startingAt: 0)
                        + (preload ? "on " : "off").padding(toLength: 9, withPad: " ", startingAt: 0)
                        + "\(percentile(sample.firstStartup, 0.5)) ms".leftPad(15) + "  "
                        + "\(percentile(sample.nextStartups, 0.5)) ms".leftPad(14) + "  "
                        + "\(percentile(sample.nextStartups, 0.95)) ms".leftPad(14) + "  "
                        + "\(sample.stalls) (\(sample.stallMs))".leftPad(11) + "  "
                        + "\(sample.originBytes / Int64(rounds))".leftPad(12))
            }
        }
    }

    /// One headless pass over the playlist with a fresh cache.
    static func run(_ playlist: Playlist, profile: NetworkProfile, preload: Bool) async throws -> Sample {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stories-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try CacheStore(directory: directory)
        let origin = try await MediaOriginServer(root: playlist.folder, profile: profile)
        let loader = MediaLoader(store: store)
        let session = StorySession(
            playlist: playlist, loader: loader, resolve: StorySession.resolver(originBase: origin.baseURL),
            clock: RealPlaybackClock(), showAll: true, preload: preload ? PreloadPolicy() : nil)
        let sample = NIOLockedValueBox(Sample())
        let first = NIOLockedValueBox(true)
        try await session.runHeadless { event in
            switch event {
            case .firstFrame(_, let startupMs, _, _):
                let isFirst = first.withLockedValue { value in defer { value = false }; return value }
                sample.withLockedValue { isFirst ? $0.firstStartup.append(startupMs) : $0.nextStartups.append(startupMs) }
            case .storyEnd(_, _, let stalls, let stallMs, _, _):
                sample.withLockedValue {
                    $0.stalls += stalls
                    $0.stallMs += stallMs
                }
            default: break
            }
        }
        await loader.shutdown()
        try? store.close()
        let bytes = origin.bodyBytesSent
        await origin.shutdown()
        return sample.withLockedValue { value in
            value.originBytes = Int64(bytes)
            return value
        }
    }

    static func percentile(_ values: [Int], _ p: Double) -> Int {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count - 1)).rounded(.up))
        return sorted[Swift.min(sorted.count - 1, rank)]
    }

    static func fail(_ message: String) -> Never {
        let line = Array("stories-bench: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(2)
    }
}

extension String {
    func leftPad(_ width: Int) -> String { String(repeating: " ", count: Swift.max(0, width - count)) + self }
}
