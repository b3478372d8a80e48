import Foundation

/// The fetch plan of one resource, as a value: which byte ranges are being fetched, who relies on them, what the
/// origin said about the resource (metadata, validators, reachability) and whether it streams through uncached.
/// Every event is a method that updates the value and returns what must be done outside any lock, so its rules
/// are tested as plain values (and under arbitrary event orders) without a network or a clock.
///
/// Rules: a reader joins a fetch already running toward its offset (within `joinWindow`) instead of starting
/// another; a new fetch covers only missing bytes, rounded out to blocks without crossing cached bytes or other
/// fetches, and takes over the tail of a fetch behind it, so no byte is fetched twice while in flight; a fetch
/// nobody wants finishes the block it is in (those bytes are paid for) and stops; a new version stops every fetch
/// of the old one.
struct FetchPlanner: Sendable {
    let blockSize: Int64
    let joinWindow: Int64
    /// Fetches in flight, by id.
    private(set) var fetches: [Int: FetchRecord] = [:]
    /// How recently ended fetches ended (the last 64).
    private(set) var outcomes: [Int: FetchOutcome] = [:]
    /// What the origin last said about the resource (also for resources the store does not hold).
    private(set) var metadata: ResourceMetadata?
    /// True when the last attempt to reach the origin failed.
    private(set) var offline = false
    /// Why the resource streams through uncached in this session, or nil while it is cached as it loads.
    private(set) var streamThroughReason: String?
    /// The origin answered a range request with the whole body: new fetches would start from byte 0 again, so
    /// readers wait for the running one however far behind it is.
    private(set) var originIgnoresRange = false
    /// The once-per-session check of a cached copy.
    private(set) var validation: ValidationPhase = .notStarted
    /// Ended lead-in fetches and the fetch each led into, whose unit of interest their reader takes over.
    private(set) var handovers: [Int: Int] = [:]
    /// Until when a finished check (or the origin's freshness, which stood in for one) holds; nil: for the rest of
    /// the session. After it, the next reader checks again.
    private(set) var checkedUntil: Date?
    /// When the origin last confirmed the version in service: its answer to this process's check or fetch, or
    /// (a copy taken as fresh without asking) the answer an earlier process wrote down. The base of an `Age`.
    private(set) var confirmedAt: Date?

    init(blockSize: Int64, joinWindow: Int64) {
        self.blockSize = blockSize
        self.joinWindow = joinWindow
    }

    /// True when nothing is in flight or being checked (the value can be dropped and rebuilt later).
    var isIdle: Bool { fetches.isEmpty && validation != .running }

    private func blockEnd(_ offset: Int64) -> Int64 {
        offset % blockSize == 0 ? offset : offset + blockSize - offset % blockSize
    }

    // MARK: - Readers

