import Foundation
import NIOConcurrencyHelpers

/// One resource's slot: its plan (a value) plus what cannot be a value — running tasks and suspended readers.
struct KeySlot: Sendable {
    var planner: FetchPlanner
    var tasks: [Int: Task<Void, Never>] = [:]
    var validationTask: Task<Void, Never>?
    var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    var events: UInt64 = 0
    /// Bodies fetches could not cache, by fetch, for the reader that relied on the fetch.
    var handed: [Int: HandedBody] = [:]
    /// How the last failed fetch of the key failed, for a reader that gives up waiting to say why.
    var lastFailure: String?
}

/// A response body a fetch could not cache (no room, a read-only cache), handed to a reader that relied on the
/// fetch so that its bytes are not requested again. Used by one task at a time: the fetch hands it over and never
/// touches it again, then one reader takes it.
// Sendable: one task at a time uses it (the fetch hands it over, then one reader takes it, through the coordinator's lock).
final class HandedBody: @unchecked Sendable {
    /// The offset in the resource of the next byte (of `pending`, then of `body`).
    let offset: Int64
    /// Bytes already received and not yet used.
    let pending: [UInt8]
    /// The rest of the body.
    let body: OriginBodyStream
    /// Where the request ends (nil: at the resource's end).
    let end: Int64?
    /// The version the body belongs to.
    let metadata: ResourceMetadata

    init(offset: Int64, pending: [UInt8], body: OriginBodyStream, end: Int64?, metadata: ResourceMetadata) {
        (self.offset, self.pending, self.body, self.end, self.metadata) = (offset, pending, body, end, metadata)
    }
}

/// Runs each resource's `FetchPlanner` under one lock and performs its actions outside it: cancels tasks, wakes
/// suspended readers. Holds nothing the planner could decide.
final class FetchCoordinator: Sendable {
    private let state = NIOLockedValueBox<(keys: [CacheKey: KeySlot], nextID: Int)>(([:], 1))
    let blockSize: Int64
    let joinWindow: Int64

    init(blockSize: Int64, joinWindow: Int64) {
        self.blockSize = blockSize
        self.joinWindow = joinWindow
    }

    /// Runs `body` on the key's slot (created empty when missing).
    private func with<T>(_ key: CacheKey, _ body: (inout KeySlot) throws -> T) rethrows -> T {
        try state.withLockedValue { s in
            try body(&s.keys[key, default: KeySlot(planner: FetchPlanner(blockSize: blockSize, joinWindow: joinWindow))])
        }
    }

    /// Reads the key's plan.
    func planner<T>(_ key: CacheKey, _ body: (FetchPlanner) -> T) -> T { with(key) { body($0.planner) } }

    /// Applies an event to the key's plan and performs the plan's actions; unless `waking` is false (a reader's
    /// own planning and releasing, which gives no other reader anything new), bumps the event counter and wakes
    /// every suspended reader of the key.
    @discardableResult
    func update<T>(
        _ key: CacheKey, waking: Bool = true, _ event: (inout FetchPlanner) -> (T, [PlannerAction])
    ) -> T {
        let (result, waiters, cancels, graced) = with(key) {
            slot -> (T, [CheckedContinuation<Void, Never>], [Task<Void, Never>], [Int]) in
            let (result, actions) = event(&slot.planner)
            var waiters: [CheckedContinuation<Void, Never>] = []
            if waking {
                slot.events &+= 1
                waiters = Array(slot.waiters.values)
                slot.waiters.removeAll()
            }
            var cancels: [Task<Void, Never>] = []
            var graced: [Int] = []
            for action in actions {
                switch action {
                case .cancel(let id): if let task = slot.tasks[id] { cancels.append(task) }
                case .cancelAfterGrace(let id): if slot.tasks[id] != nil { graced.append(id) }
                }
            }
            return (result, waiters, cancels, graced)
        }
        for waiter in waiters { waiter.resume() }
        for task in cancels { task.cancel() }
        for id in graced { cancelAfterGrace(key: key, fetchID: id) }
        return result
    }

    /// `update` for events without a result.
    func update(_ key: CacheKey, waking: Bool = true, _ event: (inout FetchPlanner) -> [PlannerAction]) {
        update(key, waking: waking) { planner -> (Void, [PlannerAction]) in ((), event(&planner)) }
    }

    /// `update` for events that return no actions.
    func change(_ key: CacheKey, _ event: (inout FetchPlanner) -> Void) {
        update(key) { planner -> (Void, [PlannerAction]) in
            event(&planner)
            return ((), [])
        }
    }

    /// The current event counter for `key` (readers wait for it to move).
    func events(_ key: CacheKey) -> UInt64 { with(key) { $0.events } }

