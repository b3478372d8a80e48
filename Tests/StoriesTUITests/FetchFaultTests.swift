import Foundation
import MediaTestSupport
import MediaOrigin
import Testing

/// The fault catalogue through `stories-tui fetch`: the right file and exit 0, or one line on stderr and exit 1;
/// never a wrong file, and a later fetch gives the origin's current content.
/// One scenario at a time: fifteen faulty downloads at once would load a small machine enough to slow the
/// tests that run beside them.
@Suite(.serialized) struct FetchFaultTests {
    static let v1 = content(400_000)
    static let v2 = Array(content(400_000).reversed())

    @Test(arguments: FaultScenario.all(v1: v1, v2: v2))
    func fetchWritesTheRightFileOrSaysWhatFailed(_ scenario: FaultScenario) async throws {
        let origin = try await MediaOriginServer()
        let cache = ScratchDirectory()
        defer { cache.cleanup() }
        scenario.prepare(origin, v1: Self.v1)
        let url = origin.url(String(FaultScenario.path.dropFirst())).absoluteString
        let output = cache.url.appendingPathComponent("out.mp4").path
        if scenario.cachedPrefix > 0 {
            let prefix = try await CLI.run(
                ["fetch", url, "--range", "0-\(scenario.cachedPrefix - 1)", "--cache-dir", cache.path + "/c"])
            #expect(prefix.stdout == Data(Self.v1[0..<scenario.cachedPrefix]))
        }
        await origin.resetCounters()
        scenario.apply(origin)
        let result = try await CLI.run(["fetch", url, "--cache-dir", cache.path + "/c", "--output", output])
        if !scenario.changesVersion {
            #expect(!result.stderr.contains("changed at the origin"), "\(scenario): \(result.stderr)")
        }
        if result.status == 0 {
            #expect(FileManager.default.contents(atPath: output) == scenario.expected.map { Data($0) },
                "\(scenario): exit 0 with a wrong file")
            if let most = scenario.maxOriginBytes {
                await origin.waitUntilIdle()
                #expect(
                    origin.bodyBytesSent <= most,
                    "\(scenario): the origin sent \(origin.bodyBytesSent) bytes: \(origin.requests.map { "\($0.method) \($0.range ?? "-") \($0.status) \($0.bodyBytes)" })")
            }
        } else {
            #expect(result.status == 1, "\(scenario): \(result.stderr)")
            #expect(result.stderr.contains(url), "\(scenario): \(result.stderr)")
            #expect(scenario.acceptsFailure(result.stderr), "\(scenario): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(scenario): a partial file was left")
        }
        scenario.heal(origin)
        var healed = try await CLI.run(["fetch", url, "--cache-dir", cache.path + "/c"])
        if healed.status != 0 { healed = try await CLI.run(["fetch", url, "--cache-dir", cache.path + "/c"]) }
        #expect(healed.status == 0, "\(scenario): \(healed.stderr)")
        #expect(healed.stdout == Data(scenario.current), "\(scenario): the cache was left wrong")
        await origin.shutdown()
    }
}
