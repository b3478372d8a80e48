import Foundation
import MediaOrigin
import MediaTestSupport
import Testing

/// The fault catalogue through the proxy: a full right body, or an error status or a connection cut short of its
/// Content-Length; never a complete-looking wrong body.
/// One scenario at a time: fifteen faulty downloads at once would load a small machine enough to slow the
/// tests that run beside them.
@Suite(.serialized) struct ProxyFaultTests {
    static let v1 = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 13 ^ $0 >> 7) }
    static let v2 = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 29 ^ $0 >> 5) }

    @Test(arguments: FaultScenario.all(v1: v1, v2: v2))
    func theProxyAnswersRightBytesOrAnError(_ scenario: FaultScenario) async throws {
        let h = try await ProxyHarness()
        scenario.prepare(h.origin, v1: Self.v1)
        let url = h.mediaURL(FaultScenario.path)
        if scenario.cachedPrefix > 0 {
            let prefix = try await h.get(url, range: "bytes=0-\(scenario.cachedPrefix - 1)")
            #expect(prefix.body == Array(Self.v1[0..<scenario.cachedPrefix]))
        }
        try await h.restart()
        await h.origin.resetCounters()
        scenario.apply(h.origin)
        let fresh = h.mediaURL(FaultScenario.path)
        if let answer = try? await h.get(fresh), answer.status == 200 {
            let length = answer.headers.first(name: "content-length").flatMap(Int.init)
            #expect(answer.body == scenario.expected || length.map { answer.body.count < $0 } == true,
                "\(scenario): a complete body of \(answer.body.count) bytes that are not the right ones")
            if let most = scenario.maxOriginBytes, answer.body == scenario.expected {
                await h.origin.waitUntilIdle()
                #expect(h.origin.bodyBytesSent <= most, "\(scenario): the origin sent \(h.origin.bodyBytesSent) bytes")
            }
        }
        scenario.heal(h.origin)
        var healed = try? await h.get(fresh)
        if healed?.body != scenario.current { healed = try await h.get(fresh) }
        #expect(healed?.status == 200)
        #expect(healed?.body == scenario.current, "\(scenario): the cache was left wrong")
        await h.close()
    }
}