    /// Plans the bytes at `offset` for a reader (see `FetchPlanner.plan`).
    func plan(
        key: CacheKey, offset: Int64, end: Int64?, length: Int64?, available: ByteRangeSet, holding: Int?,
        exact: Bool = false, generation: Int64? = nil
    ) -> FetchPlan {
        let id = state.withLockedValue { s -> Int in
            defer { s.nextID += 1 }
            return s.nextID
        }
        return update(key, waking: false) { planner in
            planner.plan(
                offset: offset, end: end, length: length, available: available, holding: holding, newID: id,
                exact: exact, generation: generation)
        }
    }

    /// Attaches the running task to a planned fetch; cancels it at once if all interest went meanwhile.
    func attach(_ task: Task<Void, Never>, key: CacheKey, fetchID: Int) {
        let cancel = with(key) { slot -> Bool in
            guard slot.planner.target(of: fetchID) != nil else { return true }
            slot.tasks[fetchID] = task
            return slot.planner.shouldCancelOnAttach(fetchID)
        }
        if cancel { task.cancel() }
    }

    /// How long a fetch nobody wants any more may take to finish the block it is in.
    static let finishGrace: Duration = .milliseconds(250)

    private func cancelAfterGrace(key: CacheKey, fetchID: Int) {
        Task { [self] in
            try? await Task.sleep(for: Self.finishGrace)
            let task = with(key) { slot in slot.planner.isUnwanted(fetchID) ? slot.tasks[fetchID] : nil }
            task?.cancel()
        }
    }

    /// Drops one unit of interest (see `FetchPlanner.release`).
    func release(key: CacheKey, fetchID: Int, finishingBlock: Bool = true) {
        update(key, waking: false) { $0.release(fetchID: fetchID, finishingBlock: finishingBlock) }
        dropHandedBody(key: key, fetchID: fetchID)
    }

    /// Drops interest after a reader got everything it asked for (see `FetchPlanner.releaseFinished`).
    func releaseFinished(key: CacheKey, fetchID: Int, readerEnd: Int64) {
        update(key, waking: false) { $0.releaseFinished(fetchID: fetchID, readerEnd: readerEnd) }
        dropHandedBody(key: key, fetchID: fetchID)
    }

    /// Keeps the body fetch `fetchID` could not cache for a reader that relied on it (see `takeHandedBody`).
    func handOff(_ body: HandedBody, key: CacheKey, fetchID: Int) {
        with(key) { $0.handed[fetchID] = body }
    }

    /// The body fetch `fetchID` handed over, left in place.
    func handedBody(key: CacheKey, fetchID: Int) -> HandedBody? { with(key) { $0.handed[fetchID] } }

    /// The body fetch `fetchID` handed over, for the reader that relied on it (nil when none, or taken).
    func takeHandedBody(key: CacheKey, fetchID: Int) -> HandedBody? {
        with(key) { $0.handed.removeValue(forKey: fetchID) }
    }

    /// A handed body nobody took goes (its connection closes) once its reader lets go of the fetch; another
    /// reader that relied on the same fetch opens its own request.
    private func dropHandedBody(key: CacheKey, fetchID: Int) {
        let dropped = state.withLockedValue { s -> HandedBody? in
            guard s.keys[key]?.planner.fetches[fetchID]?.interest ?? 0 <= 0 else { return nil }
            return s.keys[key]?.handed.removeValue(forKey: fetchID)
        }
        _ = dropped  // released outside the lock
    }

    /// Tasks of fetches nobody waits for any more (finishing their last block).
    func unattendedTasks() -> [Task<Void, Never>] {
        state.withLockedValue { s in
            s.keys.values.flatMap { slot in
                slot.planner.fetches.values.filter { $0.interest <= 0 }.compactMap { slot.tasks[$0.id] }
            }
        }
    }

    /// The fetch a reader of the ended lead-in `fetchID` holds from now on, if any (see `FetchPlanner.takeHandover`).
    func takeHandover(key: CacheKey, from fetchID: Int) -> Int? {
        update(key, waking: false) { ($0.takeHandover(from: fetchID), []) }
    }

    /// The fetch's current stop offset, or nil when it should stop now (gone or cancelled).
    func target(key: CacheKey, fetchID: Int) -> Int64?? { planner(key) { $0.target(of: fetchID) } }

    /// The outcome of a fetch that is no longer in flight (nil while it runs).
    func outcome(key: CacheKey, fetchID: Int) -> FetchOutcome? { planner(key) { $0.outcome(of: fetchID) } }

    /// Records how a fetch ended, forgets its task and wakes its readers.
    func finished(key: CacheKey, fetchID: Int, outcome: FetchOutcome) {
        update(key) { planner -> (Void, [PlannerAction]) in
            planner.finished(fetchID: fetchID, outcome: outcome)
            return ((), [])
        }
        with(key) { slot in
            _ = slot.tasks.removeValue(forKey: fetchID)
            if case .failed(let error) = outcome { slot.lastFailure = "\(error)" }
        }
        pruneIdleKeys(keeping: key)
    }

