import Foundation
import HTTPSemantics
import NIOCore
import NIOHTTP1

/// Answers one connection's requests: routing, Range and If-Range, shaping and the rule. Bound to its channel's
/// event loop, as NIO's handlers are (not Sendable).
final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let box: ServerBox
    private var head: HTTPRequestHead?
    private var busy = false
    private var sender: BodySender?

    func channelInactive(context: ChannelHandlerContext) {
        sender?.end()
        sender = nil
        context.fireChannelInactive()
    }

    init(server: ServerBox) { box = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead): head = requestHead
        case .body: break
        case .end:
            guard let requestHead = head, !busy, let server = box.server.withLockedValue({ $0 }) else { return }
            head = nil
            busy = true
            respond(context: context, server: server, request: requestHead)
        }
    }

    private func respond(context: ChannelHandlerContext, server: MediaOriginServer, request head: HTTPRequestHead) {
        let (profile, rule, redirect) = server.state.withLockedValue {
            ($0.profile, $0.rule, $0.redirects[String(head.uri.split(separator: "?").first ?? "")])
        }
        let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "").removingPercentEncoding ?? ""
        var request = OriginRequest(
            method: head.method.rawValue, path: path, headers: head.headers.map { ($0.name, $0.value) })
        let isHead = head.method == .HEAD
        // Recorded as it arrived, before a rule changes it.
        var record = OriginRequestRecord(
            method: request.method, path: path, range: request["range"], ifRange: request["if-range"], status: 200,
            bodyBytes: 0, userAgent: request["user-agent"],
            conditional: request["if-none-match"] != nil || request["if-modified-since"] != nil)
        let ruled = rule?.intercept(&request)
        var (status, headers, body, length) = Self.answer(
            to: request, on: server, redirect: redirect, ruled: ruled)
        if status != .notModified {
            // No length on a 304: it describes the cached copy, not itself.
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        var delivery = OriginDelivery()
        if let rule {
            var answer = OriginAnswerHead(
                status: Int(status.code), headers: headers.map { ($0.name, $0.value) }, bodyLength: body.count,
                resourceLength: length)
            rule.rewrite(&answer, for: request)
            status = HTTPResponseStatus(statusCode: answer.status)
            headers = HTTPHeaders(answer.headers.map { ($0.name, $0.value) })
            if !answer.sendsBody {
                body = .text([])
                if headers.contains(name: "Content-Length") { headers.replaceOrAdd(name: "Content-Length", value: "0") }
            }
            delivery = rule.delivery(for: request, answer: answer)
        }
        record.status = Int(status.code)
        // A rule may state the Date itself (an origin whose clock is elsewhere).
        if !headers.contains(name: "Date") { headers.add(name: "Date", value: HTTPDate.format(Date())) }
        if isHead { body = .text([]) }
        var response = HTTPResponseHead(version: head.version, status: status, headers: headers)
        response.headers.replaceOrAdd(name: "Connection", value: head.isKeepAlive ? "keep-alive" : "close")
        let responseHead = response

        let (index, epoch) = server.state.withLockedValue { state -> (Int, Int) in
            state.requests.append(record)
            state.activeResponses += 1
            return (state.requests.count - 1, state.epoch)
        }
        let loop = context.eventLoop
        let sender = BodySender(
            context: context, handler: self, server: server, recordIndex: index, epoch: epoch, body: body,
            profile: profile, rule: rule, delivery: isHead ? OriginDelivery() : delivery, keepAlive: head.isKeepAlive)
        self.sender = sender
        if profile.latency > 0 {
            let bound = NIOLoopBound(sender, eventLoop: loop)
            if let scheduler = server.scheduler {
                scheduler.schedule(after: profile.latency, on: loop) {
                    bound.value.start(head: responseHead, isHead: isHead)
                }
            } else {
                loop.scheduleTask(in: .nanoseconds(Int64(profile.latency * 1e9))) {
                    bound.value.start(head: responseHead, isHead: isHead)
                }
            }
        } else {
            sender.start(head: responseHead, isHead: isHead)
        }
    }

    /// The standard answer to `request`: status, headers (without `Content-Length`, `Date`, `Connection`), body and
    /// the length of the resource served (nil when none is). `ruled` is a status a rule answers with instead.
    private static func answer(
        to request: OriginRequest, on server: MediaOriginServer, redirect: String?, ruled: Int?
    ) -> (HTTPResponseStatus, HTTPHeaders, OriginBody, Int?) {
        var headers = HTTPHeaders()
        if let ruled {
            let status = HTTPResponseStatus(statusCode: ruled)
            return (status, headers, .text(Array("\(ruled) \(status.reasonPhrase)\n".utf8)), nil)
        }
        if let redirect {
            headers.add(name: "Location", value: redirect)
            return (.found, headers, .text([]), nil)
        }
        guard request.method == "GET" || request.isHead else { return (.methodNotAllowed, headers, .text([]), nil) }
        guard let resource = server.resource(at: request.path) else {
            return (.notFound, headers, .text(Array("not found: \(request.path)\n".utf8)), nil)
        }
        let length = resource.length
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "Content-Type", value: resource.contentType)
        if let etag = resource.etag { headers.add(name: "ETag", value: etag) }
        if let modified = resource.lastModified { headers.add(name: "Last-Modified", value: modified) }
        if let cacheControl = resource.cacheControl { headers.add(name: "Cache-Control", value: cacheControl) }
        if HTTPConditions.notModified(
            ifNoneMatch: request["if-none-match"], ifModifiedSince: request["if-modified-since"],
            etag: resource.etag, lastModified: resource.lastModified)
        {
            return (.notModified, headers, .text([]), length)
        }
        let validator = request["if-range"]
        if let rangeHeader = request["range"],
            validator == nil || validator == resource.etag || validator == resource.lastModified
        {
            switch ByteRangeRequest(header: rangeHeader, length: Int64(length)) {
            case .partial(let r):
                headers.add(name: "Content-Range", value: ContentRange.value(for: r, of: Int64(length)))
                return (.partialContent, headers, .resource(resource, Int(r.lowerBound)..<Int(r.upperBound + 1)), length)
            case .unsatisfiable:
                headers.add(name: "Content-Range", value: ContentRange.unsatisfied(length: Int64(length)))
                return (.rangeNotSatisfiable, headers, .text([]), length)
            case .whole, .multiple: break  // absent, malformed or several: ignored, as RFC 9110 allows
            }
        }
        return (.ok, headers, .resource(resource, 0..<length), length)
    }

    /// Called by the sender when the response is complete.
    func finished(context: ChannelHandlerContext, keepAlive: Bool) {
        busy = false
        sender = nil
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}

