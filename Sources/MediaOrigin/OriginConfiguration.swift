import Foundation
import HTTPSemantics
import NIOCore

/// One resource the origin serves.
public struct OriginResource: Sendable, Equatable {
    /// The body (for generated resources: one period of it).
    public var bytes: [UInt8]
    /// For generated resources, the total length: the body is `bytes` repeated up to it. Nil for plain ones.
    public var generatedLength: Int?
    /// The body's length.
    public var length: Int { generatedLength ?? bytes.count }
    /// Sent as `ETag` (quoted); nil to send none.
    public var etag: String?
    /// Sent as `Last-Modified`; nil to send none.
    public var lastModified: String?
    /// Sent as `Content-Type`.
    public var contentType: String
    /// Sent as `Cache-Control` (e.g. `max-age=3600`); nil to send none.
    public var cacheControl: String?

    /// Creates a resource; the default ETag is derived from the content so replaced content gets a new one.
    public init(bytes: [UInt8], etag: String? = nil, lastModified: String? = nil, contentType: String = "video/mp4") {
        self.bytes = bytes
        self.etag = etag ?? OriginResource.contentTag(bytes)
        self.lastModified = lastModified
        self.contentType = contentType
    }

    /// A large resource without the memory: `period` repeated up to `length` bytes.
    public init(repeating period: [UInt8], length: Int, etag: String, contentType: String = "video/mp4") {
        bytes = period
        generatedLength = length
        self.etag = etag
        lastModified = nil
        self.contentType = contentType
    }

    /// Copies body bytes `start..<start+count` into `buffer`.
    func copy(from start: Int, count: Int, into write: (ArraySlice<UInt8>) -> Void) {
        guard generatedLength != nil, !bytes.isEmpty else {
            write(bytes[start..<(start + count)])
            return
        }
        var offset = start
        let end = start + count
        while offset < end {
            let phase = offset % bytes.count
            let run = Swift.min(bytes.count - phase, end - offset)
            write(bytes[phase..<(phase + run)])
            offset += run
        }
    }

    /// A quoted tag computed from the bytes (FNV-1a over the content and its length).
    public static func contentTag(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "\"\(String(hash, radix: 16))-\(bytes.count)\""
    }
}

/// A simulated network link: bandwidth and latency. The bandwidth belongs to the link, not to a response:
/// concurrent responses share it, as a phone's downloads do.
public struct NetworkProfile: Sendable, Equatable {
    /// Bytes per second; nil for unlimited.
    public var bytesPerSecond: Int?
    /// Delay before each response starts, in seconds.
    public var latency: Double

    /// Creates a profile.
    public init(bytesPerSecond: Int?, latency: Double) {
        self.bytesPerSecond = bytesPerSecond
        self.latency = latency
    }

    /// No shaping.
    public static let unlimited = NetworkProfile(bytesPerSecond: nil, latency: 0)

    /// The profile `speed` times faster: that much more bandwidth, that much less latency (for a clock running
    /// `speed` times faster, which then sees the same network).
    public func scaled(by speed: Double) -> NetworkProfile {
        guard speed > 0, speed.isFinite else { return self }
        return NetworkProfile(
            bytesPerSecond: bytesPerSecond.map { Int((Double($0) * speed).rounded()) }, latency: latency / speed)
    }

    /// The named profiles `--network` accepts.
    public static let named: [(name: String, profile: NetworkProfile, summary: String)] = [
        ("3g", NetworkProfile(bytesPerSecond: 100_000, latency: 0.3), "800 kbit/s, 300 ms"),
        ("4g", NetworkProfile(bytesPerSecond: 500_000, latency: 0.1), "4 Mbit/s, 100 ms"),
        ("wifi", NetworkProfile(bytesPerSecond: 3_000_000, latency: 0.02), "24 Mbit/s, 20 ms"),
        ("lan", NetworkProfile.unlimited, "unlimited"),
    ]

    /// The profile called `name`, or nil.
    public static func named(_ name: String) -> NetworkProfile? {
        named.first { $0.name == name.lowercased() }?.profile
    }
}

/// One request as the origin saw it.
public struct OriginRequestRecord: Sendable, Equatable {
    /// `GET` or `HEAD`.
    public var method: String
    /// The request path.
    public var path: String
    /// The `Range` header, if any.
    public var range: String?
    /// The `If-Range` header, if any.
    public var ifRange: String?
    /// The status answered.
    public var status: Int
    /// Body bytes sent (counted as they are written).
    public var bodyBytes: Int
    /// The `User-Agent` header, if any.
    public var userAgent: String? = nil
    /// Whether the request carried `If-None-Match` or `If-Modified-Since`.
    public var conditional = false
}

/// Runs work after a delay; the origin's latency and bandwidth shaping use it, so tests can drive them with
/// virtual time. Without one, the event loop's timers are used.
public protocol OriginScheduler: Sendable {
    /// Seconds on this scheduler's clock.
    var now: Double { get }
    /// Runs `work` on `loop` once `delay` seconds have passed on this scheduler's clock. (The scheduler, not the
    /// origin, hands it to the loop, so a test clock can tell work that came due from work that has run.)
    func schedule(after delay: Double, on loop: any EventLoop, _ work: @escaping @Sendable () -> Void)
}
