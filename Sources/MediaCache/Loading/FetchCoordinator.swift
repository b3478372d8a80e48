import Foundation
import NIOConcurrencyHelpers

/// One in-flight origin fetch of a byte range, shared by every reader (and preload) that needs its bytes.
struct FetchRecord: Sendable {
    let id: Int
    var start: Int64
    /// Exclusive end the fetch stops at; nil for the resource's end. Shrinks when a later fetch takes over a tail.
    var target: Int64?
    /// The next offset this fetch will write.
    var progress: Int64
    /// Readers and preloads relying on it; at zero the fetch is cancelled.
    var interest: Int
    var task: Task<Void, Never>?
}

/// How a fetch ended, kept briefly so readers that relied on it can tell why their bytes did not arrive.
enum FetchOutcome: Sendable {
    case finished
    case failed(any Error)
    case cancelled
}

/// Per-resource coordination state.
struct KeyCoordination: Sendable {
    var fetches: [Int: FetchRecord] = [:]
    var outcomes: [Int: FetchOutcome] = [:]
    var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    var events: UInt64 = 0
    /// Resource is too large to cache (or the budget is full of pinned data): readers stream it through.
    var passthrough = false
    /// Why the resource streams through.
    var passthroughReason: String?
    var validation: ValidationState = .notStarted
    var offline = false
    /// What the origin last said about the resource (kept here too for resources the store does not hold).
    var metadata: ResourceMetadata?
    /// The origin answered a range request with the whole body: new fetches would start from byte 0 again, so
    /// readers wait for the running one however far behind it is.
    var originIgnoresRange = false
}

/// Whether a resource's cached copy was checked against the origin in this session.
enum ValidationState: Sendable {
    case notStarted
    case running(Task<Void, Never>)
    case done
}

/// What a reader should do next for a missing offset.
enum FetchPlan: Sendable, Equatable {
    /// Wait for the fetch with this id (already held, or joined now).
    case wait(fetchID: Int)
    /// Start a new fetch of `start..<target` (target nil: to the end); `truncated` fetches now stop at `start`.
    case start(fetchID: Int, start: Int64, target: Int64?)
}

/// Shared bookkeeping of fetches, interest and waiters; all decisions are made under one lock.
final class FetchCoordinator: Sendable {
    private let state = NIOLockedValueBox<(keys: [CacheKey: KeyCoordination], nextID: Int)>(([:], 1))
    let blockSize: Int64
    let joinWindow: Int64

    init(blockSize: Int64, joinWindow: Int64) {
        self.blockSize = blockSize
        self.joinWindow = joinWindow
    }

    /// Runs `body` on the key's coordination state.
    func with<T>(_ key: CacheKey, _ body: (inout KeyCoordination) throws -> T) rethrows -> T {
        try state.withLockedValue { s in try body(&s.keys[key, default: KeyCoordination()]) }
    }

    /// The current event counter for `key` (readers wait for it to move).
    func events(_ key: CacheKey) -> UInt64 { with(key) { $0.events } }

