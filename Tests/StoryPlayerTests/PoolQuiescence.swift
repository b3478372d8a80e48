import Foundation
import NIOPosix

/// Proof that the threads running a simulation's tasks were all free at one moment: one blocker per thread of
/// Swift's cooperative pool (and of NIO's blocking-work pool), each holding its thread until all have arrived.
/// A thread only takes a blocker once the job it runs has suspended or ended, and the queues hand out work in
/// order, so when every blocker has arrived no task that was already runnable (a player woken by a command, a
/// fetch about to send its request, a read blocked on the disk) is still waiting for a thread or mid-step.
/// Counters holding still cannot tell that: a task a busy machine has not run yet moves none of them.
enum PoolQuiescence {
    /// Threads in the cooperative pool (one per core) and in NIO's singleton thread pool.
    static let width = Swift.max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// True when every pool thread was free at one moment within `timeout` seconds; false when some stayed busy.
    static func proven(timeout: Double = 0.05) async -> Bool {
        async let cooperative = rendezvous(timeout: timeout) { meeting in meeting.arrive() }
        async let blocking = rendezvous(timeout: timeout) { meeting in
            (try? await NIOThreadPool.singleton.runIfActive { meeting.arrive() }) ?? false
        }
        let (a, b) = await (cooperative, blocking)
        return a && b
    }

    /// `width` blockers, each started by `start` in a task of the cooperative pool's lowest priority (work of any
    /// priority queued before is handed out first), meeting before `timeout` passes.
    private static func rendezvous(
        timeout: Double, _ start: @escaping @Sendable (Rendezvous) async -> Bool
    ) async -> Bool {
        let meeting = Rendezvous(width: width, deadline: Date(timeIntervalSinceNow: timeout))
        return await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<width { group.addTask(priority: .background) { await start(meeting) } }
            var all = true
            for await arrived in group { all = all && arrived }
            return all
        }
    }
}

/// `width` threads meeting before a deadline; once it passes, every waiter leaves and later arrivals fail at once.
private final class Rendezvous: @unchecked Sendable {
    private let condition = NSCondition()
    private let width: Int
    private let deadline: Date
    private var arrived = 0
    private var abandoned = false

    init(width: Int, deadline: Date) {
        self.width = width
        self.deadline = deadline
    }

    /// Blocks the calling thread until all have arrived (true) or the deadline passed (false).
    func arrive() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !abandoned else { return false }
        arrived += 1
        if arrived == width {
            condition.broadcast()
            return true
        }
        while arrived < width, !abandoned {
            if !condition.wait(until: deadline) {
                abandoned = true
                condition.broadcast()
            }
        }
        return arrived >= width
    }
}
