import Foundation
import HTTPSemantics
import MediaCache
import NIOCore
import NIOHTTP1

/// Writing the proxy's answers onto a connection: plain-text answers and refusals, the origin's failures as HTTP
/// statuses, and the parts of a response, each waited for.
enum ResponseWriter {
    /// The answer to a request the origin failed: 504 when it cannot be reached or timed out, 416 with its length
    /// when the range is past the end, else 502.
    static func upstreamFailure(_ error: Error, _ channel: Channel, _ keepAlive: Bool, head: Bool) async
        -> Answered
    {
        switch error {
        case OriginError.unreachable, OriginError.timeout:
            return await simple(.gatewayTimeout, "gateway timeout: \(error)\n", channel, keepAlive, head: head)
        case OriginError.rangeNotSatisfiable(_, let length):
            return await simple(.rangeNotSatisfiable, "\(error)\n", channel, keepAlive, head: head,
                extra: length.map { [("Content-Range", ContentRange.unsatisfied(length: $0))] } ?? [])
        default:
            return await simple(.badGateway, "bad gateway: \(error)\n", channel, keepAlive, head: head)
        }
    }

    /// A plain-text answer with `status` (only its head for a HEAD request).
    @discardableResult
    static func simple(
        _ status: HTTPResponseStatus, _ text: String, _ channel: Channel, _ keepAlive: Bool, head: Bool,
        extra: [(String, String)] = []
    ) async -> Answered {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        for (name, value) in extra { headers.add(name: name, value: value) }
        await write(channel, .head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        if !head {
            var buffer = channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            await write(channel, .body(.byteBuffer(buffer)))
        }
        await end(channel, keepAlive)
        return Answered(status: Int(status.code), bytes: head ? 0 : Int64(text.utf8.count))
    }

    /// Writes `part` and waits until it is flushed (a closed channel ends the wait).
    static func write(_ channel: Channel, _ part: HTTPServerResponsePart) async {
        try? await channel.writeAndFlush(part).get()
    }

    /// Ends the response, closing the connection unless it is kept alive.
    static func end(_ channel: Channel, _ keepAlive: Bool) async {
        try? await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        if !keepAlive { try? await channel.close() }
    }
}