    /// Records that the origin of `key` could not be reached (a check of its cached copy failed).
    func noteFailure(_ key: CacheKey, _ text: String) { with(key) { $0.lastFailure = text } }

    /// How the last failed fetch of `key` failed, while this process remembers the key.
    func lastFailure(_ key: CacheKey) -> String? { state.withLockedValue { $0.keys[key]?.lastFailure } }

    /// Starts the once-per-session check of `key` with `makeTask` unless it ran or runs; returns the running
    /// check. Created inside the critical section that records it, so two readers arriving together never start
    /// two, and no cancelled loser can mark the check done while the real one is in flight.
    func startValidation(
        key: CacheKey, needed: Bool, freshUntil: Date?, confirmedAt: Date? = nil, now: Date,
        makeTask: () -> Task<Void, Never>
    ) -> Task<Void, Never>? {
        with(key) { slot in
            if slot.planner.validation == .running { return slot.validationTask }
            guard
                slot.planner.beginValidation(needed: needed, freshUntil: freshUntil, confirmedAt: confirmedAt, now: now)
            else { return nil }
            let task = makeTask()
            slot.validationTask = task
            return task
        }
    }

    /// Where `key`'s once-per-session check stands, when that alone decides what a reader does: running, or
    /// ended and still holding at `now`. Nil when a check may have to start (what is cached decides).
    func settledValidation(_ key: CacheKey, now: Date) -> SettledValidation? {
        state.withLockedValue { s in
            guard let slot = s.keys[key] else { return nil }
            if slot.planner.validation == .running, let task = slot.validationTask { return .running(task) }
            return slot.planner.isChecked(at: now) ? .holds : nil
        }
    }

    /// A check that needs no look at the store: one running, or one that ended and holds.
    enum SettledValidation: Equatable {
        case running(Task<Void, Never>)
        case holds
    }

    /// The check of `key` running now, if one is.
    func runningValidation(_ key: CacheKey) -> Task<Void, Never>? {
        state.withLockedValue { $0.keys[key]?.validationTask }
    }

    /// When the origin last confirmed `key`'s version as far as this process knows (see `FetchPlanner.confirmedAt`).
    func confirmedAt(_ key: CacheKey) -> Date? { state.withLockedValue { $0.keys[key]?.planner.confirmedAt } }

    /// Records what the check found (holding until `freshUntil`, nil: the rest of the session) and performs what
    /// follows from it.
    func validated(key: CacheKey, _ result: ValidationResult, freshUntil: Date? = nil, now: Date = Date()) {
        update(key) { $0.validated(result, freshUntil: freshUntil, now: now) }
        with(key) { $0.validationTask = nil }
    }

    /// Drops the state of idle resources once there are more than `maxIdleKeys`, so a long-running process
    /// (the proxy) does not keep every resource it ever served in memory.
    func pruneIdleKeys(keeping key: CacheKey) {
        state.withLockedValue { s in
            guard s.keys.count > Self.maxIdleKeys else { return }
            for (candidate, slot) in s.keys
            where candidate != key && slot.planner.isIdle && slot.waiters.isEmpty && slot.handed.isEmpty {
                s.keys.removeValue(forKey: candidate)
                if s.keys.count <= Self.maxIdleKeys / 2 { break }
            }
        }
    }

    /// Suspends until the event counter of `key` moves past `seen` or the task is cancelled.
    func wait(key: CacheKey, after seen: UInt64) async {
        let (blockSize, joinWindow) = (blockSize, joinWindow)
        await CancellableWait.suspend(
            in: state,
            park: { s, id, continuation in
                let empty = KeySlot(planner: FetchPlanner(blockSize: blockSize, joinWindow: joinWindow))
                guard s.keys[key, default: empty].events == seen else { return false }
                s.keys[key, default: empty].waiters[id] = continuation
                return true
            },
            unpark: { s, id in CancellableWait.waker(s.keys[key]?.waiters.removeValue(forKey: id)) })
    }

    /// Cancels every fetch (used at shutdown) and returns their tasks, to be awaited.
    @discardableResult
    func cancelAll() -> [Task<Void, Never>] {
        let tasks = state.withLockedValue { s in s.keys.values.flatMap { $0.tasks.values } }
        for task in tasks { task.cancel() }
        return tasks
    }

    /// Fetches whose task still runs, across every resource.
    var runningFetches: Int { state.withLockedValue { s in s.keys.values.reduce(0) { $0 + $1.tasks.count } } }

    /// Waits (polling, up to `timeout`) until no fetch task runs.
    func waitUntilIdle(timeout: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + timeout
        while runningFetches > 0, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// How many resources have coordination state (bounded: idle ones are dropped past `maxIdleKeys`).
    var keyCount: Int { state.withLockedValue { $0.keys.count } }

    /// Past this many resources, state of idle ones (no fetch, no waiter, no validation running) is dropped; a
    /// dropped resource is validated again on its next use.
    static let maxIdleKeys = 1024
}
