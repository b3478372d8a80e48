import Foundation
import HTTPSemantics
import MediaOrigin

/// One way an origin misbehaves, with what a correct client may end up with: the tests of every client (the
/// loader, `fetch`, the player, the proxy) run the same catalogue.
///
/// A scenario starts from `v1` served cleanly at `path`, of which a client caches `cachedPrefix` bytes; then
/// `apply` changes the origin. Reading the whole resource must then give `expected` exactly, or fail with one
/// clear error; never other bytes. After `MediaOriginServer.setFaults(OriginFaults())` a fresh read must give
/// the origin's current content (the cache was not poisoned).
public struct FaultScenario: Sendable, CustomStringConvertible {
    /// A short name for test output.
    public let name: String
    /// Bytes a client caches (cleanly) before the fault; 0 for none.
    public let cachedPrefix: Int
    /// The body that is right after the fault (nil when only an error is right).
    public let expected: [UInt8]?
    /// What the origin serves once the faults are cleared.
    public let current: [UInt8]
    /// Turns the fault on.
    public let apply: @Sendable (MediaOriginServer) -> Void
    /// At most this many body bytes may cross from the origin while a client reads the whole resource after the
    /// fault (its cached prefix used, no byte fetched twice); nil where the scenario does not bound it.
    public let maxOriginBytes: Int?

    public var description: String { name }

    /// The resource path every scenario uses.
    public static let path = "/fault.mp4"