    /// Decides how the bytes at `offset` will arrive: join an in-flight fetch that will reach them soon, or start a
    /// new one over the missing run `offset..<end` (rounded out to blocks without crossing cached bytes or other
    /// fetches), shortening a fetch whose tail the new one takes over so no byte is fetched twice.
    func plan(
        key: CacheKey, offset: Int64, end: Int64?, length: Int64?, available: ByteRangeSet, holding: Int?
    ) -> FetchPlan {
        state.withLockedValue { s in
            var coordination = s.keys[key, default: KeyCoordination()]
            defer { s.keys[key] = coordination }
            // A fetch already past `offset` has written those bytes since the caller looked: waiting on it returns
            // at once (its progress moved the event counter) and the caller finds them on disk.
            let window = coordination.originIgnoresRange ? Int64.max : joinWindow
            let candidates = coordination.fetches.values.filter { fetch in
                fetch.start <= offset && (fetch.target.map { offset < $0 } ?? true)
                    && offset - fetch.progress <= window
            }
            if let fetch = candidates.max(by: { $0.progress < $1.progress }) {
                if holding != fetch.id {
                    coordination.fetches[fetch.id]?.interest += 1
                    if let holding { Self.release(&coordination, holding) }
                }
                return .wait(fetchID: fetch.id)
            }
            // Start: round down to a block, but never into cached bytes or below the offset of a fetch in flight.
            let previousPresentEnd = available.present(in: 0..<offset).last?.upperBound ?? 0
            let start = Swift.min(Swift.max(offset - offset % blockSize, previousPresentEnd), offset)
            // End: the request's end rounded up to a block, stopping at cached bytes and at fetches ahead.
            var target: Int64? = end.map { $0 % blockSize == 0 ? $0 : $0 + blockSize - $0 % blockSize }
            if let length { target = Swift.min(target ?? length, length) }
            let nextPresent = available.present(in: offset..<(target ?? Int64.max)).first?.lowerBound
            if let nextPresent { target = Swift.min(target ?? nextPresent, nextPresent) }
            for fetch in coordination.fetches.values where fetch.start > offset {
                target = Swift.min(target ?? fetch.start, fetch.start)
            }
            // Fetches whose remaining range covers the new start stop there.
            for (id, fetch) in coordination.fetches
            where fetch.progress <= start && (fetch.target ?? Int64.max) > start && fetch.start <= start {
                coordination.fetches[id]?.target = start
            }
            let id = s.nextID
            s.nextID += 1
            coordination.fetches[id] = FetchRecord(id: id, start: start, target: target, progress: start, interest: 1)
            if let holding { Self.release(&coordination, holding) }
            return .start(fetchID: id, start: start, target: target)
        }
    }

    /// Attaches the running task to a planned fetch; cancels it at once if all interest went meanwhile.
    func attach(_ task: Task<Void, Never>, key: CacheKey, fetchID: Int) {
        let cancel = with(key) { c -> Bool in
            guard c.fetches[fetchID] != nil else { return true }
            c.fetches[fetchID]?.task = task
            return c.fetches[fetchID]?.interest ?? 0 <= 0
        }
        if cancel { task.cancel() }
    }

    /// How long a fetch nobody wants any more may take to finish the block it is in.
    static let finishGrace: Duration = .milliseconds(250)

    /// Drops one unit of interest. A fetch nobody needs any more finishes the block it is in — those bytes are on
    /// their way and as good as paid for — within `finishGrace`, then is cancelled.
    func release(key: CacheKey, fetchID: Int, finishingBlock: Bool = true) {
        guard finishingBlock else {
            let task = with(key) { c in Self.release(&c, fetchID) }
            task?.cancel()
            return
        }
        let task = with(key) { c -> Task<Void, Never>? in
            guard var fetch = c.fetches[fetchID] else { return nil }
            fetch.interest -= 1
            guard fetch.interest <= 0 else {
                c.fetches[fetchID] = fetch
                return nil
            }
            let progress = fetch.progress
            let blockEnd = progress % blockSize == 0 ? progress : progress + blockSize - progress % blockSize
            fetch.target = Swift.min(fetch.target ?? blockEnd, blockEnd)
            c.fetches[fetchID] = fetch
            return fetch.task
        }
        guard let task else { return }
        Task { [self] in
            try? await Task.sleep(for: Self.finishGrace)
            let stillUnwanted = with(key) { c in (c.fetches[fetchID]?.interest ?? 1) <= 0 }
            if stillUnwanted { task.cancel() }
        }
    }

    /// Drops interest after a reader got everything it asked for: a fetch nobody else needs finishes the block it
    /// is in (its bytes are as good as paid for) instead of being cut, but goes no further.
    func releaseFinished(key: CacheKey, fetchID: Int, readerEnd: Int64) {
        let task = with(key) { c -> Task<Void, Never>? in
            guard var fetch = c.fetches[fetchID] else { return nil }
            fetch.interest -= 1
            if fetch.interest <= 0 {
                let blockEnd = readerEnd % blockSize == 0 ? readerEnd : readerEnd + blockSize - readerEnd % blockSize
                fetch.target = Swift.min(fetch.target ?? blockEnd, blockEnd)
            }
            c.fetches[fetchID] = fetch
            return fetch.interest <= 0 && (fetch.target ?? Int64.max) <= fetch.progress ? fetch.task : nil
        }
        task?.cancel()
    }

