import Foundation
import Logging
import MediaCache
import NIOCore
import NIOHTTP1
import NIOPosix

/// A local HTTP proxy on 127.0.0.1 that serves `GET`/`HEAD {base}media?url=ENCODED` through the cache, so any
/// player streams through it. Requests must carry the random token in their path.
public final class ProxyServer: Sendable {
    /// The port bound.
    public let port: Int
    /// The secret path segment every request must start with.
    public let token: String
    let loader: MediaLoader
    let logger: Logger
    private let channel: Channel
    let connections = ResponseCount()

    /// How long a request waits for the once-per-session check of a cached copy before it is served anyway.
    static let validationWait: Duration = .seconds(1)

    /// Client connections open now.
    public var openConnections: Int { connections.value.load(ordering: .sequentiallyConsistent) }

    /// `http://127.0.0.1:PORT/TOKEN/`.
    public var baseURL: String { "http://127.0.0.1:\(port)/\(token)/" }

    /// Binds 127.0.0.1:`port` (0 picks a free port) with a fresh random token. A connection on which nothing is
    /// written for `idleTimeout` seconds — an idle keep-alive, or a client that stopped reading its response — is
    /// closed, so a stalled client never holds a resource.
    public init(
        loader: MediaLoader, port: Int = 0, idleTimeout: TimeInterval = 30,
        logger: Logger = Logger(label: "MediaProxy")
    ) async throws {
        self.loader = loader
        self.logger = logger
        var generator = SystemRandomNumberGenerator()
        token = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let box = ProxyBox()
        let connections = self.connections
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(writeTimeout: .milliseconds(Int64(idleTimeout * 1000))))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(ProxyHandler(box: box, connections: connections))
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        } catch {
            throw ProxyError.cannotListen(port: port, reason: "\(error)")
        }
        self.port = channel.localAddress?.port ?? port
        box.set(self)
    }

    /// Stops accepting connections; responses in progress end when their clients go.
    public func shutdown() async {
        try? await channel.close()
    }

    /// The proxy URL for an origin URL.
    public func mediaURL(for origin: URL) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return baseURL + "media?url=" + (origin.absoluteString.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
    }
}

/// Why the proxy could not start.
public enum ProxyError: Error, CustomStringConvertible {
    /// The port could not be bound.
    case cannotListen(port: Int, reason: String)

    public var description: String {
        switch self {
        case .cannotListen(let port, let reason):
            return "cannot listen on 127.0.0.1:\(port) (\(reason)); pick another --port or 0 for any free one"
        }
    }
}

/// Lets child channels reach the server once `init` has finished.
final class ProxyBox: @unchecked Sendable {
    private let lock = NSLock()
    private var server: ProxyServer?

    func set(_ server: ProxyServer) {
        lock.lock()
        self.server = server
        lock.unlock()
    }

    func get() -> ProxyServer? {
        lock.lock()
        defer { lock.unlock() }
        return server
    }
}
