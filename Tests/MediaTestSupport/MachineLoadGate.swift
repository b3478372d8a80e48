import Foundation

/// Simulations measure virtual time by noticing when nothing moves, which a machine busy decoding video can fool
/// (a cancellation still on its way looks like quiet). Tests that decode on wall-clock time therefore never run
/// while a simulation does, in any test target; a waiting decoder test goes before newly arriving simulations.
public actor MachineLoadGate {
    /// The one gate of the test process.
    public static let shared = MachineLoadGate()
    private var simulations = 0
    private var heavy = false
    private var heavyWaiting = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    private func wait() async { await withCheckedContinuation { waiters.append($0) } }

    private func wakeAll() {
        let woken = waiters
        waiters.removeAll()
        for waiter in woken { waiter.resume() }
    }

    /// Runs `work` as part of a simulation (many at once).
    public func simulation<T: Sendable>(_ work: @Sendable () async throws -> T) async rethrows -> T {
        while heavy || heavyWaiting > 0 { await wait() }
        simulations += 1
        defer {
            simulations -= 1
            wakeAll()
        }
        return try await work()
    }

    /// Enters as a simulation that spans several steps (until `leaveSimulation`).
    public func enterSimulation() async {
        while heavy || heavyWaiting > 0 { await wait() }
        simulations += 1
    }

    /// Leaves what `enterSimulation` entered.
    public func leaveSimulation() {
        simulations -= 1
        wakeAll()
    }

    /// Runs `work` alone among simulations (it decodes video on wall-clock time).
    public func heavy<T: Sendable>(_ work: @Sendable () async throws -> T) async rethrows -> T {
        heavyWaiting += 1
        while heavy || simulations > 0 { await wait() }
        heavyWaiting -= 1
        heavy = true
        defer {
            heavy = false
            wakeAll()
        }
        return try await work()
    }
}

