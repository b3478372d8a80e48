import ArgumentParser
import Foundation
import Logging
import MediaCache
import MediaProxy
import NIOConcurrencyHelpers

/// `stories-tui serve [--port P] [--token T] [--access-log FILE] [--quiet]`: a local proxy any player can stream
/// through.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run a local HTTP proxy that streams any http(s) video through the cache.",
        discussion: """
            Prints "proxy listening on http://127.0.0.1:PORT/TOKEN/" first. Then \
            GET or HEAD {that base}media?url=PERCENT-ENCODED-URL serves the video with full single-range support \
            while it downloads, e.g.: ffplay "http://127.0.0.1:PORT/TOKEN/media?url=https%3A%2F%2Fcdn%2Fa.mp4". \
            Requests without the token get 403. The token is kept in the cache directory (proxy-token, readable \
            by you only) so saved URLs keep working after a restart; --token sets one. Stop with Ctrl-C.

            --access-log FILE appends one line per request: time, method, status, range, bytes sent, HIT, \
            PARTIAL or MISS, duration and the origin URL.
            """)

    @Option(help: "Port on 127.0.0.1 (0 picks a free one).") var port: Int = 0
    @Option(help: ArgumentHelp(
        "The secret path segment (16 to 128 letters, digits, - or _); default: the one kept in the cache directory.",
        valueName: "TOKEN"))
    var token: String?
    @Option(help: ArgumentHelp("Append one line per request to FILE.", valueName: "FILE")) var accessLog: String?
    @Flag(help: "Print only the first line and errors (no warnings).") var quiet = false
    @OptionGroup var cache: CacheDirOption
    @OptionGroup(title: "Cache budgets") var budgets: BudgetOptions

    func run() async throws {
        try await reportingFailures {
            guard (0...65535).contains(port) else {
                throw CLIFailure(message: "--port: \(port) is not a port (use 0 to 65535)", exitCode: 2)
            }
            if let token, !ProxyServer.isValidToken(token) {
                throw CLIFailure(message: "--token: \(ProxyError.badToken)", exitCode: 2)
            }
            var log: AccessLogFile?
            var onAccess: (@Sendable (ProxyAccess) -> Void)?
            if let accessLog {
                do {
                    let file = try AccessLogFile(path: accessLog)
                    log = file
                    onAccess = { access in file.append(access.line) }
                } catch {
                    throw CLIFailure(message: "--access-log: cannot open \(accessLog): \(error)", exitCode: 2)
                }
            }
            var logger = CLILogging.logger()
            if quiet { logger.logLevel = .error }
            let keyRule = try FollowSettings.read().keyRule
            let store = try cache.openStore(budgets: budgets)
            let loader = MediaLoader(store: store, configuration: LoaderDefaults.configuration, logger: logger)
            let proxy: ProxyServer
            do {
                let chosen = try token ?? ProxyTokenFile.token(in: store.directory, readOnly: store.isReadOnly)
                proxy = try await ProxyServer(
                    loader: loader, port: port, token: chosen, keyRule: keyRule, logger: logger,
                    onAccess: onAccess)
            } catch {
                await loader.shutdown()
                try? store.close()
                if error is ProxyError {
                    throw CLIFailure(
                        message: "serve: \(error) (choose another with --port, or --port 0 for any free port)", exitCode: 1)
                }
                throw CLIFailure(message: "serve: \(error)", exitCode: 1)
            }
            // Signals are watched before the first line goes out, so one sent right after it stops cleanly.
            let (stop, continuation) = AsyncStream<Void>.makeStream()
            let watcher = SignalWatcher { continuation.finish() }
            // Nobody reading the first line is no reason to stop serving.
            try? StandardStreams.printOut("proxy listening on \(proxy.baseURL)")
            for await _ in stop {}
            watcher.stop()
            await proxy.shutdown()
            await loader.shutdown()
            try? store.close()
            log?.close()
            if !quiet { StandardStreams.writeError("stories-tui: proxy stopped; cache saved\n") }
            watcher.exitIfSignalled()
        }
    }
}

/// The proxy's token kept in the cache directory (`proxy-token`, mode 0600), so its URLs outlive a restart.
enum ProxyTokenFile {
    static let name = "proxy-token"

    /// The kept token, or a new one written there (a read-only cache gets a new one each run).
    static func token(in directory: URL, readOnly: Bool) throws -> String {
        let path = directory.appendingPathComponent(name).path
        if let data = FileManager.default.contents(atPath: path) {
            let kept = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if ProxyServer.isValidToken(kept) { return kept }
        }
        let fresh = ProxyServer.randomToken()
        guard !readOnly else { return fresh }
        let temporary = path + ".new"
        guard FileManager.default.createFile(
            atPath: temporary, contents: Data((fresh + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw CLIFailure(message: "cannot keep the proxy token in \(path)", exitCode: 1)
        }
        guard rename(temporary, path) == 0 else {
            throw CLIFailure(message: "cannot keep the proxy token in \(path)", exitCode: 1)
        }
        return fresh
    }
}

/// An append-only access log: one line per request, written as it ends.
final class AccessLogFile: Sendable {
    private let handle: NIOLockedValueBox<FileHandle>

    init(path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            else { throw CLIFailure(message: "cannot create it", exitCode: 2) }
        }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try file.seekToEnd()
        handle = NIOLockedValueBox(file)
    }

    func append(_ line: String) {
        handle.withLockedValue { try? $0.write(contentsOf: Data((line + "\n").utf8)) }
    }

    func close() { handle.withLockedValue { try? $0.close() } }
}