    /// Decides how the bytes at `offset` will arrive for a reader that wants up to `end` (nil: to the end) and
    /// holds `holding`: join an in-flight fetch that will reach them soon, or start fetch `newID` over the missing
    /// run from `offset`. `available` is what the store can read now. `exact` starts a new fetch at `offset` and
    /// ends it at `end` themselves, not at their blocks' edges (a client that jumps about reads where it asks).
    /// `generation` is the cached copy's the reader sees.
    mutating func plan(
        offset: Int64, end: Int64?, length: Int64?, available: ByteRangeSet, holding: Int?, newID: Int,
        exact: Bool = false, generation: Int64? = nil
    ) -> (FetchPlan, [PlannerAction]) {
        // A fetch already past `offset` has written those bytes since the caller looked: waiting on it returns
        // at once (its progress moved the event counter) and the caller finds them on disk.
        let window = originIgnoresRange ? Int64.max : joinWindow
        let candidates = fetches.values.filter { fetch in
            fetch.start <= offset && (fetch.target.map { offset < $0 } ?? true) && offset - fetch.progress <= window
        }
        // (Ties go to the older fetch, so the plan never depends on the order of a dictionary.)
        if let fetch = candidates.max(by: { ($0.progress, $1.id) < ($1.progress, $0.id) }) {
            var actions: [PlannerAction] = []
            if let holding, fetches[holding] == nil, handovers[holding] == fetch.id {
                // The reader's lead-in ended where this fetch starts: it holds the unit kept for it.
                handovers.removeValue(forKey: holding)
            } else if holding != fetch.id {
                fetches[fetch.id]?.interest += 1
                if let holding { actions += dropInterest(holding) }
            }
            return (.wait(fetchID: fetch.id), actions)
        }
        // Start: round down to a block, but never into cached bytes or below the offset of a fetch in flight.
        let previousPresentEnd = available.present(in: 0..<offset).last?.upperBound ?? 0
        let start = exact ? offset : Swift.min(Swift.max(offset - offset % blockSize, previousPresentEnd), offset)
        // End: the request's end rounded up to a block, stopping at cached bytes and at fetches ahead.
        var target: Int64? = exact ? end : end.map(blockEnd)
        if let length { target = Swift.min(target ?? length, length) }
        if let nextPresent = available.present(in: offset..<(target ?? Int64.max)).first?.lowerBound {
            target = Swift.min(target ?? nextPresent, nextPresent)
        }
        for fetch in fetches.values where fetch.start > offset {
            target = Swift.min(target ?? fetch.start, fetch.start)
        }
        // Fetches whose remaining range covers the new start stop there.
        for (id, fetch) in fetches
        where fetch.progress <= start && (fetch.target ?? Int64.max) > start && fetch.start <= start {
            fetches[id]?.target = start
        }
        fetches[newID] = FetchRecord(
            id: newID, start: start, target: target, progress: start, interest: 1, plannedTarget: target,
            generation: generation)
        let actions = holding.map { dropInterest($0) } ?? []
        if let target, let next = fetches.values.sorted(by: { $0.id < $1.id }).first(where: { fetch in
            guard fetch.id != newID, fetch.interest <= 0, fetch.carriesNewVersion else { return false }
            return fetch.start == target
                || (target < fetch.start && available.contiguousLength(from: target) >= fetch.start - target)
        }) {
            // It leads straight into a new version's fetch nobody holds (its reader restarted from byte 0 and
            // reads toward it again), or into the cached bytes that fetch wrote before its start (the overlap
            // that proved the change): that fetch is kept for this reader, not stopped and fetched again later.
            fetches[next.id]?.interest += 1
            fetches[newID]?.leadsInto = next.id
        }
        return (.start(fetchID: newID, start: start, target: target), actions)
    }

    /// A reader or preload lets go of `fetchID` before getting everything: a fetch nobody needs any more finishes
    /// the block it is in (`finishingBlock`) or stops at once.
    mutating func release(fetchID: Int, finishingBlock: Bool) -> [PlannerAction] {
        guard var fetch = fetches[fetchID] else {
            guard let next = handovers.removeValue(forKey: fetchID) else { return [] }
            return release(fetchID: next, finishingBlock: finishingBlock)
        }
        var led: [PlannerAction] = []
        if let next = fetch.leadsInto {
            fetch.leadsInto = nil
            fetches[fetchID] = fetch
            led = release(fetchID: next, finishingBlock: finishingBlock)
        }
        fetch.interest -= 1
        if fetch.interest <= 0, fetch.carriesNewVersion, finishingBlock {
            // Its reader restarts on the new version from byte 0 and comes back for these bytes: it runs on (to
            // its end when little is left, however long the restart takes; else for the grace), in which a
            // reader joins it or a lead-in keeps it.
            fetches[fetchID] = fetch
            return runsOnUnheld(fetch) ? led : led + [.cancelAfterGrace(fetchID: fetchID)]
        }
        if fetch.interest <= 0, finishingBlock {
            fetch.target = Swift.min(fetch.target ?? blockEnd(fetch.progress), blockEnd(fetch.progress))
        }
        fetches[fetchID] = fetch
        guard fetch.interest <= 0 else { return led }
        return led + [finishingBlock ? .cancelAfterGrace(fetchID: fetchID) : .cancel(fetchID: fetchID)]
    }

    /// A reader got everything it asked for, up to `readerEnd`: a fetch nobody else needs finishes that block and
    /// goes no further.
    mutating func releaseFinished(fetchID: Int, readerEnd: Int64) -> [PlannerAction] {
        guard var fetch = fetches[fetchID] else {
            guard let next = handovers.removeValue(forKey: fetchID) else { return [] }
            return releaseFinished(fetchID: next, readerEnd: readerEnd)
        }
        if let next = fetch.leadsInto {
            // (The reader wanted nothing past its lead-in: what was kept for it goes.)
            fetch.leadsInto = nil
            fetches[fetchID] = fetch
            let led = releaseFinished(fetchID: next, readerEnd: readerEnd)
            return led + releaseFinished(fetchID: fetchID, readerEnd: readerEnd)
        }
        fetch.interest -= 1
        // A whole body (the origin ignores Range) runs on for the reader that comes next (a player reads range
        // after range): a new request would cost the whole body again from byte 0. To the end when little is
        // left of it, else a moment.
        if fetch.interest <= 0, originIgnoresRange {
            fetches[fetchID] = fetch
            if let length = metadata?.contentLength, fetch.target == nil || fetch.target == length,
                length - fetch.progress <= Self.wholeBodyRunOn
            {
                return []
            }
            return [.cancelAfterGrace(fetchID: fetchID)]
        }
        if fetch.interest <= 0 {
            fetch.target = Swift.min(fetch.target ?? blockEnd(readerEnd), blockEnd(readerEnd))
        }
        fetches[fetchID] = fetch
        return fetch.interest <= 0 && (fetch.target ?? Int64.max) <= fetch.progress ? [.cancel(fetchID: fetchID)] : []
    }

