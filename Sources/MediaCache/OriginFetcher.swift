import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Timeouts and redirect limits for origin requests.
public struct OriginClientConfiguration: Sendable, Equatable {
    /// Time allowed to connect.
    public var connectTimeout: TimeInterval = 5
    /// Longest silence allowed while a response is streaming.
    public var readTimeout: TimeInterval = 10
    /// Redirects followed before failing.
    public var maxRedirects = 5

    /// The defaults.
    public init() {}
}

/// The parts of an origin response the loader uses.
struct OriginResponse {
    var status: Int
    var reason: String
    var headers: HTTPHeaders
    var body: HTTPClientResponse.Body

    var etag: String? { headers.first(name: "etag") }
    var lastModified: String? { headers.first(name: "last-modified") }
    var contentType: String? { headers.first(name: "content-type") }
    var contentLength: Int64? { headers.first(name: "content-length").flatMap { Int64($0) } }
    var contentRangeHeader: String? { headers.first(name: "content-range") }
}

/// Issues GET and HEAD requests on one shared AsyncHTTPClient, mapping failures to `OriginError`.
final class OriginFetcher: Sendable {
    let client: HTTPClient

    init(configuration: OriginClientConfiguration) {
        var config = HTTPClient.Configuration(
            redirectConfiguration: .follow(max: configuration.maxRedirects, allowCycles: false),
            timeout: .init(
                connect: .milliseconds(Int64(configuration.connectTimeout * 1000)),
                read: .milliseconds(Int64(configuration.readTimeout * 1000))),
            decompression: .disabled)
        config.connectionPool = .init(idleTimeout: .seconds(30))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }

    /// A loader dropped without `shutdown` still closes its connections (the client stays alive until it has).
    deinit {
        _ = client.shutdown()
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// Sends the request and returns once the response head arrived; the body streams with back-pressure.
    func send(url: URL, method: HTTPMethod, range: String? = nil, ifRange: String? = nil) async throws
        -> OriginResponse
    {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw OriginError.unsupportedScheme(url: url.absoluteString)
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        request.headers.add(name: "User-Agent", value: "stories-tui MediaCache")
        request.headers.add(name: "Accept-Encoding", value: "identity")
        if let range { request.headers.add(name: "Range", value: range) }
        if let ifRange { request.headers.add(name: "If-Range", value: ifRange) }
        do {
            // The deadline bounds the whole exchange; stalls are caught earlier by the read timeout.
            let response = try await client.execute(request, timeout: .hours(6))
            return OriginResponse(
                status: Int(response.status.code), reason: response.status.reasonPhrase, headers: response.headers,
                body: response.body)
        } catch {
            throw Self.map(error, url: url, beforeResponse: true)
        }
    }

    /// The next body buffer (nil at the end), with transport failures mapped to `OriginError`.
    static func nextBuffer(_ iterator: inout HTTPClientResponse.Body.AsyncIterator, url: URL) async throws
        -> ByteBuffer?
    {
        do {
            return try await iterator.next()
        } catch {
            throw map(error, url: url, beforeResponse: false)
        }
    }

    /// Maps a client error to `OriginError`.
    static func map(_ error: any Error, url: URL, beforeResponse: Bool) -> any Error {
        if error is OriginError || error is CancellationError || error is CacheError { return error }
        let text = String(describing: error)
        if let client = error as? HTTPClientError {
            switch client {
            case .readTimeout: return OriginError.timeout(url: url.absoluteString)
            case .redirectLimitReached, .redirectCycleDetected:
                return OriginError.tooManyRedirects(url: url.absoluteString)
            case .cancelled: return CancellationError()
            default: break
            }
        }
        return beforeResponse
            ? OriginError.unreachable(url: url.absoluteString, reason: text)
            : OriginError.connectionLost(url: url.absoluteString, reason: text)
    }
}
