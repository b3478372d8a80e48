import NIOConcurrencyHelpers

/// What the loader counted in this session: requests sent to origins and body bytes received from them, and for
/// every request answered how much the cache answered.
public struct LoaderMetrics: Sendable, Equatable {
    /// Requests answered wholly from cache.
    public var hits = 0
    /// Requests answered partly from cache.
    public var partials = 0
    /// Requests answered wholly from the origin.
    public var misses = 0
    /// Bytes delivered that were cached before their request.
    public var cacheBytes: Int64 = 0
    /// Bytes delivered that came from the origin.
    public var originBytes: Int64 = 0
    /// Requests sent to origins (GET and HEAD).
    public var originRequests = 0
    /// Body bytes received from origins (cached, streamed through, or compared with cached bytes).
    public var originBytesReceived: Int64 = 0
}

/// The one place traffic is counted: the session's `LoaderMetrics`, and the store's persistent totals (bytes from
/// origins, bytes served from disk, per resource and overall), so every figure shown comes from the same counts.
final class TrafficMeter: Sendable {
    private let counts = NIOLockedValueBox(LoaderMetrics())
    private let store: CacheStore

    init(store: CacheStore) { self.store = store }

    /// The counts so far.
    var metrics: LoaderMetrics { counts.withLockedValue { $0 } }

    /// A request went to an origin.
    func sentRequest() { counts.withLockedValue { $0.originRequests += 1 } }

    /// `count` body bytes of `key` arrived from its origin.
    func received(_ count: Int64, for key: CacheKey) {
        guard count > 0 else { return }
        counts.withLockedValue { $0.originBytesReceived += count }
        store.recordTraffic(key: key, origin: count, cacheHit: 0)
    }

    /// A request was answered (`report` says how much came from the cache).
    func answered(_ report: RequestReport) {
        counts.withLockedValue { m in
            switch report.outcome {
            case .hit: m.hits += 1
            case .partial: m.partials += 1
            case .miss, .offline: m.misses += 1
            }
            m.cacheBytes += report.cacheBytes
            m.originBytes += report.originBytes
        }
        store.recordTraffic(key: report.key, origin: 0, cacheHit: report.cacheBytes)
    }
}
