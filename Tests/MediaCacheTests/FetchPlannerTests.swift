import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// The fetch planner as a plain value: its rules one by one, then under arbitrary orders of events.
@Suite struct FetchPlannerTests {
    private func planner() -> FetchPlanner { FetchPlanner(blockSize: 100, joinWindow: 300) }
    private let meta = ResourceMetadata(url: "http://o/v.mp4", contentLength: 10_000, etag: "\"a\"")

    @Test func aReaderJoinsAFetchRunningTowardItsOffset() {
        var p = planner()
        let (first, _) = p.plan(offset: 0, end: nil, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 1)
        #expect(first == .start(fetchID: 1, start: 0, target: 10_000))
        p.progressed(fetchID: 1, to: 150)
        let (second, _) = p.plan(offset: 400, end: nil, length: 10_000, available: ByteRangeSet([0..<150]), holding: nil, newID: 2)
        #expect(second == .wait(fetchID: 1))
        #expect(p.fetches[1]?.interest == 2)
        // Past the join window: a new fetch from the block of the offset, and the first one stops there.
        let (third, _) = p.plan(offset: 950, end: 1_050, length: 10_000, available: ByteRangeSet([0..<150]), holding: nil, newID: 3)
        #expect(third == .start(fetchID: 3, start: 900, target: 1_100))
        #expect(p.fetches[1]?.target == 900)
    }

    /// A whole body (the origin ignored Range) its reader is done with runs to the end when little is left of
    /// it — whatever the machine's speed — and for a moment only when much is.
    @Test func aWholeBodyNobodyReadsRunsOnWhenLittleIsLeft() {
        for (length, due) in [(Int64(600_000), [PlannerAction]()), (Int64(3 << 20), [.cancelAfterGrace(fetchID: 1)])] {
            var p = planner()
            _ = p.plan(offset: 0, end: 1_000, length: nil, available: ByteRangeSet(), holding: nil, newID: 1)
            p.receivesWholeBody(fetchID: 1)
            p.answered(ResourceMetadata(url: "http://o/w.mp4", contentLength: length))
            p.progressed(fetchID: 1, to: 16_384)
            #expect(p.releaseFinished(fetchID: 1, readerEnd: 1_000) == due, "\(length)")
            #expect(p.fetches[1]?.target == nil, "\(length)")
        }
    }

    /// A reader that met a new version mid-read restarts from byte 0: the fetch writing the new version further
    /// on is not cut at its block when the reader lets go, and the restarted reader's fetch from 0 leads into it
    /// and hands over to it, so no byte of the new version is fetched twice.
    @Test func aRestartOnANewVersionKeepsTheFetchThatFoundIt() {
        var p = planner()
        _ = p.plan(offset: 3_000, end: nil, length: 10_000, available: ByteRangeSet([0..<3_000]), holding: nil, newID: 1)
        #expect(p.versionChanged(to: meta, keeping: 1).isEmpty)
        p.progressed(fetchID: 1, to: 3_150)
        // The reader lets go (it restarts): the fetch keeps its target and is not cancelled (little is left).
        #expect(p.release(fetchID: 1, finishingBlock: true).isEmpty)
        #expect(p.fetches[1]?.target == 10_000)
        // The restarted reader's fetch from 0 ends where the kept fetch starts and keeps it for the reader.
        let (lead, _) = p.plan(offset: 0, end: nil, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 2)
        #expect(lead == .start(fetchID: 2, start: 0, target: 3_000))
        #expect(p.fetches[1]?.interest == 1 && !p.isUnwanted(1))
        p.finished(fetchID: 2, outcome: .finished)
        // At byte 3,000 the reader joins it, holding the unit kept for it (not a second one).
        let (join, actions) = p.plan(
            offset: 3_000, end: nil, length: 10_000, available: ByteRangeSet([0..<3_150]), holding: 2, newID: 3)
        #expect(join == .wait(fetchID: 1) && actions.isEmpty)
        #expect(p.fetches[1]?.interest == 1)
        #expect(p.release(fetchID: 1, finishingBlock: false) == [.cancel(fetchID: 1)])
    }

