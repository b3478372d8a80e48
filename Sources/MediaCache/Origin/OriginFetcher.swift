import AsyncHTTPClient
import Foundation
import HTTPSemantics
import NIOConcurrencyHelpers
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
    /// A response body arriving slower than this many bytes per second over `minimumThroughputWindow` fails with
    /// "origin too slow"; 0 turns the rule off.
    public var minimumBytesPerSecond = 4_096
    /// Seconds over which `minimumBytesPerSecond` is measured.
    public var minimumThroughputWindow: TimeInterval = 15
    /// The `User-Agent` sent with every origin request.
    public var userAgent = "MediaCache"

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
    /// The body's length as declared by Content-Length (nil for a chunked body, whose end is its length).
    var declaredLength: Int64? { headers.first(name: "transfer-encoding") == nil ? contentLength : nil }
    /// How long the answer, received at `receivedAt`, may be used without asking again (nil: it gives no
    /// freshness, or says no-cache); `lastModified` stands for the answer's own (a 304 may leave it out).
    func freshnessLifetime(receivedAt: Date, lastModified: String? = nil) -> TimeInterval? {
        HTTPFreshness.lifetime(
            cacheControl: headers[canonicalForm: "cache-control"].map(String.init).joined(separator: ","),
            expires: headers.first(name: "expires"), date: headers.first(name: "date"), age: headers.first(name: "age"),
            lastModified: self.lastModified ?? lastModified, receivedAt: receivedAt)
    }
}

/// Issues GET and HEAD requests on one shared AsyncHTTPClient, mapping failures to `OriginError`.
final class OriginFetcher: Sendable {
    let configuration: OriginClientConfiguration
    /// Created with the first request: a process that finds what it needs cached and fresh never starts the
    /// client (nor its event loop threads), nor builds its configuration (its TLS settings cost as much as a
    /// cached read's index queries).
    private let created = NIOLockedValueBox<HTTPClient?>(nil)
    /// Headers the requests for some URLs carry (see `MediaLoader.setRequestHeaders`).
    let extraHeaders = NIOLockedValueBox(RequestHeaderTable())

    init(configuration: OriginClientConfiguration) {
        self.configuration = configuration
    }

    /// The client's settings for `configuration`.
    private static func clientConfiguration(_ configuration: OriginClientConfiguration) -> HTTPClient.Configuration {
        var config = HTTPClient.Configuration(
            // Redirects are followed here, not by the client, so every target passes `OriginURL.validate`.
            redirectConfiguration: .disallow,
            timeout: .init(
                connect: .milliseconds(Int64(configuration.connectTimeout * 1000)),
                read: .milliseconds(Int64(configuration.readTimeout * 1000))),
            decompression: .disabled)
        config.connectionPool = .init(idleTimeout: .seconds(30))
        // A refused connection fails at once (the client would otherwise retry until the connect timeout): the
        // loader retries transient failures itself, with its own backoff, and an origin that is down must not
        // hold up serving what the cache holds (a `fetch` of a cached file waited 5 s for the check).
        config.connectionPool.retryConnectionEstablishment = false
        return config
    }

    /// True once a request created the client.
    var hasStartedClient: Bool { created.withLockedValue { $0 != nil } }

    private var client: HTTPClient {
        created.withLockedValue { client in
            if let client { return client }
            let made = HTTPClient(
                eventLoopGroupProvider: .singleton, configuration: Self.clientConfiguration(configuration))
            client = made
            return made
        }
    }

    /// A loader dropped without `shutdown` still closes its connections (the client stays alive until it has).
    deinit {
        _ = created.withLockedValue { $0 }?.shutdown()
    }

    func shutdown() async {
        guard let client = created.withLockedValue({ client in defer { client = nil }; return client }) else { return }
        try? await client.shutdown()
    }

