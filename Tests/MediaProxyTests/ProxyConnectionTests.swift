import Foundation
import MediaTestSupport
import MediaCache
import MediaOrigin
import MediaProxy
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client for what HTTP libraries will not send: oversized headers, clients that go quiet.
struct RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw CacheError.io("connect failed") }
        // Reads give up after 20 s, so a test fails instead of hanging when the server keeps the socket open.
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends everything it can (the server may close before taking it all).
    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            done += n
        }
    }

    /// Reads until the server closes the connection; nil when it did not close within the read timeout.
    func readToClose() -> String? {
        var result = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
            if n == 0 { return String(decoding: result, as: UTF8.self) }
            if n < 0 { return errno == ECONNRESET ? String(decoding: result, as: UTF8.self) : nil }
            result.append(contentsOf: buffer[0..<n])
        }
    }

    /// Reads one response of a keep-alive connection: its head (as text) and a body of its Content-Length; nil
    /// when the server closed or said nothing within the read timeout.
    func readResponse() -> (head: String, body: [UInt8])? {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        let separator = Array("\r\n\r\n".utf8)
        func readMore() -> Bool {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
            guard n > 0 else { return false }
            received.append(contentsOf: buffer[0..<n])
            return true
        }
        var headEnd: Int?
        while headEnd == nil {
            guard readMore() else { return nil }
            headEnd = received.indices.dropLast(3).first { received[$0..<($0 + 4)].elementsEqual(separator) }
        }
        guard let end = headEnd else { return nil }
        let head = String(decoding: received[0..<end], as: UTF8.self)
        let length = head.split(separator: "\r\n").compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first ?? 0
        while received.count < end + 4 + length {
            guard readMore() else { return nil }
        }
        return (head, Array(received[(end + 4)..<(end + 4 + length)]))
    }

    /// `readResponse` off the cooperative pool (a blocked read there would hold a thread the proxy's loader needs).
    func response() async throws -> (head: String, body: [UInt8])? {
        try await offCooperativePool { readResponse() }
    }

    func close() { Glibc.close(fd) }
}

@Suite struct ProxyConnectionTests {
    @Test(.timeLimit(.minutes(5))) func anOversizedHeaderGets400AndTheConnectionCloses() async throws {
        let h = try await ProxyHarness(idleTimeout: 30)
        let server = h.proxy
        let answer = try await offCooperativePool { () -> String? in
            let client = try RawClient(port: server.port)
            defer { client.close() }
            client.send("GET /\(server.token)/media?url=x HTTP/1.1\r\nHost: x\r\nX-Big: "
                + String(repeating: "a", count: 1 << 20) + "\r\n\r\n")
            return client.readToClose()
        }
        let text = try #require(answer, "the proxy kept the connection open")
        #expect(text.hasPrefix("HTTP/1.1 400"), "\(text.prefix(200))")
        await h.close()
    }

    @Test(.timeLimit(.minutes(5))) func aQuietConnectionIsClosedAfterTheIdleTimeout() async throws {
        let h = try await ProxyHarness(idleTimeout: 2)
        let server = h.proxy
        let answer = try await offCooperativePool { () -> String? in
            let client = try RawClient(port: server.port)
            defer { client.close() }
            client.send("GET /\(server.token)/media?url=ftp%3A%2F%2Fx HTTP/1.1\r\nHost: x\r\n\r\n")
            // The answer arrives, then nothing: the keep-alive connection is let go rather than held forever.
            return client.readToClose()
        }
        let text = try #require(answer, "the proxy kept an idle connection open")
        #expect(text.hasPrefix("HTTP/1.1 400"))
        await h.close()
    }

