import ArgumentParser
import Foundation
import MediaCache
import StoriesUI
import StoryPlayer

/// `stories-tui prefetch URL… [--seconds S | --bytes N | --full]`: preloads videos into the cache.
struct PrefetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Download the start of videos (or all of them) into the cache ahead of playback.",
        discussion: """
            By default each video gets what its first 3 seconds need: the MP4 header (fetched from the end of \
            the file when 'moov' follows 'mdat') plus 3 seconds of payload at the file's average bitrate; a \
            fragmented MP4's header, index and first fragments; a WebM's header, Cues and first Clusters; a \
            photo whole. \
            --seconds S changes the seconds, --bytes N takes the first N bytes, --full the whole file. Bytes \
            already cached are not downloaded again. A progress bar is shown on stderr when it is a terminal; \
            one summary line per URL is printed on stdout. Exit code 1 when any URL failed.
            """)

    @Argument(help: "The http or https URLs.") var urls: [String]
    @Option(help: ArgumentHelp("Seconds of playback to prefetch (default 3).", valueName: "S")) var seconds: Double?
    @Option(help: ArgumentHelp("Prefetch the first N bytes.", valueName: "N")) var bytes: Int64?
    @Flag(help: "Prefetch whole files.") var full = false
    @OptionGroup var cache: CacheDirOption
    @OptionGroup(title: "Cache budgets") var budgets: BudgetOptions

    func amount() throws -> PreloadAmount {
        let chosen = [seconds != nil, bytes != nil, full].filter { $0 }.count
        guard chosen <= 1 else {
            throw CLIFailure(message: "prefetch: use only one of --seconds, --bytes and --full", exitCode: 2)
        }
        if let seconds {
            guard seconds > 0, seconds.isFinite else {
                throw CLIFailure(message: "--seconds: must be a number above 0, got \(seconds)", exitCode: 2)
            }
            return .seconds(seconds)
        }
        if let bytes {
            guard bytes > 0 else { throw CLIFailure(message: "--bytes: must be at least 1, got \(bytes)", exitCode: 2) }
            return .bytes(bytes)
        }
        return full ? .full : .seconds(3)
    }

    func describe(_ amount: PreloadAmount) -> String {
        switch amount {
        case .seconds(let s): return "the first \(s.formatted()) s"
        case .bytes(let n): return "the first \(n) bytes"
        case .ranges(let ranges): return "\(ranges.count) byte range\(ranges.count == 1 ? "" : "s")"
        case .full: return "the whole file"
        }
    }

    func run() async throws {
        try await reportingFailures {
            guard !urls.isEmpty else { throw CLIFailure(message: "prefetch: give at least one URL", exitCode: 2) }
            let amount = try amount()
            let rule = try FollowSettings.read().keyRule
            let targets = try urls.map { text in
                let url = try CLIURL.parse(text, context: "prefetch")
                return PreloadTarget(url: url, key: CacheKey(url: url, rule: rule), amount: amount)
            }
            let store = try cache.openStore(budgets: budgets)
            let loader = MediaLoader(store: store, configuration: LoaderDefaults.configuration, logger: CLILogging.logger())
            var configuration = PreloadConfiguration()
            configuration.sliceBytes = 1 << 20
            let preloader = Preloader(loader: loader, configuration: configuration, planner: MediaPreloadPlanning())
            let progress = ProgressLine(enabled: isatty(STDERR_FILENO) == 1)
            let workHandle = TaskHandle()
            let signals = SignalWatcher { workHandle.cancel() }
            let work = Task { () -> Int in
                var failures = 0
                for (index, target) in targets.enumerated() {
                    if Task.isCancelled { break }
                    let before = loader.metrics.originBytesReceived
                    let label = "[\(index + 1)/\(targets.count)] \(target.url.lastPathComponent)"
                    do {
                        let result = try await preloader.preload(target) { value in progress.show(label, value) }
                        progress.clear()
                        let downloaded = loader.metrics.originBytesReceived - before
                        let needed = ByteFormat.string(result.neededBytes ?? 0)
                        let length = store.info(for: target.key)?.metadata.contentLength.map(ByteFormat.string) ?? "?"
                        let why = loader.originIgnoresRanges(target.key)
                            ? " (the origin ignores Range requests: everything before the part wanted came too)" : ""
                        print("\(target.url.absoluteString): \(needed) of \(length) cached for \(describe(amount)), "
                            + "\(ByteFormat.string(downloaded)) downloaded\(why)")
                    } catch is CancellationError {
                        progress.clear()
                        break
                    } catch {
                        progress.clear()
                        failures += 1
                        StandardStreams.writeError("stories-tui: prefetch: \(error)\n")
                    }
                }
                return failures
            }
            workHandle.set(work)
            let failures = await work.value
            signals.stop()
            await loader.shutdown()
            try? store.close()
            if work.isCancelled {
                throw CLIFailure(message: "prefetch: interrupted (what arrived is kept)", exitCode: signals.exitCode ?? 130)
            }
            if failures > 0 {
                throw CLIFailure(message: "prefetch: \(failures) of \(targets.count) URLs failed", exitCode: 1)
            }
        }
    }
}

/// A one-line progress bar on stderr, redrawn in place (only when stderr is a terminal).
final class ProgressLine: Sendable {
    let enabled: Bool

    init(enabled: Bool) { self.enabled = enabled }

    func show(_ label: String, _ progress: PreloadProgress) {
        guard enabled else { return }
        let width = 30
        let fraction = Swift.min(1, progress.fraction ?? 0)
        let filled = Int((Double(width) * fraction).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let amounts = progress.neededBytes.map {
            "\(ByteFormat.string(progress.cachedBytes)) of \(ByteFormat.string($0))"
        } ?? "reading the header"
        let line = "\r\u{1B}[K\(label) [\(bar)] \(Int(fraction * 100))% \(amounts)"
        StandardStreams.writeError(line)
    }

    func clear() {
        guard enabled else { return }
        StandardStreams.writeError("\r\u{1B}[K")
    }
}
