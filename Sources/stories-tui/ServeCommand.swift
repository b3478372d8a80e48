import ArgumentParser
import Foundation
import MediaCache
import MediaProxy

/// `stories-tui serve [--port P]`: a local proxy any player can stream through.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run a local HTTP proxy that streams any http(s) video through the cache.",
        discussion: """
            Prints "proxy listening on http://127.0.0.1:PORT/TOKEN/" first. Then \
            GET or HEAD {that base}media?url=PERCENT-ENCODED-URL serves the video with full single-range support \
            while it downloads, e.g.: ffplay "http://127.0.0.1:PORT/TOKEN/media?url=https%3A%2F%2Fcdn%2Fa.mp4". \
            Requests without the token get 403. Stop with Ctrl-C.
            """)

    @Option(help: "Port on 127.0.0.1 (0 picks a free one).") var port: Int = 0
    @OptionGroup var cache: CacheDirOption

    func run() async throws {
        try await reportingFailures {
            guard (0...65535).contains(port) else {
                throw CLIFailure(message: "--port: \(port) is not a port (use 0 to 65535)", exitCode: 2)
            }
            let store = try cache.openStore()
            let loader = MediaLoader(store: store, configuration: LoaderDefaults.configuration, logger: CLILogging.logger())
            let proxy: ProxyServer
            do {
                proxy = try await ProxyServer(loader: loader, port: port, logger: CLILogging.logger())
            } catch {
                await loader.shutdown()
                try? store.close()
                throw CLIFailure(message: "serve: \(error)", exitCode: 1)
            }
            // Nobody reading the first line is no reason to stop serving.
            try? StandardStreams.printOut("proxy listening on \(proxy.baseURL)")
            let stop = AsyncStream<Void> { continuation in
                let watcher = SignalWatcher { continuation.finish() }
                continuation.onTermination = { _ in watcher.stop() }
            }
            for await _ in stop {}
            await proxy.shutdown()
            await loader.shutdown()
            try? store.close()
            StandardStreams.writeError("stories-tui: proxy stopped; cache saved\n")
        }
    }
}