    /// Sends the request and returns once the response head arrived; the body streams with back-pressure.
    /// Redirects (301, 302, 303, 307, 308) are followed up to `maxRedirects` times, each target validated first.
    /// `conditions` are sent as they are (`If-None-Match`, `If-Modified-Since`).
    func send(
        url: URL, method: HTTPMethod, range: String? = nil, ifRange: String? = nil,
        conditions: [(String, String)] = []
    ) async throws -> OriginResponse {
        var current = try OriginURL.validate(url)
        var visited: Set<String> = [current.absoluteString]
        var redirects = 0
        let extra = extraHeaders.withLockedValue { $0.headers(for: url) }
        while true {
            // Headers given for a URL go with its redirects on the same host only (cookies stay where they belong).
            let own = current.host?.lowercased() == url.host?.lowercased() ? extra : []
            let response = try await sendOnce(
                url: current, method: method, range: range, ifRange: ifRange, conditions: conditions + own)
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headers.first(name: "location")
            else { return response }
            // The redirect's own body is never read; the response is dropped with it.
            redirects += 1
            guard redirects <= configuration.maxRedirects else {
                throw OriginError.tooManyRedirects(url: url.absoluteString)
            }
            guard let next = URL(string: location, relativeTo: current)?.absoluteURL else {
                throw OriginError.invalidURL(url: location, reason: "redirect target is not a URL")
            }
            do {
                current = try OriginURL.validate(next)
            } catch {
                throw OriginError.invalidURL(
                    url: url.absoluteString, reason: "redirected to \(next.absoluteString), which \(Self.reason(error))")
            }
            guard visited.insert(current.absoluteString).inserted else {
                throw OriginError.tooManyRedirects(url: url.absoluteString)
            }
        }
    }

    private static func reason(_ error: OriginError) -> String {
        if case .invalidURL(_, let reason) = error { return reason }
        return "\(error)"
    }

    private func sendOnce(
        url: URL, method: HTTPMethod, range: String?, ifRange: String?, conditions: [(String, String)]
    ) async throws -> OriginResponse {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        request.headers.add(name: "Accept-Encoding", value: "identity")
        if let range { request.headers.add(name: "Range", value: range) }
        if let ifRange { request.headers.add(name: "If-Range", value: ifRange) }
        for (name, value) in conditions { request.headers.add(name: name, value: value) }
        if !request.headers.contains(name: "User-Agent") {
            request.headers.add(name: "User-Agent", value: configuration.userAgent)
        }
        do {
            // The deadline bounds the whole exchange; stalls are caught earlier by the read timeout and slow
            // trickles by the minimum-throughput rule.
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
        let text = NetworkFailure.reason(error, url: url)
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

/// Bytes received per window, judged against a minimum rate: a plain value so the rule is tested without a network.
struct ThroughputMeter: Sendable, Equatable {
    /// The least acceptable average rate over one window; 0 accepts anything.
    let minimumBytesPerSecond: Int
    /// The window's length in seconds.
    let window: Double
    private(set) var windowStart: Double
    private(set) var windowBytes: Int64 = 0

    init(minimumBytesPerSecond: Int, window: Double, start: Double) {
        self.minimumBytesPerSecond = minimumBytesPerSecond
        self.window = window
        windowStart = start
    }

    /// Counts `bytes` received at `now`; false once a whole window passed with fewer bytes than the minimum.
    mutating func record(_ bytes: Int, at now: Double) -> Bool {
        windowBytes += Int64(bytes)
        guard minimumBytesPerSecond > 0, window > 0, now - windowStart >= window else { return true }
        let enough = Double(windowBytes) >= Double(minimumBytesPerSecond) * (now - windowStart)
        windowStart = now
        windowBytes = 0
        return enough
    }
}

/// A response body read buffer by buffer, failing with `OriginError.tooSlow` when it trickles below the minimum
/// throughput, and with mapped transport errors otherwise.
struct OriginBodyStream {
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private let url: URL
    private var meter: ThroughputMeter
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    init(_ response: OriginResponse, url: URL, configuration: OriginClientConfiguration) {
        iterator = response.body.makeAsyncIterator()
        self.url = url
        origin = clock.now
        meter = ThroughputMeter(
            minimumBytesPerSecond: configuration.minimumBytesPerSecond,
            window: configuration.minimumThroughputWindow, start: 0)
    }

    /// The next buffer, or nil at the end of the body.
    mutating func next() async throws -> ByteBuffer? {
        guard let buffer = try await OriginFetcher.nextBuffer(&iterator, url: url) else { return nil }
        let elapsed = origin.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard meter.record(buffer.readableBytes, at: seconds) else {
            throw OriginError.tooSlow(
                url: url.absoluteString, bytesPerSecond: meter.minimumBytesPerSecond, seconds: meter.window)
        }
        return buffer
    }
}
