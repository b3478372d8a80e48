import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import MediaCache

/// The one cancellable wait: woken by its waker, or by cancellation, never left suspended.
@Suite struct CancellableWaitTests {
    struct Parked: Sendable {
        var open = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private func waitUntilParked(_ box: NIOLockedValueBox<Parked>, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while box.withLockedValue({ $0.waiters.count }) < count {
            guard ContinuousClock.now < deadline else { throw CancellationError() }
            await Task.yield()
        }
    }

    private func wait(_ box: NIOLockedValueBox<Parked>) async {
        await CancellableWait.suspend(
            in: box,
            park: { s, id, continuation in
                guard !s.open else { return false }
                s.waiters[id] = continuation
                return true
            },
            unpark: { s, id in CancellableWait.waker(s.waiters.removeValue(forKey: id)) })
    }

    @Test func aWakerResumesEveryParkedTask() async throws {
        let box = NIOLockedValueBox(Parked())
        let tasks = (0..<3).map { _ in Task { await wait(box) } }
        try await waitUntilParked(box, count: 3)
        let waiters = box.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
        for task in tasks { await task.value }
        #expect(box.withLockedValue { $0.waiters.isEmpty })
    }

    @Test func cancellationWakesAParkedTaskAndTakesItsWaiterBack() async throws {
        let box = NIOLockedValueBox(Parked())
        let task = Task { await wait(box) }
        try await waitUntilParked(box, count: 1)
        task.cancel()
        await task.value
        #expect(box.withLockedValue { $0.waiters.isEmpty }, "the cancelled waiter does not stay behind")
    }

    @Test func nothingToWaitForOrAlreadyCancelledReturnsAtOnce() async {
        let open = NIOLockedValueBox(Parked(open: true))
        await wait(open)
        let closed = NIOLockedValueBox(Parked())
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await wait(closed)
        }
        await task.value
        #expect(closed.withLockedValue { $0.waiters.isEmpty })
    }
}