    /// The reader can meet the new version in the store (and let go, restart and plan again on it) before the
    /// news reaches the plan: the fetch that found it is not left cut at its block, and the restarted reader's
    /// fetch of the new version is not stopped as one of the old.
    @Test func aReaderAheadOfTheNewsOfANewVersionCostsNoSecondDownload() {
        for (length, due) in [(Int64(10_000), [PlannerAction]()), (Int64(3 << 20), [.cancelAfterGrace(fetchID: 1)])] {
            var p = planner()
            _ = p.plan(
                offset: 3_000, end: nil, length: length, available: ByteRangeSet([0..<3_000]), holding: nil, newID: 1,
                generation: 1)
            // The store holds generation 2 now; the reader fails, lets go, and restarts from byte 0 on it.
            #expect(p.release(fetchID: 1, finishingBlock: true) == [.cancelAfterGrace(fetchID: 1)])
            #expect(p.fetches[1]?.target == 3_000)
            let (restart, _) = p.plan(
                offset: 0, end: nil, length: length, available: ByteRangeSet(), holding: nil, newID: 2, generation: 2)
            #expect(restart == .start(fetchID: 2, start: 0, target: 3_000))
            // Then the news: the fetch that found it runs on to its planned end, the new version's fetch stays.
            #expect(p.versionChanged(to: meta, keeping: 1, newGeneration: 2) == due, "\(length)")
            #expect(p.fetches.keys.sorted() == [1, 2], "\(length)")
            #expect(p.fetches[1]?.target == length, "\(length)")
            #expect(p.isUnwanted(1) == !due.isEmpty, "\(length)")
        }
    }

    /// A fetch that proved a change by re-reading cached bytes before its start wrote them first: a restarted
    /// reader's fetch from byte 0 ends where those bytes begin and still keeps the fetch for its reader.
    @Test func aRestartLeadsIntoTheNewVersionAcrossTheBytesThatProvedIt() {
        var p = planner()
        _ = p.plan(
            offset: 3_000, end: nil, length: 10_000, available: ByteRangeSet([0..<3_000]), holding: nil, newID: 1)
        _ = p.versionChanged(to: meta, keeping: 1, newGeneration: 2)
        p.progressed(fetchID: 1, to: 3_150)
        #expect(p.release(fetchID: 1, finishingBlock: true).isEmpty)
        let (lead, _) = p.plan(
            offset: 0, end: nil, length: 10_000, available: ByteRangeSet([2_900..<3_150]), holding: nil, newID: 2,
            generation: 2)
        #expect(lead == .start(fetchID: 2, start: 0, target: 2_900))
        #expect(p.fetches[2]?.leadsInto == 1 && p.fetches[1]?.interest == 1)
    }

    /// A reader whose lead-in ended holds the fetch it led into from then on, so letting go lets that fetch go
    /// too (the unit kept for it had leaked: the fetch ran to its end for nobody).
    @Test func aFinishedLeadInHandsItsReaderOver() {
        var p = planner()
        _ = p.plan(
            offset: 3_000, end: nil, length: 10_000, available: ByteRangeSet([0..<3_000]), holding: nil, newID: 1)
        _ = p.versionChanged(to: meta, keeping: 1)
        p.progressed(fetchID: 1, to: 3_150)
        _ = p.release(fetchID: 1, finishingBlock: true)
        _ = p.plan(offset: 0, end: nil, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 2)
        p.finished(fetchID: 2, outcome: .finished)
        #expect(p.takeHandover(from: 2) == 1)
        #expect(p.takeHandover(from: 2) == nil)
        #expect(p.release(fetchID: 1, finishingBlock: false) == [.cancel(fetchID: 1)])
    }

    @Test func aNewFetchCoversOnlyMissingBytes() {
        var p = planner()
        let available = ByteRangeSet([0..<250, 700..<800])
        let (plan, _) = p.plan(offset: 250, end: nil, length: 10_000, available: available, holding: nil, newID: 1)
        // Rounded down to its block but not into cached bytes; stops where cached bytes begin.
        #expect(plan == .start(fetchID: 1, start: 250, target: 700))
        let (ahead, _) = p.plan(offset: 650, end: nil, length: 10_000, available: available, holding: nil, newID: 2)
        #expect(ahead == .start(fetchID: 2, start: 600, target: 700))
        #expect(p.fetches[1]?.target == 600)
    }

    /// A client that jumps about (a proxy's client) fetches from exactly where it reads to exactly its read-ahead,
    /// not from its block's start to a block's end.
    @Test func anExactFetchStartsAndEndsWhereTheReaderAsks() {
        var p = planner()
        let (plan, _) = p.plan(
            offset: 250, end: 330, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 1, exact: true)
        #expect(plan == .start(fetchID: 1, start: 250, target: 330))
        #expect(p.isFetching(300) && !p.isFetching(330) && !p.isFetching(200))
    }