    /// A whole body nobody reads any more is finished when no more than this is left of it (1 MiB).
    static let wholeBodyRunOn: Int64 = 1 << 20

    /// True for a fetch of a new version with at most `wholeBodyRunOn` left: nobody holding it does not stop it.
    private func runsOnUnheld(_ fetch: FetchRecord) -> Bool {
        guard fetch.carriesNewVersion, let end = fetch.target ?? metadata?.contentLength else { return false }
        return end - fetch.progress <= Self.wholeBodyRunOn
    }

    private mutating func dropInterest(_ id: Int) -> [PlannerAction] {
        guard var fetch = fetches[id] else {
            // A lead-in that ended: the unit kept for its reader goes with it.
            guard let next = handovers.removeValue(forKey: id) else { return [] }
            return release(fetchID: next, finishingBlock: true)
        }
        fetch.interest -= 1
        fetches[id] = fetch
        return fetch.interest <= 0 ? [.cancel(fetchID: id)] : []
    }

    /// The fetch a reader of the ended lead-in `fetchID` holds from now on (the unit kept for it there), if any.
    mutating func takeHandover(from fetchID: Int) -> Int? {
        guard fetches[fetchID] == nil, let next = handovers.removeValue(forKey: fetchID), fetches[next] != nil
        else { return nil }
        return next
    }

    /// True when a fetch in flight will bring the bytes at `offset` soon (a reader there would join it).
    func isFetching(_ offset: Int64) -> Bool {
        let window = originIgnoresRange ? Int64.max : joinWindow
        return fetches.values.contains { fetch in
            fetch.start <= offset && (fetch.target.map { offset < $0 } ?? true) && offset - fetch.progress <= window
        }
    }

    /// True when `fetchID` is still in flight with nobody relying on it (a `cancelAfterGrace` comes due).
    func isUnwanted(_ fetchID: Int) -> Bool {
        guard let fetch = fetches[fetchID] else { return false }
        return fetch.interest <= 0 && !runsOnUnheld(fetch)
    }

    /// How a fetch that is no longer in flight ended (nil while it runs).
    func outcome(of fetchID: Int) -> FetchOutcome? {
        fetches[fetchID] == nil ? (outcomes[fetchID] ?? .cancelled) : nil
    }

    // MARK: - Fetches

    /// The fetch's current stop offset, or nil when it should stop now (gone or cancelled).
    func target(of fetchID: Int) -> Int64?? { fetches[fetchID].map { $0.target } }

    /// True when the fetch's task should be cancelled as soon as it is attached (everyone left meanwhile).
    func shouldCancelOnAttach(_ fetchID: Int) -> Bool { (fetches[fetchID]?.interest ?? 0) <= 0 }

    /// The fetch wrote up to `offset`.
    mutating func progressed(fetchID: Int, to offset: Int64) { fetches[fetchID]?.progress = offset }

    /// The fetch got the whole body instead of its range (the origin ignores Range, or If-Range named an older
    /// version): it now covers everything from byte 0, and runs on past its range's end up to the next fetch in
    /// flight (or the end) — stopping would throw away bytes already on their way, and every later range would
    /// cost the whole body again.
    mutating func receivesWholeBody(fetchID: Int) {
        originIgnoresRange = true
        fetches[fetchID]?.carriesNewVersion = true
        fetches[fetchID]?.start = 0
        fetches[fetchID]?.progress = 0
        let nextStart = fetches.values.filter { $0.id != fetchID && $0.start > 0 }.map(\.start).min()
        fetches[fetchID]?.target = nextStart
        fetches[fetchID]?.plannedTarget = nil
    }

