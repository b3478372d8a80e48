import Foundation
@testable import MediaCache
import MediaTestSupport
import NIOConcurrencyHelpers

/// A manually advanced wall clock for tests.
final class ManualClock: Sendable {
    private let current: NIOLockedValueBox<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = NIOLockedValueBox(start) }

    var now: Date { current.withLockedValue { $0 } }

    func advance(by seconds: TimeInterval) { current.withLockedValue { $0 = $0.addingTimeInterval(seconds) } }

    /// A closure suitable for `CacheStore(now:)`.
    var closure: @Sendable () -> Date { { self.now } }
}

/// A settable free-space reading.
final class FreeSpace: Sendable {
    private let value: NIOLockedValueBox<Int64>
    init(_ bytes: Int64) { value = NIOLockedValueBox(bytes) }
    func set(_ bytes: Int64) { value.withLockedValue { $0 = bytes } }
    var closure: @Sendable () -> Int64? { { self.value.withLockedValue { $0 } } }
}

/// The byte at `offset` of the test pattern (matches CacheCrashHelper's).
func patternByte(_ offset: Int64) -> UInt8 { UInt8(truncatingIfNeeded: offset &* 31 &+ (offset >> 9)) }

/// `count` pattern bytes starting at `offset`.
func pattern(_ range: Range<Int64>) -> [UInt8] { range.map(patternByte) }

/// A key for a test URL path.
func testKey(_ name: String) -> CacheKey { CacheKey(url: URL(string: "http://127.0.0.1/\(name)")!) }

/// Metadata for a test URL path.
func testMetadata(_ name: String, length: Int64?, etag: String? = "\"v1\"") -> ResourceMetadata {
    ResourceMetadata(url: "http://127.0.0.1/\(name)", contentLength: length, contentType: "video/mp4", etag: etag)
}

extension CacheStore {
    /// Prepares `name` and returns its generation, failing the test when it is not cacheable.
    func generation(for name: String, length: Int64?, etag: String? = "\"v1\"") throws -> Int64 {
        guard case .cacheable(let generation, _) = try prepare(
            key: testKey(name), metadata: testMetadata(name, length: length, etag: etag))
        else { throw CacheError.io("\(name) not cacheable") }
        return generation
    }

    /// The data file of `key`'s current entry (named by key and generation, in `temp/` or `media/`).
    func dataPath(_ key: CacheKey) throws -> String {
        guard let info = info(for: key) else { throw CacheError.notCached(key) }
        return path(for: info)
    }

    /// Writes the pattern bytes of `range` for `name`.
    @discardableResult
    func writePattern(_ name: String, generation: Int64, _ range: Range<Int64>) throws -> Bool {
        try write(key: testKey(name), generation: generation, offset: range.lowerBound, bytes: pattern(range))
    }
}

/// The loader suites' harness: a store, a loader and an origin in a fresh directory.
typealias LoaderHarness = CacheHarness
