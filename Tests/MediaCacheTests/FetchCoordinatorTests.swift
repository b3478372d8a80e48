import Foundation
import MediaTestSupport
import Testing

@testable import MediaCache

/// The coordinator's answers that spare a reader a look at the store.
@Suite struct FetchCoordinatorTests {
    private let key = CacheKey(custom: "http://o/v.mp4")

    /// A check that runs, or ended and still holds, is known without the store; one never started, or one whose
    /// time ran out, is not (what is cached then decides whether a check starts).
    @Test func aSettledCheckIsKnownWithoutTheStore() async {
        let coordinator = FetchCoordinator(blockSize: 100, joinWindow: 300)
        let start = Date(timeIntervalSince1970: 1_000_000)
        #expect(coordinator.settledValidation(key, now: start) == nil, "a key never seen counted as checked")
        let task = coordinator.startValidation(key: key, needed: true, freshUntil: nil, now: start) {
            Task {}
        }
        guard case .running(let running)? = coordinator.settledValidation(key, now: start) else {
            Issue.record("a running check was not reported as running")
            return
        }
        #expect(running == task)
        coordinator.validated(key: key, .unchanged, freshUntil: start.addingTimeInterval(60), now: start)
        guard case .holds? = coordinator.settledValidation(key, now: start.addingTimeInterval(59)) else {
            Issue.record("a check holding for another second was not reported as holding")
            return
        }
        #expect(coordinator.settledValidation(key, now: start.addingTimeInterval(60)) == nil,
                "a check whose time ran out still counted as holding")
    }
}
