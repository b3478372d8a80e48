import AsyncHTTPClient
import Foundation
import HTTPSemantics
import MediaOrigin
import MediaTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite struct MediaOriginTests {
    @Test func readsRangeHeadersWithTheParserTheProxyUses() async throws {
        let origin = try await MediaOriginServer()
        let bytes = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        origin.set(OriginResource(bytes: bytes), at: "/r.bin")
        for header in ["bytes= 5 - 9", "bytes=-0", "bytes=0-1,5-6", "bytes=900-5000", "bytes=1000-", "BYTES=3-4", "bytes=x-"] {
            let answer = try await get(origin.url("r.bin"), headers: [("Range", header)])
            switch ByteRangeRequest(header: header, length: Int64(bytes.count)) {
            case .whole, .multiple:
                // (The test origin answers several ranges with the whole body, as RFC 9110 allows.)
                #expect(answer.status == 200, "\(header)")
                #expect(answer.body == bytes)
            case .unsatisfiable:
                #expect(answer.status == 416, "\(header)")
            case .partial(let range):
                #expect(answer.status == 206, "\(header)")
                #expect(answer.body == Array(bytes[Int(range.lowerBound)...Int(range.upperBound)]), "\(header)")
            }
        }
        await origin.shutdown()
    }

    @Test func servesRangesHeadAndValidators() async throws {
        let origin = try await MediaOriginServer()
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        origin.set(OriginResource(bytes: bytes, etag: "\"e1\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT"), at: "/v.mp4")
        let url = origin.url("v.mp4")

        let full = try await get(url)
        #expect(full.status == 200)
        #expect(full.body == bytes)
        #expect(full.headers.first(name: "accept-ranges") == "bytes")
        #expect(full.headers.first(name: "etag") == "\"e1\"")

        let middle = try await get(url, headers: [("Range", "bytes=10-19")])
        #expect(middle.status == 206)
        #expect(middle.body == Array(bytes[10...19]))
        #expect(middle.headers.first(name: "content-range") == "bytes 10-19/100000")

        #expect(try await get(url, headers: [("Range", "bytes=99990-")]).body == Array(bytes[99990...]))
        #expect(try await get(url, headers: [("Range", "bytes=-5")]).body == Array(bytes[99995...]))

        let unsatisfiable = try await get(url, headers: [("Range", "bytes=100000-")])
        #expect(unsatisfiable.status == 416)
        #expect(unsatisfiable.headers.first(name: "content-range") == "bytes */100000")

        // If-Range with a stale validator: the whole new body with 200.
        let stale = try await get(url, headers: [("Range", "bytes=10-19"), ("If-Range", "\"old\"")])
        #expect(stale.status == 200)
        #expect(stale.body.count == bytes.count)

        let head = try await get(url, method: .HEAD)
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers.first(name: "content-length") == "100000")

        #expect(try await get(origin.url("missing.mp4")).status == 404)
        #expect(origin.bodyBytesSent == 100_000 + 10 + 10 + 5 + 100_000 + 0 + "not found: /missing.mp4\n".utf8.count)
        #expect(origin.requests.map(\.status) == [200, 206, 206, 206, 416, 200, 200, 404])
        await origin.shutdown()
    }

    @Test func faultsDropIgnoreRangeAndChunked() async throws {
        let origin = try await MediaOriginServer()
        let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0) }
        origin.set(OriginResource(bytes: bytes), at: "/f.bin")
        var faults = OriginFaults()
        faults.ignoreRange = true
        origin.setFaults(faults)
        let ignored = try await get(origin.url("f.bin"), headers: [("Range", "bytes=100-199")])
        #expect(ignored.status == 200)
        #expect(ignored.body == bytes)

        faults = OriginFaults()
        faults.chunked = true
        origin.setFaults(faults)
        let chunked = try await get(origin.url("f.bin"))
        #expect(chunked.headers.first(name: "content-length") == nil)
        #expect(chunked.body == bytes)

        faults = OriginFaults()
        faults.dropAfterBytes = 1_000
        faults.dropCount = 1
        origin.setFaults(faults)
        await #expect(throws: (any Error).self) { _ = try await get(origin.url("f.bin")) }
        // The drop applied once and cleared itself.
        #expect(try await get(origin.url("f.bin")).body == bytes)

        faults = OriginFaults()
        faults.fixedStatus = 503
        origin.setFaults(faults)
        #expect(try await get(origin.url("f.bin")).status == 503)
        await origin.shutdown()
    }
}

@Suite struct NetworkProfileTests {
    @Test func aFasterClockSeesTheSameNetwork() {
        let fourG = NetworkProfile(bytesPerSecond: 500_000, latency: 0.1)
        #expect(fourG.scaled(by: 4) == NetworkProfile(bytesPerSecond: 2_000_000, latency: 0.025))
        #expect(fourG.scaled(by: 1) == fourG)
        #expect(NetworkProfile.unlimited.scaled(by: 25) == .unlimited)
        #expect(fourG.scaled(by: 0) == fourG && fourG.scaled(by: -1) == fourG, "nonsense speeds change nothing")
    }
}