/// Writes a body in shaped chunks as its delivery says (closing, stalling, pausing) and counting bytes as they go out. Bound to
/// the channel's event loop like its handler: timers and other threads reach it through `NIOLoopBound`.
final class BodySender {
    private let context: ChannelHandlerContext
    private let handler: OriginHandler
    private let server: MediaOriginServer
    private let recordIndex: Int
    private let epoch: Int
    private var ended = false
    private let body: OriginBody
    private let profile: NetworkProfile
    private let rule: (any OriginRule)?
    private let dropAfter: Int?
    private let stallAfter: Int?
    private let keepAlive: Bool
    /// Garbage sent after the body (more than `Content-Length` promised); the connection closes after it.
    private let extraBytes: Int
    private var sent = 0
    private static let tick = 0.02

    init(
        context: ChannelHandlerContext, handler: OriginHandler, server: MediaOriginServer, recordIndex: Int,
        epoch: Int, body: OriginBody, profile: NetworkProfile, rule: (any OriginRule)?, delivery: OriginDelivery,
        keepAlive: Bool
    ) {
        self.rule = rule
        extraBytes = delivery.extraBytes
        self.context = context
        self.handler = handler
        self.server = server
        self.recordIndex = recordIndex
        self.epoch = epoch
        self.body = body
        self.profile = profile
        dropAfter = delivery.closeAfter
        stallAfter = delivery.stallAfter
        self.keepAlive = keepAlive
    }

    /// A response head the rule holds back until `resume`.
    private var heldHead: HTTPResponseHead?

