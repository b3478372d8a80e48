import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOConcurrencyHelpers

/// An in-process HTTP origin on 127.0.0.1 for tests and the demo: serves resources with single-range support, HEAD,
/// ETag and Last-Modified, and shapes bandwidth and latency; a rule can change its answers. Counts every body byte
/// it sends.
public final class MediaOriginServer: Sendable {
    struct State {
        var resources: [String: OriginResource] = [:]
        var redirects: [String: String] = [:]
        var root: URL?
        /// Folders whose files are served at their own absolute paths.
        var folders: [String] = []
        var profile: NetworkProfile = .unlimited
        var rule: (any OriginRule)?
        var requests: [OriginRequestRecord] = []
        var bodyBytesSent = 0
        var activeResponses = 0
        /// What continues each paused response (on its event loop).
        var paused: [@Sendable () -> Void] = []
        var shutDown = false
        var epoch = 0
        /// When the shared link has sent everything reserved so far (scheduler seconds).
        var linkFreeAt: Double = 0
    }

    let state = NIOLockedValueBox(State())
    private let channel: Channel
    private let group: MultiThreadedEventLoopGroup
    private let serverBox: ServerBox

    /// Shaping timers; nil for the event loop's own.
    let scheduler: OriginScheduler?

    /// The port bound on 127.0.0.1.
    public let port: Int

    /// `http://127.0.0.1:PORT`.
    public var baseURL: URL {
        // The literal is well formed for every port.
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// Starts the origin on 127.0.0.1 (`port` 0 picks a free one). `root` serves files below it for paths not
    /// registered with `set(_:at:)`; `folders` serves the files below each at their own absolute paths (a story
    /// from anywhere on the machine, nothing outside the folders named).
    public init(
        port: Int = 0, root: URL? = nil, folders: [URL] = [], profile: NetworkProfile = .unlimited,
        scheduler: OriginScheduler? = nil
    ) async throws {
        self.scheduler = scheduler
        // Its own thread: a busy origin must not starve the clients it serves in the same process.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        state.withLockedValue {
            $0.root = root
            $0.folders = folders.map { folder in
                let path = folder.standardizedFileURL.path
                return path.hasSuffix("/") ? path : path + "/"
            }
            $0.profile = profile
        }
        let box = ServerBox()
        serverBox = box
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(OriginHandler(server: box))
                }
            }
        channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        self.port = channel.localAddress?.port ?? port
        box.server.withLockedValue { $0 = self }
    }

    private let started = ContinuousClock.now

    /// Seconds on the shaping clock (the scheduler's, else monotonic time since start).
    var shapingNow: Double {
        if let scheduler { return scheduler.now }
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Reserves the link for `bytes` at `rate` and returns how long the sender waits before its next chunk: its
    /// own transmission time when the link is idle, longer when other responses are queued on it.
    func reserveLink(bytes: Int, rate: Int) -> Double {
        let now = shapingNow
        return state.withLockedValue { s in
            let start = Swift.max(now, s.linkFreeAt)
            s.linkFreeAt = start + Double(bytes) / Double(rate)
            return s.linkFreeAt - now
        }
    }

    /// Stops listening and closes open connections.
    public func shutdown() async {
        let first = state.withLockedValue { state -> Bool in
            defer { state.shutDown = true }
            return !state.shutDown
        }
        guard first else { return }
        try? await channel.close()
        serverBox.server.withLockedValue { $0 = nil }
        try? await group.shutdownGracefully()
    }

    /// Registers (or replaces) the resource at `path` (e.g. `/a.mp4`).
    public func set(_ resource: OriginResource, at path: String) {
        state.withLockedValue { $0.resources[path] = resource }
    }

    /// Makes `path` answer 302 to `location`.
    public func redirect(_ path: String, to location: String) {
        state.withLockedValue { $0.redirects[path] = location }
    }

    /// Forgets every redirect.
    public func removeRedirects() {
        state.withLockedValue { $0.redirects.removeAll() }
    }

    /// Changes the simulated link.
    public func setProfile(_ profile: NetworkProfile) {
        state.withLockedValue { $0.profile = profile }
    }

    /// The rule that changes the origin's answers (nil: the standard answers).
    public var rule: (any OriginRule)? {
        get { state.withLockedValue { $0.rule } }
        set { state.withLockedValue { $0.rule = newValue } }
    }

    /// Every request so far, in arrival order.
    public var requests: [OriginRequestRecord] { state.withLockedValue { $0.requests } }

    /// Body bytes sent so far, across all requests.
    public var bodyBytesSent: Int { state.withLockedValue { $0.bodyBytesSent } }

    /// Tells the rule to stop pausing (`OriginRule.resume`) and lets paused responses continue.
    public func resumePaused() {
        let paused = state.withLockedValue { state -> [@Sendable () -> Void] in
            state.rule?.resume()
            defer { state.paused.removeAll() }
            return state.paused
        }
        for resume in paused { resume() }
    }

    /// Responses paused by the rule right now.
    public var pausedResponses: Int { state.withLockedValue { $0.paused.count } }

    /// Responses still being sent (a cancelled client's response ends when the server notices the close).
    public var activeResponses: Int { state.withLockedValue { $0.activeResponses } }

    /// Waits (polling, up to `timeout` seconds) until no response is being sent, so the counters hold every byte
    /// of the responses so far.
    public func waitUntilIdle(timeout: Double = 10) async {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while activeResponses > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits (polling, up to `timeout` seconds) until no response is being sent, then forgets the request log and
    /// byte count, so bytes of earlier responses are never counted afterwards.
    public func resetCounters(timeout: Double = 10) async {
        await waitUntilIdle(timeout: timeout)
        state.withLockedValue {
            $0.requests.removeAll()
            $0.bodyBytesSent = 0
            $0.epoch += 1
        }
    }

    /// The URL of `path` on this origin.
    public func url(_ path: String) -> URL { baseURL.appendingPathComponent(path) }

    /// The `Content-Type` for a file name's extension: MP4, HLS playlists and their MPEG-TS segments.
    public static func contentType(ofExtension pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "mp4", "m4s": return "video/mp4"
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "ts": return "video/mp2t"
        default: return "application/octet-stream"
        }
    }

    func resource(at path: String) -> OriginResource? {
        let (registered, root, folders) = state.withLockedValue { ($0.resources[path], $0.root, $0.folders) }
        if let registered { return registered }
        guard !path.split(separator: "/").contains("..") else { return nil }
        let file: URL
        if folders.contains(where: { path.hasPrefix($0) }) {
            file = URL(fileURLWithPath: path)
        } else if let root {
            file = root.appendingPathComponent(String(path.drop(while: { $0 == "/" })))
        } else {
            return nil
        }
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        return OriginResource(bytes: [UInt8](data), contentType: Self.contentType(ofExtension: file.pathExtension))
    }
}

/// Lets the channel initializer refer to the server before `init` finishes; cleared at shutdown.
final class ServerBox: Sendable {
    let server = NIOLockedValueBox<MediaOriginServer?>(nil)
}