    /// Tasks of fetches nobody waits for any more (finishing their last block).
    func unattendedTasks() -> [Task<Void, Never>] {
        state.withLockedValue { s in
            s.keys.values.flatMap { $0.fetches.values.filter { $0.interest <= 0 }.compactMap(\.task) }
        }
    }

    @discardableResult
    private static func release(_ c: inout KeyCoordination, _ id: Int) -> Task<Void, Never>? {
        guard var fetch = c.fetches[id] else { return nil }
        fetch.interest -= 1
        c.fetches[id] = fetch
        return fetch.interest <= 0 ? fetch.task : nil
    }

    /// The fetch's current stop offset, or nil when it should stop now (gone or cancelled).
    func target(key: CacheKey, fetchID: Int) -> Int64?? {
        with(key) { c in c.fetches[fetchID].map { $0.target } }
    }

    /// The fetch got the whole body instead of its range: it now covers everything from byte 0.
    func restartedFromZero(key: CacheKey, fetchID: Int) {
        signal(key) { c in
            c.originIgnoresRange = true
            c.fetches[fetchID]?.start = 0
            c.fetches[fetchID]?.progress = 0
        }
    }

    /// Records progress and wakes waiters.
    func progressed(key: CacheKey, fetchID: Int, to offset: Int64) {
        signal(key) { c in c.fetches[fetchID]?.progress = offset }
    }

    /// Removes the fetch, keeps its outcome for readers, and wakes waiters.
    func finished(key: CacheKey, fetchID: Int, outcome: FetchOutcome) {
        signal(key) { c in
            c.fetches.removeValue(forKey: fetchID)
            c.outcomes[fetchID] = outcome
            if c.outcomes.count > 64, let oldest = c.outcomes.keys.min() { c.outcomes.removeValue(forKey: oldest) }
        }
        pruneIdleKeys(keeping: key)
    }

    /// Drops the state of idle resources once there are more than `maxIdleKeys`, so a long-running process
    /// (the proxy) does not keep every resource it ever served in memory.
    func pruneIdleKeys(keeping key: CacheKey) {
        state.withLockedValue { s in
            guard s.keys.count > Self.maxIdleKeys else { return }
            for (candidate, c) in s.keys where candidate != key && c.fetches.isEmpty && c.waiters.isEmpty {
                if case .running = c.validation { continue }
                s.keys.removeValue(forKey: candidate)
                if s.keys.count <= Self.maxIdleKeys / 2 { break }
            }
        }
    }

    /// The outcome of a fetch that is no longer in flight (nil while it runs).
    func outcome(key: CacheKey, fetchID: Int) -> FetchOutcome? {
        with(key) { c in c.fetches[fetchID] == nil ? (c.outcomes[fetchID] ?? .cancelled) : nil }
    }

    /// Applies `change`, bumps the event counter and resumes every waiter of `key`.
    func signal(_ key: CacheKey, _ change: (inout KeyCoordination) -> Void = { _ in }) {
        let waiters = with(key) { c -> [CheckedContinuation<Void, Never>] in
            change(&c)
            c.events &+= 1
            defer { c.waiters.removeAll() }
            return Array(c.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until the event counter of `key` moves past `seen` or the task is cancelled.
    func wait(key: CacheKey, after seen: UInt64) async {
        let id = state.withLockedValue { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = with(key) { c -> Bool in
                    if c.events != seen || Task.isCancelled { return true }
                    c.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = with(key) { c in c.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }

    /// Cancels every fetch (used at shutdown) and returns their tasks, to be awaited.
    @discardableResult
    func cancelAll() -> [Task<Void, Never>] {
        let tasks = state.withLockedValue { s in s.keys.values.flatMap { $0.fetches.values.compactMap(\.task) } }
        for task in tasks { task.cancel() }
        return tasks
    }

    /// How many resources have coordination state (bounded: idle ones are dropped past `maxIdleKeys`).
    var keyCount: Int { state.withLockedValue { $0.keys.count } }

    /// Past this many resources, state of idle ones (no fetch, no waiter, no validation running) is dropped; a
    /// dropped resource is validated again on its next use.
    static let maxIdleKeys = 1024
}
