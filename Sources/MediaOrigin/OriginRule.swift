/// Changes how the origin answers: each request passes through a rule before it is routed, each answer's head
/// after it is planned, and each body as it is sent. Without one the origin gives the standard answers; a server
/// that misbehaves in a particular way (a proxy that drops ranges, a link that cuts out) is a rule.
///
/// The origin calls a rule from its event loop; the calls must not block.
public protocol OriginRule: Sendable {
    /// May change `request` before the origin routes it (remove headers it would otherwise honour), or answer it
    /// outright: a status returned is sent with a short text body.
    func intercept(_ request: inout OriginRequest) -> Int?
    /// May change the head of the answer planned for `request`.
    func rewrite(_ answer: inout OriginAnswerHead, for request: OriginRequest)
    /// How the body of `answer` is delivered (called once per answer, as it is about to be sent).
    func delivery(for request: OriginRequest, answer: OriginAnswerHead) -> OriginDelivery
    /// Body bytes after which answers being sent now pause until `MediaOriginServer.resumePaused()` (asked
    /// before each chunk), or nil.
    func pausePoint() -> Int?
    /// Whether the answer to a HEAD request is held until `MediaOriginServer.resumePaused()`.
    func holdsHead() -> Bool
    /// Called by `MediaOriginServer.resumePaused()` before paused answers continue: pausing should stop.
    func resume()
}

extension OriginRule {
    /// Routes every request as it came.
    public func intercept(_ request: inout OriginRequest) -> Int? { nil }
    /// Leaves every head as planned.
    public func rewrite(_ answer: inout OriginAnswerHead, for request: OriginRequest) {}
    /// Sends every body whole.
    public func delivery(for request: OriginRequest, answer: OriginAnswerHead) -> OriginDelivery { OriginDelivery() }
    /// Never pauses.
    public func pausePoint() -> Int? { nil }
    /// Never holds a HEAD answer.
    public func holdsHead() -> Bool { false }
    /// Nothing to stop.
    public func resume() {}
}

/// A request as a rule sees it: method, path and headers (names compared without regard to case).
public struct OriginRequest: Sendable {
    /// `GET`, `HEAD`, ...
    public let method: String
    /// The request path, percent-decoded, without the query.
    public let path: String
    /// The headers, in order.
    public private(set) var headers: [(name: String, value: String)]

    /// A request with these parts.
    public init(method: String, path: String, headers: [(name: String, value: String)]) {
        self.method = method
        self.path = path
        self.headers = headers
    }

    /// The first value of header `name`, or nil.
    public subscript(name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Removes every header called `name`.
    public mutating func removeHeader(_ name: String) {
        headers.removeAll { $0.name.lowercased() == name.lowercased() }
    }

    /// True for a HEAD request.
    public var isHead: Bool { method == "HEAD" }
}

/// The head of an answer as planned, which a rule may change.
public struct OriginAnswerHead: Sendable {
    /// The status code.
    public var status: Int
    /// The headers (the origin adds `Connection` after the rule, and `Date` unless the rule set one).
    public private(set) var headers: [(name: String, value: String)]
    /// The length of the body planned.
    public let bodyLength: Int
    /// The length of the resource served, when the answer serves one.
    public let resourceLength: Int?
    /// False sends no body whatever was planned (a rule that turns an answer into an error).
    public var sendsBody = true

    /// A head with these parts.
    public init(status: Int, headers: [(name: String, value: String)], bodyLength: Int, resourceLength: Int?) {
        self.status = status
        self.headers = headers
        self.bodyLength = bodyLength
        self.resourceLength = resourceLength
    }

    /// The first value of header `name`, or nil.
    public subscript(name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Sets header `name` to `value` (nil removes it), in place of any it had.
    public mutating func setHeader(_ name: String, _ value: String?) {
        headers.removeAll { $0.name.lowercased() == name.lowercased() }
        if let value { headers.append((name, value)) }
    }
}

/// How an answer's body goes out.
public struct OriginDelivery: Sendable, Equatable {
    /// Close the connection after this many body bytes.
    public var closeAfter: Int?
    /// Stop sending after this many body bytes, keeping the connection open (the client must time out).
    public var stallAfter: Int?
    /// Bytes of filler sent after the body (more than `Content-Length` promised); the connection closes after.
    public var extraBytes = 0

    /// The whole body, then nothing more.
    public init(closeAfter: Int? = nil, stallAfter: Int? = nil, extraBytes: Int = 0) {
        self.closeAfter = closeAfter
        self.stallAfter = stallAfter
        self.extraBytes = extraBytes
    }
}