    /// The fetch ended; its outcome is kept for the readers that relied on it.
    mutating func finished(fetchID: Int, outcome: FetchOutcome) {
        if let next = fetches.removeValue(forKey: fetchID)?.leadsInto, fetches[next] != nil {
            handovers[fetchID] = next
            if handovers.count > 64, let oldest = handovers.keys.min() { handovers.removeValue(forKey: oldest) }
        }
        outcomes[fetchID] = outcome
        if case .failed(OriginError.unreachable) = outcome { offline = true }
        if outcomes.count > 64, let oldest = outcomes.keys.min() { outcomes.removeValue(forKey: oldest) }
    }

    // MARK: - What the origin said

    /// The origin answered a request with `metadata` (the same version as the cached one, or none cached).
    mutating func answered(_ metadata: ResourceMetadata) {
        self.metadata = metadata
        offline = false
    }

    /// The origin now serves another version than the one cached and in flight: every fetch of the old version
    /// but `keeping` (the one that found out, now writing the new one) stops. Fetches planned on `newGeneration`
    /// (the store's copy of the new version, which readers can meet before this news) are of the new one.
    mutating func versionChanged(
        to metadata: ResourceMetadata, keeping: Int?, newGeneration: Int64? = nil
    ) -> [PlannerAction] {
        self.metadata = metadata
        offline = false
        var actions: [PlannerAction] = []
        for (id, fetch) in fetches.sorted(by: { $0.key < $1.key }) where id != keeping {
            if let newGeneration, let seen = fetch.generation, seen >= newGeneration { continue }
            fetches.removeValue(forKey: id)
            outcomes[id] = .cancelled
            actions.append(.cancel(fetchID: id))
        }
        if let keeping, var kept = fetches[keeping] {
            kept.carriesNewVersion = true
            if kept.interest <= 0 {
                // Its reader met the new version in the store before this news reached the plan, and let go as
                // from any fetch (cutting it to its block): it restarts from byte 0 and comes back for these
                // bytes, so the fetch runs on as it would have, had it been let go now (up to a fetch of the new
                // version planned meanwhile beyond its cut).
                kept.target = fetches.values.filter { $0.id != keeping && $0.start >= kept.progress }.map(\.start)
                    .reduce(kept.plannedTarget) { Swift.min($0 ?? $1, $1) }
                if !runsOnUnheld(kept) { actions.append(.cancelAfterGrace(fetchID: keeping)) }
            }
            fetches[keeping] = kept
        }
        return actions
    }

    /// From now on in this session the resource streams through uncached, for `reason`.
    mutating func streamThrough(because reason: String) { streamThroughReason = reason }

    /// True when the check ended and still holds at `now`.
    func isChecked(at now: Date) -> Bool {
        validation == .done && checkedUntil.map { now < $0 } ?? true
    }

    /// Starts the once-per-session check; false when it ran or runs already, when `needed` is false (nothing
    /// cached to check, which counts as done), or when the origin said the copy is fresh until after `now`. A
    /// check whose time ran out starts again.
    mutating func beginValidation(
        needed: Bool, freshUntil: Date? = nil, confirmedAt: Date? = nil, now: Date = Date()
    ) -> Bool {
        if validation == .done, let until = checkedUntil, now >= until { validation = .notStarted }
        guard validation == .notStarted else { return false }
        if needed, let freshUntil, now < freshUntil {
            validation = .done
            checkedUntil = freshUntil
            if let confirmedAt { self.confirmedAt = Swift.max(self.confirmedAt ?? confirmedAt, confirmedAt) }
            return false
        }
        validation = needed ? .running : .done
        checkedUntil = nil
        return needed
    }

    /// The origin answered a fetch in this session, saying the copy stays fresh until `freshUntil` (nil: it said
    /// nothing): a finished check holds until then, as if the answer had been the check.
    mutating func originAnswered(freshUntil: Date?, now: Date = Date()) {
        if validation == .done { checkedUntil = freshUntil }
        confirmedAt = now
    }

    /// The check ended; what it found holds until `freshUntil` (nil: for the rest of the session).
    mutating func validated(_ result: ValidationResult, freshUntil: Date? = nil, now: Date = Date()) -> [PlannerAction] {
        validation = .done
        checkedUntil = freshUntil
        switch result {
        case .unchanged, .gone:
            offline = false
            confirmedAt = now
            return []
        case .changed(let metadata):
            confirmedAt = now
            return versionChanged(to: metadata, keeping: nil)
        case .offline:
            offline = true
            return []
        case .cancelled:
            return []
        }
    }
}
