import AsyncHTTPClient
import Foundation
import MediaOrigin
import NIOCore
import NIOHTTP1
import Testing

/// A rule changes the origin's answers at each stage: the request before routing, the head once planned, and how
/// the body goes out; the origin's own answers need none.
@Suite struct OriginRuleTests {
    /// Answers `/down` with 503, hides `Range` from `/whole`, marks every 206 with a header, and cuts `/cut` after
    /// ten bytes.
    private struct Rule: OriginRule {
        func intercept(_ request: inout OriginRequest) -> Int? {
            if request.path == "/down" { return 503 }
            if request.path == "/whole" { request.removeHeader("Range") }
            return nil
        }

        func rewrite(_ answer: inout OriginAnswerHead, for request: OriginRequest) {
            if answer.status == 206 { answer.setHeader("X-Ranged", "\(answer.bodyLength) of \(answer.resourceLength ?? -1)") }
        }

        func delivery(for request: OriginRequest, answer: OriginAnswerHead) -> OriginDelivery {
            request.path == "/cut" ? OriginDelivery(closeAfter: 10) : OriginDelivery()
        }
    }

    @Test func aRuleChangesRequestsHeadsAndDeliveryAndTheLogKeepsWhatArrived() async throws {
        let origin = try await MediaOriginServer()
        let bytes = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        for path in ["/v.bin", "/whole", "/cut", "/down"] { origin.set(OriginResource(bytes: bytes), at: path) }
        // Without a rule: the standard answer.
        let plain = try await get(origin.url("v.bin"), headers: [("Range", "bytes=0-9")])
        #expect(plain.status == 206 && plain.headers.first(name: "x-ranged") == nil)

        origin.rule = Rule()
        let ranged = try await get(origin.url("v.bin"), headers: [("Range", "bytes=0-9")])
        #expect(ranged.status == 206)
        #expect(ranged.body == Array(bytes[0...9]))
        #expect(ranged.headers.first(name: "x-ranged") == "10 of 1000")

        let down = try await get(origin.url("down"))
        #expect(down.status == 503)

        let whole = try await get(origin.url("whole"), headers: [("Range", "bytes=0-9")])
        #expect(whole.status == 200 && whole.body == bytes)
        // The log holds the request as it arrived, Range included.
        #expect(origin.requests.last?.range == "bytes=0-9")

        // Cut after ten bytes: the client sees the connection close before the body's promised length.
        await #expect(throws: (any Error).self) { _ = try await get(origin.url("cut")) }
        await origin.waitUntilIdle()
        #expect(origin.requests.last?.bodyBytes == 10)

        origin.rule = nil
        #expect(try await get(origin.url("down")).status == 200)
        await origin.shutdown()
    }

    /// Dates every answer at one fixed instant, as an origin whose clock stands elsewhere would.
    private struct FixedDate: OriginRule {
        static let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        func rewrite(_ answer: inout OriginAnswerHead, for request: OriginRequest) {
            answer.setHeader("Date", Self.date)
        }
    }

    @Test func aRuleMayStateTheAnswersDate() async throws {
        let origin = try await MediaOriginServer()
        origin.set(OriginResource(bytes: [1, 2, 3]), at: "/v.bin")
        let plain = try await get(origin.url("v.bin"))
        #expect(plain.headers["date"].count == 1)
        #expect(plain.headers.first(name: "date") != FixedDate.date)
        origin.rule = FixedDate()
        for method in [HTTPMethod.GET, .HEAD] {
            let dated = try await get(origin.url("v.bin"), method: method)
            #expect(dated.headers["date"] == [FixedDate.date])
        }
        await origin.shutdown()
    }
}
