import NIOConcurrencyHelpers

/// The keys of a viewing in progress (see `MediaLoader.viewing(keys:growing:)`), which may grow while it runs.
public final class ViewingScope: Sendable {
    private let traffic: TrafficMeter
    private let keys = NIOLockedValueBox<(included: Set<CacheKey>, ended: Bool)>(([], false))

    init(traffic: TrafficMeter) { self.traffic = traffic }

    /// Counts `keys` as part of the viewing from now until it ends.
    public func include(_ keys: [CacheKey]) {
        // Counted under the scope's lock, so an `end` racing with it never leaves a key counted.
        self.keys.withLockedValue { state in
            guard !state.ended else { return }
            for key in keys where state.included.insert(key).inserted { traffic.adjust(key, viewing: true, by: 1) }
        }
    }

    /// Ends the viewing of every key included.
    func end() {
        keys.withLockedValue { state in
            state.ended = true
            for key in state.included { traffic.adjust(key, viewing: true, by: -1) }
            state.included = []
        }
    }
}