    /// The catalogue over two versions of equal length (`v2` replaces `v1` in the scenarios that change it).
    public static func all(v1: [UInt8], v2: [UInt8]) -> [FaultScenario] {
        precondition(v1.count == v2.count && v1.count >= 300_000, "two versions of one length, at least 300 kB")
        let prefix = v1.count / 3
        func faults(_ change: @escaping @Sendable (inout OriginFaults) -> Void) -> @Sendable (MediaOriginServer) -> Void {
            { origin in
                var faults = OriginFaults()
                change(&faults)
                origin.setFaults(faults)
            }
        }
        @Sendable func lastModified(_ bytes: [UInt8], _ date: String) -> OriginResource {
            var resource = OriginResource(bytes: bytes, lastModified: date)
            resource.etag = nil
            return resource
        }
        var unvalidated1 = OriginResource(bytes: v1)
        unvalidated1.etag = nil
        let unvalidated2 = { () -> OriginResource in
            var resource = OriginResource(bytes: v2)
            resource.etag = nil
            return resource
        }()
        return [
            FaultScenario(
                name: "connection dropped mid-body", cachedPrefix: 0, expected: v1, current: v1,
                apply: faults {
                    $0.dropAfterBytes = prefix
                    $0.dropCount = 1
                    // (What the client's HTTP stack still held, unread, when the connection broke is lost with it
                    // and fetched again: how much depends on how far the reader lagged, at most what came before
                    // the drop.)
                }, maxOriginBytes: v1.count + prefix),
            FaultScenario(
                name: "503 for everything", cachedPrefix: prefix, expected: nil, current: v1,
                apply: faults { $0.fixedStatus = 503 }),
            FaultScenario(
                name: "200 and the whole body for a range", cachedPrefix: prefix, expected: v1, current: v1,
                apply: faults { $0.ignoreRange = true }, maxOriginBytes: v1.count),
            FaultScenario(
                name: "Content-Range names other bytes than it sends", cachedPrefix: prefix, expected: nil,
                current: v1, apply: faults { $0.contentRangeOffsetShift = 4096 }),
            FaultScenario(
                // (Its 416 past the end gives the true length: the file as the origin has it is right too.)
                name: "Content-Range names another total length", cachedPrefix: prefix, expected: v1, current: v1,
                apply: faults { $0.contentRangeTotal = v1.count + 1000 }, maxOriginBytes: v1.count - prefix + 64 * 1024,
                failureMentions: "lengths disagree"),
            FaultScenario(
                // Nothing changed at the origin: its lengths disagree. At most one request more than the file needs.
                name: "Content-Range totals 12,345 over the file, cold", cachedPrefix: 0, expected: v1, current: v1,
                apply: faults { $0.contentRangeTotal = v1.count + 12_345 }, maxOriginBytes: v1.count + 64 * 1024,
                failureMentions: "lengths disagree"),
            FaultScenario(
                name: "Content-Range totals 12,345 over the file, first part cached", cachedPrefix: prefix,
                expected: v1, current: v1, apply: faults { $0.contentRangeTotal = v1.count + 12_345 },
                maxOriginBytes: v1.count - prefix + 64 * 1024, failureMentions: "lengths disagree",
                faultyPrefix: true),
            FaultScenario(
                name: "Content-Range totals short of the file (HEAD and 200 say more)", cachedPrefix: 0,
                expected: nil, current: v1, apply: faults { $0.contentRangeTotal = v1.count - 12_345 },
                failureMentions: "lengths disagree"),
            FaultScenario(
                // The first answer is cut before its body: its short total must not become the request's end.
                name: "Content-Range totals short of the file, first answer cut", cachedPrefix: 0, expected: nil,
                current: v1,
                apply: faults {
                    $0.contentRangeTotal = v1.count - 12_345
                    $0.dropAfterBytes = 0
                    $0.dropCount = 1
                }, failureMentions: "lengths disagree"),
            FaultScenario(
                name: "Content-Range totals short of the file, first part cached", cachedPrefix: prefix,
                expected: nil, current: v1, apply: faults { $0.contentRangeTotal = v1.count - 12_345 },
                failureMentions: "lengths disagree", faultyPrefix: true),
            FaultScenario(
                name: "Content-Range names fewer bytes than the body", cachedPrefix: prefix, expected: nil,
                current: v1, apply: faults { $0.shortContentRange = 1000 }),
            FaultScenario(
                name: "no Content-Length, chunked", cachedPrefix: prefix, expected: v1, current: v1,
                apply: faults { $0.chunked = true }, maxOriginBytes: v1.count - prefix),
            FaultScenario(
                name: "chunked whole body for a range (no length, Range ignored)", cachedPrefix: prefix, expected: v1,
                current: v1,
                apply: faults {
                    $0.chunked = true
                    $0.ignoreRange = true
                }, maxOriginBytes: v1.count),
            FaultScenario(
                // (Each answer's junk, 5,000 bytes, is paid once per request.)
                name: "body longer than Content-Length", cachedPrefix: prefix, expected: v1, current: v1,
                apply: faults { $0.bodyLengthError = 5000 }, maxOriginBytes: (v1.count - prefix) * 105 / 100),
            FaultScenario(
                name: "body shorter than Content-Length", cachedPrefix: prefix, expected: nil, current: v1,
                apply: faults { $0.bodyLengthError = -5000 }),
            FaultScenario(
                name: "ETag changes (new version)", cachedPrefix: prefix, expected: v2, current: v2,
                apply: { $0.set(OriginResource(bytes: v2), at: path) }, maxOriginBytes: v2.count * 105 / 100,
                changesVersion: true),
            FaultScenario(
                name: "Last-Modified changes, no ETag", cachedPrefix: prefix, expected: v2, current: v2,
                apply: { $0.set(lastModified(v2, "Tue, 01 Dec 2026 10:00:00 GMT"), at: path) },
                maxOriginBytes: v2.count * 105 / 100, changesVersion: true,
                initial: lastModified(v1, "Mon, 30 Nov 2026 10:00:00 GMT")),
            FaultScenario(
                name: "no validators, same-length change", cachedPrefix: prefix, expected: v2, current: v2,
                apply: { $0.set(unvalidated2, at: path) }, maxOriginBytes: v2.count * 105 / 100, changesVersion: true,
                initial: unvalidated1),
            FaultScenario(
                // No HEAD to find it first: the resumed request's If-Range brings the new version whole (200).
                name: "ETag changes, HEAD not allowed", cachedPrefix: prefix, expected: v2, current: v2,
                apply: { origin in
                    origin.set(OriginResource(bytes: v2), at: path)
                    var faults = OriginFaults()
                    faults.rejectHead = true
                    origin.setFaults(faults)
                }, maxOriginBytes: v2.count * 105 / 100, changesVersion: true),
            FaultScenario(
                name: "Last-Modified changes, HEAD not allowed", cachedPrefix: prefix, expected: v2, current: v2,
                apply: { origin in
                    origin.set(lastModified(v2, "Tue, 01 Dec 2026 10:00:00 GMT"), at: path)
                    var faults = OriginFaults()
                    faults.rejectHead = true
                    origin.setFaults(faults)
                }, maxOriginBytes: v2.count * 105 / 100, changesVersion: true,
                initial: lastModified(v1, "Mon, 30 Nov 2026 10:00:00 GMT")),
            FaultScenario(
                name: "redirect loop", cachedPrefix: 0, expected: nil, current: v1,
                apply: { origin in
                    origin.redirect(path, to: "/loop-b")
                    origin.redirect("/loop-b", to: path)
                }),
            FaultScenario(
                name: "redirect to another path", cachedPrefix: 0, expected: v1, current: v1,
                apply: { origin in
                    origin.set(OriginResource(bytes: v1), at: "/moved.mp4")
                    origin.redirect(path, to: "/moved.mp4")
                }),
            FaultScenario(
                name: "HEAD not allowed", cachedPrefix: prefix, expected: v1, current: v1,
                apply: faults { $0.rejectHead = true }),
            FaultScenario(
                name: "416 for a satisfiable range", cachedPrefix: prefix, expected: nil, current: v1,
                apply: faults { $0.refuseRanges = true }),
        ]
    }

