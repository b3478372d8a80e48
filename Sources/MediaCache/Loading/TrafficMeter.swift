import NIOConcurrencyHelpers

/// What the loader counted in this session: requests sent to origins and body bytes received from them, and for
/// every request a reader (not a preload) made, how much the cache answered.
///
/// The figures every display uses, with one definition: **bytes saved** (`cacheBytes`) are bytes readers got from
/// disk that were there before they asked — except, during a viewing (`MediaLoader.viewing(key:_:)`, e.g. a
/// player showing a story), bytes downloaded for that viewing or by a preload ahead of it: those were downloaded
/// for it, so on a first run with an empty cache nothing is saved; **origin bytes**
/// (`originBytesReceived`) are every body byte received from origins, preloads included; the **hit ratio** is
/// bytes saved ÷ (bytes saved + origin bytes).
public struct LoaderMetrics: Sendable, Equatable {
    /// Requests answered wholly from cache.
    public var hits = 0
    /// Requests answered partly from cache.
    public var partials = 0
    /// Requests answered wholly from the origin.
    public var misses = 0
    /// Bytes saved (see above).
    public var cacheBytes: Int64 = 0
    /// Bytes readers got that were not saved: fetched for them, or downloaded earlier in the same viewing.
    public var originBytes: Int64 = 0
    /// Bytes preloads delivered from the origin.
    public var preloadedBytes: Int64 = 0
    /// Requests sent to origins (GET and HEAD).
    public var originRequests = 0
    /// Body bytes received from origins (cached, streamed through, or compared with cached bytes).
    public var originBytesReceived: Int64 = 0

    /// Bytes saved ÷ (bytes saved + origin bytes), once anything moved.
    public var hitRatio: Double? {
        let total = cacheBytes + originBytesReceived
        return total > 0 ? Double(cacheBytes) / Double(total) : nil
    }
}

/// The one place traffic is counted: the session's `LoaderMetrics`, and the store's persistent totals (bytes from
/// origins, bytes served from disk, per resource and overall), so every figure shown comes from the same counts.
final class TrafficMeter: Sendable {
    private let counts = NIOLockedValueBox(LoaderMetrics())
    /// Per resource: viewings and preloads under way, and the bytes downloaded for them (not saved when read).
    private struct Fresh {
        var viewings = 0
        var preloads = 0
        /// A preload ran since the last viewing ended: the tail of its last block, written after it ended, is
        /// downloaded for the viewing to come too.
        var preloaded = false
        var ranges = ByteRangeSet()
        /// Bytes counted as saved in the viewing under way: a viewing's readers (a player's download and its
        /// decoder) read the same bytes, which a viewing saves once.
        var counted = ByteRangeSet()
    }
    private let fresh = NIOLockedValueBox([CacheKey: Fresh]())
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
            guard !report.isPreload else {
                m.preloadedBytes += report.originBytes
                return
            }
            switch report.outcome {
            case .hit: m.hits += 1
            case .partial: m.partials += 1
            case .miss, .offline: m.misses += 1
            // A file read from disk is not the cache's work (such requests are not recorded).
            case .local: return
            }
            m.cacheBytes += report.savedBytes
            m.originBytes += report.cacheBytes + report.originBytes - report.savedBytes
        }
        if !report.isPreload { store.recordTraffic(key: report.key, origin: 0, cacheHit: report.savedBytes) }
    }

    /// `range` of `key` was downloaded (written to the cache): for the viewing or preload under way, if any.
    func downloaded(_ range: ByteRange, for key: CacheKey) {
        guard !range.isEmpty else { return }
        fresh.withLockedValue { all in
            guard var entry = all[key], entry.viewings > 0 || entry.preloads > 0 || entry.preloaded else { return }
            entry.ranges.insert(range)
            all[key] = entry
        }
    }

    /// A viewing (`viewing: true`) or a preload of `key` begins (`delta` 1) or ends (-1). When the last viewing
    /// ends, what was downloaded for it is forgotten: read again later, it is saved. A preload's downloads stay
    /// for the viewing that follows.
    func adjust(_ key: CacheKey, viewing: Bool, by delta: Int) {
        fresh.withLockedValue { all in
            var entry = all[key] ?? Fresh()
            if viewing { entry.viewings = Swift.max(0, entry.viewings + delta) } else {
                entry.preloads = Swift.max(0, entry.preloads + delta)
                if delta > 0 { entry.preloaded = true }
            }
            if viewing, delta < 0, entry.viewings == 0 {
                entry.ranges = ByteRangeSet()
                entry.counted = ByteRangeSet()
                entry.preloaded = false
            }
            let idle = entry.viewings == 0 && entry.preloads == 0 && !entry.preloaded && entry.ranges.isEmpty
                && entry.counted.isEmpty
            all[key] = idle ? nil : entry
        }
    }

    /// Of `parts` of `key` read from disk, the bytes the cache saved a download of: not those downloaded for
    /// the viewing under way, nor those its readers were already counted for.
    func saved(_ parts: [ByteRange], for key: CacheKey) -> Int64 {
        let total = parts.reduce(Int64(0)) { $0 + Int64($1.count) }
        return fresh.withLockedValue { all in
            guard var entry = all[key] else { return total }
            var saved: Int64 = 0
            for part in parts {
                var rest = ByteRangeSet([part])
                for range in entry.ranges.present(in: part) + entry.counted.present(in: part) { rest.remove(range) }
                saved += rest.total
                if entry.viewings > 0 { entry.counted.insert(part) }
            }
            all[key] = entry
            return saved
        }
    }
}