    @Test func aFetchNobodyWantsFinishesItsBlockOrStopsAtOnce() {
        var p = planner()
        _ = p.plan(offset: 0, end: nil, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 1)
        p.progressed(fetchID: 1, to: 130)
        let r1 = p.release(fetchID: 1, finishingBlock: true)
        #expect(r1 == [.cancelAfterGrace(fetchID: 1)])
        #expect(p.fetches[1]?.target == 200)
        #expect(p.isUnwanted(1))
        _ = p.plan(offset: 5_000, end: nil, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 2)
        let r2 = p.release(fetchID: 2, finishingBlock: false)
        #expect(r2 == [.cancel(fetchID: 2)])
        // A reader that got everything lets the fetch finish that block, and no further.
        _ = p.plan(offset: 8_000, end: 8_050, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 3)
        p.progressed(fetchID: 3, to: 8_050)
        let r3 = p.releaseFinished(fetchID: 3, readerEnd: 8_050)
        #expect(r3.isEmpty)
        #expect(p.fetches[3]?.target == 8_100)
    }

    @Test func aNewVersionStopsEveryFetchOfTheOldOne() {
        var p = planner()
        _ = p.plan(offset: 0, end: 500, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 1)
        _ = p.plan(offset: 5_000, end: 5_500, length: 10_000, available: ByteRangeSet(), holding: nil, newID: 2)
        var v2 = meta
        v2.etag = "\"b\""
        let r4 = p.versionChanged(to: v2, keeping: 2)
        #expect(r4 == [.cancel(fetchID: 1)])
        #expect(p.fetches.keys.sorted() == [2])
        #expect(p.metadata == v2)
        if case .cancelled = p.outcome(of: 1) {} else { Issue.record("fetch 1 did not end as cancelled") }
        let r5 = p.validated(.changed(meta))
        #expect(r5 == [.cancel(fetchID: 2)])
    }

    @Test func reachabilityComesFromWhatTheOriginDid() {
        var p = planner()
        let began = p.beginValidation(needed: true)
        #expect(began)
        let again = p.beginValidation(needed: true)
        #expect(!again, "a second check started beside the first")
        let r6 = p.validated(.cancelled)
        #expect(r6.isEmpty)
        #expect(!p.offline, "a cancelled check marked the origin offline")
        _ = p.plan(offset: 0, end: nil, length: nil, available: ByteRangeSet(), holding: nil, newID: 1)
        p.finished(fetchID: 1, outcome: .failed(OriginError.unreachable(url: "u", reason: "refused")))
        #expect(p.offline)
        p.answered(meta)
        #expect(!p.offline)
        let r7 = p.validated(.offline)
        #expect(r7.isEmpty)
        #expect(p.offline)
        var fresh = planner()
        let needed = fresh.beginValidation(needed: false)
        #expect(!needed)
        #expect(fresh.validation == .done)
    }

    // MARK: - Arbitrary event orders

    /// A resource, its store, readers and fetch tasks around one planner; every event the loader could see, in
    /// any order the generator picks.
    struct World {
        var planner = FetchPlanner(blockSize: 16, joinWindow: 48)
        let length: Int64 = 400
        var written = ByteRangeSet()
        var version = 0
        var nextID = 1
        struct Fetch { var version: Int }
        var running: [Int: Fetch] = [:]
        var graceDue: Set<Int> = []
        enum State: Equatable { case active, done, failed, cancelled }
        struct Reader {
            var offset: Int64
            var end: Int64
            /// Where it started (a restart on a new version begins there again).
            var start: Int64 = 0
            var restarts = 0
            var holding: Int?
            var delivered: Int64 = 0
            var version: Int
            var state = State.active
        }
        var readers: [Reader] = []
        var log: [String] = []
        /// A fetch met a new version and the store holds it, but the plan has not heard yet: the fetch and the
        /// store's generation.
        var pendingNews: (keeping: Int, generation: Int)?

        mutating func perform(_ actions: [PlannerAction]) {
            for action in actions {
                switch action {
                case .cancel(let id): endFetch(id, .cancelled)
                case .cancelAfterGrace(let id): graceDue.insert(id)
                }
            }
        }

        mutating func endFetch(_ id: Int, _ outcome: FetchOutcome) {
            guard running.removeValue(forKey: id) != nil else { return }
            planner.finished(fetchID: id, outcome: outcome)
        }

