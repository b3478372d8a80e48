import Foundation
import MediaCache
import MediaOrigin

/// A store, a loader and an in-process origin in a fresh directory — the set-up every suite above the store
/// needs; `restart` is a new run of the program on the same cache.
open class CacheHarness: @unchecked Sendable {
    /// The origin the loader fetches from.
    public let origin: MediaOriginServer
    /// The cache directory (removed by `close`).
    public let directory: URL
    /// The store (a test may replace it, e.g. with a read-only one).
    public var store: CacheStore
    /// The loader over `store`.
    public var loader: MediaLoader
    /// The loader's configuration, used again by `restart`.
    public var configuration: LoaderConfiguration
    /// The store's configuration, used again by `restart`.
    public var cacheConfiguration: CacheConfiguration
    /// Whether `restart` also restarts the origin's counters (a new run measured on its own).
    public var restartsOriginCounters = false

    /// A harness over `origin` (a plain one when nil) in `directory` (a fresh one when nil).
    public init(
        origin: MediaOriginServer? = nil, directory: URL? = nil,
        cacheConfiguration: CacheConfiguration = testConfiguration(),
        configuration: LoaderConfiguration = CacheHarness.defaultConfiguration
    ) async throws {
        if let origin {
            self.origin = origin
        } else {
            self.origin = try await MediaOriginServer()
        }
        self.directory = directory ?? TemporaryDirectory().url
        self.configuration = configuration
        self.cacheConfiguration = cacheConfiguration
        store = try CacheStore(directory: self.directory, configuration: cacheConfiguration)
        loader = MediaLoader(store: store, configuration: configuration)
    }

    /// Generous origin timeouts and no minimum throughput: a slow run (the thread sanitizer, the crowded start of a
    /// loaded run, where a test of two seconds takes a hundred) must not turn into retries, which send again the
    /// bytes that were on their way. Tests of those rules set them.
    public static var defaultConfiguration: LoaderConfiguration {
        var configuration = LoaderConfiguration()
        configuration.client.connectTimeout = 60
        configuration.client.readTimeout = 60
        configuration.client.minimumBytesPerSecond = 0
        return configuration
    }

    /// The directory as a scratch directory (for paths inside it).
    public var dir: TemporaryDirectory { TemporaryDirectory(url: directory) }

    /// A new store and loader on the same directory (a process restart).
    open func restart() async throws {
        await loader.shutdown()
        try store.close()
        if restartsOriginCounters { await origin.resetCounters() }
        store = try CacheStore(directory: directory, configuration: cacheConfiguration)
        loader = MediaLoader(store: store, configuration: configuration)
    }

    /// The origin URL of `name`.
    public func url(_ name: String) -> URL { origin.url(name) }

    /// Reads `offset..<offset+length` (to the end when nil) of `name` through the loader.
    public func read(_ name: String, _ offset: Int64 = 0, _ length: Int64? = nil) async throws -> [UInt8] {
        try await loader.data(LoadingRequest(url: url(name), requestedOffset: offset, requestedLength: length))
    }

    /// Shuts everything down and removes the directory.
    open func close() async {
        await loader.shutdown()
        try? store.close()
        await origin.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A fresh directory path under the system temp directory (not created), removed by `cleanup`.
public struct TemporaryDirectory: Sendable {
    /// Its URL.
    public let url: URL

    /// A new unique path.
    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("mediacache-tests-\(UUID().uuidString)")
    }

    /// An existing path.
    public init(url: URL) { self.url = url }

    /// Its path.
    public var path: String { url.path }

    /// Removes it and everything in it.
    public func cleanup() { try? FileManager.default.removeItem(at: url) }
}

/// A store configuration for tests: no free-space check, then `adjust`.
public func testConfiguration(_ adjust: (inout CacheConfiguration) -> Void = { _ in }) -> CacheConfiguration {
    var configuration = CacheConfiguration()
    configuration.minimumFreeDiskBytes = 0
    adjust(&configuration)
    return configuration
}

/// Distinct deterministic content: `seed` changes every byte.
public func content(_ count: Int, seed: Int = 1) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ ($0 >> 8) ^ seed &* 77) }
}

/// Polls `condition` every few milliseconds until it holds or `limit` passes; returns whether it held. The default
/// is generous: a loaded machine may take long, and only a failing test waits it out.
public func eventually(within limit: Duration = .seconds(120), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// The number of bytes a `Range: bytes=A-B` header asks for; nil for a malformed one, and for an open-ended one
/// unless the resource's `length` is given (a request for the last bytes is open-ended, to catch an origin whose
/// Content-Range totals fall short).
public func requestedRangeSize(_ range: String?, length: Int? = nil) -> Int? {
    guard let range, range.hasPrefix("bytes=") else { return nil }
    let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 2, let from = Int(parts[0]) else { return nil }
    if parts[1].isEmpty { return length.map { $0 - from } }
    guard let to = Int(parts[1]) else { return nil }
    return to - from + 1
}
