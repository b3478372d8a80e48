import Foundation
import HTTPSemantics
import NIOCore
import NIOHTTP1

/// Answers one connection's requests: routing, Range and If-Range, shaping and faults. Bound to its channel's
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

    private func respond(context: ChannelHandlerContext, server: MediaOriginServer, request: HTTPRequestHead) {
        let (profile, faults, redirect) = server.state.withLockedValue {
            ($0.profile, $0.faults, $0.redirects[String(request.uri.split(separator: "?").first ?? "")])
        }
        let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "").removingPercentEncoding ?? ""
        let isHead = request.method == .HEAD
        var record = OriginRequestRecord(
            method: request.method.rawValue, path: path, range: request.headers.first(name: "range"),
            ifRange: request.headers.first(name: "if-range"), status: 200, bodyBytes: 0,
            userAgent: request.headers.first(name: "user-agent"),
            conditional: request.headers.first(name: "if-none-match") != nil
                || request.headers.first(name: "if-modified-since") != nil)
        var headers = HTTPHeaders()
        var body = OriginBody.text([])
        var status = HTTPResponseStatus.ok

        if let fixed = faults.fixedStatus {
            status = HTTPResponseStatus(statusCode: fixed)
            body = .text(Array("origin fault: status \(fixed)\n".utf8))
        } else if let redirect {
            status = .found
            headers.add(name: "Location", value: redirect)
        } else if request.method != .GET && request.method != .HEAD {
            status = .methodNotAllowed
        } else if isHead && faults.rejectHead {
            status = .methodNotAllowed
        } else if let resource = server.resource(at: path) {
            let length = resource.length
            headers.add(name: "Accept-Ranges", value: "bytes")
            headers.add(name: "Content-Type", value: resource.contentType)
            if let etag = resource.etag { headers.add(name: "ETag", value: etag) }
            if let modified = resource.lastModified { headers.add(name: "Last-Modified", value: modified) }
            if let cacheControl = resource.cacheControl { headers.add(name: "Cache-Control", value: cacheControl) }
            var range: ClosedRange<Int>?
            if !faults.ignoreConditions, HTTPConditions.notModified(
                ifNoneMatch: request.headers.first(name: "if-none-match"),
                ifModifiedSince: request.headers.first(name: "if-modified-since"), etag: resource.etag,
                lastModified: resource.lastModified)
            {
                status = .notModified
            } else if record.range != nil, faults.refuseRanges, !isHead {
                status = .rangeNotSatisfiable
                headers.add(name: "Content-Range", value: "bytes */\(length)")
            } else if let rangeHeader = record.range, !faults.ignoreRange {
                let validator = record.ifRange
                let matches = validator == nil || validator == resource.etag || validator == resource.lastModified
                if matches {
                    switch ByteRangeRequest(header: rangeHeader, length: Int64(length)) {
                    case .partial(let r): range = Int(r.lowerBound)...Int(r.upperBound)
                    case .unsatisfiable:
                        status = .rangeNotSatisfiable
                        headers.add(name: "Content-Range", value: "bytes */\(length)")
                    case .whole, .multiple: break  // absent, malformed or several: ignored, as RFC 9110 allows
                    }
                }
            }
            if status == .ok {
                if let range {
                    status = .partialContent
                    let first = range.lowerBound + faults.contentRangeOffsetShift
                    let last = range.upperBound + faults.contentRangeOffsetShift - faults.shortContentRange
                    let total = (faults.contentRangeTotal ?? length) - faults.shortContentRange
                    headers.add(name: "Content-Range", value: "bytes \(first)-\(last)/\(total)")
                    body = .resource(resource, range.lowerBound..<(range.upperBound + 1))
                } else {
                    body = .resource(resource, 0..<length)
                }
            }
        } else {
            status = .notFound
            body = .text(Array("not found: \(path)\n".utf8))
        }
        record.status = Int(status.code)
        headers.add(name: "Date", value: HTTPDate.format(Date()))
        if status == .notModified {
            // No body, and no length: a 304 describes the cached copy, not itself.
        } else if !faults.chunked || isHead || status != .ok && status != .partialContent {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        if isHead { body = .text([]) }
        var response = HTTPResponseHead(version: request.version, status: status, headers: headers)
        response.headers.replaceOrAdd(name: "Connection", value: request.isKeepAlive ? "keep-alive" : "close")
        let responseHead = response

        let (index, epoch) = server.state.withLockedValue { state -> (Int, Int) in
            state.requests.append(record)
            state.activeResponses += 1
            if faults.dropAfterBytes != nil, let count = faults.dropCount {
                state.faults.dropCount = count - 1
                if count - 1 <= 0 {
                    state.faults.dropAfterBytes = nil
                    state.faults.dropCount = nil
                }
            }
            return (state.requests.count - 1, state.epoch)
        }
        let loop = context.eventLoop
        let sender = BodySender(
            context: context, handler: self, server: server, recordIndex: index, epoch: epoch, body: body,
            profile: profile,
            dropAfter: faults.bodyLengthError < 0 && !isHead
                ? Swift.max(0, Swift.min(faults.dropAfterBytes ?? .max, body.count + faults.bodyLengthError))
                : faults.dropAfterBytes,
            stallAfter: faults.stallAfterBytes, keepAlive: request.isKeepAlive,
            extraBytes: isHead ? 0 : Swift.max(0, faults.bodyLengthError))
        self.sender = sender
        if profile.latency > 0 {
            let bound = NIOLoopBound(sender, eventLoop: loop)
            if let scheduler = server.scheduler {
                scheduler.schedule(after: profile.latency) {
                    loop.execute { bound.value.start(head: responseHead, isHead: isHead) }
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

/// Writes a body in shaped chunks, honouring the drop and stall faults and counting bytes as they go out. Bound to
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
    private let dropAfter: Int?
    private let stallAfter: Int?
    private let keepAlive: Bool
    /// Garbage sent after the body (more than `Content-Length` promised); the connection closes after it.
    private let extraBytes: Int
    private var sent = 0
    private static let tick = 0.02

    init(
        context: ChannelHandlerContext, handler: OriginHandler, server: MediaOriginServer, recordIndex: Int,
        epoch: Int, body: OriginBody, profile: NetworkProfile, dropAfter: Int?, stallAfter: Int?, keepAlive: Bool,
        extraBytes: Int = 0
    ) {
        self.extraBytes = extraBytes
        self.context = context
        self.handler = handler
        self.server = server
        self.recordIndex = recordIndex
        self.epoch = epoch
        self.body = body
        self.profile = profile
        self.dropAfter = dropAfter
        self.stallAfter = stallAfter
        self.keepAlive = keepAlive
    }

    /// A response head held back by the `holdHead` fault until `resume`.
    private var heldHead: HTTPResponseHead?

    func start(head: HTTPResponseHead, isHead: Bool = false) {
        let resume = resumer()
        let hold = isHead && server.state.withLockedValue { state -> Bool in
            guard state.faults.holdHead else { return false }
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
        let pause = server.state.withLockedValue { state -> Bool in
            guard let limit = state.faults.pauseAfterBytes, sent >= limit else { return false }
            state.paused.append(resume)
            return true
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
        let pauseAt = server.state.withLockedValue { $0.faults.pauseAfterBytes }
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
                    scheduler.schedule(after: delay) { loop.execute { bound.value.sendNext() } }
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
