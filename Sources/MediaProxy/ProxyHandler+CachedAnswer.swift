import Foundation
import MediaCache
import MediaFormats
import NIOCore
import NIOHTTP1

/// The hit path: a request for a resource whose every byte is cached and whose check against the origin is over
/// is answered on the event loop, from the data file by `sendfile`, without a task, a wait or a copy.
extension ProxyHandler {
    /// Answers `request` from a settled cached copy; false (nothing written) when the loader must answer it.
    func answerAtOnce(_ request: HTTPRequestHead, server: ProxyServer, context: ChannelHandlerContext) -> Bool {
        guard request.method == .GET || request.method == .HEAD else { return false }
        let media: LastMedia
        // A player asks for range after range of one URL on a connection: parse and hash it once.
        if let last = lastMedia, last.uri == request.uri {
            media = last
        } else {
            guard case .media(let url, let key) = AnswerPlanning.target(of: request, server: server) else { return false }
            media = LastMedia(
                uri: request.uri, url: url, key: key,
                pathNamesPlaylist: HLSPlaylistParser.isPlaylistPath(url))
            lastMedia = media
        }
        let onAccess = server.onAccess
        let started = onAccess == nil ? nil : (Date(), ContinuousClock.now)
        let isGet = request.method == .GET
        var planned: AnswerPlanning.Plan?
        let held = heldFile?.key == media.key ? heldFile : nil
        // (Bytes not yet checked in this process are checked off the event loop, by the answer's task.)
        let copy = server.loader.openSettledCopy(
            url: media.url, key: media.key, holding: held?.version, checking: false
        ) { info in
            // A playlist is sent rewritten, never as its cached bytes.
            guard let length = info.contentLength, !media.pathNamesPlaylist,
                !HLSPlaylistParser.isPlaylist(contentType: info.contentType)
            else { return nil }
            let plan = AnswerPlanning.plan(request, info, length: length)
            // Several parts are sent by the loader's path, part by part.
            guard plan.parts.isEmpty else { return nil }
            planned = plan
            return isGet ? plan.range.map { $0.lowerBound..<($0.upperBound + 1) } : nil
        }
        guard let copy else { return false }
        guard let plan = planned else {
            if let descriptor = copy.descriptor {
                try? NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor).close()
            }
            return false
        }
        // The data file stays open for the connection's next request of the same version (a player reads one
        // video range after range): opening it took 9% of the proxy's work on 64 KiB ranges. A file it replaces
        // is closed once this response has ended (writes complete in order, so every write using it has).
        let handle: NIOFileHandle
        let retired: NIOFileHandle?
        if let descriptor = copy.descriptor {
            handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
            retired = heldFile?.handle
            heldFile = HeldFile(key: media.key, version: copy.version, handle: handle)
        } else if let held {
            (handle, retired) = (held.handle, nil)
        } else {
            return false  // not reached: no descriptor comes back only for the version held
        }
        // Written past this handler's own `write` (which counts each write): the response is one pending write,
        // counted until its end has been handed to the socket.
        var headers = plan.headers
        // From the cache: how long ago the origin last vouched for this version (RFC 9111 §5.1).
        if let confirmed = copy.confirmedAt {
            headers.add(name: "Age", value: String(Swift.max(0, Int(Date().timeIntervalSince(confirmed)))))
        }
        let head = HTTPResponseHead(version: .http1_1, status: plan.status, headers: headers)
        let bytes = Int64(copy.range?.count ?? 0)
        pendingWrites += 1
        let keepAlive = request.isKeepAlive
        let channel = context.channel
        // The response has ended once its last write that carries bytes has (writes complete in order). The end
        // itself then carries no promise, so the encoder sends nothing for it: one write less down the pipeline
        // (each write past the idle-state handler costs a promise of its own).
        let ended = context.eventLoop.makePromise(of: Void.self)
        let body = copy.range.flatMap { range -> FileRegion? in
            guard !range.isEmpty else { return nil }
            return FileRegion(fileHandle: handle, readerIndex: Int(range.lowerBound), endIndex: Int(range.upperBound))
        }
        context.write(wrapOutboundOut(.head(head)), promise: body == nil ? ended : nil)
        if let body { context.write(wrapOutboundOut(.body(.fileRegion(body))), promise: ended) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        ended.futureResult.assumeIsolated().whenComplete { result in
            try? retired?.close()
            self.pendingWrites -= 1
            if !keepAlive { channel.close(promise: nil) }
            guard let onAccess, let (time, clock) = started else { return }
            let elapsed = ContinuousClock.now - clock
            let sent: Int64 = if case .success = result { bytes } else { 0 }
            onAccess(ProxyAccess(
                time: time, method: request.method.rawValue,
                url: OriginURL.withoutCredentials(media.url).absoluteString,
                range: request.headers.first(name: "range"), status: Int(plan.status.code), bytes: sent,
                outcome: .hit,
                duration: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        }
        return true
    }

    /// Closes the data file kept open for the connection (once it has ended: its writes have failed or completed).
    func releaseHeldFile() {
        try? heldFile?.handle.close()
        heldFile = nil
    }

    /// A data file kept open between a connection's requests, and which version of which resource it holds.
    struct HeldFile {
        var key: CacheKey
        var version: Int64
        var handle: NIOFileHandle
    }

    /// The media URL last asked for on a connection, parsed and hashed once.
    struct LastMedia {
        var uri: String
        var url: URL
        var key: CacheKey
        /// Whether the URL's path names an HLS playlist (such a resource is never sent as its cached bytes).
        var pathNamesPlaylist: Bool
    }
}