    /// A server that stops closes its connections: a client's idle keep-alive connection left open with nothing
    /// behind it was reused by a client that pools by port when a new server took the port, and its request was
    /// never answered (a proxy test's HTTP client waited 90 s).
    @Test(.timeLimit(.minutes(5))) func shuttingDownClosesTheOpenConnections() async throws {
        let h = try await ProxyHarness(idleTimeout: 30)
        let server = h.proxy
        let client = try RawClient(port: server.port)
        defer { client.close() }
        client.send("GET /\(server.token)/media?url=ftp%3A%2F%2Fx HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try await client.response()
        #expect(first?.head.hasPrefix("HTTP/1.1 400") == true, "\(first?.head ?? "no answer")")
        await server.shutdown()
        // Closed now (not at the idle timeout, 30 s on, past the client's 20 s read timeout).
        let rest = try await offCooperativePool { client.readToClose() }
        #expect(rest == "", "the connection stayed open after shutdown")
        await h.close()
    }

    @Test(.timeLimit(.minutes(5))) func aClientThatStopsReadingIsLetGo() async throws {
        let h = try await ProxyHarness(idleTimeout: 0.5)
        let server = h.proxy
        let origin = h.origin
        origin.set(OriginResource(repeating: Array(0..<255), length: 64 << 20, etag: "\"big\""), at: "/big.bin")
        // Paced, the origin's 16 KiB pieces reach the proxy one by one, so each write to the client is smaller than
        // the channel's high-water mark: the proxy must see the stall from a write left waiting, not from the
        // channel turning unwritable (it never does with one small write queued).
        origin.setProfile(NetworkProfile(bytesPerSecond: 8_000_000, latency: 0))
        let url = server.mediaURL(for: origin.url("big.bin"))
        let path = String(url.dropFirst("http://127.0.0.1:\(server.port)".count))
        let client = try RawClient(port: server.port)
        defer { client.close() }
        client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
        // Read nothing: once the socket buffers are full the proxy's writes stop completing, and after the idle
        // timeout it lets the connection go (poll with a deadline; how soon depends on the machine's speed).
        let deadline = ContinuousClock.now + .seconds(240)
        // First the proxy must have taken the connection (the count is 0 before it does, too).
        while server.openConnections == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(server.openConnections > 0, "the proxy never took the connection")
        while server.openConnections > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let closed = server.openConnections == 0
        #expect(closed, "the proxy kept writing to a client that stopped reading")
        await h.close()
    }
}

@Suite struct ProxyHeldFileTests {
    /// The hit path keeps a connection's data file open between its requests: a new version of the resource,
    /// stored meanwhile, is sent from its own file, never from the one held for the old version.
    @Test(.timeLimit(.minutes(5))) func aConnectionGetsANewVersionsBytesNotTheFileItHeld() async throws {
        let h = try await ProxyHarness()
        let old = content(300_000, seed: 1)
        let new = content(300_000, seed: 2)
        h.origin.set(OriginResource(bytes: old, etag: "\"old\""), at: "/v.mp4")
        let url = h.mediaURL("v.mp4")
        #expect(try await h.get(url).body == old)
        let path = String(url.dropFirst("http://127.0.0.1:\(h.proxy.port)".count))
        let client = try RawClient(port: h.proxy.port)
        defer { client.close() }
        let ask = "GET \(path) HTTP/1.1\r\nHost: x\r\nRange: bytes=1000-1999\r\n\r\n"
        let hits = h.loader.metrics.hits
        client.send(ask)
        let first = try #require(await client.response())
        #expect(first.body == Array(old[1000..<2000]))
        #expect(h.loader.metrics.hits == hits + 1, "the first range was not answered from the cache")

        // Another version replaces it (as `cache rm` and a later read would): same key, a new data file.
        h.origin.set(OriginResource(bytes: new, etag: "\"new\""), at: "/v.mp4")
        #expect(try h.store.remove(key: CacheKey(url: h.origin.url("v.mp4"))))
        #expect(try await h.cache.read("v.mp4") == new)

        client.send(ask)
        let second = try #require(await client.response())
        #expect(second.body == Array(new[1000..<2000]))
        #expect(h.loader.metrics.hits == hits + 2, "the second range was not answered from the cache")
        client.send(ask)
        #expect(try #require(await client.response()).body == Array(new[1000..<2000]))
        await h.close()
    }
}

@Suite struct ProxyChunkedTests {
    @Test func anOriginWithoutALengthIsProxiedChunked() async throws {
        let h = try await ProxyHarness()
        let bytes = content(300_000)
        h.origin.set(OriginResource(bytes: bytes), at: "/c.mp4")
        var faults = OriginFaults()
        faults.chunked = true
        faults.ignoreRange = true
        h.origin.setFaults(faults)
        let answer = try await h.get(h.mediaURL("c.mp4"))
        #expect(answer.status == 200)
        #expect(answer.body == bytes)
        // Once the whole body went through, the length is known and ranges work from the cache.
        await h.origin.resetCounters()
        let range = try await h.get(h.mediaURL("c.mp4"), range: "bytes=1000-1999")
        #expect(range.status == 206)
        #expect(range.body == Array(bytes[1000...1999]))
        #expect(h.origin.bodyBytesSent == 0)
        await h.close()
    }
}

@Suite struct ProxyVersionTests {
    @Test func aClientsIfRangeIsHonoured() async throws {
        let h = try await ProxyHarness()
        let bytes = content(50_000)
        h.origin.set(OriginResource(bytes: bytes, etag: "\"v1\""), at: "/v.mp4")
        let matching = try await httpGet(h.mediaURL("v.mp4"), range: "bytes=0-9", headers: [("If-Range", "\"v1\"")])
        #expect(matching.status == 206)
        #expect(matching.body == Array(bytes[0...9]))
        // The client's copy is of another version: it gets the whole current body, not a range to splice.
        let stale = try await httpGet(h.mediaURL("v.mp4"), range: "bytes=0-9", headers: [("If-Range", "\"v0\"")])
        #expect(stale.status == 200)
        #expect(stale.body == bytes)
        let weak = try await httpGet(h.mediaURL("v.mp4"), range: "bytes=0-9", headers: [("If-Range", "W/\"v1\"")])
        #expect(weak.status == 200)
        await h.close()
    }
}