    /// The resource to serve before the fault, when it is not plain `v1` with its default ETag.
    public let initial: OriginResource?
    /// Words a client's error must contain when it fails (the origin's fault named, not another).
    public let failureMentions: String?
    /// True when the origin serves a new version; otherwise no client may say the resource changed.
    public let changesVersion: Bool
    /// True when the fault is on while the prefix is cached (the prefix's answer already carries it).
    public let faultyPrefix: Bool

    init(
        name: String, cachedPrefix: Int, expected: [UInt8]?, current: [UInt8],
        apply: @escaping @Sendable (MediaOriginServer) -> Void, maxOriginBytes: Int? = nil,
        failureMentions: String? = nil, changesVersion: Bool = false, faultyPrefix: Bool = false,
        initial: OriginResource? = nil
    ) {
        self.failureMentions = failureMentions
        self.changesVersion = changesVersion
        self.faultyPrefix = faultyPrefix
        self.name = name
        self.cachedPrefix = cachedPrefix
        self.expected = expected
        self.current = current
        self.apply = apply
        self.maxOriginBytes = maxOriginBytes
        self.initial = initial
    }

    /// Serves this scenario's starting resource cleanly at `path`.
    public func prepare(_ origin: MediaOriginServer, v1: [UInt8]) {
        origin.setFaults(OriginFaults())
        origin.set(initial ?? OriginResource(bytes: v1), at: Self.path)
        if faultyPrefix { apply(origin) }
    }

    /// Whether `error` (a client's message) is an acceptable failure for this scenario: it names the origin's
    /// fault where the scenario says which, and never a version change where none happened.
    public func acceptsFailure(_ message: String) -> Bool {
        if let words = failureMentions, !message.contains(words) { return false }
        if !changesVersion, message.contains("changed at the origin") { return false }
        return true
    }

    /// Clears faults and redirects, leaving the current content at `path`.
    public func heal(_ origin: MediaOriginServer) {
        origin.setFaults(OriginFaults())
        origin.removeRedirects()
    }
}
