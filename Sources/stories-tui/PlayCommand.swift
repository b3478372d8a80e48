import ArgumentParser
import Foundation
import MediaCache

/// `stories-tui [play] PLAYLIST`: plays a playlist of video stories.
struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play", abstract: "Play a playlist of video stories (the default command).")

    @Argument(help: "The playlist JSON file.") var playlist: String
    @Flag(help: "Run without the terminal UI, printing one JSON event per line.") var headless = false
    @Option(help: "Playback speed multiplier.") var speed: Double = 1
    @Option(help: "Simulated network for relative URLs.") var network: String?
    @Flag(help: "Do not preload the next stories.") var noPreload = false
    @Flag(help: "Show stories that reached their maxViews too.") var all = false
    @OptionGroup var cache: CacheDirOption

    func run() async throws {
        try await reportingFailures {
            let url = URL(fileURLWithPath: playlist)
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw CLIFailure(message: "\(playlist): no such file (pass the path of a playlist JSON file)", exitCode: 2)
            }
            let store = try cache.openStore()
            let stats = try store.stats()
            print("playlist \(playlist)")
            print("cache \(stats.directory): \(stats.entries) entries, \(ByteFormat.string(stats.storedBytes)) stored")
            try store.close()
        }
    }
}
