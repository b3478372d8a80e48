import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import StoryPlayer

/// The origin's shaping on virtual time, counting the work that came due but has not run on its event loop yet:
/// virtual time must not move while the origin is about to send (a busy machine may not run its thread for a
/// while, and the counters of bytes sent and received would look settled meanwhile).
final class SimulatedLinkScheduler: OriginScheduler {
    let clock: VirtualClock
    private let due = NIOLockedValueBox(0)
    init(clock: VirtualClock) { self.clock = clock }
    var now: Double { clock.now }
    /// Work handed to the origin's event loop that has not finished there.
    var pending: Int { due.withLockedValue { $0 } }
    func schedule(after delay: Double, on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        clock.schedule(after: delay) { [due] in
            due.withLockedValue { $0 += 1 }
            loop.execute {
                work()
                due.withLockedValue { $0 -= 1 }
            }
        }
    }
}

/// An origin, a cache and a loader whose only clock is virtual: the origin's latency and bandwidth shaping and
/// the player's ticks all run on `clock`, which moves only when nothing is in flight (every request the loader
/// sent has reached the origin, every byte the origin sent has been written) and no task is runnable (every
/// thread of the pools that run them was free at one moment: `PoolQuiescence`). Results are in virtual time and
/// do not depend on how busy the machine is.
final class Simulation: CacheHarness, @unchecked Sendable {
    let clock: VirtualClock
    /// The origin's shaping, on `clock`.
    private let link: SimulatedLinkScheduler
    /// Play counts kept in the cache directory, as the program keeps them.
    let playCounts: PlayCountStore

    init(profile: NetworkProfile, directory: URL? = nil) async throws {
        let clock = VirtualClock()
        self.clock = clock
        link = SimulatedLinkScheduler(clock: clock)
        let origin = try await MediaOriginServer(profile: profile, scheduler: link)
        let directory = directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        playCounts = try PlayCountStore(directory: directory)
        try await super.init(origin: origin, directory: directory, configuration: Self.loaderConfiguration)
        restartsOriginCounters = true
    }

    /// The link runs on virtual time, so the loader's real-time rules (retry backoff, minimum throughput) would
    /// measure the wrong clock: they are off here and tested on real time in MediaCacheTests. (The origin
    /// timeouts stay: they only fire when virtual time stands still, which `MachineLoadGate` no longer makes it
    /// do between one test's runs.)
    static var loaderConfiguration: LoaderConfiguration {
        var configuration = LoaderConfiguration()
        configuration.retryBackoff = 0
        configuration.client.minimumBytesPerSecond = 0
        return configuration
    }

    /// Whether this simulation holds its place at the gate (from its first run to `close`).
    private let holdsGate = NIOLockedValueBox(false)

    deinit {
        if holdsGate.withLockedValue({ $0 }) { Task { await MachineLoadGate.shared.leaveSimulation() } }
    }

    /// Shuts everything down and lets a test that decodes on wall-clock time have the machine.
    override func close() async {
        await super.close()
        if holdsGate.withLockedValue({ held in defer { held = false }; return held }) {
            await MachineLoadGate.shared.leaveSimulation()
        }
    }