    func start(head: HTTPResponseHead, isHead: Bool = false) {
        let resume = resumer()
        // Asked under the server's lock, which `resumePaused` holds while it tells the rule to stop.
        let hold = isHead && server.state.withLockedValue { state -> Bool in
            guard rule?.holdsHead() == true else { return false }
            state.paused.append(resume)
            return true
        }
        if hold {
            heldHead = head
            return
        }
        context.write(handler.wrapOutboundOut(.head(head)), promise: nil)
        sendNext()
    }

    /// What continues this response once paused, from any thread.
    private func resumer() -> @Sendable () -> Void {
        let (bound, loop) = (NIOLoopBound(self, eventLoop: context.eventLoop), context.eventLoop)
        return { loop.execute { bound.value.resume() } }
    }

    /// Continues a paused response (on the event loop).
    private func resume() {
        if let head = heldHead {
            heldHead = nil
            guard context.channel.isActive else { return end() }
            context.write(handler.wrapOutboundOut(.head(head)), promise: nil)
        }
        sendNext()
    }

    /// Marks the response as no longer active (once).
    func end() {
        guard !ended else { return }
        ended = true
        server.state.withLockedValue { $0.activeResponses -= 1 }
    }

    func sendNext() {
        guard context.channel.isActive, !ended else {
            end()
            return
        }
        if sent >= body.count {
            end()
            if extraBytes > 0 {
                var garbage = context.channel.allocator.buffer(capacity: extraBytes)
                garbage.writeRepeatingByte(0x5A, count: extraBytes)
                let channel = context.channel
                context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(garbage)))).whenComplete { _ in
                    channel.close(promise: nil)
                }
                return
            }
            handler.finished(context: context, keepAlive: keepAlive)
            return
        }
        let resume = resumer()
        let (pause, pauseAt) = server.state.withLockedValue { state -> (Bool, Int?) in
            guard let limit = rule?.pausePoint() else { return (false, nil) }
            guard sent >= limit else { return (false, limit) }
            state.paused.append(resume)
            return (true, limit)
        }
        if pause {
            context.flush()
            return
        }
        if let stallAfter, sent >= stallAfter {
            context.flush()
            return  // never continues: the client must time out
        }
        if let dropAfter, sent >= dropAfter {
            end()
            context.flush()
            context.close(promise: nil)
            return
        }
        var size = 16_384
        if let rate = profile.bytesPerSecond { size = max(512, min(size, Int(Double(rate) * Self.tick))) }
        if let limit = [dropAfter, stallAfter, pauseAt].compactMap({ $0 }).filter({ $0 > sent }).min() {
            size = min(size, limit - sent)
        }
        size = min(size, body.count - sent)
        var buffer = context.channel.allocator.buffer(capacity: size)
        body.copy(from: sent, count: size) { buffer.writeBytes($0) }
        sent += size
        server.state.withLockedValue {
            guard $0.epoch == epoch, recordIndex < $0.requests.count else { return }
            $0.bodyBytesSent += size
            $0.requests[recordIndex].bodyBytes += size
        }
        let write = context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(buffer))))
        let loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        if let rate = profile.bytesPerSecond {
            let delay = server.reserveLink(bytes: size, rate: rate)
            write.assumeIsolated().whenComplete { result in
                guard case .success = result else { return self.end() }
                if let scheduler = self.server.scheduler {
                    scheduler.schedule(after: delay, on: loop) { bound.value.sendNext() }
                } else {
                    loop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { bound.value.sendNext() }
                }
            }
        } else {
            // Scheduled, not called: completed writes would otherwise recurse once per chunk.
            write.assumeIsolated().whenComplete { result in
                guard case .success = result else { return self.end() }
                loop.execute { bound.value.sendNext() }
            }
        }
    }
}

/// A response body: literal text or a range of a resource (copied out chunk by chunk as it is sent).
enum OriginBody {
    case text([UInt8])
    case resource(OriginResource, Range<Int>)

    var count: Int {
        switch self {
        case .text(let bytes): return bytes.count
        case .resource(_, let range): return range.count
        }
    }

    func copy(from start: Int, count: Int, into write: (ArraySlice<UInt8>) -> Void) {
        switch self {
        case .text(let bytes): write(bytes[start..<(start + count)])
        case .resource(let resource, let range):
            resource.copy(from: range.lowerBound + start, count: count, into: write)
        }
    }
}