        mutating func addReader<G: RandomNumberGenerator>(_ g: inout G) {
            let offset = Int64.random(in: 0..<length, using: &g)
            // Half of them read to the end, as a download or a player does.
            let end = Bool.random(using: &g) ? length : Swift.min(length, offset + Int64.random(in: 1...160, using: &g))
            readers.append(Reader(offset: offset, end: end, start: offset, version: version))
            log.append("reader \(readers.count - 1) \(offset)..<\(end)")
        }

        /// One pass of LoadingStream's loop for reader `i`.
        mutating func step(_ i: Int) {
            guard readers[i].state == .active else { return }
            var reader = readers[i]
            defer { readers[i] = reader }
            if reader.version != version {
                guard reader.delivered == 0 else {
                    // It would throw `resourceChanged`: it delivered bytes of the old version. Its client starts
                    // over from where it began (as `fetch` and the player do), twice at most.
                    if let held = reader.holding { perform(planner.release(fetchID: held, finishingBlock: true)) }
                    guard reader.restarts < 2 else {
                        reader.state = .failed
                        return
                    }
                    reader.restarts += 1
                    (reader.offset, reader.delivered, reader.holding, reader.version) =
                        (reader.start, 0, nil, version)
                    log.append("reader \(i) restarts on version \(version)")
                    return
                }
                reader.version = version
            }
            let run = Swift.min(written.contiguousLength(from: reader.offset), reader.end - reader.offset)
            if run > 0 {
                reader.offset += run
                reader.delivered += run
                if reader.offset >= reader.end {
                    if let held = reader.holding { perform(planner.releaseFinished(fetchID: held, readerEnd: reader.offset)) }
                    reader.state = .done
                }
                return
            }
            if let held = reader.holding, planner.outcome(of: held) != nil {
                reader.holding = planner.takeHandover(from: held)
            }
            let id = nextID
            let (plan, actions) = planner.plan(
                offset: reader.offset, end: reader.end, length: length, available: written, holding: reader.holding,
                newID: id, generation: Int64(version))
            switch plan {
            case .wait(let fetchID):
                reader.holding = fetchID
            case .start(let fetchID, _, _):
                nextID += 1
                reader.holding = fetchID
                running[fetchID] = Fetch(version: version)
            }
            perform(actions)
        }

        mutating func progress<G: RandomNumberGenerator>(_ id: Int, _ g: inout G) {
            guard let fetch = planner.fetches[id], let task = running[id] else { return }
            let stop = fetch.target ?? length
            guard fetch.progress < stop else { return endFetch(id, .finished) }
            let next = Swift.min(stop, fetch.progress + Int64.random(in: 1...40, using: &g))
            if task.version == version { written.insert(fetch.progress..<next) }
            planner.progressed(fetchID: id, to: next)
            if next >= stop { endFetch(id, .finished) }
        }

        mutating func cancel<G: RandomNumberGenerator>(_ i: Int, _ g: inout G) {
            guard readers[i].state == .active else { return }
            if let held = readers[i].holding {
                perform(planner.release(fetchID: held, finishingBlock: Bool.random(using: &g)))
            }
            readers[i].state = .cancelled
        }

        mutating func changeVersion() {
            version += 1
            written = ByteRangeSet()
            let metadata = ResourceMetadata(url: "http://o/v", contentLength: length, etag: "\"\(version)\"")
            perform(planner.versionChanged(to: metadata, keeping: nil))
            log.append("version \(version)")
        }

        /// Fetch `id`, before writing anything, meets a new version: the store starts a new generation (readers
        /// see it at once) and the fetch writes it; the plan hears later (`deliverNews`).
        mutating func fetchFindsNewVersion(_ id: Int) {
            guard pendingNews == nil, running[id] != nil, let fetch = planner.fetches[id], fetch.progress == fetch.start
            else { return }
            version += 1
            written = ByteRangeSet()
            running[id]?.version = version
            pendingNews = (id, version)
            log.append("fetch \(id) finds version \(version)")
        }

        mutating func deliverNews() {
            guard let news = pendingNews else { return }
            pendingNews = nil
            let metadata = ResourceMetadata(url: "http://o/v", contentLength: length, etag: "\"\(news.generation)\"")
            perform(planner.versionChanged(to: metadata, keeping: news.keeping, newGeneration: Int64(news.generation)))
            log.append("news of version \(news.generation)")
        }

        mutating func expireGrace(_ id: Int) {
            graceDue.remove(id)
            if planner.isUnwanted(id) { endFetch(id, .cancelled) }
        }

