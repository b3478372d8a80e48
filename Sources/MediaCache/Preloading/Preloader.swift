import Foundation
import NIOConcurrencyHelpers

/// Fetches the start of upcoming videos ahead of playback, one at a time and nearest first, through the loader
/// (so a player that asks for a resource being preloaded joins the same fetch). A gate lets playback hold
/// preloading back: `pause()` stops it within one slice, `resume()` lets it go on.
public final class Preloader: Sendable {
    struct Job {
        var target: PreloadTarget
        var task: Task<Void, Never>
        var slice: Task<Void, Error>?
        /// The player now wants this resource: its slice in flight is left to finish (never cancelled or
        /// repeated), and the job ends after it.
        var adopted = false
    }

    struct State {
        var queue: [PreloadTarget] = []
        var job: Job?
        var progress: [CacheKey: PreloadProgress] = [:]
        var gateOpen = true
        var gateWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var stopped = false
    }

    let loader: MediaLoader
    /// Tuning.
    public let configuration: PreloadConfiguration
    /// Works out what `.seconds` amounts need (nil: the first `configuration.fallbackBytes`).
    let planner: (any PreloadPlanning)?
    let state = NIOLockedValueBox(State())
    /// Counts changes of `progress` (a preload started, moved on, finished, failed or dropped), for readers that
    /// wait instead of looking.
    public let changes = ChangeSignal()

    /// A preloader fetching through `loader`; `planner` turns `.seconds` into byte ranges for the media formats it
    /// knows.
    public init(
        loader: MediaLoader, configuration: PreloadConfiguration = PreloadConfiguration(),
        planner: (any PreloadPlanning)? = nil
    ) {
        self.loader = loader
        self.configuration = configuration
        self.planner = planner
    }

    /// Replaces the queue with `urls`, nearest first, each preloaded for `configuration.seconds`.
    public func resetPreloading(urls: [URL]) {
        reset(urls.map { PreloadTarget(url: $0, amount: .seconds(configuration.seconds)) })
    }

    /// Replaces the queue with `targets`, nearest first. A preload in flight for a resource no longer wanted is
    /// cancelled, unless it is `playing`'s: then its current slice finishes for the player, which joins it.
    public func reset(_ targets: [PreloadTarget], playing: CacheKey? = nil) {
        var unique: [PreloadTarget] = []
        for target in targets where !unique.contains(where: { $0.key == target.key }) { unique.append(target) }
        let (cancel, start) = state.withLockedValue { s -> (Task<Void, Never>?, Bool) in
            guard !s.stopped else { return (nil, false) }
            let wanted = Set(unique.map(\.key))
            for key in s.progress.keys where !wanted.contains(key) && s.progress[key]?.phase != .preloaded {
                s.progress[key] = nil
            }
            var cancel: Task<Void, Never>?
            if s.job.map({ wanted.contains($0.target.key) }) == true { s.job?.adopted = false }
            if var job = s.job, !wanted.contains(job.target.key) {
                if job.target.key == playing {
                    job.adopted = true
                    s.job = job
                } else {
                    cancel = job.task
                }
            }
            let running = s.job?.target.key
            s.queue = unique.filter { $0.key != running }
            for target in s.queue where s.progress[target.key]?.phase != .preloaded {
                s.progress[target.key] = PreloadProgress(phase: .queued)
            }
            return (cancel, s.job == nil && !s.queue.isEmpty)
        }
        changes.signal()
        cancel?.cancel()
        if start { startNext() }
    }

    /// Holds preloading back (the playing video needs the bandwidth): the slice in flight is cancelled.
    public func pause() {
        let slice = state.withLockedValue { s -> Task<Void, Error>? in
            s.gateOpen = false
            guard let job = s.job, !job.adopted else { return nil }
            return job.slice
        }
        slice?.cancel()
    }

    /// Lets preloading continue.
    public func resume() {
        let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            s.gateOpen = true
            defer { s.gateWaiters = [:] }
            return Array(s.gateWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// True while held back by `pause()`.
    public var isPaused: Bool { state.withLockedValue { !$0.gateOpen } }

    /// Progress of every queued, running, finished or failed preload.
    public var progress: [CacheKey: PreloadProgress] { state.withLockedValue { $0.progress } }

    /// The resource being preloaded now, if any.
    public var active: CacheKey? { state.withLockedValue { $0.job?.target.key } }

    /// Returns once nothing is queued or running.
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLockedValue { s -> Bool in
                if s.job == nil && s.queue.isEmpty { return true }
                s.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Cancels everything and accepts no more work.
    public func stop() async {
        let task = state.withLockedValue { s -> Task<Void, Never>? in
            s.stopped = true
            s.queue = []
            return s.job?.task
        }
        task?.cancel()
        resume()
        await task?.value
    }

    /// Preloads one target now, outside the queue and the gate (the `prefetch` command), reporting progress.
    public func preload(
        _ target: PreloadTarget, onProgress: @escaping @Sendable (PreloadProgress) -> Void = { _ in }
    ) async throws -> PreloadProgress {
        try await run(target, gated: false, onProgress: onProgress)
    }

    private func startNext() {
        state.withLockedValue { s in
            guard s.job == nil, !s.stopped, !s.queue.isEmpty else { return }
            let target = s.queue.removeFirst()
            s.progress[target.key] = PreloadProgress(phase: .preloading)
            let task = Task { [self] in
                do {
                    _ = try await run(target, gated: true) { [self] progress in
                        state.withLockedValue { $0.progress[target.key] = progress }
                        changes.signal()
                    }
                } catch is CancellationError {
                    state.withLockedValue { s in
                        if s.progress[target.key]?.phase != .preloaded { s.progress[target.key] = nil }
                    }
                } catch {
                    state.withLockedValue {
                        $0.progress[target.key] = PreloadProgress(phase: .failed, error: "\(error)")
                    }
                }
                finished(target.key)
            }
            s.job = Job(target: target, task: task)
        }
    }

    private func finished(_ key: CacheKey) {
        let idle = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            if s.job?.target.key == key { s.job = nil }
            guard s.queue.isEmpty || s.stopped else { return [] }
            defer { s.idleWaiters = [] }
            return s.idleWaiters
        }
        changes.signal()
        for waiter in idle { waiter.resume() }
        startNext()
    }
}
