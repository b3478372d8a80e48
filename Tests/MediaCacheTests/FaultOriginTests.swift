import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

@testable import MediaCache

/// The fault catalogue through the loader: right bytes or one clear error, never others, and a healthy cache after.
/// One scenario at a time: fifteen faulty downloads at once would load a small machine enough to slow the
/// tests that run beside them.
@Suite(.serialized) struct FaultOriginTests {
    static let v1 = content(400_000, seed: 11)
    static let v2 = content(400_000, seed: 12)
    static let scenarios = FaultScenario.all(v1: v1, v2: v2)

    @Test(arguments: scenarios)
    func theLoaderDeliversRightBytesOrOneClearError(_ scenario: FaultScenario) async throws {
        var configuration = LoaderHarness.defaultConfiguration
        configuration.retryBackoff = 0.01
        let h = try await LoaderHarness(configuration: configuration)
        let name = String(FaultScenario.path.dropFirst())
        scenario.prepare(h.origin, v1: Self.v1)
        if scenario.cachedPrefix > 0 {
            #expect(try await h.read(name, 0, Int64(scenario.cachedPrefix)) == Array(Self.v1[0..<scenario.cachedPrefix]))
        }
        try await h.restart()
        await h.origin.resetCounters()
        scenario.apply(h.origin)
        do {
            let bytes = try await h.read(name)
            #expect(bytes == scenario.expected, "\(scenario): \(bytes.count) bytes that are not the right ones")
            if let most = scenario.maxOriginBytes {
                await h.origin.waitUntilIdle()
                #expect(
                    h.origin.bodyBytesSent <= most,
                    "\(scenario): the origin sent \(h.origin.bodyBytesSent) bytes: \(h.origin.requests.map { "\($0.method) \($0.range ?? "-") \($0.status) \($0.bodyBytes)" })")
            }
        } catch {
            #expect(error is OriginError || error is CacheError, "\(scenario): \(error)")
            #expect("\(error)".contains(h.url(name).absoluteString) || error is CacheError, "\(scenario): \(error)")
            #expect(scenario.acceptsFailure("\(error)"), "\(scenario): \(error)")
        }
        // Healed, the origin's current content comes through whole (one reader may meet the version change).
        scenario.heal(h.origin)
        var healed = try? await h.read(name)
        if healed == nil { healed = try await h.read(name) }
        #expect(healed == scenario.current, "\(scenario): the cache was left wrong")
        await h.close()
    }
}
