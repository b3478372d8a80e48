import AsyncHTTPClient
import Foundation
import MediaOrigin
import NIOCore
import MediaTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import MediaCache

/// Network failures read as sentences naming what failed and where, never a library's error dump.
@Suite struct ErrorWordingTests {
    @Test func aRefusedConnectionSaysSoWithTheHostAndPort() async throws {
        let h = try await CacheHarness()
        let port = try Self.closedPort()
        let url = URL(string: "http://127.0.0.1:\(port)/v.mp4")!
        do {
            _ = try await h.loader.data(LoadingRequest(url: url))
            Issue.record("a read from a closed port succeeded")
        } catch {
            #expect("\(error)" == "http://127.0.0.1:\(port)/v.mp4: origin unreachable: connection refused (127.0.0.1:\(port))")
        }
        await h.close()
    }

    /// A port on 127.0.0.1 that nothing listens on: bound by a socket that never listens (a connection to it is
    /// refused), kept bound until the test ends so nothing else takes it.
    private static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CacheError.io("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw CacheError.io("bind failed") }
        // Deliberately left open (not listening) for the life of the test process.
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func unknownHostsAndOtherErrnosAreWords() {
        let url = URL(string: "http://127.0.0.1:81/x")!
        #expect(NetworkFailure.reason(IOError(errnoCode: ECONNRESET, reason: "read"), url: url)
            == "connection reset by the origin (127.0.0.1:81)")
        #expect(NetworkFailure.reason(IOError(errnoCode: EHOSTUNREACH, reason: "connect"), url: url)
            == "no route to the host (127.0.0.1:81)")
        #expect(NetworkFailure.reason(HTTPClientError.connectTimeout, url: url)
            == "no answer within the connect timeout (127.0.0.1:81)")
    }
}
