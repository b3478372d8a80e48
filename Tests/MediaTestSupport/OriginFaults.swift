import MediaOrigin
import NIOConcurrencyHelpers

/// Ways the origin misbehaves, for tests of the clients' error handling: set with `MediaOriginServer.setFaults`,
/// which gives the origin an `OriginFaultRule`.
public struct OriginFaults: Sendable, Equatable {
    /// Close the connection after sending this many body bytes of a response.
    public var dropAfterBytes: Int?
    /// How many responses the drop applies to (then it clears itself); nil for every response.
    public var dropCount: Int?
    /// Answer every GET with 200 and the whole body, ignoring `Range`.
    public var ignoreRange = false
    /// Answer every request with this status (and a short text body).
    public var fixedStatus: Int?
    /// Stop sending (but keep the connection open) after this many body bytes.
    public var stallAfterBytes: Int?
    /// Pause every response after this many body bytes until `MediaOriginServer.resumePaused()` (which clears it).
    public var pauseAfterBytes: Int?
    /// Omit `Content-Length` and send the body chunked.
    public var chunked = false
    /// Answer HEAD with 405.
    public var rejectHead = false
    /// Hold the answer to every HEAD until `MediaOriginServer.resumePaused()` (a slow check of a cached copy;
    /// cleared by it).
    public var holdHead = false
    /// Shift the first byte named in `Content-Range` by this much (the body is still the requested range).
    public var contentRangeOffsetShift = 0
    /// Name this total length in `Content-Range` instead of the real one.
    public var contentRangeTotal: Int?
    /// Send this many bytes more (positive: garbage after the body) or fewer (negative: the connection closes
    /// early) than the `Content-Length` promises.
    public var bodyLengthError = 0
    /// Answer every ranged GET with 416 and `Content-Range: bytes */LENGTH`, even for a satisfiable range.
    public var refuseRanges = false
    /// `Content-Range` names this many bytes fewer than the body carries (its last byte and its total both
    /// lower), while `Content-Length` and the body stay right: lengths that disagree.
    public var shortContentRange = 0
    /// Answers conditional requests in full, never `304 Not Modified`.
    public var ignoreConditions = false

    /// No faults.
    public init() {}
}


/// The origin rule that carries out `OriginFaults`.
public final class OriginFaultRule: OriginRule {
    private let faults: NIOLockedValueBox<OriginFaults>

    /// A rule carrying out `faults`.
    public init(_ faults: OriginFaults) { self.faults = NIOLockedValueBox(faults) }

    /// The faults in force now.
    public var current: OriginFaults {
        get { faults.withLockedValue { $0 } }
        set { faults.withLockedValue { $0 = newValue } }
    }

    public func intercept(_ request: inout OriginRequest) -> Int? {
        let faults = current
        if let fixed = faults.fixedStatus { return fixed }
        if request.isHead && faults.rejectHead { return 405 }
        if faults.ignoreConditions {
            request.removeHeader("if-none-match")
            request.removeHeader("if-modified-since")
        }
        if faults.ignoreRange, !faults.refuseRanges { request.removeHeader("range") }
        return nil
    }

    public func rewrite(_ answer: inout OriginAnswerHead, for request: OriginRequest) {
        let faults = current
        if faults.refuseRanges, request["range"] != nil, !request.isHead, answer.status != 304,
            let length = answer.resourceLength
        {
            answer.status = 416
            answer.setHeader("Content-Range", "bytes */\(length)")
            answer.sendsBody = false
            return
        }
        if answer.status == 206, let value = answer["Content-Range"], let range = Self.contentRange(value) {
            let first = range.first + faults.contentRangeOffsetShift
            let last = range.last + faults.contentRangeOffsetShift - faults.shortContentRange
            let total = (faults.contentRangeTotal ?? range.total) - faults.shortContentRange
            answer.setHeader("Content-Range", "bytes \(first)-\(last)/\(total)")
        }
        if faults.chunked, !request.isHead, answer.status == 200 || answer.status == 206 {
            answer.setHeader("Content-Length", nil)
        }
    }

    public func delivery(for request: OriginRequest, answer: OriginAnswerHead) -> OriginDelivery {
        let faults = self.faults.withLockedValue { faults -> OriginFaults in
            let now = faults
            if faults.dropAfterBytes != nil, let count = faults.dropCount {
                faults.dropCount = count - 1
                if count - 1 <= 0 {
                    faults.dropAfterBytes = nil
                    faults.dropCount = nil
                }
            }
            return now
        }
        let error = faults.bodyLengthError
        return OriginDelivery(
            closeAfter: error < 0
                ? Swift.max(0, Swift.min(faults.dropAfterBytes ?? .max, answer.bodyLength + error))
                : faults.dropAfterBytes,
            stallAfter: faults.stallAfterBytes, extraBytes: Swift.max(0, error))
    }

    public func pausePoint() -> Int? { current.pauseAfterBytes }

    public func holdsHead() -> Bool { current.holdHead }

    public func resume() {
        faults.withLockedValue {
            $0.pauseAfterBytes = nil
            $0.holdHead = false
        }
    }

    /// The first byte, last byte and total of a `Content-Range: bytes FIRST-LAST/TOTAL` value.
    private static func contentRange(_ value: String) -> (first: Int, last: Int, total: Int)? {
        guard value.hasPrefix("bytes ") else { return nil }
        let parts = value.dropFirst(6).split(whereSeparator: { $0 == "-" || $0 == "/" })
        guard parts.count == 3, let first = Int(parts[0]), let last = Int(parts[1]), let total = Int(parts[2]) else {
            return nil
        }
        return (first, last, total)
    }
}

extension MediaOriginServer {
    /// Makes the origin misbehave as `faults` says (`OriginFaults()`: answers as usual again).
    public func setFaults(_ faults: OriginFaults) {
        if let rule = rule as? OriginFaultRule {
            rule.current = faults
        } else {
            rule = OriginFaultRule(faults)
        }
    }
}
