import ArgumentParser
import Foundation
import MediaCache
import StoryPlayer

/// Entry point: parses, runs, and turns usage errors into one line on stderr with exit code 2.
@main
enum Main {
    static func main() async {
        StandardStreams.ignoreBrokenPipeSignal()
        // A run that will play starts loading FFmpeg now, while its arguments are parsed and its cache opens.
        if StoriesTUI.willPlay(CommandLine.arguments.dropFirst()) { MediaLibraries.loadSoon() }
        let command: ParsableCommand
        do {
            command = try StoriesTUI.parseAsRoot()
        } catch {
            let code = StoriesTUI.exitCode(for: error)
            if code == .success { StoriesTUI.exit(withError: error) }  // --help, --version
            let message = StoriesTUI.message(for: error)
                .split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            let trimmed = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            CLIFailure(message: "\(trimmed) (see stories-tui --help)", exitCode: 2).exit()
        }
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch let failure as CLIFailure {
            failure.exit()
        } catch {
            StoriesTUI.exit(withError: error)
        }
    }
}

/// The `stories-tui` command: the stories player and the command-line faces of the media cache.
struct StoriesTUI: AsyncParsableCommand {
    /// Whether `arguments` (without the program's name) run `play`: named, or given as the default command.
    static func willPlay(_ arguments: ArraySlice<String>) -> Bool {
        guard let first = arguments.first else { return true }
        if first == "play" { return true }
        if first.hasPrefix("-") { return !["-h", "--help", "--version"].contains(first) }
        let others = configuration.subcommands.compactMap { $0.configuration.commandName }
        return first != "help" && !others.contains(first)
    }

    static let configuration = CommandConfiguration(
        commandName: "stories-tui",
        abstract: "Instagram-style video stories in the terminal, on a media cache that plays while downloading.",
        discussion: """
            Run `stories-tui SOURCE...` to play stories in the stories screen: a folder (each subfolder an \
            author), video and photo files, URLs, M3U lists or a JSON playlist (try assets/playlist.json: its \
            videos are served over a simulated 4G link, so the first pass shows loading and cache misses, the \
            next stories start at once because they were preloaded, and a second run plays from the cache). \
            `stories-tui prefetch URL…` downloads videos ahead of time, `stories-tui cache stats` shows what the \
            cache holds, `stories-tui serve` lets any player stream through it. The cache directory is --cache-dir, else $STORIES_CACHE_DIR, else $XDG_CACHE_HOME/stories-tui, \
            else ~/.cache/stories-tui.
            """,
        version: StoriesTUI.version,
        subcommands: [
            PlayCommand.self, FollowCommand.self, FetchCommand.self, PrefetchCommand.self, CacheCommand.self, ServeCommand.self,
        ],
        defaultSubcommand: PlayCommand.self
    )
}

extension StoriesTUI {
    /// What `--version` prints.
    static let version = "stories-tui 0.4.0"
}

/// The `--cache-dir` option shared by every command.
struct CacheDirOption: ParsableArguments {
    @Option(name: .customLong("cache-dir"), help: ArgumentHelp("Cache directory.", valueName: "DIR"))
    var cacheDir: String?

    /// The resolved directory.
    var url: URL { CacheLocation.resolve(explicit: cacheDir) }

    /// True when the directory holds a cache (commands that only look do not create one).
    var exists: Bool { FileManager.default.fileExists(atPath: url.appendingPathComponent("index.sqlite").path) }

    /// Opens the store with the budgets in force (`budgets`' flags over the environment over the config file),
    /// turning failures into one clear line and exit code 1 (2 for a bad budget). `readOnly` is for commands
    /// that only look: they change nothing and never wait for the processes using the cache.
    func openStore(budgets: BudgetOptions? = nil, readOnly: Bool = false) throws -> CacheStore {
        let configuration = try Budgets.resolve(flags: budgets?.given ?? [:]).configuration
        do {
            return try CacheStore(
                directory: url, configuration: configuration, logger: CLILogging.logger(), readOnly: readOnly)
        } catch {
            throw CLIFailure(message: CacheLocation.describe(error), exitCode: 1)
        }
    }

    /// The play counts kept beside `store`'s index. A reader (`create` false) gets nil when none were kept yet,
    /// without creating the file; counts that cannot be opened (a read-only directory) are said on stderr and
    /// the command goes on without them.
    func openPlayCounts(beside store: CacheStore, create: Bool) -> PlayCountStore? {
        let path = store.directory.appendingPathComponent(PlayCountStore.fileName).path
        guard create || FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try PlayCountStore(directory: store.directory, earlier: store.legacyPlayCounts)
        } catch {
            StandardStreams.writeError("stories-tui: \(error); play counts are kept for this run only\n")
            return nil
        }
    }
}