    /// Runs `work`, advancing virtual time whenever the system is quiet, until it returns.
    /// The simulation enters the gate at its first run and stays until `close`: a test waiting at the gate
    /// between two runs would leave its own fetches in flight while virtual time stood still (their real-time
    /// read timeout then failed a healthy story).
    func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        if !holdsGate.withLockedValue({ $0 }) {
            await MachineLoadGate.shared.enterSimulation()
            holdsGate.withLockedValue { $0 = true }
        }
        return try await advancing(work)
    }

    private func advancing<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let done = NIOLockedValueBox(false)
        let task = Task {
            defer { done.withLockedValue { $0 = true } }
            return try await work()
        }
        // A bound on a hang, not on speed: two cores beside eight busy loops took more than 120 s of real time
        // to play a simulated HLS story to its end.
        let realDeadline = ContinuousClock.now + .seconds(300)
        while !done.withLockedValue({ $0 }) {
            guard ContinuousClock.now < realDeadline else {
                task.cancel()
                break
            }
            await settle()
            if done.withLockedValue({ $0 }) { break }
            guard var next = clock.nextDeadline else { continue }
            // A long jump is usually a timeout (the wait limit, a stall's end): taken only after a long quiet, so a
            // task a busy machine has not run for a while (parsing a playlist, say) is not overtaken by it.
            if next - clock.now > Self.longJump {
                await settle(quietRounds: Self.longQuietRounds)
                guard let again = clock.nextDeadline else { continue }
                next = again
            }
            if done.withLockedValue({ $0 }) { break }
            clock.advance(to: next)
        }
        return try await task.value
    }

    /// Waits until nothing is in flight between loader and origin: every request the loader sent has reached the
    /// origin and every byte sent has been received, or (when the client cancelled a response, whose last bytes
    /// the origin counts but nobody reads) the counters have stopped moving.
    /// Virtual seconds beyond which a jump waits for `longQuietRounds`.
    static let longJump = 0.5
    /// Milliseconds of stillness before a long jump (a thread of a loaded machine runs well within that).
    static let longQuietRounds = 150

    private func settle(quietRounds required: Int = 8) async {
        let deadline = ContinuousClock.now + .seconds(5)
        var quietRounds = 0
        var previous: (Int, Int64, Int, Int)?
        let counters = { () -> (Int, Int64, Int, Int) in
            let metrics = self.loader.metrics
            return (metrics.originRequests, metrics.originBytesReceived, self.origin.requests.count, self.origin.bodyBytesSent)
        }
        while ContinuousClock.now < deadline {
            let current = counters()
            let requestsArrived = current.0 == current.2
            let balanced = requestsArrived && current.1 == Int64(current.3)
            // Work the origin's loop has yet to run (a send that came due) is never quiet, however long it waits.
            let unchanged = (previous.map { $0 == current } ?? false) && link.pending == 0
            // Balanced counters settle fast; counters that merely stopped moving need longer, and much longer
            // when a request the loader sent has not shown up at the origin (it may yet), but never forever. Balanced
            // is not idle: a task may be about to act on bytes just received (a busy machine stretches that gap), so
            // even balanced counters must hold still for several milliseconds.
            quietRounds = unchanged ? quietRounds + 1 : 0
            if quietRounds >= (balanced ? required : (requestsArrived ? Swift.max(16, required) : Swift.max(200, required))) {
                // Still counters are not idle tasks: a task runnable but not yet run (a busy machine) moves none.
                if await PoolQuiescence.proven(), counters() == current, link.pending == 0 { return }
                quietRounds = 0
            }
            previous = current
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

}

/// Every suite that runs a `Simulation`, one test at a time. A simulation tells that nothing is in flight by
/// watching counters hold still; several at once (each polling every millisecond) kept a two-core machine busy
/// enough to fool each other, and a CI run failed tests that pass alone.
@Suite(.serialized) enum SimulationSuites {}

/// Collects events from any task.
final class EventRecorder: Sendable {
    private let events = NIOLockedValueBox<[PlayerEvent]>([])
    var all: [PlayerEvent] { events.withLockedValue { $0 } }
    var handler: @Sendable (PlayerEvent) -> Void { { event in self.events.withLockedValue { $0.append(event) } } }
}

/// Runs a suite or test through `MachineLoadGate.heavy`.
struct DecodesOnWallClock: SuiteTrait, TestTrait, TestScoping {
    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await MachineLoadGate.shared.heavy { try await function() }
    }
}

extension Trait where Self == DecodesOnWallClock {
    /// The suite decodes video on wall-clock time: it never overlaps a simulation.
    static var decodesOnWallClock: Self { DecodesOnWallClock() }
}
