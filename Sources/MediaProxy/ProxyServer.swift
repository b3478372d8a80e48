import Foundation
import Logging
import MediaCache
import NIOConcurrencyHelpers
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
    /// Seconds a connection may go without a write (or a client without reading) before it is closed.
    let idleTimeout: TimeInterval
    /// When this server started: rewritten playlists point at it, so they are no older than this.
    let startedAt: Date
    let logger: Logger
    /// Which query parameters the cache keys of `url=` leave out (a request's `&key=` names its key instead).
    let keyRule: CacheKeyRule
    /// Told of every request answered (an access log).
    let onAccess: (@Sendable (ProxyAccess) -> Void)?
    private let channel: Channel
    let connections = ResponseCount()
    /// The accepted connections still open, closed by `shutdown`.
    private let accepted = NIOLockedValueBox<[ObjectIdentifier: Channel]>([:])

    /// The longest `&key=` accepted, in bytes.
    static let maximumKeyLength = 1024
    /// How long a request waits for the once-per-session check of a cached copy before it is served anyway.
    static let validationWait: Duration = .seconds(1)
    /// The first origin request for a client's read runs this far past its offset (then twice what it has read).
    static let readAhead: Int64 = 64 << 10

    /// Client connections open now.
    public var openConnections: Int { connections.value }

    /// `http://127.0.0.1:PORT/TOKEN/`.
    public var baseURL: String { "http://127.0.0.1:\(port)/\(token)/" }

    /// Binds 127.0.0.1:`port` (0 picks a free port) with `token` (nil: a fresh random one; see `isValidToken`).
    /// A connection on which nothing is written for `idleTimeout` seconds — an idle keep-alive, or a client that
    /// stopped reading its response — is closed, so a stalled client never holds a resource. `onAccess` is told
    /// of every request answered. `keyRule` says which query parameters of `url=` name no bytes (signatures).
    public init(
        loader: MediaLoader, port: Int = 0, idleTimeout: TimeInterval = 30, token: String? = nil,
        keyRule: CacheKeyRule = .standard, logger: Logger = Logger(label: "MediaProxy"),
        onAccess: (@Sendable (ProxyAccess) -> Void)? = nil
    ) async throws {
        self.loader = loader
        self.keyRule = keyRule
        // (Whole seconds: what an HTTP date can say.)
        startedAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        self.idleTimeout = idleTimeout
        self.logger = logger
        self.onAccess = onAccess
        if let token {
            guard Self.isValidToken(token) else { throw ProxyError.badToken }
            self.token = token
        } else {
            self.token = Self.randomToken()
        }
        let box = ProxyBox()
        let connections = self.connections
        let accepted = self.accepted
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let id = ObjectIdentifier(channel)
                accepted.withLockedValue { $0[id] = channel }
                channel.closeFuture.whenComplete { _ in _ = accepted.withLockedValue { $0.removeValue(forKey: id) } }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(writeTimeout: .milliseconds(Int64(idleTimeout * 1000))))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(ProxyHandler(box: box, connections: connections))
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw ProxyError.portInUse(port: port)
        } catch let error as IOError {
            throw ProxyError.cannotListen(port: port, reason: String(cString: strerror(error.errnoCode)))
        } catch {
            throw ProxyError.cannotListen(port: port, reason: "\(error)")
        }
        self.port = channel.localAddress?.port ?? port
        box.set(self)
    }

    /// A new random token: 32 hex digits.
    public static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// True for 16 to 128 letters, digits, `-` and `_`: hard to guess, and safe in a URL path as it is.
    public static func isValidToken(_ token: String) -> Bool {
        (16...128).contains(token.count)
            && token.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") }
    }

    /// Stops accepting connections and closes those open (a response in progress is cut, as when the process ends).
    public func shutdown() async {
        try? await channel.close()
        // A client's idle keep-alive connection would otherwise stay open with nothing behind it: a request sent
        // on it (a client that pools connections by port, meeting a new server on the same port) would never be
        // answered.
        for connection in accepted.withLockedValue({ Array($0.values) }) { try? await connection.close() }
    }

    /// The proxy URL for an origin URL, cached under `key` when one is given (else under the key rule's key).
    public func mediaURL(for origin: URL, key: String? = nil) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let url = baseURL + "media?url=" + (origin.absoluteString.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        guard let key else { return url }
        return url + "&key=" + (key.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
    }
}

/// Why the proxy could not start.
public enum ProxyError: Error, CustomStringConvertible {
    /// Another program listens on the port.
    case portInUse(port: Int)
    /// The token given is too short or has characters a URL path would need to escape.
    case badToken
    /// The port could not be bound for another reason.
    case cannotListen(port: Int, reason: String)

    /// What went wrong, in a sentence.
    public var description: String {
        switch self {
        case .portInUse(let port):
            return "port \(port) on 127.0.0.1 is in use by another program"
        case .cannotListen(let port, let reason):
            return "cannot listen on 127.0.0.1:\(port): \(reason)"
        case .badToken:
            return "the token must be 16 to 128 letters, digits, '-' or '_'"
        }
    }
}

/// Lets child channels reach the server once `init` has finished.
final class ProxyBox: Sendable {
    private let server = NIOLockedValueBox<ProxyServer?>(nil)

    func set(_ server: ProxyServer) { self.server.withLockedValue { $0 = server } }

    func get() -> ProxyServer? { server.withLockedValue { $0 } }
}