        /// What must hold after every event.
        func checkInvariants() -> String? {
            // Every fetch the planner tracks has a running task of the current version, and vice versa.
            if Set(planner.fetches.keys) != Set(running.keys) {
                return "planner fetches \(planner.fetches.keys.sorted()) vs tasks \(running.keys.sorted())"
            }
            // (Until the plan hears of a new version, fetches of the old one run: the news stops them.)
            guard pendingNews == nil else { return nil }
            for (id, task) in running where task.version != version { return "fetch \(id) of an old version runs" }
            // No byte is being fetched by two fetches at once.
            let remaining = planner.fetches.values.map { $0.progress..<Swift.max($0.progress, $0.target ?? length) }
                .filter { !$0.isEmpty }.sorted { $0.lowerBound < $1.lowerBound }
            for (a, b) in zip(remaining, remaining.dropFirst()) where a.upperBound > b.lowerBound {
                return "two fetches cover \(b.lowerBound)..<\(Swift.min(a.upperBound, b.upperBound))"
            }
            // A unit kept for an ended lead-in's reader is kept for a reader that still holds that lead-in.
            for (leadIn, next) in planner.handovers where planner.fetches[next] != nil
                && !readers.contains(where: { $0.state == .active && $0.holding == leadIn })
            {
                return "the unit of fetch \(next) kept for the reader of lead-in \(leadIn) leaked"
            }
            // Interest is exactly the readers relying on each fetch.
            for (id, fetch) in planner.fetches {
                // (A lead-in into it, in flight or ended with its unit not yet taken by its reader, holds one.)
                let holders = readers.filter { $0.state == .active && $0.holding == id }.count
                    + planner.fetches.values.filter { $0.leadsInto == id }.count
                    + planner.handovers.values.filter { $0 == id }.count
                if fetch.interest != holders { return "fetch \(id) has interest \(fetch.interest), \(holders) holders" }
            }
            return nil
        }
    }

    @Test func arbitraryEventOrdersKeepEveryInvariantAndLeaveNoReaderWaiting() {
        for seed in UInt64(1)...1000 {
            var g = SeededGenerator(seed: seed)
            var world = World()
            for _ in 0..<300 {
                let active = world.readers.indices.filter { world.readers[$0].state == .active }
                switch Int.random(in: 0..<100, using: &g) {
                case 0..<12: world.addReader(&g)
                case 12..<45: if let i = active.randomElement(using: &g) { world.step(i) }
                case 45..<80: if let id = world.running.keys.sorted().randomElement(using: &g) { world.progress(id, &g) }
                case 80..<84: if let id = world.running.keys.sorted().randomElement(using: &g) {
                        world.endFetch(id, .failed(OriginError.connectionLost(url: "u", reason: "reset")))
                    }
                case 84..<90: if let i = active.randomElement(using: &g) { world.cancel(i, &g) }
                case 90..<95: if let id = world.graceDue.sorted().randomElement(using: &g) { world.expireGrace(id) }
                default:
                    switch Int.random(in: 0..<6, using: &g) {
                    case 0: world.changeVersion()
                    case 1: if let id = world.running.keys.sorted().randomElement(using: &g) { world.fetchFindsNewVersion(id) }
                    case 2, 3: world.deliverNews()
                    default: break
                    }
                }
                if let broken = world.checkInvariants() {
                    Issue.record("seed \(seed): \(broken)\n\(world.log.suffix(12).joined(separator: "\n"))")
                    return
                }
            }
            // Quiet down: the news arrives, fetches run, readers read, graces expire, until nothing moves.
            world.deliverNews()
            for _ in 0..<20_000 {
                let active = world.readers.indices.filter { world.readers[$0].state == .active }
                if active.isEmpty && world.running.isEmpty { break }
                for i in active { world.step(i) }
                for id in world.running.keys.sorted() { world.progress(id, &g) }
                for id in world.graceDue.sorted() { world.expireGrace(id) }
                if let broken = world.checkInvariants() {
                    Issue.record("seed \(seed), draining: \(broken)")
                    return
                }
            }
            let stuck = world.readers.indices.filter { world.readers[$0].state == .active }
            #expect(stuck.isEmpty, "seed \(seed): readers \(stuck) left waiting")
            #expect(world.running.isEmpty, "seed \(seed): fetches \(world.running.keys.sorted()) never ended")
            for reader in world.readers where reader.state == .done {
                #expect(reader.offset == reader.end)
            }
        }
    }
}
