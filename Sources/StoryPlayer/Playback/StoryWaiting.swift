import Foundation
import MediaCache

/// Bounded waiting: a story never waits longer than `PlayerConfiguration.waitLimit` for bytes, before its file
/// opens, before its first frame or in a stall (the machine decides when), and then fails in one sentence naming
/// what the origin did.
struct StoryWaiting: Sendable {
    let loader: MediaLoader
    let url: URL
    let key: CacheKey
    let clock: PlaybackClock
    /// The longest wait in seconds of the wall clock; nil: none.
    let limit: Double?

    /// The wait limit in the player's clock (which may run faster or slower than the wall clock); nil: none.
    var clockLimit: Double? { limit.map { $0 * clock.speed } }

    /// Runs `work` (reading what the story needs before it can play: its length, its header) while `machine`
    /// looks at the clock: when it says the wait limit passed before the file opened, the story gives up.
    func untilOpened<T: Sendable>(
        _ machine: inout PlaybackMachine, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let clock = self.clock
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            defer { group.cancelAll() }
            while true {
                var deadline: Double?
                for action in machine.handle(.tick(now: clock.now)) {
                    switch action {
                    case .giveUp: throw PlayerError(sentence(at: nil, of: nil))
                    case .wake(let at): deadline = at
                    default: break
                    }
                }
                if let deadline {
                    group.addTask {
                        try await clock.sleep(until: deadline)
                        return nil
                    }
                }
                // The work's value, or the machine's deadline (then it looks again).
                guard let first = try await group.next() else { throw CancellationError() }
                if let value = first { return value }
            }
        }
    }

    /// Why a story stopped waiting: how long, where, and what the origin last did wrong.
    func sentence(at offset: Int64?, of length: Int64?) -> String {
        let seconds = Int((limit ?? 0).rounded())
        let place = offset.map { byte in " at byte \(byte)" + (length.map { " of \($0)" } ?? "") } ?? ""
        let shown = OriginURL.redactingCredentials(in: url.absoluteString)
        var fault = loader.lastOriginFailure(for: key) ?? "the origin sent nothing more in that time"
        // (The loader's sentences start with the URL, said once here.)
        if fault.hasPrefix(shown + ": ") { fault.removeFirst(shown.count + 2) }
        return "gave up after waiting \(seconds) s for \(shown)\(place): \(fault)"
    }
}
