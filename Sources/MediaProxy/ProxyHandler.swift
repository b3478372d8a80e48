import Foundation
import HTTPSemantics
import MediaCache
import MediaFormats
import NIOCore
import NIOHTTP1
import NIOConcurrencyHelpers

/// One connection: parses each request and answers it from a task that streams through the loader. The HTTP
/// pipeline handler holds later requests until the response before them has ended. Bound to its channel's event
/// loop, as NIO's handlers are (not Sendable): answer tasks reach the channel, never the handler.
final class ProxyHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let box: ProxyBox
    private var head: HTTPRequestHead?
    private var task: Task<Void, Never>?
    /// Responses being produced on this connection (their tasks run off the event loop).
    private let responding = ResponseCount()

    private let connections: ResponseCount
    /// Writes handed to the socket and not yet taken by it (event loop only): one still waiting at the idle
    /// timeout means the client stopped reading, however small the write (the channel stays "writable" below its
    /// high-water mark, so that flag alone cannot tell).
    var pendingWrites = 0
    /// The media URL last asked for on this connection, parsed and hashed (event loop only).
    var lastMedia: LastMedia?
    /// The data file last answered from on this connection, kept open for its next request (event loop only).
    var heldFile: HeldFile?

    init(box: ProxyBox, connections: ResponseCount) {
        self.box = box
        self.connections = connections
    }

    func channelActive(context: ChannelHandlerContext) {
        connections.add(1)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let request = head, let server = box.get() else { return }
            head = nil
            // A settled cached copy is answered here and now (no task, one flush, the kernel copying the bytes).
            if answerAtOnce(request, server: server, context: context) { return }
            responding.add(1)
            task = Self.answer(request, server: server, channel: context.channel, responding: responding)
        }
    }

    /// Answers `request` from a task of its own (off the event loop), counted in `responding` while it runs.
    private static func answer(
        _ request: HTTPRequestHead, server: ProxyServer, channel: Channel, responding: ResponseCount
    ) -> Task<Void, Never> {
        Task {
            let started = Date()
            let clock = ContinuousClock.now
            let answered = await respond(to: request, server: server, channel: channel)
            responding.add(-1)
            guard let onAccess = server.onAccess else { return }
            let elapsed = ContinuousClock.now - clock
            onAccess(ProxyAccess(
                time: started, method: request.method.rawValue, url: answered.url,
                range: request.headers.first(name: "range"), status: answered.status, bytes: answered.bytes,
                outcome: answered.outcome,
                duration: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connections.add(-1)
        task?.cancel()
        releaseHeldFile()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        releaseHeldFile()
    }

    /// Nothing written for the idle timeout: an idle keep-alive connection, or a client that stopped reading (its
    /// writes back up) is let go. A response still waiting for the origin is not: the origin's timeouts bound it.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            if responding.value == 0 || pendingWrites > 0 {
                task?.cancel()
                context.close(promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        pendingWrites += 1
        let done = promise ?? context.eventLoop.makePromise()
        done.futureResult.assumeIsolated().whenComplete { _ in self.pendingWrites -= 1 }
        // Every answer is dated (RFC 9110 §6.6.1), whichever path made it.
        if case .head(var head) = unwrapOutboundIn(data), !head.headers.contains(name: "date") {
            head.headers.add(name: "Date", value: HTTPDate.format(Date()))
            context.write(wrapOutboundOut(.head(head)), promise: done)
            return
        }
        context.write(data, promise: done)
    }

    /// A request that cannot be parsed (e.g. a header larger than the parser allows) was answered 400 by the
    /// pipeline's error handler; nothing more can be read from this connection, so close it.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        task?.cancel()
        context.close(promise: nil)
    }

    // MARK: - Answering

    static func respond(to request: HTTPRequestHead, server: ProxyServer, channel: Channel) async -> Answered {
        let keepAlive = request.isKeepAlive
        let isHead = request.method == .HEAD
        let url: URL
        let key: CacheKey
        switch AnswerPlanning.target(of: request, server: server) {
        case .refusal(let status, let text, let extra):
            return await ResponseWriter.simple(status, text, channel, keepAlive, head: isHead, extra: extra)
        case .media(let media, let mediaKey):
            (url, key) = (media, mediaKey)
        }
        // A client may assemble one file from several ranges and cannot be told of a new version between them:
        // give the check against the origin a moment to answer before describing a cached copy (it goes on
        // beside a slow or unreachable origin, and bytes of a version found stale mid-body end the connection).
        await server.loader.validate(url: url, key: key, waitingAtMost: ProxyServer.validationWait)
        let info: ContentInformation
        let shown = OriginURL.withoutCredentials(url).absoluteString
        // A client that holds a version asks whether it is still current: the validators answer that, so an
        // uncached one costs an origin HEAD, not body bytes.
        let conditional = request.headers.contains(name: "if-none-match")
            || request.headers.contains(name: "if-modified-since")
        do {
            // A HEAD costs the origin no body: its own HEAD answers it when nothing is cached.
            var described = isHead || conditional
                ? try await server.loader.headInformation(for: url, key: key)
                : try await server.loader.contentInformation(for: url, key: key)
            if conditional, !isHead, !HTTPConditions.notModified(
                ifNoneMatch: request.headers.first(name: "if-none-match"),
                ifModifiedSince: request.headers.first(name: "if-modified-since"), etag: described.etag,
                lastModified: described.lastModified)
            {
                described = try await server.loader.contentInformation(for: url, key: key)
            }
            info = described
        } catch {
            var answered = await ResponseWriter.upstreamFailure(error, channel, keepAlive, head: isHead)
            answered.url = shown
            return answered
        }
        if HLSPlaylistParser.isPlaylist(url: url, contentType: info.contentType) {
            var answered = await PlaylistAnswer.send(request, url: url, key: key, info: info, server: server, channel: channel)
            answered.url = shown
            return answered
        }
        guard let length = info.contentLength else {
            var answered = await sendWithoutLength(request: request, info: info, url: url, server: server, channel: channel)
            answered.url = shown
            return answered
        }
        let plan = AnswerPlanning.plan(request, info, length: length)
        await ResponseWriter.write(channel, .head(HTTPResponseHead(version: .http1_1, status: plan.status, headers: plan.headers)))
        var answered = Answered(status: Int(plan.status.code), url: shown)
        if request.method == .GET, !plan.parts.isEmpty {
            do {
                for part in plan.parts {
                    await ResponseWriter.write(channel, .body(.byteBuffer(channel.allocator.buffer(string: part.head))))
                    try await sendBody(
                        server: server, url: url, key: key, range: part.range, info: info, length: length,
                        channel: channel, sent: &answered.bytes, outcome: &answered.outcome)
                }
                await ResponseWriter.write(channel, .body(.byteBuffer(channel.allocator.buffer(string: plan.closing))))
                await ResponseWriter.end(channel, keepAlive)
            } catch {
                report(error, url: shown, server: server)
                try? await channel.close()
            }
            return answered
        }
        guard request.method == .GET, let range = plan.range else {
            await ResponseWriter.end(channel, keepAlive)
            return answered
        }
        do {
            try await sendBody(
                server: server, url: url, key: key, range: range, info: info, length: length, channel: channel,
                sent: &answered.bytes, outcome: &answered.outcome)
            await ResponseWriter.end(channel, keepAlive)
        } catch {
            // Headers are out: the only honest signal left is closing the connection early.
            report(error, url: shown, server: server)
            try? await channel.close()
        }
        return answered
    }

    /// A response that broke off: a client that went away is routine (a player seeking drops its request), worth
    /// a debug line; anything else is a warning.
    private static func report(_ error: any Error, url: String, server: ProxyServer) {
        if isClientGone(error) {
            server.logger.debug("proxy: client left during \(url)")
        } else {
            server.logger.warning("proxy: \(url) failed mid-body: \(error)")
        }
    }

    /// True for errors of writing to a client that closed its connection.
    static func isClientGone(_ error: any Error) -> Bool {
        // The connection closing cancels its response's task.
        if error is ChannelError || error is CancellationError { return true }
        if let io = error as? IOError { return [EPIPE, ECONNRESET, ENOTCONN, ESHUTDOWN].contains(io.errnoCode) }
        return false
    }

    /// Sends the body of the version the headers described: any other version ends the response early (the
    /// connection closes short of its Content-Length, so the client sees the truncation).
    private static func sendBody(
        server: ProxyServer, url: URL, key: CacheKey, range: ClosedRange<Int64>, info: ContentInformation,
        length: Int64, channel: Channel, sent: inout Int64, outcome: inout CacheOutcome?
    ) async throws {
        let version = ResourceMetadata(
            url: url.absoluteString, contentLength: length, contentType: info.contentType, etag: info.etag,
            lastModified: info.lastModified)
        if let descriptor = server.loader.openCachedFile(
            url: url, key: key, version: version, serving: range.lowerBound..<(range.upperBound + 1))
        {
            // Every byte is on disk: hand the kernel a file region instead of copying through user space.
            let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
            let region = FileRegion(
                fileHandle: handle, readerIndex: Int(range.lowerBound), endIndex: Int(range.upperBound) + 1)
            do {
                try await channel.writeAndFlush(HTTPServerResponsePart.body(.fileRegion(region))).get()
            } catch {
                try? handle.close()
                throw error
            }
            try? handle.close()
            sent += Int64(range.count)
            outcome = .hit
            return
        }
        var request = LoadingRequest(
            url: url, cacheKey: key, requestedOffset: range.lowerBound, requestedLength: Int64(range.count))
        request.expectedVersion = version
        // Origin requests follow what the client reads: it may stop at any byte.
        request.readAhead = ProxyServer.readAhead
        // A client that leaves stops its fetch at once (what arrived is kept): a seek costs no more than the bytes
        // already on their way.
        request.finishesBlockWhenAbandoned = false
        let chunks = server.loader.load(request).makeAsyncIterator()
        let patience = Duration.milliseconds(Int64(server.idleTimeout * 1000))
        do {
            while true {
                // Bytes that would cost an origin request go out only to a client that read all it was sent.
                if chunks.nextReadStartsOriginRequest {
                    try await ClientReading.waitUntilRead(channel, atMost: patience)
                    // (A response's first bytes were just asked for: only after some were sent may the client
                    // be done.)
                    if sent > 0 { try await ClientReading.lingerForClose(channel) }
                }
                guard let chunk = try await chunks.next() else { break }
                var buffer = channel.allocator.buffer(capacity: chunk.bytes.count)
                buffer.writeBytes(chunk.bytes)
                // Waiting for each write keeps at most one chunk queued per client (back-pressure).
                try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).get()
                sent += Int64(chunk.bytes.count)
            }
        } catch {
            // A response cut short still says how much of it the cache answered.
            outcome = chunks.report?.outcome
            throw error
        }
        outcome = chunks.report?.outcome
    }

    /// The origin declared no length (a chunked body): the whole body is sent chunked with 200, whatever Range
    /// asked (a range needs a known end to be answered); the connection closes after it.
    private static func sendWithoutLength(
        request: HTTPRequestHead, info: ContentInformation, url: URL, server: ProxyServer, channel: Channel
    ) async -> Answered {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: info.contentType ?? "application/octet-stream")
        if let etag = info.etag { headers.add(name: "ETag", value: etag) }
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Connection", value: "close")
        await ResponseWriter.write(channel, .head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
        var answered = Answered(status: 200)
        guard request.method == .GET else {
            await ResponseWriter.end(channel, false)
            return answered
        }
        do {
            let chunks = server.loader.load(LoadingRequest(url: url)).makeAsyncIterator()
            while let chunk = try await chunks.next() {
                var buffer = channel.allocator.buffer(capacity: chunk.bytes.count)
                buffer.writeBytes(chunk.bytes)
                try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).get()
                answered.bytes += Int64(chunk.bytes.count)
            }
            answered.outcome = chunks.report?.outcome
            await ResponseWriter.end(channel, false)
        } catch {
            report(error, url: OriginURL.withoutCredentials(url).absoluteString, server: server)
            try? await channel.close()
        }
        return answered
    }
}

/// A shared count (responses of a connection, connections of a server).
final class ResponseCount: Sendable {
    private let count = NIOLockedValueBox(0)
    /// Adds `delta` (negative: takes away).
    func add(_ delta: Int) { count.withLockedValue { $0 += delta } }
    /// The count now.
    var value: Int { count.withLockedValue { $0 } }
}
